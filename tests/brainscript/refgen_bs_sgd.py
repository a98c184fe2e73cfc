"""Write the CNTK 2.7 references of test_bs_sgd_update_types.py: the parameter after each step.

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \
        tests/brainscript/refgen_bs_sgd.py

CNTK's BrainScript trainer (``SGD::UpdateWeights``) applies ``gradUpdateType`` AdaGrad, FSAdaGrad
and RmsProp with the same matrix kernels as CNTK 2.7's learners ``adagrad``, ``fsadagrad`` and
``rmsprop`` (``Learner.cpp``), on the gradient summed over the minibatch, the per-sample learning
rate and the momentum per sample raised to the minibatch size; ``varianceTimeConstant`` is
``fsadagrad``'s ``variance_momentum`` as a time constant.  So each SGD block of ``CASES`` is
given to the CNTK 2.7 learner it denotes, fed fixed gradients, and the parameter is recorded
after every step.  Parses under Python 3.6.
"""

import json
import math
import os

import numpy as np

import cntk as C

STEPS = [4, 4, 3, 4, 2]           # samples in each minibatch
INIT = [[0.5, -1.0], [0.25, 2.0], [-0.75, 0.1]]

# name: (SGD block, CNTK 2.7 learner factory)
CASES = {
    "fsadagrad": (
        "gradUpdateType = FSAdaGrad ; learningRatesPerSample = 0.01 ; minibatchSize = 4 ; "
        "momentumPerMB = 0.9 ; varianceTimeConstant = 50",
        lambda p: C.fsadagrad(p, C.learning_parameter_schedule_per_sample(0.01),
                              C.momentum_schedule_per_sample(0.9 ** (1 / 4)), unit_gain=True,
                              variance_momentum=C.momentum_as_time_constant_schedule(50))),
    "fsadagrad_default_variance": (
        "gradUpdateType = FSAdaGrad ; learningRatesPerSample = 0.01 ; "
        "momentumAsTimeConstant = 10",
        lambda p: C.fsadagrad(p, C.learning_parameter_schedule_per_sample(0.01),
                              C.momentum_schedule_per_sample(math.exp(-1 / 10)), unit_gain=True,
                              variance_momentum=C.momentum_as_time_constant_schedule(720000))),
    "adagrad": (
        "gradUpdateType = AdaGrad ; learningRatesPerSample = 0.05 ; L2RegWeight = 0.01",
        lambda p: C.adagrad(p, C.learning_parameter_schedule_per_sample(0.05),
                            need_ave_multiplier=True, l2_regularization_weight=0.01)),
    "adagrad_plain": (
        "useAdagrad = true ; learningRatesPerSample = 0.05 ; normWithAveMultiplier = false",
        lambda p: C.adagrad(p, C.learning_parameter_schedule_per_sample(0.05),
                            need_ave_multiplier=False)),
    "rmsprop": (
        "gradUpdateType = RmsProp ; learningRatesPerSample = 0.01 ; rms_gamma = 0.9 ; "
        "rms_wgt_inc = 1.5 ; rms_wgt_dec = 0.5 ; rms_wgt_max = 5 ; rms_wgt_min = 0.2",
        lambda p: C.rmsprop(p, C.learning_parameter_schedule_per_sample(0.01), gamma=0.9,
                            inc=1.5, dec=0.5, max=5, min=0.2, need_ave_multiplier=True)),
    "nesterov": (
        "useNAG = true ; learningRatesPerSample = 0.02 ; minibatchSize = 4 ; momentumPerMB = 0.9",
        lambda p: C.nesterov(p, C.learning_parameter_schedule_per_sample(0.02),
                             C.momentum_schedule_per_sample(0.9 ** (1 / 4)), unit_gain=True)),
}


def gradients():
    rng = np.random.RandomState(7)
    return [rng.uniform(-2, 2, (3, 2)).astype(np.float32) for _ in STEPS]


def main():
    grads = gradients()
    out = {"steps": STEPS, "init": INIT, "gradients": [g.tolist() for g in grads], "cases": {}}
    for name, (block, factory) in sorted(CASES.items()):
        p = C.parameter(shape=(3, 2), init=np.array(INIT, np.float32))
        learner = factory([p])
        values = []
        for g, m in zip(grads, STEPS):
            learner.update({p: g}, m)
            values.append(p.value.tolist())
        out["cases"][name] = {"sgd": block, "values": values}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                        "brainscript", "sgd_update_types.json")
    with open(path, "w") as f:
        json.dump(out, f)
        f.write("\n")
    print("wrote", os.path.normpath(path), "with CNTK", C.__version__)


if __name__ == "__main__":
    main()

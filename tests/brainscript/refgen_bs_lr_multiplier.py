"""Write the CNTK 2.7 reference of test_bs_lr_multiplier.py: the linear model's W and b after
one epoch, each trained at the SGD block's rate times its learningRateMultiplier.

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \
        tests/brainscript/refgen_bs_lr_multiplier.py

cntk.exe passes each node's update the per-sample rate times the node's multiplier; a CNTK 2.7
Trainer says the same with one learner per parameter, each at its own per-sample rate (the
update kernels are the ones SGD::UpdateWeights calls).  The data is the test's (written here
with the same generator and rounding, read by the test from the JSON).  Parses under Python 3.6.
"""

import json
import math
import os

import numpy as np

import cntk as C

LR, MB, TC, VARIANCE_TC = 0.01, 4, 10.0, 20.0
MULTIPLIERS = (0.5, 2.0)                           # W's and b's


def data():
    rng = np.random.RandomState(5)
    x = rng.normal(0, 1.0, (16, 2)).round(3).astype(np.float32)
    y = rng.normal(0, 1.0, 16).round(3).astype(np.float32)
    return x, y


def learner(kind, params, multiplier):
    lr = C.learning_parameter_schedule_per_sample(LR * np.float32(multiplier))
    if kind == "sgd":
        return C.momentum_sgd(params, lr, C.momentum_schedule_per_sample(0.0), unit_gain=True)
    momentum = C.momentum_schedule_per_sample(float(np.float32(math.exp(-1.0 / TC))))
    if kind == "momentum":
        return C.momentum_sgd(params, lr, momentum, unit_gain=True)
    if kind == "adagrad":
        return C.adagrad(params, lr, need_ave_multiplier=True)
    if kind == "rmsprop":
        return C.rmsprop(params, lr, gamma=0.99, inc=1.2, dec=0.75, max=10.0, min=0.1,
                         need_ave_multiplier=True)
    return C.fsadagrad(params, lr, momentum, unit_gain=True,
                       variance_momentum=C.momentum_as_time_constant_schedule(VARIANCE_TC))


def train(kind, x, y):
    feat = C.input_variable(2)
    lab = C.input_variable(1)
    w = C.parameter((2, 1), init=0.5)
    b = C.parameter((1,), init=-0.25)
    d = C.times(feat, w) + b - lab
    loss = d * d
    trainer = C.Trainer(None, (loss, None), [learner(kind, [w], MULTIPLIERS[0]),
                                             learner(kind, [b], MULTIPLIERS[1])])
    for start in range(0, len(x), MB):
        trainer.train_minibatch({feat: x[start:start + MB], lab: y[start:start + MB, None]})
    return {"W": w.value.ravel().tolist(), "b": b.value.ravel().tolist()}


def main():
    x, y = data()
    out = {"x": x.tolist(), "y": y.tolist(),
           "trained": {kind: train(kind, x, y)
                       for kind in ("sgd", "momentum", "fsadagrad", "adagrad", "rmsprop")}}
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript",
                        "lr_multiplier_cntk27.json")
    with open(path, "w") as f:
        json.dump(out, f)
        f.write("\n")


if __name__ == "__main__":
    main()

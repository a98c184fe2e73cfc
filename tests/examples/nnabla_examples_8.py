"""Run an eighth batch of nnabla-examples' programs (sony/nnabla-examples:
``neural-architecture-search/DARTS``'s search and retraining), unchanged, at a tiny size, and
write as JSON what they printed and a digest of the parameters they trained.  The same file
runs on NNabla 1.39 (which made ``refs/nnabla139_examples_8.json``) and, with ``--stadyn``, on
Stadyn through ``examples/nnabla/on_stadyn.py``'s import hook.

    python tests/examples/nnabla_examples_8.py EXAMPLES WORK OUT.json [--stadyn] [--only=R,..]

The reference file is this, run on NNabla 1.39 (``/work/peers/nnabla/bin/python
tests/examples/nnabla_examples_8.py EXAMPLES WORK tests/examples/refs/nnabla139_examples_8.json``).

EXAMPLES holds the programs' folders (a checkout or an archive of the repository); WORK is an
empty folder.  The data are stand-ins in the real files: CIFAR-10's ``cifar-10-python.tar.gz``
(``examples/nnabla/cifar10_standin.py``) in NNabla's download cache ``WORK/home/nnabla_data``.
Only the harness around the programs differs from a user's shell: NumPy, ``random`` and
NNabla's generators (``nn.seed(0)``: ``F.random_crop``'s draws) are seeded 0 before each run,
the parameter initializers' 313 (and on Stadyn torch's 0).

DARTS's search (``darts_search.py``) trains for its epochs of 25,000 pictures (fixed by its
split of CIFAR-10), each step a Momentum step of the network's weights on a training batch
and an Adam step of the architecture weights (the ``alpha_*`` mixing each edge's eight
operations) on a validation batch, and its monitors average 100 steps: the driver interrupts
it, as a user does, when its "Training loss" monitor is given the value of step ``STEPS``
(the harness counts the monitor's ``add`` calls), and records the parameters the program had
then (``nn.get_parameters()``: a digest of each), the values its monitors were given (each
step's training and validation loss and error) and what it printed (the mixing probabilities
after its first step).  DARTS's retraining (``darts_train.py``, of the cells in
``WORK/darts_arch.json``, which the driver writes) is interrupted the same way, after its first
``STEPS`` Momentum steps on training batches (the validation pass ends the epoch).
"""

import contextlib
import io
import json
import os
import random
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnabla_example_runs as record  # noqa: E402

PROGRAMS = ("neural-architecture-search/DARTS",)
DARTS = "neural-architecture-search/DARTS"
STEPS = 3

# (run, program, arguments); {out} is WORK/<run>, {work} is WORK.
RUNS = [
    # DARTS search: cells whose edges mix dilated and separable convolutions, poolings, the
    # identity and zero by softmax weights (F.softmax over alpha parameters), F.random_crop of
    # F.pad-ded pictures, Momentum with clip_by_norm'ed gradients (v.grad.copy_from) and
    # weight decay, then Adam on the alphas from the validation batch's loss
    ("darts_search", DARTS + "/darts_search.py",
     "--context cpu -b 2 --epoch 1 --num-cells 3 --num-nodes 5 --output-filter 4 "
     "--monitor-path {out} --model-arch-name {out}/arch.json"),
    # DARTS retraining (``darts_train.py``) of the cells ``{work}/darts_arch.json`` names
    # (separable and dilated convolutions, max and average pooling, the identity), each
    # operation but the identity drop-path'ed (F.rand masks against the "drop_rate" parameter),
    # Momentum with clipped gradients, weight decay and a cosine learning rate.  Without the
    # auxiliary head (``--auxiliary=``): at a tiny batch its batch normalization normalizes 2-4
    # values per channel (1x1 maps), whose input gradient is float32 cancellation (on both
    # frameworks 2e-4 of the value from float64's), and the two frameworks' first-step
    # gradients part by 1e-3, their second losses by 1e-3.  At batch 2 no max pooling or ReLU
    # meets a near-tie in these 3 steps either (at batch 4 a max pooling's two inputs 3e-6
    # apart swap on rounding, and the third losses part by 1e-3)
    ("darts_train", DARTS + "/darts_train.py",
     "--context cpu -b 2 --epoch 1 --num-cells 3 --num-nodes 5 --output-filter 4 -f 0 "
     "--auxiliary= --monitor-path {out} --model-save-path {out} "
     "--model-arch-name {work}/darts_arch.json"),
]
# the architecture darts_train retrains: each node's two (operation, input node) pairs; the
# operations 0-7 are dil_conv_3x3, dil_conv_5x5, sep_conv_3x3, sep_conv_5x5, max_pool_3x3,
# avg_pool_3x3, identity, zero
DARTS_ARCH = {"arch_normal": {"2": [[2, 0], [6, 1]], "3": [[0, 0], [4, 2]]},
              "arch_reduction": {"2": [[4, 0], [3, 1]], "3": [[5, 1], [6, 2]]}}
# the programs' own modules, forgotten after each run
OWN_MODULES = ("args", "utils", "defined_functions", "cifar10_data")


class _Interrupted(KeyboardInterrupt):
    """The driver's interruption of a run (after the steps it was to compare)."""


@contextlib.contextmanager
def interrupted_at_step(steps, given):
    """Interrupt the program when its "Training loss" monitor is given step ``steps``'s value
    (``MonitorSeries.add``, counted; the monitor itself is left as it is); ``given`` gets
    ``[monitor, step, value]`` of each value the monitors were given before (their files
    average 100 steps)."""
    from nnabla.monitor import MonitorSeries
    add = MonitorSeries.add

    def counting(self, index, value):
        if self.name == "Training loss" and index >= steps:
            raise _Interrupted("at step %d" % index)
        given.append([self.name, int(index), float("%.6g" % float(np.asarray(value)))])
        return add(self, index, value)

    MonitorSeries.add = counting
    try:
        yield
    finally:
        MonitorSeries.add = add


def parameters():
    """``{name: [sum, sum of squares, first 4 values]}`` of the parameters the program has now
    (``nn.get_parameters(grad_only=False)``), to 9 significant digits."""
    import nnabla as nn
    out = {}
    for k, v in nn.get_parameters(grad_only=False).items():
        d = np.asarray(v.d, np.float64)
        out[k] = [float("%.9g" % x) for x in
                  [d.sum(), np.square(d).sum()] + d.ravel()[:4].tolist()]
    return out


def main(argv):
    examples, work, out_path, stadyn = record.begin(argv, ROOT)
    import cifar10_standin
    cifar10_standin.write_cifar10(os.path.join(work, "home", "nnabla_data"), compresslevel=0)
    record.six_if_missing(work)
    with open(os.path.join(work, "darts_arch.json"), "w") as f:
        json.dump(DARTS_ARCH, f)
    import nnabla as nn
    import nnabla.random
    results = {}
    for run, program, args, folder in record.selected(RUNS, argv, work):
        np.random.seed(0)
        random.seed(0)
        nn.seed(0)
        nnabla.random.set_parameter_seed(313)
        if stadyn:
            import torch
            torch.manual_seed(0)
        nn.clear_parameters()
        text, given = io.StringIO(), []
        with interrupted_at_step(STEPS, given), contextlib.redirect_stdout(text):
            error, seconds = record.run_beside_its_modules(
                os.path.join(examples, program), args.format(out=folder, work=work).split(),
                folder, OWN_MODULES)
        stopped = error is not None and error.startswith("_Interrupted")
        results[run] = record.result(folder, None if stopped else error, seconds, stadyn)
        results[run]["stopped"] = stopped
        results[run]["monitored"] = given
        results[run]["parameters"] = parameters()
        results[run]["printed"] = [line for line in text.getvalue().splitlines()
                                   if not line.startswith("Namespace(")]
        nn.clear_parameters()
    record.write_results(results, out_path)


if __name__ == "__main__":
    main(sys.argv[1:])

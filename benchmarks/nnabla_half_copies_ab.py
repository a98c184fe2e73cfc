"""Cost of the shared half copies of NNabla ``cpu:half`` (``graph/_precision.HalfCopies``) on
the dynamic hot path, alternating in one process:

* ``A``: each op casts its float32 inputs afresh (Stadyn before nnhalf42: ``_apply`` given no
  copies, patched in here);
* ``B``: the op reads the Variable's one half copy (found by tensor, version, memory and a
  comparison of the values, a NumPy write into ``.d`` being invisible to the version), the
  comparison made each time (nnhalf42's; patched in here: ``handed_out`` never equal);
* ``C``: the same copy, compared only where a NumPy array was handed out over the leaf since
  the copy or one is alive (nnhalf43: ``_numpy_readers.handed_out``, ``viewed``).

Each step: ``--readers`` functions made in ``cpu:half`` (``F.tanh``) on one float32 leaf of
``--size`` values, in auto-forward mode, and their sum's backward.

    PYTHONPATH=src python benchmarks/nnabla_half_copies_ab.py [--size 65536] [--readers 4]
        [--rounds 7] [--threads 1]

Prints the median time of a step for A, B and C (ms).
"""

import argparse
import itertools
import statistics

import numpy as np
import torch

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
from stadyn.compat.nnabla.ext_utils import get_extension_context
from stadyn.graph import _apply, _precision

# (this script's folder is on sys.path when it runs: the sibling's timer)
from nnabla_half_elementwise_ab import _median_ms


def _step(x, readers, half):
    with nn.context_scope(half):
        y = F.tanh(x)
        for _ in range(readers - 1):
            y = y + F.tanh(x)
    x.grad.zero()
    y.backward(clear_buffer=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1 << 16)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    half = get_extension_context("cpu", type_config="half")
    nn.set_auto_forward(True)
    x = nn.Variable.from_numpy_array(
        np.random.RandomState(0).randn(args.size).astype(np.float32), need_grad=True)
    shared, signal = _apply._held_copies, _precision.handed_out
    never = itertools.count()
    a, b, c = [], [], []
    try:
        for _ in range(args.rounds):
            _apply._held_copies = lambda *_: None
            a.append(_median_ms(lambda: _step(x, args.readers, half), 5))
            _apply._held_copies = shared
            _precision.handed_out = lambda t: next(never)
            b.append(_median_ms(lambda: _step(x, args.readers, half), 5))
            _precision.handed_out = signal
            c.append(_median_ms(lambda: _step(x, args.readers, half), 5))
    finally:
        _apply._held_copies, _precision.handed_out = shared, signal
        nn.set_auto_forward(False)
    print(f"{args.readers} cpu:half readers of {args.size} float32 values, dynamic step: "
          f"A a cast each {statistics.median(a):7.2f} ms  B one shared copy, compared "
          f"{statistics.median(b):7.2f} ms  C one shared copy, compared only after a NumPy "
          f"hand-out {statistics.median(c):7.2f} ms")


if __name__ == "__main__":
    main()

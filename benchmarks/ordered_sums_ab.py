"""Cost of adding three or more readers' gradient parts in NNabla's order
(``graph/_ordered_sums.py``, nnhalf43) on the dynamic hot path, alternating in one process:

* ``A``: torch's sum (``ordered_sums`` patched out of the dynamic backward);
* ``B``: the parts caught on each reader's edges and added in NNabla's order.

Each step: ``--readers`` functions (``F.tanh``) on one float32 leaf of ``--size`` values, in
auto-forward mode, in float32 and in ``cpu:half``, and their sum's backward.

    PYTHONPATH=src python benchmarks/ordered_sums_ab.py [--size 65536] [--readers 4]
        [--rounds 7] [--threads 1]

Prints the median time of a step for A and B (ms).
"""

import argparse
import contextlib
import statistics

import numpy as np
import torch

import stadyn.compat.nnabla as nn
from stadyn.compat.nnabla.ext_utils import get_extension_context
from stadyn.graph import _autograd_backward

# (this script's folder is on sys.path when it runs: the siblings' timer and step)
from nnabla_half_copies_ab import _step
from nnabla_half_elementwise_ab import _median_ms


@contextlib.contextmanager
def _torch_sum(*_):
    yield {}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1 << 16)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--contexts", default="float,half")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    nn.set_auto_forward(True)
    ordered = _autograd_backward.ordered_sums
    try:
        for name in args.contexts.split(","):
            ctx = get_extension_context("cpu", type_config=name)
            x = nn.Variable.from_numpy_array(
                np.random.RandomState(0).randn(args.size).astype(np.float32), need_grad=True)
            a, b = [], []
            for _ in range(args.rounds):
                _autograd_backward.ordered_sums = _torch_sum
                a.append(_median_ms(lambda: _step(x, args.readers, ctx), 15))
                _autograd_backward.ordered_sums = ordered
                b.append(_median_ms(lambda: _step(x, args.readers, ctx), 15))
            print(f"{name}: {args.readers} readers of {args.size} values, dynamic step: "
                  f"A torch's sum {statistics.median(a):7.2f} ms  B NNabla's order "
                  f"{statistics.median(b):7.2f} ms")
    finally:
        _autograd_backward.ordered_sums = ordered
        nn.set_auto_forward(False)


if __name__ == "__main__":
    main()

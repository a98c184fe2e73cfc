"""Cost of adding three or more readers' gradient parts in NNabla's order
(``graph/_ordered_sums.py``, nnhalf43) on the dynamic hot path, alternating in one process:

* ``A``: torch's sum (``ordered_sums`` patched out of the dynamic backward);
* ``B``: the parts caught on each reader's edges and added in NNabla's order.

Each step: ``--readers`` functions (``F.tanh``) on one float32 leaf of ``--size`` values, in
auto-forward mode, in float32 and in ``cpu:half``, and their sum's backward.

With ``--onto`` (nngrad44: the parts added onto the gradient the leaf holds, not zeroed
between the backwards, as a program accumulating gradients over several backwards):

* ``A``: the parts' sum added onto it (``ordered_sums(..., accumulate=False)``);
* ``B``: each part added onto it in NNabla's order (``accumulate=True``, two readers on).

    PYTHONPATH=src python benchmarks/ordered_sums_ab.py [--size 65536] [--readers 4]
        [--rounds 7] [--threads 1] [--onto]

Prints the median time of a step for A and B (ms).
"""

import argparse
import contextlib
import functools
import statistics

import numpy as np
import torch

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
from stadyn.compat.nnabla.ext_utils import get_extension_context
from stadyn.graph import _autograd_backward

# (this script's folder is on sys.path when it runs: the siblings' timer and step)
from nnabla_half_copies_ab import _step
from nnabla_half_elementwise_ab import _median_ms


@contextlib.contextmanager
def _torch_sum(*_):
    yield {}


def _onto_step(x, readers, ctx):
    with nn.context_scope(ctx):
        y = F.tanh(x)
        for _ in range(readers - 1):
            y = y + F.tanh(x)
    y.backward(clear_buffer=True)


def _summed(ordered, *args, accumulate=False):
    return ordered(*args, accumulate=False)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1 << 16)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--contexts", default="float,half")
    parser.add_argument("--onto", action="store_true")
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
            first = functools.partial(_summed, ordered) if args.onto else _torch_sum
            step = _onto_step if args.onto else _step
            for _ in range(args.rounds):
                _autograd_backward.ordered_sums = first
                a.append(_median_ms(lambda: step(x, args.readers, ctx), 15))
                _autograd_backward.ordered_sums = ordered
                b.append(_median_ms(lambda: step(x, args.readers, ctx), 15))
            what = ("A the sum added onto .g", "B each part onto .g") if args.onto else \
                ("A torch's sum", "B NNabla's order")
            print(f"{name}: {args.readers} readers of {args.size} values, dynamic step: "
                  f"{what[0]} {statistics.median(a):7.2f} ms  {what[1]} "
                  f"{statistics.median(b):7.2f} ms")
    finally:
        _autograd_backward.ordered_sums = ordered
        nn.set_auto_forward(False)


if __name__ == "__main__":
    main()

"""A/B in one run: what ``graph/_precision.cast_for_node`` costs per dynamic op call, as it
was at 1154ef55 (every node bound to a float context, as each of compat.nnabla's functions is,
had its arguments walked through ``cast_arguments("float", ...)``: new lists and dicts each call)
and as it is now (returning at once unless the bound context is a half one or an argument is
fp16/bf16).

    python benchmarks/cast_for_node_ab.py [--calls 20000] [--rounds 5]

Times ``cast_for_node`` alone on an NNabla node's arguments (two (4, 4) float32 tensors and a
keyword), and whole dynamic op calls (``x * y`` of compat.nnabla Variables in
``auto_forward``, through ``graph/_apply.py``) with either version installed, the two taking
turns each round; reports the median over rounds, in microseconds per call, by process CPU
time.  The results hold for the machine it runs on: rerun both in the same run to compare.
"""

import argparse
import statistics
import time

import numpy as np
import torch

import stadyn.compat.nnabla as nn
import stadyn.graph._apply as _apply
from stadyn.graph._precision import cast_arguments, cast_for_node, half_of


def cast_for_node_1154ef55(node, current, args, kwargs):
    """``cast_for_node`` as it was at 1154ef55."""
    half = half_of(node, current)
    if half is not None:
        return cast_arguments(node.spec.precision, args, kwargs, half)
    if node.context is not None:
        return cast_arguments("float", args, kwargs, torch.float32)
    return args, kwargs


VERSIONS = {"1154ef55": cast_for_node_1154ef55, "now": cast_for_node}


def time_cast(fn, node, calls):
    args, kwargs = [torch.zeros(4, 4), torch.ones(4, 4)], {"alpha": 1.0}
    start = time.process_time()
    for _ in range(calls):
        fn(node, None, args, kwargs)
    return (time.process_time() - start) / calls * 1e6


def time_ops(fn, x, y, calls):
    _apply.cast_for_node = fn
    try:
        start = time.process_time()
        for _ in range(calls):
            x * y
        return (time.process_time() - start) / calls * 1e6
    finally:
        _apply.cast_for_node = cast_for_node


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    nn.set_auto_forward(True)
    x = nn.Variable.from_numpy_array(np.ones((4, 4), np.float32), need_grad=True)
    y = nn.Variable.from_numpy_array(np.ones((4, 4), np.float32))
    node = (x * y).parent
    assert node.context is not None, "an NNabla function's node is bound to its context"
    cast = {k: [] for k in VERSIONS}
    ops = {k: [] for k in VERSIONS}
    for _ in range(opts.rounds):
        for name, fn in VERSIONS.items():
            cast[name].append(time_cast(fn, node, opts.calls))
            ops[name].append(time_ops(fn, x, y, opts.calls // 4))
    nn.set_auto_forward(False)
    print(f"{'version':<10} {'cast_for_node us':>17} {'x * y dynamic us':>17}")
    for name in VERSIONS:
        print(f"{name:<10} {statistics.median(cast[name]):>17.2f} "
              f"{statistics.median(ops[name]):>17.2f}")


if __name__ == "__main__":
    main()

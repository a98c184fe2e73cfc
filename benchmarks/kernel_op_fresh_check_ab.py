"""A/B in one run: what the check that a ``kernel_op`` kernel returns memory of its own
(``ops/_kernel_op.py``, ``_fresh_results``) costs per call.

    PYTHONPATH=src python benchmarks/kernel_op_fresh_check_ab.py [--calls 20000] [--rounds 5]

Defines the same small kernel twice, ``B`` through ``kernel_op`` (checked) and ``A`` with the
check left out (``_fresh_results`` replaced by the identity while it is defined), and calls
each eagerly on a (4, 4) float32 tensor and on a list of three such tensors (a kernel with
three results), the two alternating, ``rounds`` times each.  Reports the median over rounds
of the time per call, in microseconds, and B - A.  The results hold for the machine it runs
on.
"""

import argparse
import statistics
import time

import torch

from stadyn.ops import _kernel_op


def _define(tag: str, checked: bool):
    keep = _kernel_op._fresh_results
    if not checked:
        _kernel_op._fresh_results = lambda qualname, fn: fn
    try:
        one = _kernel_op.kernel_op(f"stadyn_kernels::bench_fresh_one_{tag}",
                                   "(Tensor x) -> Tensor",
                                   lambda x: x * 2.0, lambda x: torch.empty_like(x))
        three = _kernel_op.kernel_op(
            f"stadyn_kernels::bench_fresh_three_{tag}",
            "(Tensor[] xs) -> (Tensor, Tensor, Tensor)",
            lambda xs: tuple(x * 2.0 for x in xs),
            lambda xs: tuple(torch.empty_like(x) for x in xs))
    finally:
        _kernel_op._fresh_results = keep
    return one, three


def _per_call(fn, arg, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn(arg)
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ops = {"A": _define("a", False), "B": _define("b", True)}
    x, xs = torch.ones(4, 4), [torch.ones(4, 4) for _ in range(3)]
    times = {(k, which): [] for k in ops for which in ("one", "three")}
    for _ in range(args.rounds):
        for k, (one, three) in ops.items():
            times[k, "one"].append(_per_call(one, x, args.calls))
            times[k, "three"].append(_per_call(three, xs, args.calls))
    for which in ("one", "three"):
        a, b = (statistics.median(times[k, which]) for k in ("A", "B"))
        print(f"{which} result(s): A (unchecked) {a:.2f} us, B (checked) {b:.2f} us, "
              f"B - A {b - a:+.2f} us per call")


if __name__ == "__main__":
    main()

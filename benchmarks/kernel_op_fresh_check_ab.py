"""A/B/C in one run: what the check that a ``kernel_op`` kernel returns memory of its own
(``ops/_kernel_op.py``, ``_fresh_results``) costs per call.

    PYTHONPATH=src python benchmarks/kernel_op_fresh_check_ab.py [--calls 2000] [--rounds 60]

Defines the same small kernels three times through ``kernel_op``: ``A`` with the check left out
(``_fresh_results`` replaced by the identity while they are defined), ``B`` with the check as
it was at bdf62809 (``_every_call_bdf62809`` below: lists of addresses and sets on every call),
``C`` with this tree's check.  Each is called eagerly on a (4, 4) float32 tensor (one result),
on a list of three (three results) and on a batch-norm-like call of five tensors and three
scalars (three results), the variants taking turns, ``rounds`` times each.  Reports the best
and the median over rounds of the time per call in microseconds, and B - A, C - A (the best
rounds are the steadier figure on a loaded machine).  The results hold for the machine it runs
on.
"""

import argparse
import functools
import statistics
import time

import torch

from stadyn.ops import _kernel_op


def _every_call_bdf62809(qualname, fn):
    """The check as bdf62809 made it, for ``B``."""
    def addresses(values):
        found = []
        for v in values:
            if isinstance(v, torch.Tensor):
                found.append(v.untyped_storage().data_ptr())
            elif isinstance(v, (list, tuple)):
                found += [t.untyped_storage().data_ptr() for t in v
                          if isinstance(t, torch.Tensor)]
        return [address for address in found if address]

    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        result = fn(*args, **kwargs)
        produced = addresses(result if isinstance(result, tuple) else (result,))
        if produced and (len(set(produced)) < len(produced) or not set(produced).isdisjoint(
                addresses(args) + addresses(kwargs.values()))):
            raise RuntimeError(f"{qualname}: a result shares memory")
        return result
    return kernel


WRAPPERS = {"A": lambda qualname, fn: fn, "B": _every_call_bdf62809, "C": None}


def _define(tag: str):
    keep = _kernel_op._fresh_results
    if WRAPPERS[tag.upper()] is not None:
        _kernel_op._fresh_results = WRAPPERS[tag.upper()]
    try:
        one = _kernel_op.kernel_op(f"stadyn_kernels::bench_fresh_one_{tag}",
                                   "(Tensor x) -> Tensor",
                                   lambda x: x * 2.0, lambda x: torch.empty_like(x))
        three = _kernel_op.kernel_op(
            f"stadyn_kernels::bench_fresh_three_{tag}",
            "(Tensor[] xs) -> (Tensor, Tensor, Tensor)",
            lambda xs: tuple(x * 2.0 for x in xs),
            lambda xs: tuple(torch.empty_like(x) for x in xs))
        norm = _kernel_op.kernel_op(
            f"stadyn_kernels::bench_fresh_norm_{tag}",
            "(Tensor x, Tensor? w, Tensor? b, Tensor m, Tensor v, float eps, float keep, "
            "bool flag) -> (Tensor, Tensor, Tensor)",
            lambda x, w, b, m, v, eps, keep, flag: (x * 2.0, m * 2.0, v * 2.0),
            lambda x, w, b, m, v, eps, keep, flag: (torch.empty_like(x), torch.empty_like(m),
                                                    torch.empty_like(v)))
    finally:
        _kernel_op._fresh_results = keep
    return {"one": one, "three": three, "norm": norm}


def _per_call(fn, args, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(1)
    ops = {k: _define(k.lower()) for k in WRAPPERS}
    inputs = {"one": (torch.ones(4, 4),), "three": ([torch.ones(4, 4) for _ in range(3)],),
              "norm": (torch.ones(8, 4, 3, 3), *[torch.ones(1, 4, 1, 1) for _ in range(4)],
                       1e-5, 0.9, True)}
    times = {(k, which): [] for k in ops for which in inputs}
    for _ in range(args.rounds):
        for which, call_args in inputs.items():
            for k in ops:
                times[k, which].append(_per_call(ops[k][which], call_args, args.calls))
    print("us per call (best / median of %d rounds of %d calls), 1 thread"
          % (args.rounds, args.calls))
    for which in inputs:
        best = {k: min(times[k, which]) for k in ops}
        med = {k: statistics.median(times[k, which]) for k in ops}
        print(f"{which:6s} A unchecked {best['A']:6.2f} / {med['A']:6.2f}   "
              f"B bdf62809 {best['B']:6.2f} / {med['B']:6.2f} (B - A {best['B'] - best['A']:+.2f}"
              f" / {med['B'] - med['A']:+.2f})   C this tree {best['C']:6.2f} / {med['C']:6.2f} "
              f"(C - A {best['C'] - best['A']:+.2f} / {med['C'] - med['A']:+.2f})")


if __name__ == "__main__":
    main()

"""What one reseed costs: ``torch.manual_seed`` against ``stadyn._random.seed_torch`` (which
``sd.seed`` and ``nnabla.random.seed`` call), A/B in one process, at several call-stack depths.

    PYTHONPATH=src python benchmarks/seed_cost.py [--calls 200] [--depths 5 50 120]

On a torch built without an accelerator ``torch.manual_seed`` queues CUDA/XPU/MTIA seeding with
``traceback.format_stack()`` of its caller, so its cost grows with the stack's depth (a test
under pytest, or the compat harness, is 60-120 frames down); ``seed_torch`` seeds the CPU
generator only there.  With an accelerator in the build both are ``torch.manual_seed``.
Prints ms per call (median of 5 rounds) for each depth.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from stadyn._random import seed_torch


def _at_depth(depth: int, work):
    return _at_depth(depth - 1, work) if depth > 0 else work()


def _per_call(seeder, calls: int) -> float:
    start = time.perf_counter()
    for i in range(calls):
        seeder(i)
    return (time.perf_counter() - start) / calls * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--depths", type=int, nargs="+", default=[5, 50, 120])
    args = parser.parse_args()
    print(f"torch {torch.__version__}, accelerator: {torch.accelerator.current_accelerator()}")
    print(f"{'depth':>6} {'torch.manual_seed ms':>21} {'seed_torch ms':>14}")
    for depth in args.depths:
        rounds = {"manual_seed": [], "seed_torch": []}
        for _ in range(5):   # interleaved, so a busy machine disturbs both alike
            rounds["manual_seed"].append(
                _at_depth(depth, lambda: _per_call(torch.manual_seed, args.calls)))
            rounds["seed_torch"].append(
                _at_depth(depth, lambda: _per_call(seed_torch, args.calls)))
        print(f"{depth:>6} {statistics.median(rounds['manual_seed']):>21.4f} "
              f"{statistics.median(rounds['seed_torch']):>14.4f}")


if __name__ == "__main__":
    main()

"""What CNTK 2.7's own random numbers cost: a (64, 1024) dropout mask, uniform and normal draw
from a ``stadyn.ops.CNTKStream`` (compat.cntk's Functions: NumPy's ``std::mt19937_64`` and
Boost's distributions, bit for bit CNTK's) against the same draw from a torch-generator
``RandomStream`` (what compat.cntk drew before, and what ``stadyn.functions``' ops draw), and
``discard`` (what loading a CNTK file at an offset pays first: the first in a process, which
finds the engine's polynomial for its jump, and another).

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/cntk_draws.py [--repeat 50]

Median milliseconds per call of the op's implementation (no graph around it).  No timing is
asserted anywhere; this is a measurement to read.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import stadyn.functions as F
from stadyn._mt19937 import MT19937_64
from stadyn.ops import CNTKStream, RandomStream


def _median_ms(fn, repeat: int) -> float:
    fn()                                    # (warm: the engine made, the op's first call)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    x = torch.ones(64, 1024)
    dropout, rand, randn = F.dropout.spec.impl, F.rand_like.spec.impl, F.randn_like.spec.impl
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); (64, 1024) float32")
    for name, make in (("CNTKStream (CNTK 2.7's numbers)", CNTKStream),
                       ("RandomStream (torch's mt19937)", RandomStream)):
        mask = _median_ms(lambda s=make(3): dropout(x, 0.3, seed=s), args.repeat)
        uniform = _median_ms(lambda s=make(5): rand(x, seed=s), args.repeat)
        normal = _median_ms(lambda s=make(4): randn(x, seed=s), args.repeat)
        print(f"{name:34s} dropout {mask:7.2f} ms   uniform {uniform:7.2f} ms   "
              f"normal {normal:7.2f} ms")
    for count in (10 ** 7, 10 ** 7 + 1, 10 ** 9):
        rng = MT19937_64(5)
        start = time.perf_counter()
        rng.discard(count)
        print(f"MT19937_64.discard({count}): {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()

"""What CNTK 2.7's own random numbers cost: a (64, 1024) dropout mask and a (64, 1024) normal
draw from a ``stadyn.ops.CNTKStream`` (compat.cntk's Functions: NumPy's ``std::mt19937_64``
and Boost's distributions, bit for bit CNTK's) against the same draw from a torch-generator
``RandomStream`` (what compat.cntk drew before, and what ``stadyn.functions``' ops draw), and
``discard`` (what loading a CNTK file at an offset pays first).

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
    dropout, randn = F.dropout.spec.impl, F.randn_like.spec.impl
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); (64, 1024) float32")
    for name, make in (("CNTKStream (CNTK 2.7's numbers)", CNTKStream),
                       ("RandomStream (torch's mt19937)", RandomStream)):
        mask = _median_ms(lambda s=make(3): dropout(x, 0.3, seed=s), args.repeat)
        normal = _median_ms(lambda s=make(4): randn(x, seed=s), args.repeat)
        print(f"{name:34s} dropout {mask:7.2f} ms   normal {normal:7.2f} ms")
    rng = MT19937_64(5)
    start = time.perf_counter()
    rng.discard(10 ** 7)
    print(f"MT19937_64.discard(10**7): {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()

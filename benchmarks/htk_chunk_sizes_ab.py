"""A/B of an HTK feature deserializer's ``chunk_sizes()``, which a randomized source's
``load_chunks`` asks for before every minibatch: counted off in Python on every call (as at
1094fd0e, copied here) against computed once when the utterances are chosen (now), in one
process.

    PYTHONPATH=src python benchmarks/htk_chunk_sizes_ab.py --utterances 200000

Utterance lengths are drawn from 100 to 1,499 frames (seed 0); both give the same chunks.
"""

import argparse
import time

import numpy as np

from stadyn.io._htk_deserializer import _chunks_of


def _per_call(lengths: np.ndarray) -> np.ndarray:
    sizes: list[int] = []
    frames = 0
    for n in lengths.tolist():
        if not sizes or frames > 90000:
            sizes.append(0)
            frames = 0
        sizes[-1] += 1
        frames += n
    return np.array(sizes, dtype=np.int64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utterances", type=int, default=200000)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    lengths = np.random.RandomState(0).randint(100, 1500, args.utterances)
    t = time.perf_counter()
    cached = _chunks_of(lengths.tolist(), None)
    once = time.perf_counter() - t
    assert (cached == _per_call(lengths)).all()
    t = time.perf_counter()
    for _ in range(args.calls):
        _per_call(lengths)
    before = (time.perf_counter() - t) / args.calls
    print(f"{args.utterances} utterances, {len(cached)} chunks: per call (1094fd0e) "
          f"{before * 1e3:.2f} ms a minibatch; now {once * 1e3:.2f} ms once, then an "
          f"attribute read")


if __name__ == "__main__":
    main()

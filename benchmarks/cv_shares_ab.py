"""A/B of the share counting a distributed cvReader's validation pass does on rank 0 (stadyn
train --nproc N): each pass opening a source for each worker and reading its share (as at
a113996d, copied here) against :class:`stadyn.brainscript._command_network.SharedMinibatches`
(each share's source opened once, set back each pass, a count made once for the first pass and
once for the later ones: from the sequences' lengths, ``io.count_minibatches``; and as at
028da7d8, by reading the shares' minibatches), beside one read of the whole set (what the
pass's evaluation reads anyway), in one process.

    PYTHONPATH=src python benchmarks/cv_shares_ab.py --sequences 20000 --workers 2 --passes 5

The set: sequences of 1-4 samples of 40-dim dense features, randomized (seed 11, a window of 4
chunks of 256 KB).  Both give the same count in the first pass.
"""

import argparse
import tempfile
import time
from pathlib import Path

from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._command_network import SharedMinibatches
from stadyn.brainscript._readers import make_source


def _old(reader, workers: int, minibatch_size: int) -> int:
    most = 0
    for rank in range(workers):
        source = make_source(reader, max_sweeps=1, evaluating=True)
        try:
            count = 0
            while source.next_minibatch(minibatch_size, num_data_partitions=workers,
                                        partition_index=rank):
                count += 1
        finally:
            source.close()
        most = max(most, count)
    return most


def _read_shares(reader, workers: int, passes: int, minibatch_size: int) -> list[int]:
    """SharedMinibatches as at 028da7d8: each share's source opened once, set back each pass,
    and its minibatches read (decoded) to count them."""
    sources = [make_source(reader, max_sweeps=1, evaluating=True, set_back=True)
               for _ in range(workers)]
    starts = [s.get_checkpoint_state() for s in sources]
    counts: dict[bool, int] = {}
    for p in range(passes):
        if (p > 0) in counts:
            continue
        most = 0
        for rank, (source, start) in enumerate(zip(sources, starts)):
            source.restore_from_checkpoint(start)
            count = 0
            while source.next_minibatch(minibatch_size, num_data_partitions=workers,
                                        partition_index=rank):
                count += 1
            most = max(most, count)
        counts[p > 0] = most
    for s in sources:
        s.close()
    return [counts[p > 0] for p in range(passes)]


def _whole(reader, minibatch_size: int) -> int:
    source = make_source(reader, max_sweeps=1, evaluating=True)
    count = sum(1 for _ in iter(lambda: source.next_minibatch(minibatch_size), {}))
    source.close()
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--minibatch", type=int, default=256)
    args = parser.parse_args()
    path = Path(tempfile.mkdtemp()) / "cv.ctf"
    feats = " ".join("0.5" for _ in range(40))
    path.write_text("".join(f"{k} |x {feats}\n" * (1 + (7 * k) % 4)
                            for k in range(args.sequences)))
    reader = reader_config(parse_config(f"""cv = [ readerType = "CNTKTextFormatReader"
        file = "{path}" ; randomize = true ; randomizationSeed = 11
        randomizationWindow = 4 ; chunkSizeInBytes = 262144
        input = [ x = [ dim = 40 ; format = "dense" ] ] ]""")["cv"])
    t = time.perf_counter()
    _whole(reader, args.minibatch)
    whole = time.perf_counter() - t
    t = time.perf_counter()
    old = [_old(reader, args.workers, args.minibatch) for _ in range(args.passes)]
    before = time.perf_counter() - t
    t = time.perf_counter()
    read = _read_shares(reader, args.workers, args.passes, args.minibatch)
    reading = time.perf_counter() - t
    t = time.perf_counter()
    shares = SharedMinibatches(reader, args.workers, evaluating=True)
    new = [shares.most(args.minibatch) for _ in range(args.passes)]
    shares.close()
    after = time.perf_counter() - t
    assert old[0] == new[0] and read == new
    print(f"{args.sequences} sequences, {args.workers} workers, {args.passes} passes")
    print(f"  one read of the whole set:          {whole:8.3f} s")
    print(f"  share counting, fresh sources/pass: {before:8.3f} s  counts {old}")
    print(f"  share counting, shares read (at 028da7d8): {reading:8.3f} s  counts {read}")
    print(f"  share counting, SharedMinibatches:  {after:8.3f} s  counts {new}")


if __name__ == "__main__":
    main()

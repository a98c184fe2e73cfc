"""A/B of reading a CTF file through ``stadyn.compat.cntk``'s ``MinibatchSource``: parsing a
sequence's whole chunk at the first read from it (as CNTK 2.7's text reader loads a chunk,
``CTFDeserializer._whole_chunks = True``) against parsing each sequence when it is read
(``False``), by process CPU time, in one process.

    PYTHONPATH=src python benchmarks/ctf_chunk_parse_ab.py --rounds 5
    PYTHONPATH=src python benchmarks/ctf_chunk_parse_ab.py --rounds 5 --workers 2

The file (``--sequences`` sequences of 3 lines, a dense input of 20 values and a sparse label
of dimension 10 on the first line) is cut into chunks of ``--chunk-bytes`` bytes.  A round
reads one sweep with each setting (the order alternates between rounds), unrandomized and
randomized, in minibatches of 256 samples, no workers; the report gives each setting's median
CPU seconds per sweep and the median and range of the rounds' B/A (B: whole chunks).  With
``--workers N`` the sweeps read through N worker processes (each job's worker parses the
chunks no earlier job was given whole first; randomized, each worker reads the rows of the
chunks it owns, chunk % N, and reads them whole once) and the times are wall-clock seconds,
the workers' start included (file order: each job the rest of a chunk, read by the worker
that reads the chunk whole); ``--orders file`` or ``randomized`` runs one of the two; with
``--start-method spawn`` the workers are this process's
children and the report adds the CPU B/A, theirs included (a chunk parsed twice shows there
whatever else the machine runs).
"""

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import stadyn.compat.cntk as C  # noqa: E402
from stadyn.io import CTFDeserializer  # noqa: E402


def write_file(path, sequences):
    rng = np.random.RandomState(0)
    with open(path, "w") as f:
        for s in range(sequences):
            for t in range(3):
                values = " ".join("%.4f" % v for v in rng.randn(20))
                label = " |y %d:1" % (s % 10) if t == 0 else ""
                f.write("%d |x %s%s\n" % (s, values, label))


def _cpu():
    """CPU seconds of this process and of its ended (waited for) children."""
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + child.ru_utime + child.ru_stime


def sweep(path, chunk_bytes, randomize, workers=0, start_method=None):
    """(seconds, CPU seconds) of one sweep: seconds are CPU in one process, wall-clock with
    workers; CPU counts the workers' where they are this process's children ('spawn')."""
    d = C.io.CTFDeserializer(path, C.io.StreamDefs(
        x=C.io.StreamDef(field="x", shape=20), y=C.io.StreamDef(field="y", shape=10,
                                                                 is_sparse=True)))
    d["chunkSizeInBytes"] = chunk_bytes
    clock = time.perf_counter if workers else time.process_time
    start, cpu = clock(), _cpu()
    with C.io.MinibatchSource(d, randomize=randomize, max_sweeps=1, num_workers=workers,
                              start_method=start_method) as src:
        while src.next_minibatch(256):
            pass
    return clock() - start, _cpu() - cpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sequences", type=int, default=20000)
    parser.add_argument("--chunk-bytes", type=int, default=1 << 20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--orders", choices=("both", "file", "randomized"), default="both",
                        help="which reads: file order, randomized or both")
    parser.add_argument("--start-method", default=None,
                        help="the workers' ('spawn': their CPU is counted too)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "data.ctf")
        write_file(path, args.sequences)
        print(f"{os.path.getsize(path) / 2**20:.1f} MiB, {args.sequences} sequences, chunks of "
              f"{args.chunk_bytes} bytes")
        for randomize in {"both": (False, True), "file": (False,),
                          "randomized": (True,)}[args.orders]:
            times = {False: [], True: []}
            ratios, cpu_ratios = [], []
            for r in range(args.rounds):
                got = {}
                for whole in ((False, True) if r % 2 == 0 else (True, False)):
                    CTFDeserializer._whole_chunks = whole
                    got[whole] = sweep(path, args.chunk_bytes, randomize, args.workers,
                                       args.start_method)
                    times[whole].append(got[whole][0])
                ratios.append(got[True][0] / got[False][0])
                cpu_ratios.append(got[True][1] / got[False][1])
            print(f"randomize={randomize}: A (on demand) {statistics.median(times[False]):.3f} s, "
                  f"B (whole chunks) {statistics.median(times[True]):.3f} s, B/A median "
                  f"{statistics.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f})"
                  + (f"; CPU B/A median {statistics.median(cpu_ratios):.3f} (range "
                     f"{min(cpu_ratios):.3f}-{max(cpu_ratios):.3f})" if args.workers and
                     args.start_method == "spawn" else ""))


if __name__ == "__main__":
    main()

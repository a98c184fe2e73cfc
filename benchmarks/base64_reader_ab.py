"""A/B of reading base64 images through ``stadyn.compat.cntk``'s ``MinibatchSource`` between
two source trees, by process CPU time: what marking undecodable images (and removing the
marked rows, ``INVALID_ROWS``) costs a file that has none.

    git archive OLD src | tar -x -C /tmp/a && git archive NEW src | tar -x -C /tmp/b
    python benchmarks/base64_reader_ab.py /tmp/a/src /tmp/b/src --rounds 6

A round starts one process per tree (the order alternates between rounds); each reads
``--sweeps`` sweeps of ``--images`` 32x32 PNGs in minibatches of 64 (no randomization, no
workers) and reports the CPU seconds per sweep (median of its sweeps).  The report gives each
tree's median over rounds and the median and range of the rounds' B/A.
"""

import argparse
import base64
import os
import statistics
import subprocess
import sys
import tempfile
import time


def worker(path, sweeps):
    import stadyn.compat.cntk as C
    streams = C.io.StreamDefs(features=C.io.StreamDef(field="image", transforms=[]),
                              labels=C.io.StreamDef(field="label", shape=10))
    times = []
    for _ in range(sweeps):
        src = C.io.MinibatchSource(C.io.Base64ImageDeserializer(path, streams),
                                   randomize=False, max_sweeps=1)
        start = time.process_time()
        while src.next_minibatch(64):
            pass
        times.append(time.process_time() - start)
    print(statistics.median(times))


def write_file(path, images):
    import numpy as np

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    from stadyn.io import encode_image
    rng = np.random.RandomState(0)
    with open(path, "w") as f:
        for i in range(images):
            png = encode_image(rng.randint(0, 256, (32, 32, 3), dtype=np.uint8))
            f.write(f"{i % 10}\t{base64.b64encode(png).decode()}\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--sweeps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--worker", nargs=2)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]))
        return
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "images.txt")
    write_file(path, args.images)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    figures = {"a": [], "b": []}
    ratios = []
    for r in range(args.rounds):
        got = {}
        for tree in (("a", "b") if r % 2 == 0 else ("b", "a")):
            out = subprocess.run(
                [sys.executable, __file__, "x", "x", "--worker", path, str(args.sweeps)],
                env=dict(env, PYTHONPATH=getattr(args, tree)), check=True,
                capture_output=True, text=True).stdout
            got[tree] = float(out.split()[-1])
            figures[tree].append(got[tree])
        ratios.append(got["b"] / got["a"])
    print(f"{args.images} base64 PNGs, 32x32, minibatches of 64: CPU s per sweep "
          f"A {statistics.median(figures['a']):.4f}, B {statistics.median(figures['b']):.4f}; "
          f"B/A median {statistics.median(ratios):.3f} (rounds {min(ratios):.3f}-"
          f"{max(ratios):.3f})")


if __name__ == "__main__":
    main()

"""Wall time of building an Elman recurrence through ``stadyn.compat.cntk`` (or the real CNTK):
``d = Dense(3); Recurrence(lambda h, x: d(splice(h, x)))`` made and applied to a sequence of
steps of ``(4,)`` (``build``), and the same layer applied to a second sequence (``again``),
whose state Stadyn finds by applying the step's layer dry (``_dry_layers``).

    PYTHONPATH=src python benchmarks/cntk_elman_build.py [--tree PATH ...] [--rounds 5]
    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python \
        benchmarks/cntk_elman_build.py --worker cntk

Each tree (a source tree, put first on ``PYTHONPATH`` as its ``src``; by default this one) is
timed in fresh processes (this file is the worker: ``--worker stadyn``), the trees alternating
within every round so a shared machine's load falls on both alike; each worker builds 3 times
to warm up, then 20, and reports the medians in ms; the numbers are medians over the rounds.
Parses under Python 3.6 (CNTK 2.7's).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def _worker(framework):
    if framework == "cntk":
        import cntk as C
    else:
        import stadyn.compat.cntk as C

    def build():
        x = C.sequence.input_variable(4)
        d = C.layers.Dense(3)
        t0 = time.perf_counter()
        layer = C.layers.Recurrence(lambda h, v: d(C.splice(h, v)))
        layer(x)
        t1 = time.perf_counter()
        layer(C.sequence.input_variable(4))
        return t1 - t0, time.perf_counter() - t1
    for _ in range(3):
        build()
    times = [build() for _ in range(20)]
    print(json.dumps({"build": 1000 * statistics.median(t[0] for t in times),
                      "again": 1000 * statistics.median(t[1] for t in times)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", nargs="*", default=[os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--worker", choices=("stadyn", "cntk"))
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker)
        return
    got = {tree: [] for tree in args.tree}
    for _ in range(args.rounds):
        for tree in args.tree:
            env = dict(os.environ, PYTHONPATH=os.path.join(tree, "src"), OMP_NUM_THREADS="1")
            out = subprocess.run([sys.executable, "-W", "ignore", __file__, "--worker",
                                  "stadyn"], env=env, check=True, stdout=subprocess.PIPE)
            got[tree].append(json.loads(out.stdout.decode().strip().splitlines()[-1]))
    for tree, rows in got.items():
        print("%s: build %.1f ms, again %.1f ms" % (
            tree, statistics.median(r["build"] for r in rows),
            statistics.median(r["again"] for r in rows)))


if __name__ == "__main__":
    main()

"""A/B of one-off CNTK evaluations between two source trees: new Functions built and evaluated
once each, by process CPU time.

    git worktree add --detach /tmp/a OLD && git worktree add --detach /tmp/b NEW
    python benchmarks/first_evaluation_ab.py /tmp/a/src /tmp/b/src --rounds 5

Each round starts fresh processes per tree (A, then B; the order alternates between rounds),
one per loop.  A process imports ``stadyn.compat.cntk`` and times one loop of ``--evals``
Functions, each built anew and evaluated once, by process CPU time from the first Function
on (what a notebook's cells pay after the import, the one-time costs of a first graph and of a
first build -- torch's lazy imports -- included):

* ``two structures``: the two structures taking turns, ``relu(x * 2 + 1)`` and ``tanh(x)``;
* ``new structures``: each Function of a structure of its own (``g(h(x))`` for a new pair of
  elementwise ops), as the cases of ``tests/compat`` are.

It reports the loop's CPU seconds and how many plans were built (``_runner.build_plan``); the
report gives, per loop, the median over rounds for each tree and B over A.
``OMP_NUM_THREADS=1``.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def worker(loop: str, evals: int) -> None:
    import itertools

    import numpy as np

    import stadyn.compat.cntk as C
    from stadyn.graph import _runner

    built = []
    original = _runner.build_plan
    _runner.build_plan = lambda *a, **k: built.append(1) or original(*a, **k)
    x = C.input_variable(3)
    data = np.full((1, 3), 0.5, np.float32)
    ops = [C.tanh, C.sigmoid, C.relu, C.exp, C.abs, C.negate, C.square, C.sqrt]
    pairs = list(itertools.permutations(ops, 2))
    start = time.process_time()
    for i in range(evals):
        if loop == "two structures":
            f = C.relu(x * 2 + 1) if i % 2 else C.tanh(x)
        else:
            g, h = pairs[i % len(pairs)]
            f = g(h(x))
        f.eval({x: data})
    print(json.dumps([time.process_time() - start, len(built)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", help="the two src/ folders, A then B")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--evals", type=int, default=20)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.evals)
        return
    a, b = args.trees
    loops = ("two structures", "new structures")
    results: dict = {(tree, loop): [] for tree in (a, b) for loop in loops}
    for r in range(args.rounds):
        for tree in ((a, b) if r % 2 == 0 else (b, a)):
            for loop in loops:
                env = dict(os.environ, PYTHONPATH=tree, OMP_NUM_THREADS="1")
                proc = subprocess.run([sys.executable, __file__, "--worker", loop, "--evals",
                                       str(args.evals)], env=env, capture_output=True,
                                      text=True, check=True)
                results[tree, loop].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    for loop in loops:
        ta, tb = (statistics.median(s for s, _ in results[tree, loop]) for tree in (a, b))
        na, nb = results[a, loop][0][1], results[b, loop][0][1]
        print(f"{loop} ({args.evals} evals): A {ta * 1e3:.1f} ms CPU, {na} builds; "
              f"B {tb * 1e3:.1f} ms CPU, {nb} builds; B/A {tb / ta:.3f}")

if __name__ == "__main__":
    main()

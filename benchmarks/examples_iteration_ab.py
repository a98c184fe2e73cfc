"""Seconds per iteration of nnabla-examples' MAML and PTB LSTM programs on two source trees.

    PYTHONPATH=src python benchmarks/examples_iteration_ab.py EXAMPLES --tree OLD NEW \
        [--runs maml lstm] [--counts 2 6] [--rounds 3]

EXAMPLES holds nnabla-examples' ``meta-learning/maml``, ``language-modeling/lstm`` and
``utils`` (a checkout, or ``git -C MIRROR archive HEAD meta-learning/maml
language-modeling/lstm utils | tar x -C EXAMPLES``).  Each measurement is one fresh process
running ``tests/examples/nnabla_examples_more.py --stadyn --only=RUN`` with the program's
iteration count set to one of ``--counts`` (MAML: ``--metatrain_iterations``; LSTM: ``-e``,
epochs of the driver's small PTB stand-in, 37 minibatches each, plus a validation pass), one
thread; its process CPU seconds (user + system of the child, which a shared machine disturbs
less than wall time) are read from ``getrusage``.  The seconds per iteration are the slope
between the two counts, so start-up, imports and the first builds drop out; ``total@LOW`` is
the whole process at the lower count (start-up and builds included).  The trees (source
trees, each put first on ``PYTHONPATH`` as its ``src``) alternate within every round; the
table gives medians over the rounds and each tree's ratio to the first tree.  Each run also
reports how many plans it built (``build_plan`` calls, counted by the worker).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The driver's own arguments, and how this benchmark sets the iteration count in them.
COUNT_FLAG = {"maml": ("--metatrain_iterations 2", "--metatrain_iterations {n}"),
              "lstm": ("-e 1", "-e {n}")}


def _worker(run, count, examples, work, out):
    """Run the driver in this process for ``run`` with ``count`` iterations; print the plans
    built."""
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, os.path.join(ROOT, "tests", "examples"))
    import nnabla_examples_more as driver
    old, new = COUNT_FLAG[run]
    driver.RUNS = [(r, p, a.replace(old, new.format(n=count))) for r, p, a in driver.RUNS
                   if r == run]
    from stadyn.graph import _runner
    built = []
    original = _runner.build_plan
    _runner.build_plan = lambda *a, **k: built.append(1) or original(*a, **k)
    driver.main([examples, work, out, "--stadyn", f"--only={run}"])
    with open(out) as f:
        error = json.load(f)[run]["error"]
    print(json.dumps({"builds": len(built), "error": error}))


def child_run(tree, script, args, what):
    """Run ``script`` with ``args`` in a fresh process on ``tree``'s ``src`` (one thread, from
    the repository's root); its process CPU seconds and the JSON it printed last, which must
    hold ``error`` (None, or the run exits naming ``what``)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0",
               PYTHONPATH=os.path.join(os.path.abspath(tree), "src"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, script, *args], env=env, capture_output=True,
                         text=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{what}: exit {out.returncode}\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if result["error"]:
        raise SystemExit(f"{what}: {result['error']}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), result


def _measure(tree, run, count, examples):
    with tempfile.TemporaryDirectory() as work:
        cpu, result = child_run(tree, os.path.abspath(__file__),
                                [examples, "--worker", run, str(count), os.path.join(work, "w"),
                                 os.path.join(work, "out.json")], f"{tree} {run} {count}")
    return cpu, result["builds"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples")
    parser.add_argument("--tree", nargs="+", default=[ROOT])
    parser.add_argument("--runs", nargs="+", default=["maml", "lstm"], choices=list(COUNT_FLAG))
    parser.add_argument("--counts", nargs=2, type=int, default=[2, 6])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    examples = os.path.abspath(args.examples)
    if args.worker:
        run, count, work, out = args.worker
        os.makedirs(work)
        return _worker(run, int(count), examples, work, out)
    low, high = args.counts
    rows = {(t, r): [] for r in args.runs for t in args.tree}
    totals = {(t, r): [] for r in args.runs for t in args.tree}
    builds = {}
    for _ in range(args.rounds):
        for r in args.runs:
            for t in args.tree:
                (a, ba), (b, bb) = (_measure(t, r, n, examples) for n in (low, high))
                rows[t, r].append((b - a) / (high - low))
                totals[t, r].append(a)
                builds[t, r] = (ba, bb)
    print("%-8s %-30s %12s %8s %10s %8s %14s  (process CPU s, 1 thread, median of %d rounds)"
          % ("run", "tree", "s/iteration", "ratio", f"total@{low}", "ratio",
             f"builds {low}/{high}", args.rounds))
    for r in args.runs:
        base = statistics.median(rows[args.tree[0], r])
        base_total = statistics.median(totals[args.tree[0], r])
        for t in args.tree:
            med, total = statistics.median(rows[t, r]), statistics.median(totals[t, r])
            print("%-8s %-30s %12.4f %8.3f %10.2f %8.3f %14s" % (
                r, t[-30:], med, med / base, total, total / base_total, "%d/%d" % builds[t, r]))


if __name__ == "__main__":
    main()

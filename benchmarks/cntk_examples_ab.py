"""Process CPU seconds of CNTK's ``Examples/`` programs run whole on two (or more) source trees.

    PYTHONPATH=src python benchmarks/cntk_examples_ab.py EXAMPLES --tree OLD NEW \
        [--runs sequence2sequence] [--rounds 3]

EXAMPLES is the folder ``tests/examples/cntk_examples.py`` reads (CNTK's ``Examples/``, from
``git archive HEAD Examples/...`` of a CNTK copy).  Each measurement is one fresh process
running that driver with ``--stadyn --only=RUN`` on one thread, from start-up to the end of the
program (imports, every plan build and run); its process CPU seconds (user + system of the
child, which a shared machine disturbs less than wall time) are read from ``getrusage``.  The
trees (each put first on ``PYTHONPATH`` as its ``src``) alternate within every round, the
order turning round by round; the table gives medians over the rounds, each tree's ratio to
the first, the plans each run built (``build_plan`` calls, counted by the worker) and whether
the program printed the same lines as on the first tree (its progress lines' timings aside).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile

from examples_iteration_ab import child_run     # (this folder is on the path when run)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# a progress line's own timing (``... 30.963s ( 24.4 samples/s);``): left out of the comparison
TIMING = re.compile(r" [\d.]+s \(\s*[\d.]+ samples/s\);$", re.M)


def _worker(run, examples, out):
    """Run the driver in this process for ``run``; print the plans built."""
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, os.path.join(ROOT, "tests", "examples"))
    import cntk_examples as driver
    from stadyn.graph import _runner
    built = []
    original = _runner.build_plan
    _runner.build_plan = lambda *a, **k: built.append(1) or original(*a, **k)
    driver.main([examples, out, "--stadyn", f"--only={run}"])
    with open(out) as f:
        result = json.load(f)[run]
    print(json.dumps({"builds": len(built), "error": result["error"],
                      "stdout": result["stdout"]}))


def _measure(tree, run, examples):
    with tempfile.TemporaryDirectory() as work:
        cpu, result = child_run(tree, os.path.abspath(__file__),
                                [examples, "--worker", run, os.path.join(work, "out.json")],
                                f"{tree} {run}")
    return cpu, result["builds"], TIMING.sub(";", result["stdout"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples")
    parser.add_argument("--tree", nargs="+", default=[ROOT])
    parser.add_argument("--runs", nargs="+", default=["sequence2sequence"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    examples = os.path.abspath(args.examples)
    if args.worker:
        return _worker(args.worker[0], examples, args.worker[1])
    seconds = {(t, r): [] for r in args.runs for t in args.tree}
    builds, printed = {}, {}
    for k in range(args.rounds):
        for r in args.runs:
            for t in (args.tree if k % 2 == 0 else args.tree[::-1]):
                cpu, builds[t, r], printed[t, r] = _measure(t, r, examples)
                seconds[t, r].append(cpu)
                sys.stderr.write(f"round {k + 1}: {r} {t}: {cpu:.1f} s\n")
    print("%-18s %-30s %10s %8s %7s %6s  (process CPU s, 1 thread, median of %d rounds)"
          % ("run", "tree", "seconds", "ratio", "builds", "same", args.rounds))
    for r in args.runs:
        base = statistics.median(seconds[args.tree[0], r])
        for t in args.tree:
            med = statistics.median(seconds[t, r])
            print("%-18s %-30s %10.2f %8.3f %7d %6s" % (
                r, t[-30:], med, med / base, builds[t, r],
                printed[t, r] == printed[args.tree[0], r]))


if __name__ == "__main__":
    main()

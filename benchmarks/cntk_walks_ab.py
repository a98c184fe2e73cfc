"""A/B in one run: compat.cntk's graph walks (``_graph.search``, ``walk_leaves``) on a model
of nested blocks, in two trees.

    PYTHONPATH=src python benchmarks/cntk_walks_ab.py [--base 91ee42a2] [--rounds 5] [--calls 20]

Each round runs one fresh process per tree, the trees taking turns (``--base``: that commit's
``src``, unpacked with ``git archive``; ``now``: this checkout's ``src``), on one torch thread.
A process builds a CNTK model of blocks holding blocks (an embedding, an LSTM recurrence, a
``Sequential`` of ``Dense`` layers applied twice, a ``Dense`` over both), then runs
``_graph.walk_leaves`` from its output ``10 * --calls`` times, and ``--calls`` times asks what
walks the graph through the API: ``parameters``, ``arguments``, ``constants``,
``find_all_with_name`` and ``logging.graph.depth_first_search`` at depth -1.  It reports the
process CPU seconds (``time.process_time``) of each loop, and a digest of what they answered
(names in order), which must be the same in both trees.  Medians over the rounds are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PROBE = r"""
import hashlib, json, sys, time
import stadyn.compat.cntk as C
calls = int(sys.argv[1])
x = C.sequence.input_variable(10)
h = C.layers.Sequential([C.layers.Embedding(12), C.layers.Recurrence(C.layers.LSTM(8)),
                         C.sequence.last])(x)
inner = C.layers.Sequential([C.layers.Dense(8, activation=C.relu), C.layers.Dense(8)])
z = C.layers.Dense(4, name="out")(C.splice(inner(h), inner(C.tanh(h))))
from stadyn.compat.cntk import _graph as G
from stadyn.compat.cntk._adapt import unwrap
start = time.process_time()
for _ in range(calls * 10):
    leaves = list(G.walk_leaves([unwrap(z)]))
leaves_spent = time.process_time() - start
start = time.process_time()
answers = [[v.name for v in leaves]]
for _ in range(calls):
    answers[1:] = [[p.name for p in z.parameters], [a.name for a in z.arguments],
               [c.name for c in z.constants], len(z.find_all_with_name("W")),
               [getattr(n, "name", "") for n in
                C.logging.graph.depth_first_search(z, lambda n: True, -1)]]
spent = time.process_time() - start
print(json.dumps({"walks": spent, "walk_leaves": leaves_spent,
                  "digest": hashlib.sha1(json.dumps(answers).encode()).hexdigest()[:12]}))
"""


def _run(src: str, calls: int) -> dict:
    env = dict(os.environ, PYTHONPATH=src, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(calls)], env=env,
                          capture_output=True, text=True, timeout=600, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="91ee42a2", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", ROOT, "archive", opts.base, "src"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        trees = {opts.base: os.path.join(tmp, "src"), "now": os.path.join(ROOT, "src")}
        runs: dict[str, list] = {name: [] for name in trees}
        for _ in range(opts.rounds):
            for name, src in trees.items():
                runs[name].append(_run(src, opts.calls))
    print(f"{'tree':>10} {'walk_leaves s':>13} {'API walks s':>11}  digest  "
          f"({opts.calls * 10} walk_leaves, {opts.calls} calls of each API walk)")
    for name, results in runs.items():
        leaves = statistics.median(r["walk_leaves"] for r in results)
        spent = statistics.median(r["walks"] for r in results)
        print(f"{name:>10} {leaves:13.3f} {spent:11.3f}  {sorted({r['digest'] for r in results})}")


if __name__ == "__main__":
    main()

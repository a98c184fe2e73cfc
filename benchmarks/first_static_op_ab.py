"""A/B in one run: a fresh process's first static op, before and after ``ops/_shape_rules.py``.

    PYTHONPATH=src python benchmarks/first_static_op_ab.py [--base 91ee42a2] [--rounds 5]

Before the shape rules, a static build inferred an element-wise op's outputs by running it on
``meta`` tensors, through torch's Python references, whose wrapper imports ``torch._dynamo``
(sympy, mpmath) on its first call; mpmath's import leaves the CPU's "invalid" floating-point
flag set, which NumPy reports as a RuntimeWarning when the op is built inside its loop
(``np.ones(3) + x`` of a static Variable ``x``).  Each round runs one fresh process per tree,
the trees taking turns (``--base``: that commit's ``src``, unpacked with ``git archive``;
``now``: this checkout's ``src``), on one torch thread.  Each process notes, by wall clock
(``time.perf_counter``):

* ``import``: ``import stadyn, stadyn.functions`` done;
* ``first op``: ``np.ones(3) + x`` then ``F.sum(F.relu(x * x - 1.5))`` built (static mode);
* ``dynamo``: whether ``torch._dynamo`` was imported by then;
* ``warnings``: what NumPy and Stadyn warned meanwhile.

Medians over the rounds are printed (and the warnings of the last round).  Wall times move with
the machine's load: compare the two trees of one run.
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
import json, sys, time, warnings
start = time.perf_counter()
import numpy as np
import stadyn as sd, stadyn.functions as F
imported = time.perf_counter()
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    x = sd.Variable((3,), need_grad=True)
    y = np.ones(3) + x
    z = F.sum(F.relu(x * x - 1.5))
built = time.perf_counter()
print(json.dumps({"import": imported - start, "first op": built - imported,
                  "dynamo": "torch._dynamo" in sys.modules,
                  "warnings": [str(w.message) for w in caught]}))
"""


def _run(src: str) -> dict:
    env = dict(os.environ, PYTHONPATH=src, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                          text=True, timeout=600, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="91ee42a2", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", ROOT, "archive", opts.base, "src"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        trees = {opts.base: os.path.join(tmp, "src"), "now": os.path.join(ROOT, "src")}
        _run(trees["now"])              # bytecode written once for both, before timing
        _run(trees[opts.base])
        runs: dict[str, list] = {name: [] for name in trees}
        for _ in range(opts.rounds):
            for name, src in trees.items():
                runs[name].append(_run(src))
    print(f"{'tree':>10} {'import s':>9} {'first op s':>11} {'dynamo':>7}  warnings")
    for name, results in runs.items():
        imp = statistics.median(r["import"] for r in results)
        first = statistics.median(r["first op"] for r in results)
        dynamo = sum(r["dynamo"] for r in results)
        print(f"{name:>10} {imp:9.3f} {first:11.4f} {dynamo:>4}/{len(results)}  "
              f"{results[-1]['warnings']}")


if __name__ == "__main__":
    main()

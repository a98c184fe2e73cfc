"""A/B in one run: the CPU time compat.cntk takes to build deep CNTK graphs, in two trees (and,
with ``--cntk``, the real CNTK 2.7's for the same builds).

    PYTHONPATH=src python benchmarks/cntk_deep_build_ab.py [--base bdf62809] [--rounds 3]
        [--sizes 100 200 400 800] [--lstm 16] [--calls 200]
        [--cntk "/work/peers/cntk27/venv36/bin/python" --cntk-lib /work/peers/cntk27/shimlib]

Each round runs one fresh process per tree, the trees taking turns (``--base``: that commit's
``src``, unpacked with ``git archive``; ``now``: this checkout's ``src``), on one torch
thread.  A process builds, after a warm-up of three layers (the first static op imports
torch's references), a chain of ``C.layers.Dense(4)`` layers of each ``--sizes`` length on a
fresh input, a stack of ``--lstm`` ``Recurrence(LSTM(8))`` layers over a sequence input, and
then saves a model (``Dense`` layers over an LSTM recurrence), loads it back
(``C.Function.load``) and reads the loaded Function's ``parameters`` ``--calls`` times.  It
reports the process CPU seconds (``time.process_time``) of each build and of the loop of
calls, and a digest of what they gave (the outputs' shapes, the parameters' names and shapes,
the 100-layer chain's value at a fixed input), which must be the same in both trees.  Medians
over the rounds are printed.  ``--cntk``: a Python (3.6) with CNTK 2.7 runs the same probe
once per round (its digest differs: CNTK's initial values are its own).
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

# (Python 3.6: the real CNTK runs it too)
_PROBE = r"""
import hashlib, json, os, sys, tempfile, time
import numpy as np
if sys.argv[1] == "cntk":
    import cntk as C
else:
    import stadyn.compat.cntk as C
sizes = [int(s) for s in sys.argv[2].split(",")]
lstm, calls = int(sys.argv[3]), int(sys.argv[4])
C.cntk_py.set_fixed_random_seed(1)
out, digest = {}, []


def chain(n):
    x = C.input_variable(4)
    h = x
    for _ in range(n):
        h = C.layers.Dense(4)(h)
    return x, h


chain(3)                                        # (warm-up)
for n in sizes:
    start = time.process_time()
    x, h = chain(n)
    out["dense_%d" % n] = time.process_time() - start
    digest.append([n, list(h.shape), len(h.parameters)])
    if n == 100:
        value = h.eval({x: np.arange(4, dtype=np.float32).reshape(1, 4) / 4})
        digest.append(np.round(np.asarray(value), 4).tolist())
start = time.process_time()
s = C.sequence.input_variable(8)
h = s
for _ in range(lstm):
    h = C.layers.Recurrence(C.layers.LSTM(8))(h)
out["lstm_%d" % lstm] = time.process_time() - start
digest.append([list(h.shape), [list(p.shape) for p in h.parameters]])
s = C.sequence.input_variable(8)
model = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(8)), C.sequence.last,
                             C.layers.Dense(8, activation=C.relu), C.layers.Dense(3)])(s)
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "model.cmf")
    model.save(path)
    loaded = C.Function.load(path)
    loaded.parameters
    start = time.process_time()
    for _ in range(calls):
        params = loaded.parameters
    out["parameters_x%d" % calls] = time.process_time() - start
digest.append([[p.name, list(p.shape)] for p in params])
out["digest"] = hashlib.sha1(json.dumps(digest).encode()).hexdigest()[:12]
print(json.dumps(out))
"""


def _run(python: list, env: dict, which: str, opts) -> dict:
    proc = subprocess.run([*python, "-c", _PROBE, which, ",".join(map(str, opts.sizes)),
                           str(opts.lstm), str(opts.calls)], env=env, capture_output=True,
                          text=True, timeout=3600)
    if proc.returncode:
        raise RuntimeError(f"{which}: the probe failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="bdf62809", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 400, 800])
    parser.add_argument("--lstm", type=int, default=16, help="LSTM recurrences stacked")
    parser.add_argument("--calls", type=int, default=200, help="calls of .parameters")
    parser.add_argument("--cntk", default=None, help="a Python with CNTK 2.7 to time too")
    parser.add_argument("--cntk-lib", default=None, help="LD_LIBRARY_PATH for --cntk")
    opts = parser.parse_args()
    threads = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", ROOT, "archive", opts.base, "src"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        trees = {opts.base: os.path.join(tmp, "src"), "now": os.path.join(ROOT, "src")}
        runs: dict[str, list] = {name: [] for name in [*trees, *(["cntk"] if opts.cntk else [])]}
        for _ in range(opts.rounds):
            for name, src in trees.items():
                env = dict(os.environ, PYTHONPATH=src, **threads)
                runs[name].append(_run([sys.executable], env, "stadyn", opts))
            if opts.cntk:
                env = dict(os.environ, **threads)
                env.pop("PYTHONPATH", None)
                if opts.cntk_lib:
                    env["LD_LIBRARY_PATH"] = opts.cntk_lib
                runs["cntk"].append(_run([opts.cntk, "-W", "ignore"], env, "cntk", opts))
    keys = [k for k in runs["now"][0] if k != "digest"]
    print(f"{'tree':>10} " + " ".join(f"{k:>16}" for k in keys) + "  digest  (CPU s, medians)")
    for name, results in runs.items():
        cells = " ".join(f"{statistics.median(r[k] for r in results):16.3f}" for k in keys)
        print(f"{name:>10} {cells}  {sorted({r['digest'] for r in results})}")


if __name__ == "__main__":
    main()

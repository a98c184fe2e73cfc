"""Start-up of small CNTK programs, Stadyn beside CNTK 2.7: import, first minibatch, whole run.

    PYTHONPATH=src python benchmarks/startup.py [--programs 101 102 103D] [--rounds 3] \
        [--cntk-python PATH] [--threads 1|default] [--bytecode cached|none] [--out FILE]

Each gallery program of ``examples/cntk`` (at its CI size, ``tests/examples/refs/tiny_runs.json``)
runs in a fresh process per round on Stadyn and, when ``--cntk-python`` exists (default: this
machine's CNTK 2.7 venv), on CNTK 2.7 with its import line put back as
``examples/cntk/run_on_cntk.sh`` does; the two frameworks alternate within each round, so a shared
machine's load falls on both alike.  A probe (``_PROBE``, Python 3.6 syntax so CNTK's interpreter
runs it) imports the framework, wraps ``C.Trainer.train_minibatch`` to note when the first call
returns, and runs the program's source as ``__main__``.  Per run it reports, in seconds from just
before the process was started:

* ``import``: ``import stadyn.compat.cntk`` (``import cntk``) done, Python's own start included;
* ``first_minibatch``: the first ``train_minibatch`` returned (model, Trainer and first step built);
* ``total``: the process exited (wall) and ``cpu``: its user + system time (all threads);
* ``dynamo``: whether ``torch._dynamo`` was imported by the end (Stadyn).

Two floors are timed the same way: ``python -c "import torch"`` and ``import torch, torch._dynamo``
(every static plan traces with fake tensors, whose mode imports ``torch._dynamo``: see
docs/performance.md, "Start-up").  Medians over the rounds, and Stadyn / CNTK 2.7 ratios of the
medians, go to ``--out`` (default ``benchmarks/results_startup.json``) and to the screen.

``--bytecode cached`` (the default) lets Stadyn's runs read and write bytecode in a temporary
``PYTHONPYCACHEPREFIX`` (after one warm-up import), as an installed package does;
``--bytecode none`` keeps ``PYTHONDONTWRITEBYTECODE`` as the environment sets it.  ``--threads 1``
(the default) sets ``OMP_NUM_THREADS=MKL_NUM_THREADS=1`` for both frameworks (on a shared 2-core
machine a second OpenMP thread dominates small programs' training time; docs/performance.md).
Timings move with the machine's load: compare the ratios of one run; the load averages at the start
and end are in the results.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples", "cntk")
TINY = os.path.join(ROOT, "tests", "examples", "refs", "tiny_runs.json")
CNTK_PYTHON = "/work/peers/cntk27/venv36/bin/python"
CNTK_LIBS = "/work/peers/cntk27/shimlib"
PROGRAMS = {"101": "101_logistic_regression/logistic_regression.py",
            "102": "102_feedforward/feedforward.py",
            "103D": "103D_convolutional/mnist_conv.py"}
STADYN_IMPORT = "import stadyn.compat.cntk as C"

# The probe: argv = start (time.time() before the process started), framework, program, output
# file, the program's arguments.  Python 3.6 syntax: CNTK 2.7's interpreter runs it too.
_PROBE = r"""
import importlib, json, os, sys, time
start, framework, program, out = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
marks = {}
C = importlib.import_module("cntk" if framework == "cntk27" else "stadyn.compat.cntk")
marks["import"] = time.time() - start
original = C.Trainer.train_minibatch
def train_minibatch(self, *args, **kwargs):
    result = original(self, *args, **kwargs)
    if "first_minibatch" not in marks:
        marks["first_minibatch"] = time.time() - start
    return result
C.Trainer.train_minibatch = train_minibatch
with open(program) as f:
    source = f.read()
line = "import stadyn.compat.cntk as C"
if line + "\n" not in source:
    raise SystemExit("%s: no line %r to put CNTK's import back in" % (program, line))
if framework == "cntk27":
    source = source.replace(line + "\n", "import cntk as C\n")
sys.argv = [program] + sys.argv[5:]
sys.path.insert(0, os.path.dirname(os.path.abspath(program)))
exec(compile(source, program, "exec"), {"__name__": "__main__", "__file__": program})
marks["end"] = time.time() - start
marks["dynamo"] = "torch._dynamo" in sys.modules
with open(out, "w") as f:
    json.dump(marks, f)
"""


def _environment(framework: str, threads: str, pycache: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if threads != "default":
        env.update(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    if framework == "cntk27":
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (CNTK_LIBS, env.get("LD_LIBRARY_PATH", "")) if p)
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (os.path.join(ROOT, "src"), env.get("PYTHONPATH", "")) if p)
        if pycache is not None:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def run_program(python: str, framework: str, program: str, args: list[str], env: dict,
                cwd: str) -> dict:
    """One run of ``program`` on ``framework``: the probe's marks, ``total`` and ``cpu``."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    try:
        before = os.times()
        start = time.time()
        proc = subprocess.run([python, "-W", "ignore", "-c", _PROBE, repr(start), framework,
                               program, out, *args], env=env, cwd=cwd,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=900)
        total = time.time() - start
        after = os.times()
        if proc.returncode != 0:
            raise RuntimeError(f"{framework} {program} failed ({proc.returncode}):\n"
                               f"{proc.stderr.decode(errors='replace')[-3000:]}")
        with open(out) as f:
            marks = json.load(f)
    finally:
        os.unlink(out)
    marks["total"] = total
    marks["cpu"] = (after.children_user - before.children_user
                    + after.children_system - before.children_system)
    return marks


def run_floor(python: str, code: str, env: dict, cwd: str) -> float:
    """Wall seconds of ``python -c code`` (interpreter start included)."""
    start = time.time()
    subprocess.run([python, "-W", "ignore", "-c", code], env=env, cwd=cwd, check=True,
                   timeout=300, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.time() - start


def _median(runs: list[dict], key: str):
    values = [r[key] for r in runs if key in r]
    if values and isinstance(values[0], bool):
        return all(values)
    return round(statistics.median(values), 3) if values else None


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", nargs="+", default=list(PROGRAMS), choices=list(PROGRAMS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cntk-python", default=CNTK_PYTHON)
    parser.add_argument("--threads", default="1", help="OMP/MKL threads, or 'default'")
    parser.add_argument("--bytecode", choices=("cached", "none"), default="cached")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmarks",
                                                      "results_startup.json"))
    args = parser.parse_args(argv)

    tiny = json.load(open(TINY))
    frameworks = [("stadyn", sys.executable)]
    if os.path.exists(args.cntk_python):
        frameworks.append(("cntk27", args.cntk_python))
    else:
        print(f"no CNTK 2.7 at {args.cntk_python}: Stadyn only", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="stadyn-startup-") as work:
        pycache = os.path.join(work, "pycache") if args.bytecode == "cached" else None
        envs = {name: _environment(name, args.threads, pycache) for name, _ in frameworks}
        if "103D" in args.programs:
            subprocess.run([sys.executable, os.path.join(EXAMPLES, "prepare_digits.py"),
                            "--out", os.path.join(work, "Digits")], check=True,
                           stdout=subprocess.DEVNULL, timeout=300)
        # warm-up: bytecode written, files in the page cache
        for name, python in frameworks:
            code = "import cntk" if name == "cntk27" else "import stadyn.compat.cntk"
            run_floor(python, code, envs[name], work)

        load_start = os.getloadavg()
        runs: dict[str, dict[str, list[dict]]] = {p: {n: [] for n, _ in frameworks}
                                                  for p in args.programs}
        floors: dict[str, list[float]] = {"import torch": [], "import torch, torch._dynamo": []}
        for r in range(args.rounds):
            order = frameworks if r % 2 == 0 else frameworks[::-1]
            for code in floors:
                floors[code].append(run_floor(sys.executable, code, envs["stadyn"], work))
            for key in args.programs:
                program = PROGRAMS[key]
                prog_args = list(tiny[program])
                if key == "103D":
                    prog_args += ["--data", os.path.join(work, "Digits")]
                for name, python in order:
                    marks = run_program(python, name, os.path.join(EXAMPLES, program),
                                        prog_args, envs[name], work)
                    runs[key][name].append(marks)
                    print(f"round {r + 1} {key:4s} {name:7s} " + " ".join(
                        f"{k} {v:.2f}" for k, v in marks.items() if not isinstance(v, bool)),
                        flush=True)
        load_end = os.getloadavg()

    import torch
    results = {
        "command": "python benchmarks/startup.py " + " ".join(argv if argv is not None
                                                              else sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                 capture_output=True, text=True).stdout.strip(),
        "torch": torch.__version__, "cpus": os.cpu_count(), "threads": args.threads,
        "bytecode": args.bytecode, "rounds": args.rounds,
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in load_end],
        "floors_s": {code: round(statistics.median(v), 3) for code, v in floors.items()},
        "programs": {},
    }
    keys = ("import", "first_minibatch", "total", "cpu")
    print(f"\nmedians of {args.rounds} rounds, seconds (threads {args.threads}, "
          f"bytecode {args.bytecode}; load {load_start[0]:.1f} -> {load_end[0]:.1f})")
    print("floors: " + ", ".join(f"{c}: {v:.2f}" for c, v in results["floors_s"].items()))
    print(f"{'program':8s} {'framework':9s} " + " ".join(f"{k:>15s}" for k in keys))
    for key in args.programs:
        entry = {name: {k: _median(runs[key][name], k) for k in (*keys, "dynamo")
                        if name == "stadyn" or k != "dynamo"} for name in runs[key]}
        entry["args"] = tiny[PROGRAMS[key]]
        if "cntk27" in entry:
            entry["ratio_stadyn_over_cntk27"] = {
                k: round(entry["stadyn"][k] / entry["cntk27"][k], 2) for k in keys
                if entry["stadyn"][k] and entry["cntk27"][k]}
        results["programs"][PROGRAMS[key]] = entry
        for name in runs[key]:
            print(f"{key:8s} {name:9s} " + " ".join(f"{entry[name][k]:15.2f}" for k in keys))
        if "ratio_stadyn_over_cntk27" in entry:
            print(f"{key:8s} {'ratio':9s} " + " ".join(
                f"{entry['ratio_stadyn_over_cntk27'].get(k, float('nan')):14.1f}x" for k in keys))
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    print(f"\nwritten to {args.out}")
    return results


if __name__ == "__main__":
    main()

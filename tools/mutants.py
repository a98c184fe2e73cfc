"""Mutation testing for Stadyn: plant small bugs in the source and check that a test fails.

``python tools/mutants.py`` (``make mutants``) takes each *group* of source files below
(``compat/``, ``amp.py``, ``train/``, ``learners/``, ``solvers/``), lists every place where one
of these mutations applies:

* an arithmetic operator swapped (``+``/``-``, ``*``/``/``, ``//`` -> ``/``, ``**`` -> ``*``, ...),
  also in augmented assignments;
* a comparison swapped (``<``/``<=``, ``>``/``>=``, ``==``/``!=``, ``is``/``is not``,
  ``in``/``not in``), ``and``/``or`` swapped, a ``not`` or a unary minus dropped;
* a condition negated (``if``, ``while``, conditional expressions);
* a constant replaced (an integer ``n`` by ``n + 1``, a float ``x`` by ``2x`` or ``1.0`` for
  zero, ``True``/``False`` swapped);
* a statement dropped (a call made for its effect, an augmented assignment, an assignment to an
  attribute or item), a returned value replaced by ``None``;
* a call replaced by its first argument, or its first two arguments swapped;

draws a seeded random sample of them (``--per-group`` each, reproducible for one source text and
``--seed``), and for each mutant runs only the tests mapped to its group (``GROUPS``; a compat
module's mutant runs the harness cases naming what the module defines, ``CASE_PREFIXES``), with
``-x`` and a timeout.  A mutant is *killed* when a test fails (or the mutated package cannot be
imported), *survives* when the tests pass, and *times out* when they run past the timeout (a
hang the mutant caused: counted as detected; a mutant that times out is run once more with
twice the time, so a busy machine does not pass for a hang).  Docstrings, annotations,
``__all__`` and string constants are not mutated.

The report (``build/mutants/report.md`` and ``report.json``) gives, per group, the killed,
survived and timed-out counts and the score ``(killed + timeout) / (mutants - equivalent)``,
and for each survivor its place, the mutation and the source line.  Survivors judged equivalent
(no test could tell them apart: the behaviour is the same) are listed with the reason in
``tools/mutants_equivalent.txt`` and left out of the score.

To save the ~2 s of CPU torch's import costs per mutant, the runner imports the third-party
packages once and forks a child per mutant; the child puts a private copy of ``src/`` (with the
one mutated file) first on ``sys.path`` and runs ``pytest.main``.  Each child runs in its own
process group, killed as a whole at the timeout.

Example::

    python tools/mutants.py --per-group 20 --seed 0            # all groups
    python tools/mutants.py --groups amp train --per-group 50
    python tools/mutants.py --list --groups amp                 # list the mutants, run nothing
"""

from __future__ import annotations

import argparse
import fnmatch
import glob
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

# the mutations and the report, beside this file (its directory is first on sys.path)
from mutants_ast import Mutant, find_mutants, mutated_source
from mutants_report import _equivalent, _slug, _write, combine

ROOT = Path(__file__).resolve().parents[1]

# Each group: the source files mutated (globs under the repository root) and the pytest
# arguments that run the tests mapped to them (paths that do not exist are left out, so the same
# table measures an older tree).
GROUPS: dict[str, dict[str, list[str]]] = {
    "amp": {
        "sources": ["src/stadyn/amp.py"],
        "tests": ["tests/test_amp.py"],
    },
    "train/trainer": {
        "sources": ["src/stadyn/train/_trainer.py"],
        "tests": ["tests/train/test_trainer_numbers.py", "tests/train/test_trainer.py",
                  "tests/train/test_fit_reliability.py::"
                  "test_fractional_class_ids_fed_to_an_integer_input_are_refused",
                  "tests/train/test_fit_reliability.py::"
                  "test_class_ids_given_as_torch_tensors_are_checked_too"],
    },
    "train/progress": {
        "sources": ["src/stadyn/train/_progress.py", "src/stadyn/train/_csvlog.py",
                    "src/stadyn/train/_tensorboard.py", "src/stadyn/train/progress.py"],
        "tests": ["tests/train/test_progress.py", "tests/train/test_trainer_numbers.py"],
    },
    "learners": {
        "sources": ["src/stadyn/learners/*.py"],
        "tests": ["tests/learners"],
    },
    "solvers": {
        "sources": ["src/stadyn/solvers/*.py"],
        "tests": ["tests/solvers"],
    },
    "compat/cntk": {
        "sources": ["src/stadyn/compat/cntk/*.py", "src/stadyn/compat/cntk/*/*.py"],
        "tests": ["tests/compat/test_compat_names.py", "-k", "cntk",
                  "tests/compat/test_cntk_logging.py"],
        "cases": ["cntk"],
    },
    "compat/nnabla": {
        "sources": ["src/stadyn/compat/nnabla/*.py", "src/stadyn/compat/nnabla/*/*.py"],
        "tests": ["tests/compat/test_compat_names.py", "-k", "nnabla"],
        "cases": ["nnabla"],
    },
}

# Compat groups (``"cases"``): a mutant of ``compat/<fw>/<module>.py`` runs only the harness
# cases (tests/compat) that list a name under the user-facing prefixes below -- a module's
# cases, not all ~200 of its framework (``__init__.py`` and unlisted files run them all).
# Each selection's unmutated run is checked once (its baseline) before its mutants.
CASE_PREFIXES: dict[str, list[str]] = {
    "compat/cntk/ops.py": ["cntk.ops"],
    "compat/cntk/_function.py": ["cntk.Function", "cntk.load_model", "cntk.ops"],   # + ops' helpers
    "compat/cntk/layers.py": ["cntk.layers"],
    "compat/cntk/_layers.py": ["cntk.layers"],
    "compat/cntk/models.py": ["cntk.models"],
    "compat/cntk/learners.py": ["cntk.learn", "cntk.momentum", "cntk.UnitType",
                                "cntk.training_parameter"],
    "compat/cntk/learner.py": ["cntk.learner."],
    "compat/cntk/train.py": ["cntk.Trainer", "cntk.train"],
    "compat/cntk/logging.py": ["cntk.logging"],
    "compat/cntk/losses.py": ["cntk.losses"],
    "compat/cntk/metrics.py": ["cntk.metrics"],
    "compat/cntk/device.py": ["cntk.device"],
    "compat/cntk/utils.py": ["cntk.utils"],
    "compat/cntk/_cntk_py.py": ["cntk.cntk_py"],
    "compat/cntk/io/*": ["cntk.io"],
    "compat/nnabla/functions.py": ["nnabla.functions"],
    "compat/nnabla/parametric_functions.py": ["nnabla.parametric_functions"],
    "compat/nnabla/solvers.py": ["nnabla.solvers"],
    "compat/nnabla/initializer.py": ["nnabla.initializer"],
    "compat/nnabla/communicators.py": ["nnabla.communicators"],
    "compat/nnabla/ext_utils.py": ["nnabla.ext_utils"],
    "compat/nnabla/utils/*": ["nnabla.utils"],
    "compat/nnabla/tutorial/*": ["nnabla.tutorial"],
}

# Third-party modules the forked children share (imported once by the runner).
_PRELOAD = ("numpy", "torch", "pytest", "hypothesis", "safetensors", "lark", "tqdm", "h5py",
            "cv2")

def _group_files(group: str) -> list[Path]:
    files: list[Path] = []
    for pattern in GROUPS[group]["sources"]:
        files.extend(Path(p) for p in sorted(glob.glob(str(ROOT / pattern))))
    return sorted(set(files))


def sample(group: str, per_group: int, seed: int) -> list[Mutant]:
    everything = [m for f in _group_files(group) for m in find_mutants(group, f)]
    rng = random.Random(f"{seed}:{group}")
    if per_group and len(everything) > per_group:
        picked = sorted(rng.sample(range(len(everything)), per_group))
        return [everything[i] for i in picked]
    return everything


# Tests outside the harness that also check a compat module.
EXTRA_TESTS: dict[str, list[str]] = {
    "compat/cntk/logging.py": ["tests/compat/test_cntk_logging.py"],
    "compat/nnabla/communicators.py": ["tests/distributed/test_dist_comm.py::"
                                       "test_communicator_refuses_what_it_cannot_reduce_in_place",
                                       "tests/distributed/test_dist_comm.py::"
                                       "test_communicator_collectives_on_two_workers",
                                       "tests/distributed/test_dist_comm.py::"
                                       "test_communicator_alone_leaves_data_as_it_is"],
}


def _case_names(framework: str) -> dict[str, list[str]]:
    """{case: names it lists} of the compat harness (read in a subprocess: the runner itself
    never imports stadyn)."""
    import subprocess
    code = ("import json, compat_support as S; print(json.dumps({c.name: list(c.names) "
            f"for c in S.cases({framework!r}).values()}}))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "compat"),
                                                       str(ROOT / "src")]))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT / "tests" / "compat",
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def mutant_args(group: str, mutant: Mutant, names: dict[str, dict[str, list[str]]]) -> list[str]:
    """The pytest arguments for one mutant: the group's tests, or for a compat module the
    harness cases that name something it defines (``CASE_PREFIXES``)."""
    frameworks = GROUPS[group].get("cases")
    rel = mutant.path[len("src/stadyn/"):]
    prefixes = next((v for k, v in CASE_PREFIXES.items() if fnmatch.fnmatch(rel, k)), None)
    if not frameworks or prefixes is None:
        return test_args(group)
    picked = sorted({f"{fw}:{case}" for fw in frameworks
                     for case, listed in names.setdefault(fw, _case_names(fw)).items()
                     if any(n.startswith(p) for n in listed for p in prefixes)})
    if not picked:
        return test_args(group)
    args = [f"tests/compat/test_compat_names.py::test_case[{c}]" for c in picked]
    return args + EXTRA_TESTS.get(rel, [])


def test_args(group: str) -> list[str]:
    args, out = GROUPS[group]["tests"], []
    k = 0
    while k < len(args):
        a = args[k]
        if a.startswith("-"):
            out.extend(args[k:k + 2])
            k += 2
            continue
        if (ROOT / a.split("::")[0]).exists():
            out.append(a)
        k += 1
    return out


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------
def _preload() -> None:
    for name in _PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass


def _run_child(src: Path, args: list[str], log: Path, timeout: float) -> tuple[str, float, str]:
    """Fork; the child runs pytest on ``args`` with ``src`` first on the path.  Returns
    (status, seconds, first failure)."""
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:                                    # the child
        try:
            os.setpgid(0, 0)
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            sys.dont_write_bytecode = True
            sys.path[:] = [str(src)] + [p for p in sys.path
                                        if Path(p or ".").resolve() != (ROOT / "src")]
            os.environ["PYTHONPATH"] = os.pathsep.join(
                [str(src)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                              if p and Path(p).resolve() != (ROOT / "src")])
            os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
            os.chdir(ROOT)
            import pytest
            rc = pytest.main(["-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                              "-o", "addopts=", *args])
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(int(rc))
        except BaseException:                       # noqa: BLE001 - report, never return
            import traceback
            traceback.print_exc()
            os._exit(3)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - start > timeout:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            return "timeout", time.monotonic() - start, ""
        time.sleep(0.2)
    seconds = time.monotonic() - start
    rc = os.waitstatus_to_exitcode(status)
    text = log.read_text(errors="replace") if log.exists() else ""
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", text, re.M)
    if rc == 0:
        return "survived", seconds, ""
    if rc == 5:
        return "error", seconds, "no tests ran"
    return "killed", seconds, failed[0] if failed else f"exit status {rc}"


def _clear_pyc(path: Path) -> None:
    cache = path.parent / "__pycache__"
    for pyc in cache.glob(path.stem + ".*.pyc"):
        pyc.unlink()


def run(groups: list[str], per_group: int, seed: int, timeout_factor: float,
        min_timeout: float, out_dir: Path, equivalent: dict[str, str],
        only: list[str] | None = None) -> dict:
    _preload()
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="stadyn-mutants-"))
    src = work / "src"
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    results: dict = {"seed": seed, "per_group": per_group, "groups": {},
                     "command": " ".join(sys.argv), "started": time.strftime("%Y-%m-%d %H:%M")}
    begin = time.monotonic()
    case_names: dict[str, dict[str, list[str]]] = {}
    try:
        for group in groups:
            args = test_args(group)
            mutants = [m for m in sample(group, per_group, seed)
                       if not only or any(fnmatch.fnmatch(m.ident, g) for g in only)]
            entry: dict = {"tests": args, "mutants": []}
            results["groups"][group] = entry
            baselines: dict[tuple, float | None] = {}
            print(f"{group}: {len(mutants)} mutants", flush=True)
            for k, m in enumerate(mutants, 1):
                margs = mutant_args(group, m, case_names)
                key = tuple(margs)
                if key not in baselines:            # the unmutated tests must pass first
                    status, base, why = _run_child(src, margs, work / "baseline.log",
                                                   timeout=max(min_timeout, 3600))
                    baselines[key] = base if status == "survived" else None
                    print(f"  baseline {base:.0f} s: {' '.join(margs)[:200]}"
                          + ("" if status == "survived" else f" FAILS ({why})"), flush=True)
                    if status != "survived":
                        shutil.copy(work / "baseline.log",
                                    out_dir / f"baseline-{_slug(group)}-{len(baselines)}.log")
                if baselines[key] is None:
                    m.status, m.detail = "error", "the unmutated tests fail"
                    entry["mutants"].append(asdict(m) | {"ident": m.ident})
                    continue
                limit = max(min_timeout, timeout_factor * baselines[key])
                target = src / m.path[len("src/"):]
                original = target.read_text()
                try:
                    target.write_text(mutated_source(m))
                    _clear_pyc(target)
                    m.status, m.seconds, m.detail = _run_child(
                        src, margs, work / "mutant.log", limit)
                    if m.status == "timeout":       # a loaded machine, or a real hang?
                        m.status, m.seconds, m.detail = _run_child(
                            src, margs, work / "mutant.log", 2 * limit)
                finally:
                    target.write_text(original)
                    _clear_pyc(target)
                if m.ident in equivalent and m.status == "survived":
                    m.detail = f"equivalent: {equivalent[m.ident]}"
                print(f"  [{k}/{len(mutants)}] {m.status:8s} {m.seconds:5.0f}s {m.ident}"
                      f"{'  (' + m.detail + ')' if m.detail else ''}", flush=True)
                entry["mutants"].append(asdict(m) | {"ident": m.ident, "tests": margs[:50]})
            _write(results, out_dir, time.monotonic() - begin)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _write(results, out_dir, time.monotonic() - begin)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", nargs="*", default=list(GROUPS), metavar="GROUP",
                        help=f"groups to mutate (default: all of {', '.join(GROUPS)})")
    parser.add_argument("--per-group", type=int, default=int(os.environ.get("MUTANTS_N", 20)),
                        help="mutants drawn per group, 0 for all (default 20 or $MUTANTS_N)")
    parser.add_argument("--seed", type=int, default=int(os.environ.get("MUTANTS_SEED", 0)))
    parser.add_argument("--timeout-factor", type=float, default=3.0,
                        help="timeout per mutant as a multiple of the unmutated run (default 3)")
    parser.add_argument("--min-timeout", type=float, default=300.0,
                        help="the least timeout per mutant in seconds (default 300); a mutant "
                             "that times out runs once more with twice the time")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "mutants")
    parser.add_argument("--only", nargs="*", default=None, metavar="GLOB",
                        help="run only mutants whose ident matches one of these globs")
    parser.add_argument("--list", action="store_true", help="list the sampled mutants and exit")
    parser.add_argument("--combine", nargs="+", type=Path, metavar="DIR",
                        help="run nothing: merge the report.json of these runs (later ones win "
                             "for a mutant run twice), apply tools/mutants_equivalent.txt and "
                             "write one report to --out")
    opts = parser.parse_args(argv)
    if opts.combine:
        results = combine(opts.combine, _equivalent(ROOT / "tools" / "mutants_equivalent.txt"))
        opts.out.mkdir(parents=True, exist_ok=True)
        _write(results, opts.out, results["seconds"])
        print(f"score {results['score']:.1%}" if results.get("score") is not None
              else "no score", f"- report in {opts.out / 'report.md'}")
        return 0
    unknown = [g for g in opts.groups if g not in GROUPS]
    if unknown:
        parser.error(f"unknown group(s) {unknown}; choose from {list(GROUPS)}")
    if opts.list:
        for group in opts.groups:
            found = sample(group, opts.per_group, opts.seed)
            print(f"{group}: {len(found)} mutants; tests: {' '.join(test_args(group))}")
            for m in found:
                print(f"  {m.ident}    {m.source_line}")
        return 0
    results = run(opts.groups, opts.per_group, opts.seed, opts.timeout_factor,
                  opts.min_timeout, opts.out,
                  _equivalent(ROOT / "tools" / "mutants_equivalent.txt"), opts.only)
    print(f"score {results['score']:.1%}" if results.get("score") is not None else "no score",
          f"- report in {opts.out / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

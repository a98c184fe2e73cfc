"""CNTK 2.7's own docstring examples (``>>>``) as an acceptance suite for ``stadyn.compat.cntk``.

Usage (from the repository root)::

    python tools/cntk_docstring_examples.py PATH/TO/site-packages/cntk \\
        [--cntk-python PY] [--cntk-libs DIR] [--only SUBSTRING ...] [--json OUT] [-v]

The docstrings are read from the installed CNTK 2.7 package given on the command line (its
``.py`` files are parsed, never imported by the driver, never copied).  Every docstring with
examples is one doctest, run first by CNTK 2.7's own interpreter (``--cntk-python``, with
``LD_LIBRARY_PATH=--cntk-libs``) and then by this repository's Stadyn (the Python running this
script, ``src/`` first on its path), each in a worker process of this same file.  Both sides run
as CNTK's ``bindings/python/cntk/conftest.py`` + ``pytest.ini`` run them: names ``C`` (the
framework) and ``np``; ``numpy.set_printoptions(precision=6, suppress=True)``; checked mode on;
the random seed reset to 0 before each docstring; ``NORMALIZE_WHITESPACE`` (the ini's only
flag) plus the examples' own ``# doctest:`` directives.  On the Stadyn side an example's
``import cntk``/``from cntk...`` reads ``stadyn.compat.cntk`` (the one line a user changes) and
NumPy prints its scalars as NumPy 1.x did (``legacy="1.25"``; CNTK's Python 3.6 has NumPy 1.19).

The framework wins: where CNTK 2.7 itself does not print what its docstring says, what CNTK 2.7
printed (or the fact that it raised) is the expectation for Stadyn.  Per docstring the report
says ``pass`` (both print the docstring's output), ``cntk-fails`` (CNTK differs from its own
docstring; Stadyn prints what CNTK printed), or ``DIFFERS`` (Stadyn differs from the
expectation; the first differing example is shown), then a summary.  The exit status is 1
when any docstring differs.
"""

import argparse
import ast
import doctest
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CNTK_PYTHON = "/work/peers/cntk27/venv36/bin/python"
DEFAULT_CNTK_LIBS = "/work/peers/cntk27/shimlib"
FLAGS = doctest.NORMALIZE_WHITESPACE
TIMEOUT_S = 120          # per docstring, in the worker


# -- extraction (both sides: the same parse of the same files) ---------------------------------

def _docstrings(path, modname):
    """``(name, docstring, lineno)`` for the module, its classes, functions and class members,
    where doctest's finder looks (nested functions excluded)."""
    with open(path, encoding="utf-8-sig") as f:
        tree = ast.parse(f.read(), path)
    found = []

    def visit(node, qual):
        doc = ast.get_docstring(node, clean=False)
        if doc and ">>>" in doc:
            line = node.body[0].lineno if node.body else 1
            found.append((qual, doc, line))
        if isinstance(node, (ast.Module, ast.ClassDef)):
            for child in node.body:
                if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(child, qual + "." + child.name)

    visit(tree, modname)
    return found


def extract(pkg):
    """Every docstring with examples in the package at ``pkg``: ``[(name, file, line, doc)]``,
    sorted by module and line; test folders excluded."""
    pkg = os.path.abspath(pkg)
    base = os.path.basename(pkg)
    tests = []
    for folder, dirs, files in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d not in ("tests", "__pycache__"))
        for fn in sorted(files):
            if not fn.endswith(".py") or fn in ("conftest.py",):
                continue
            path = os.path.join(folder, fn)
            rel = os.path.relpath(path, pkg)[:-3].replace(os.sep, ".")
            mod = base + ("" if rel == "__init__" else "." + rel.replace(".__init__", ""))
            for name, doc, line in _docstrings(path, mod):
                tests.append((name, os.path.relpath(path, os.path.dirname(pkg)), line, doc))
    return tests


# -- the worker: runs the doctests under one framework -----------------------------------------

_IMPORT = re.compile(r"^(\s*)(import|from)\s+cntk\b")


def _to_stadyn(source):
    """The edit a user makes to a CNTK program: its imports of ``cntk`` read ``stadyn.compat``."""
    out = []
    for line in source.splitlines(True):
        m = _IMPORT.match(line)
        if m:
            rest = line[m.end():]
            if m.group(2) == "import" and not rest.lstrip().startswith((".", "as")) and \
                    rest.strip() == "":
                line = m.group(1) + "import stadyn.compat.cntk as cntk" + rest
            else:
                line = m.group(1) + m.group(2) + " stadyn.compat.cntk" + rest
        out.append(line)
    return "".join(out)


class _Recorder(doctest.DocTestRunner):
    """Keeps, per example, whether it matched and what it printed or raised."""

    def run(self, test, **kw):
        self.records = [{"ok": True, "got": "", "exc": None, "skipped": True}
                        if ex.options.get(doctest.SKIP) else None for ex in test.examples]
        return doctest.DocTestRunner.run(self, test, out=lambda s: None, **kw)

    def _index(self, test, example):
        return test.examples.index(example)

    def report_success(self, out, test, example, got):
        self.records[self._index(test, example)] = {"ok": True, "got": got, "exc": None}

    def report_failure(self, out, test, example, got):
        exc = None
        if got.startswith("Traceback") or "\nTraceback (most recent call last)" in got:
            exc = got.strip().splitlines()[-1]
        self.records[self._index(test, example)] = {"ok": False, "got": got, "exc": exc}

    def report_unexpected_exception(self, out, test, example, exc_info):
        msg = "".join(doctest.traceback.format_exception_only(*exc_info[:2])).strip()
        self.records[self._index(test, example)] = {
            "ok": False, "got": doctest._exception_traceback(exc_info), "exc": msg}


def _module_of(path):
    """``cntk/layers/layers.py`` -> ``cntk.layers.layers``."""
    mod = path[:-3].replace(os.sep, ".")
    return mod[:-len(".__init__")] if mod.endswith(".__init__") else mod


def _globs(side, module, np, C):
    """What pytest's doctest-modules gives an example: the namespace of the module holding the
    docstring, plus the conftest's ``np`` and ``C``.  On the Stadyn side that module is the
    same-named module of ``stadyn.compat.cntk`` or, where Stadyn has no such file, the nearest
    enclosing one (``cntk.layers.layers`` -> ``stadyn.compat.cntk.layers``)."""
    import importlib
    if side == "stadyn":
        parts = module.split(".")
        while True:
            try:
                mod = importlib.import_module(".".join(["stadyn.compat"] + parts))
                break
            except ImportError:
                parts = parts[:-1]
    else:
        mod = importlib.import_module(module)
    globs = dict(mod.__dict__)
    if side == "stadyn":
        globs.setdefault("cntk", C)       # CNTK's modules import the package by its name
    globs.update(np=np, C=C)
    return globs


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout("docstring ran past %d s" % TIMEOUT_S)


def worker(args):
    import numpy as np
    side = args.side
    if side == "cntk":
        import cntk as C
        import cntk.debugging  # noqa: F401  (C.debugging)
        reset = lambda: C.cntk_py.reset_random_seed(0)  # noqa: E731
    else:
        sys.path.insert(0, os.path.join(ROOT, "src"))
        import stadyn.compat.cntk as C
        import stadyn.compat.cntk.debugging  # noqa: F401
        reset = lambda: C.cntk_py.reset_random_seed(0)  # noqa: E731
    C.debugging.set_checked_mode(True)
    np.set_printoptions(precision=6, suppress=True)
    if side == "stadyn" and int(np.__version__.split(".")[0]) >= 2:
        np.set_printoptions(legacy="1.25")
    if side == "stadyn":   # the aliases NumPy 1.24 removed, which CNTK's docstrings use
        for alias, builtin in (("float", float), ("int", int), ("bool", bool)):
            if alias not in np.__dict__:
                setattr(np, alias, builtin)
    expect = {}
    if args.expect:
        with open(args.expect) as f:
            expect = json.load(f)
    tests = extract(args.pkg)
    signal.signal(signal.SIGALRM, _alarm)
    parser = doctest.DocTestParser()
    with open(args.out, "a") as out:
        for i, (name, path, line, doc) in enumerate(tests):
            if i < args.start or (args.only and not any(s in name for s in args.only)):
                continue
            test = parser.get_doctest(doc, _globs(side, _module_of(path), np, C), name, path,
                                      line)
            if side == "stadyn":
                for k, ex in enumerate(test.examples):
                    ex.source = _to_stadyn(ex.source)
                    real = (expect.get(str(i)) or {}).get("records")
                    if real and real[k] and not real[k]["ok"]:
                        if (real[k]["exc"] or "").startswith("NameError"):
                            # the docstring's own slip (a name its module lacks): no spec
                            ex.options[doctest.SKIP] = True
                        elif real[k]["exc"]:            # CNTK raised: so must Stadyn (any error)
                            ex.want, ex.exc_msg = "Traceback (most recent call last):\n", "...\n"
                            ex.options[doctest.ELLIPSIS] = True
                        else:                         # CNTK printed otherwise: that is the spec
                            ex.want, ex.exc_msg = real[k]["got"], None
            runner = _Recorder(optionflags=FLAGS)
            reset()
            signal.alarm(TIMEOUT_S)
            error = None
            try:
                runner.run(test, clear_globs=True)
            except _Timeout as e:
                error = str(e)
            finally:
                signal.alarm(0)
            out.write(json.dumps({"i": i, "name": name, "records": runner.records,
                                  "error": error}) + "\n")
            out.flush()


# -- the driver ----------------------------------------------------------------------------------

def _run_side(side, argv_tail, env, python, tests, label, verbose):
    """Runs the workers of one side until every selected docstring has a result; a worker that
    dies (CNTK aborts now and then) is restarted after the docstring it died in."""
    fd, out = tempfile.mkstemp(suffix=".jsonl", prefix="cntkdoc-" + side + "-")
    os.close(fd)
    results, start, t0 = {}, 0, time.time()
    cwd = tempfile.mkdtemp(prefix="cntkdoc-" + side + "-")    # files the examples write
    selected = [t for t in tests]
    while True:
        cmd = [python, "-W", "ignore", os.path.abspath(__file__), "--worker", "--side", side,
               "--out", out, "--start", str(start)] + argv_tail
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, cwd=cwd)
        seen = len(results)
        while proc.poll() is None:
            time.sleep(1.0)
            seen = _progress(out, results, label, len(selected), t0, seen, verbose)
        err = proc.stderr.read().decode("utf-8", "replace")
        _progress(out, results, label, len(selected), t0, seen, verbose)
        done = [r["i"] for r in results.values()]
        pending = [t for t in selected if t[0] not in done]
        if not pending or proc.returncode == 0:
            break
        crashed = pending[0]
        results[str(crashed[0])] = {"i": crashed[0], "name": crashed[1], "records": None,
                               "error": "worker died (%s): %s" % (
                                   proc.returncode, err.strip().splitlines()[-1:] or "")}
        start = crashed[0] + 1
    os.remove(out)
    shutil.rmtree(cwd, ignore_errors=True)
    return results


def _progress(out, results, label, total, t0, seen, verbose):
    with open(out) as f:
        for line in f:
            r = json.loads(line)
            results[str(r["i"])] = r
    if len(results) != seen:
        if verbose or len(results) % 25 == 0 or len(results) == total:
            print("  [%s] %d/%d docstrings, %.0f s" % (label, len(results), total,
                                                       time.time() - t0), flush=True)
    return len(results)


def _first_bad(records):
    for k, r in enumerate(records or []):
        if r is not None and not r["ok"]:
            return k, r
    return None, None


def classify(test, real, ours):
    """``(status, detail)`` of one docstring."""
    doc = test[4]
    examples = doctest.DocTestParser().get_examples(doc)
    if real.get("error") or real.get("records") is None:
        return "cntk-fails", "CNTK 2.7: %s" % real.get("error")
    k_real, _ = _first_bad(real["records"])
    if ours.get("error") or ours.get("records") is None:
        return "DIFFERS", "Stadyn: %s" % ours.get("error")
    k, rec = _first_bad(ours["records"])
    if k is None and None in ours["records"]:
        k = ours["records"].index(None)
        rec = {"got": "(not run)", "exc": None}
    if k is not None:
        want = examples[k].want if real["records"][k] is None or real["records"][k]["ok"] \
            else ("(raises) " + str(real["records"][k]["exc"]) if real["records"][k]["exc"]
                  else real["records"][k]["got"])
        return "DIFFERS", ">>> %s\n      expected: %s\n      Stadyn:   %s" % (
            examples[k].source.strip().replace("\n", "\n... "), want.strip()[:400],
            (rec["exc"] or rec["got"]).strip()[:400])
    if k_real is not None:
        return "cntk-fails", ">>> %s  (CNTK 2.7 prints/raises otherwise; Stadyn as CNTK)" % (
            examples[k_real].source.strip().splitlines()[0])
    return "pass", ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pkg", help="the installed CNTK 2.7 package folder (site-packages/cntk)")
    ap.add_argument("--cntk-python", default=DEFAULT_CNTK_PYTHON)
    ap.add_argument("--cntk-libs", default=DEFAULT_CNTK_LIBS)
    ap.add_argument("--only", nargs="*", default=[], help="docstrings whose name contains one")
    ap.add_argument("--json", help="write the per-docstring results here")
    ap.add_argument("-v", "--verbose", action="store_true", help="list passing docstrings too")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--side", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--expect", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)

    tests = [(i,) + t for i, t in enumerate(extract(args.pkg))
             if not args.only or any(s in t[0] for s in args.only)]
    n_examples = sum(len(doctest.DocTestParser().get_examples(t[4])) for t in tests)
    print("%d docstrings, %d examples in %s" % (len(tests), n_examples, args.pkg), flush=True)
    tail = [os.path.abspath(args.pkg)] + (["--only"] + args.only if args.only else [])
    env = dict(os.environ, LD_LIBRARY_PATH=args.cntk_libs)
    real = _run_side("cntk", tail, env, args.cntk_python, tests, "CNTK 2.7", args.verbose)
    fd, expect = tempfile.mkstemp(suffix=".json", prefix="cntkdoc-expect-")
    with os.fdopen(fd, "w") as f:
        json.dump(real, f)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"), OMP_NUM_THREADS="1")
    ours = _run_side("stadyn", tail + ["--expect", expect], env, sys.executable, tests,
                     "Stadyn", args.verbose)
    os.remove(expect)

    counts = {"pass": 0, "cntk-fails": 0, "DIFFERS": 0}
    examples = {"cntk-fails": 0, "DIFFERS": 0}
    rows = []
    for t in tests:
        status, detail = classify(t, real.get(str(t[0]), {}), ours.get(str(t[0]), {}))
        counts[status] += 1
        r_recs = real.get(str(t[0]), {}).get("records") or []
        o_recs = ours.get(str(t[0]), {}).get("records") or [None] * len(r_recs)
        for a, b in zip(r_recs, o_recs):        # examples: CNTK vs docstring, Stadyn vs spec
            if a is not None and not a.get("skipped"):
                examples["cntk-fails"] += not a["ok"]
                examples["DIFFERS"] += b is None or not b["ok"]
        rows.append({"name": t[1], "file": "%s:%d" % (t[2], t[3]), "status": status,
                     "detail": detail})
        if status != "pass" or args.verbose:
            print("%-10s %s (%s:%d)" % (status, t[1], t[2], t[3]))
            if detail:
                print("      " + detail)
    print("\n%d docstrings (%d examples): %d pass on both, %d fail on CNTK 2.7 itself "
          "(Stadyn held to CNTK's own output), %d differ on Stadyn"
          % (len(tests), n_examples, counts["pass"], counts["cntk-fails"], counts["DIFFERS"]))
    print("examples: %d print otherwise on CNTK 2.7 than its docstring says, %d differ on Stadyn "
          "from the expectation" % (examples["cntk-fails"], examples["DIFFERS"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"counts": counts, "examples": examples, "docstrings": rows}, f, indent=1)
    return 1 if counts["DIFFERS"] else 0


if __name__ == "__main__":
    sys.exit(main())

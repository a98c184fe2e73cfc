"""What the acceptance tests of the originals' own programs share (nnabla-examples, CNTK's
``Examples/``): a copy of the programs read from a checkout or a bare git repository (the test
skips without one), and a run of a test's driver under Stadyn whose JSON result it reads.

The drivers run in processes forked from one server per test process that imported NumPy and
Stadyn (and so torch) once (``tests/fork_server.py``), not each in a fresh interpreter that
imports them again (about 3 s of CPU a driver).  Every driver seeds NumPy's, ``random``'s, the
framework's and torch's generators before each program it runs, so a forked run draws what a
fresh one drew.  A driver run with environment variables of its own (``PYTHONHASHSEED``,
read when an interpreter starts) still gets a fresh process.
"""

import atexit
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

try:
    import fcntl
except ImportError:                       # pragma: no cover - not POSIX
    fcntl = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "examples")
sys.path.insert(0, os.path.join(ROOT, "tests"))
import fork_server  # noqa: E402

_SERVER: list = []        # this test process's fork server, started at its first driver run


def program_copy(source: str, paths, base, what: str, env_var: str) -> str:
    """A folder holding ``paths`` (folders or files) of ``source``: ``source`` itself when it is
    a checkout with them, else ``git archive HEAD`` of the bare repository ``source``
    extracted under ``base``.  Skips (naming ``env_var``) when there is no ``source`` or its
    HEAD lacks a path."""
    if not os.path.exists(source):
        pytest.skip(f"no copy of {what} at {source} (set {env_var} to a checkout or a bare "
                    "repository to run its programs)")
    if all(os.path.exists(os.path.join(source, p)) for p in paths):
        return source
    out = os.path.join(str(base), "repo")
    os.makedirs(out, exist_ok=True)     # (a worker whose driver run failed made it)
    for path in paths:
        archive = subprocess.run(["git", "--git-dir", source, "archive", "HEAD", path],
                                 capture_output=True, timeout=120)
        if archive.returncode != 0:
            pytest.skip(f"{source}: no {path} in its HEAD")
        subprocess.run(["tar", "-x", "-C", out], input=archive.stdout, check=True, timeout=120)
    return out


@contextlib.contextmanager
def shared_folder(tmp_path_factory, name: str):
    """A folder for ``name`` that every pytest-xdist worker of this test run shares, locked
    while the block runs; a new temporary folder without xdist.  xdist's ``load`` schedule
    may send a module's tests to both workers, and then each ran the module's fixture (a
    module's fixture whose tests both workers got wrote its driver's JSON twice): with this the
    first worker does the work and the other, waiting on the lock, reads what it left."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not os.environ.get("PYTEST_XDIST_WORKER") or not run or fcntl is None:
        yield tmp_path_factory.mktemp(name)
        return
    # the workers' base folders are popen-gw0, popen-gw1, ... of one folder per run
    folder = tmp_path_factory.getbasetemp().parent / f"{name}-{run}"
    folder.mkdir(exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield folder
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def committed_reference(name: str):
    """The committed reference ``refs/<name>``."""
    with open(os.path.join(HERE, "refs", name)) as f:
        return json.load(f)


def _driver_env(**env_vars) -> dict:
    """A driver's environment: one thread, Stadyn's ``src`` first on the path, ``env_vars``."""
    return dict(os.environ, OMP_NUM_THREADS="1", **env_vars,
                PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "src"),
                                            os.environ.get("PYTHONPATH", "")]))


def _server() -> fork_server.ForkServer:
    """The fork server of this test process (closed when it exits), in a folder of its own."""
    if not _SERVER:
        home = tempfile.mkdtemp(prefix="stadyn-drivers-")
        _SERVER.append(fork_server.ForkServer(
            [sys.executable, fork_server.__file__, "numpy", "stadyn"], home, _driver_env()))

        def close():
            _SERVER[0].close()
            shutil.rmtree(home, ignore_errors=True)
        atexit.register(close)
    return _SERVER[0]


def run_driver(driver: str, args, result: str, reference: str, timeout: int, **env_vars):
    """Run ``tests/examples/<driver>`` with ``args`` on Stadyn (one thread, ``env_vars`` set),
    which writes ``result``; return ``(result, the committed reference refs/<reference>)``.
    Forked from the warm server (module docstring) unless ``env_vars`` are given."""
    argv = [os.path.join(HERE, driver), *map(str, args)]
    if env_vars:
        proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True,
                              timeout=timeout, env=_driver_env(**env_vars))
        status, stderr = proc.returncode, proc.stderr
    else:
        logs = Path(os.path.dirname(os.path.abspath(result))) / "driver-output"
        status, _, stderr = _server().run(argv, Path(ROOT), logs, timeout)
    assert status == 0, stderr[-3000:]
    with open(result) as f:
        return json.load(f), committed_reference(reference)


def nnabla_examples_run(tmp_path_factory, driver: str, programs, reference: str, **env_vars):
    """Run the driver ``tests/examples/<driver>`` on Stadyn over ``programs`` of a copy of
    sony/nnabla-examples (``$STADYN_NNABLA_EXAMPLES``, a checkout or a bare repository, by
    default the mirror at ``/work/.mirror/sony+nnabla-examples/repo``; the test skips without
    one), once per test run (a second xdist worker given some of the module's tests reads the
    first one's result); return ``(its result, NNabla 1.39's refs/<reference>)``."""
    source = os.environ.get("STADYN_NNABLA_EXAMPLES", "/work/.mirror/sony+nnabla-examples/repo")
    with shared_folder(tmp_path_factory, driver.rsplit(".", 1)[0]) as base:
        result = base / "stadyn.json"
        if (base / "done").exists():
            with open(result) as f:
                return json.load(f), committed_reference(reference)
        examples = program_copy(source, programs, base, "sony/nnabla-examples",
                                "STADYN_NNABLA_EXAMPLES")
        work = base / "work"
        work.mkdir(exist_ok=True)     # (a worker whose driver run failed made it)
        out = run_driver(driver, [examples, str(work), str(result), "--stadyn"], result,
                         reference, 600, **env_vars)
        (base / "done").write_text(driver)
    return out

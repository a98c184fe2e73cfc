"""Programs run in processes forked from one that made its imports once: for tests that run
many short programs of one kind (documentation pages, tutorial scripts), each of which would
otherwise start an interpreter and import Stadyn (and what the program imports first) again.

The program's script prepares exactly what every run of it does before its own code (the
imports its runs share), then calls :func:`serve` with its entry point.  For each request
line on its standard input (JSON: ``argv``, ``cwd``, the ``stdout`` and ``stderr`` files, a
``timeout`` in seconds) the server forks a process that takes the working folder,
``sys.argv`` and the two files as its output, and exits with ``main(argv)`` as the script
would (``sys.exit``: its ``atexit`` handlers run); the server kills a process still running
after the timeout and answers a JSON line: the exit status, or that it timed out.

:class:`ForkServer` is the test's side.  (tests/hostile's probe server forks alike, with an
address-space limit and an environment per file.)

Run as a script, ``python fork_server.py MODULE...`` imports the modules and serves runs of
scripts: a request's ``argv`` is ``[SCRIPT, ARGS...]``, run as ``python SCRIPT ARGS...`` would
(:func:`run_script`).  The modules should be what each such script imports first (a CNTK
gallery program's ``import stadyn.compat.cntk as C``).

**What a run shares.**  A forked run starts from the server's state after those imports, not
from a fresh interpreter's: the environment, home folder and folder the server was started
with are the ones the imports saw, and what a module works out from them at import stays as
the server worked it out.  Python's ``random`` is reseeded in each child (as a fresh process
seeds it), but NumPy's and torch's global generators are not: a run that draws from them
unseeded draws what every other run draws (the server's state), where fresh processes would
each draw their own; a run that seeds them draws what it drew alone.
The one thing Stadyn works out from the current folder at import is ``stadyn.compat.nnabla``'s
``nnabla_config`` (``./nnabla.conf``, and the log file its ``LOG`` section names, opened by
the compat logger at import): while that module is imported, a run whose folder differs from
the server's is refused (exit status 2, the reason on its stderr) when either folder holds an
``nnabla.conf``.  Within those bounds a run does what it did alone.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import runpy
import select
import signal
import subprocess
import sys
import time
from pathlib import Path


def serve(main) -> None:
    """Answer requests on standard input until it closes (see the module docstring)."""
    gc.freeze()         # what is imported stays out of the children's collections (no copies)
    home = os.getcwd()
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            for fd, name in ((1, "stdout"), (2, "stderr")):
                os.dup2(os.open(request[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
                        fd)
            os.chdir(request["cwd"])
            _refuse_other_nnabla_conf(home)
            sys.argv = list(request["argv"])
            sys.exit(main(sys.argv))
        answer(pid, request["timeout"])


def answer(pid: int, timeout: float, poll: float = 0.02) -> None:
    """Wait for the forked run ``pid`` (killing it after ``timeout`` seconds) and answer its
    request: a JSON line of its exit status, or that it timed out (tests/hostile's probe
    server answers so too)."""
    deadline, status = time.monotonic() + timeout, None
    while status is None:
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(code)
        elif time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            break
        else:
            time.sleep(poll)
    print(json.dumps({"status": status, "timed_out": status is None}), flush=True)


def _refuse_other_nnabla_conf(home: str) -> None:
    """In a run's process, in its folder: exit with status 2 if ``stadyn.compat.nnabla`` read
    its configuration in the server's folder ``home`` at import and this folder is another
    where either holds an ``nnabla.conf`` (the run alone would have read this folder's)."""
    if "stadyn.compat.nnabla.config" not in sys.modules or os.path.samefile(home, "."):
        return
    held = [os.path.join(d, "nnabla.conf") for d in (home, os.getcwd())
            if os.path.exists(os.path.join(d, "nnabla.conf"))]
    if held:
        sys.stderr.write(f"fork_server: {held[0]}: stadyn.compat.nnabla read nnabla.conf in the "
                         f"server's folder {home} at import, and this run's folder "
                         f"{os.getcwd()} is another; run this program in a process of its "
                         f"own\n")
        sys.stderr.flush()
        os._exit(2)


class ForkServer:
    """The server ``command`` (``[python, script, ...]``, which calls :func:`serve`) started in
    ``cwd`` with ``env``; :meth:`run` runs the program once."""

    def __init__(self, command: list[str], cwd, env: dict[str, str]):
        self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def run(self, argv: list[str], cwd: Path, logs: Path, timeout: float):
        """Run the program with ``argv`` in ``cwd`` (its output in ``logs``/stdout and
        ``logs``/stderr): ``(exit status, stdout, stderr)``; raises
        ``subprocess.TimeoutExpired`` past ``timeout`` seconds."""
        logs.mkdir(exist_ok=True)
        out, err = logs / "stdout", logs / "stderr"
        request = {"argv": [str(a) for a in argv], "cwd": str(cwd), "stdout": str(out),
                   "stderr": str(err), "timeout": timeout}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout + 60)
        reply = json.loads(self.proc.stdout.readline() or "null") if ready else None
        assert reply is not None, f"the fork server died (status {self.proc.poll()})"
        if reply["timed_out"]:
            raise subprocess.TimeoutExpired(" ".join(request["argv"]), timeout)
        return reply["status"], out.read_text(), err.read_text()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(60)


def run_script(argv: list[str]) -> int:
    """Run the script ``argv[0]`` as ``python SCRIPT ARGS...``: as ``__main__``, its folder
    first on ``sys.path`` (in place of this file's), ``sys.argv`` the arguments."""
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    for name in sys.argv[1:]:
        importlib.import_module(name)
    serve(run_script)

"""``python -m stadyn.distributed.run ARGS...`` run by the test's own process: the launcher's
:func:`stadyn.distributed.run.main` called here, its output caught, instead of a fresh
interpreter that imports Stadyn and torch again only to start the workers (about 3 s of CPU a
job; the suite starts a few dozen).  The workers are still processes of their own, started as
the command line starts them.  :func:`launch` runs one command line;
:func:`launch_side_by_side` several jobs at once (``stadyn.distributed.run_workers`` in a thread
each).

The launcher reads its environment from ``os.environ`` (it hands it on to the workers): the
``env`` given is the process's environment while the launcher runs, and the previous one
afterwards.  ``limit`` is the test's wall-clock limit, as ``subprocess.run``'s ``timeout``
was: past it the workers (this process's children in a session of their own, started during
the call) are killed, the launcher ends the job, and ``subprocess.TimeoutExpired`` is raised.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
import traceback


def _own_sessions() -> set[int]:
    """This process's children that lead a session of their own (the launcher starts each
    worker so); empty where ``/proc`` cannot be read."""
    found = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # after the command's name: state, ppid, pgrp, session, ...
        if int(fields[1]) == os.getpid() and int(fields[3]) == int(name):
            found.add(int(name))
    return found


@contextlib.contextmanager
def _environment(env: dict[str, str]):
    before = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)


@contextlib.contextmanager
def _limit(limit: float, command):
    """Kill the workers started in the block once ``limit`` seconds have passed; then raise
    ``subprocess.TimeoutExpired`` for ``command`` when the block ends."""
    already = _own_sessions()
    expired, done = threading.Event(), threading.Event()

    def kill_workers():         # (again until the launcher returns: a restart starts others)
        expired.set()
        while not done.is_set():
            for pid in _own_sessions() - already:
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
            done.wait(0.5)

    timer = threading.Timer(limit, kill_workers)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        done.set()
        timer.cancel()
    if expired.is_set():
        raise subprocess.TimeoutExpired(command, limit)


def launch(args: list[str], env: dict[str, str], limit: float) -> subprocess.CompletedProcess:
    """``python -m stadyn.distributed.run *args`` with the environment ``env``, here: a
    ``CompletedProcess`` of its exit status and text output (the workers' and the launcher's
    reports), as ``subprocess.run(..., capture_output=True, text=True, timeout=limit)`` gave."""
    from stadyn.distributed.run import main

    out, err = io.StringIO(), io.StringIO()
    command = [sys.executable, "-m", "stadyn.distributed.run", *map(str, args)]
    with _environment(env), _limit(limit, command):
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([str(a) for a in args])
    return subprocess.CompletedProcess(command, status, out.getvalue(), err.getvalue())


def launch_side_by_side(jobs: dict, nproc: int, timeout: float, env: dict[str, str],
                        limit: float) -> dict:
    """The commands ``jobs`` (``{name: argv}``) each run as ``nproc`` workers at once, as
    ``python -m stadyn.distributed.run --nproc NPROC --timeout TIMEOUT *argv`` started side by
    side did (:func:`stadyn.distributed.run_workers`, one thread each, every launch's output
    its own): ``{name: CompletedProcess}`` once all have ended."""
    from stadyn.distributed import run_workers

    done, threads = {}, []

    def one(name, argv):
        out, err = io.StringIO(), io.StringIO()
        status = None           # (the launcher raised: its traceback ends the output)
        try:
            status = run_workers(list(argv), nproc, timeout, stdout=out, stderr=err)
        except BaseException:   # noqa: BLE001 - reported as the launch's failure
            err.write(traceback.format_exc())
        done[name] = subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())

    with _environment(env), _limit(limit, sorted(jobs)):
        for name, argv in jobs.items():
            threads.append(threading.Thread(target=one, args=(name, [str(a) for a in argv]),
                                            daemon=True))
            threads[-1].start()
        for thread in threads:
            thread.join()
    return done


def launch_beside(args: list[str], beside: list[str], env: dict[str, str],
                  limit: float) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """:func:`launch` of ``args`` while the command line ``beside`` (a script run alone, not a
    launcher) runs as a process of its own at the same time, as the two started side by side
    with ``subprocess.Popen`` did: ``(the launch's CompletedProcess, beside's)``, beside's
    output its standard error (its standard output dropped), each given ``limit`` seconds."""
    process = subprocess.Popen(beside, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        launched = launch(args, env, limit)
        _, err = process.communicate(timeout=limit)
    finally:
        if process.poll() is None:          # (the launch raised, or beside ran past its limit)
            process.kill()
            process.communicate()
    return launched, subprocess.CompletedProcess(beside, process.returncode, "", err)

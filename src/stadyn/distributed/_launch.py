"""Starting N local workers and ending the job when one of them fails or hangs.

``run_workers(argv, nproc, timeout)`` runs the command line ``argv`` once per worker with the
environment ``torchrun`` would give it (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``), supervises the workers and returns the
job's exit status:

* The rendezvous store is hosted here (a ``TCPStore`` on a free port of the loopback
  interface), so no port is guessed and the store outlives any worker.
* A worker that exits with an error ends the job at once: the others get SIGTERM, then SIGKILL
  after ``grace`` seconds, and the report names the rank that failed first, with its exit code
  and the last lines it wrote to stderr.  Workers that failed only because a peer vanished from
  their collective (they say so in their heartbeat) are not blamed.
* A worker that raised is named even when a peer's collective failed (and exited) first: a
  worker's uncaught exception is recorded in its heartbeat before its exit handlers tear the
  process group down, and the launcher waits a few seconds for the worker that caused a
  collective to fail to show itself before it reports.
* A hung worker: every collective Stadyn issues writes a heartbeat (``_collectives.py``); when a
  worker has waited in a collective for ``timeout`` seconds, the report names the ranks that
  never arrived (and what they last did), and the job ends.  The workers' own collective
  timeout is set a little longer (``STADYN_DIST_TIMEOUT``), as a second line of defence.  A
  worker still running ``timeout`` seconds after another finished (it can no longer meet it in
  a collective: hung outside one, or working alone that long) ends the job too.
* The workers end themselves if the launcher dies (each collective checks that the launcher's
  process is still there; wrappers such as gdb may sit between); SIGTERM/SIGHUP to the launcher end them as Ctrl-C does.
* ``max_restarts`` reruns the whole job after a failure (``STADYN_RESTART_COUNT`` tells the
  workers which attempt this is); resuming is the script's business — load the last checkpoint.

Exit status: 0 when every worker succeeded; else the failing worker's exit code (128 + signal
for a worker killed by a signal), 124 for a hang, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Mapping, Sequence

from ._collectives import HEARTBEAT_ENV, LAUNCHER_ENV, read_heartbeats
from ._env import TIMEOUT_ENV

__all__ = ["run_workers", "main"]

_POLL = 0.05
_TAIL = 30


class _Worker:
    def __init__(self, rank: int, proc: subprocess.Popen):
        self.rank = rank
        self.proc = proc
        self.tail: collections.deque[str] = collections.deque(maxlen=_TAIL)
        self.threads: list[threading.Thread] = []
        self.exit_time: float | None = None
        self.forgiven = False        # aborted after finishing (see _effective_code)

    @property
    def code(self) -> int | None:
        return self.proc.poll()


def _pipe(worker: _Worker, stream: IO[bytes], out: IO[str], prefix: str, keep: bool,
          lock: threading.Lock) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", errors="replace")
        if keep:
            worker.tail.append(line.rstrip("\n"))
        with lock:
            try:
                out.write(prefix + line)
                out.flush()
            except (ValueError, OSError):   # the stream was closed under us
                pass
    stream.close()


def _effective_code(w: _Worker, heartbeat: str, err: IO[str], lock: threading.Lock
                    ) -> int | None:
    """The worker's exit status, except that an abort (SIGABRT) after its script finished —
    its heartbeat says ``finished``: no uncaught exception — counts as success, with a note.
    That abort is torch's process-group teardown racing the interpreter's
    ("terminate called without an active exception"), not the script failing."""
    code = w.code
    if code != -signal.SIGABRT:
        return code
    if w.forgiven:
        return 0
    state = read_heartbeats(heartbeat).get(w.rank)
    if state is None or state[1] != "finished":
        return code
    w.forgiven = True
    _emit(err, lock, [f"stadyn.distributed: worker rank {w.rank} finished its script, then "
                      "aborted while torch tore its process group down (SIGABRT); counted "
                      "as success"])
    return 0


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with code {code}"


def _status_of(code: int) -> int:
    return 128 - code if code < 0 else code


def _kill_all(workers: Sequence[_Worker], grace: float) -> None:
    alive = [w for w in workers if w.code is None]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for w in alive:
            try:
                os.killpg(w.proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + (grace if sig == signal.SIGTERM else 10.0)
        while time.monotonic() < deadline and any(w.code is None for w in alive):
            time.sleep(_POLL)
        alive = [w for w in alive if w.code is None]
        if not alive:
            break
    # Reap the group leaders' process groups too (a worker's own helper processes).
    for w in workers:
        try:
            os.killpg(w.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


_WHERE = {"in": "waiting in", "out": "done with", "failed": "failed in",
          "raised": "raising an exception after", "finished": "finished after"}


def _hang(beats: dict, workers: Sequence[_Worker], timeout: float) -> str | None:
    """A report if some live worker has waited in a collective for more than ``timeout``."""
    alive = {w.rank for w in workers if w.code is None}
    # Collective #0 is the rendezvous: workers arrive as their imports finish, and
    # init_process_group's own timeout covers it.
    waiting = [(r, b) for r, b in beats.items()
               if r in alive and b[1] == "in" and b[0] > 0 and b[3] > timeout]
    if not waiting:
        return None
    r0, (seq, _, what, age) = max(waiting, key=lambda item: item[1][3])
    culprits = []
    for w in workers:
        if w.rank == r0:
            continue
        b = beats.get(w.rank)
        if b is not None and b[1] == "in" and b[0] == seq:
            continue
        state = "exited" if w.code is not None else "is still running"
        if b is None:
            culprits.append(f"rank {w.rank} never reached a collective ({state})")
        else:
            where = _WHERE.get(b[1], b[1])
            culprits.append(f"rank {w.rank} was last {where} collective #{b[0]}"
                            f"{f' ({b[2]})' if b[2] else ''} {b[3]:.0f} s ago ({state})")
    head = (f"rank {r0} has waited {age:.0f} s (timeout {timeout:g} s) in collective #{seq}"
            f"{f' ({what})' if what else ''}")
    if culprits:
        return f"{head}; {'; '.join(culprits)}: hung?"
    return f"{head}; every worker is waiting in it (a deadlock or a network failure)"


def _report(workers: Sequence[_Worker], failed: _Worker, beats: dict, out: IO[str],
            lock: threading.Lock) -> None:
    code = failed.code
    lines = [f"stadyn.distributed: worker rank {failed.rank} (pid {failed.proc.pid}) "
             f"{_describe_exit(code)}; the job ends."]
    others = [w for w in workers if w is not failed and w.code not in (None, 0)
              and w.exit_time is not None and failed.exit_time is not None
              and w.exit_time <= failed.exit_time + 60]
    for w in others:
        why = " after a collective failed" if beats.get(w.rank, (0, ""))[1] == "failed" else ""
        lines.append(f"  rank {w.rank} {_describe_exit(w.code)}{why}.")
    if failed.tail:
        lines.append(f"  last lines rank {failed.rank} wrote to stderr:")
        lines += [f"    {line}" for line in failed.tail]
    _emit(out, lock, lines)


def _emit(out: IO[str], lock: threading.Lock, lines: list[str]) -> None:
    with lock:
        try:
            out.write("\n".join(lines) + "\n")
            out.flush()
        except (ValueError, OSError):
            pass


def _poll(workers: Sequence[_Worker], now: float, heartbeat: str, err: IO[str],
          lock: threading.Lock) -> list[_Worker]:
    """Note the time of every new exit; return the workers that failed."""
    failures = []
    for w in workers:
        code = _effective_code(w, heartbeat, err, lock)
        if code is not None and w.exit_time is None:
            w.exit_time = now
        if code not in (None, 0):
            failures.append(w)
    return failures


_SETTLE = 10.0          # seconds to wait for the worker behind a failed collective to show itself
_SETTLE_RAISED = 30.0   # ... for a worker known to have raised to finish exiting


def _state(beats: dict, w: _Worker) -> str:
    return beats.get(w.rank, (0, ""))[1]


def _find_culprit(workers: Sequence[_Worker], heartbeat: str, err: IO[str],
                  lock: threading.Lock) -> tuple[_Worker, dict]:
    """The worker to blame for a failure, and the heartbeats read.

    A worker whose collective failed because a peer went away (heartbeat ``failed``) is not to
    blame; the peer is -- but it may still be exiting: a worker that raised tears its process
    group down in its exit handlers, so its peers fail before it is gone.  So while only such
    collateral failures are known, wait for a worker that exits with an error of its own: up
    to ``_SETTLE`` seconds, or ``_SETTLE_RAISED`` while a running worker's heartbeat says it
    ``raised`` (it is then the culprit even if it has not exited by the end)."""
    start = time.monotonic()
    time.sleep(0.2)   # let a worker that saw its peer vanish say so in its heartbeat
    while True:
        now = time.monotonic()
        beats = read_heartbeats(heartbeat)
        failures = _poll(workers, now, heartbeat, err, lock)
        primary = [w for w in failures if _state(beats, w) != "failed"]
        if primary:
            return min(primary, key=lambda w: w.exit_time or now), beats
        running = [w for w in workers if w.code is None]
        raised = [w for w in running if _state(beats, w) == "raised"]
        waited = now - start
        if not running or waited >= (_SETTLE_RAISED if raised else _SETTLE):
            culprit = raised[0] if raised else min(failures, key=lambda w: w.exit_time or now)
            return culprit, beats
        time.sleep(_POLL)


def _attempt(argv: Sequence[str], nproc: int, timeout: float, env: Mapping[str, str],
             prefix_output: bool, grace: float, out: IO[str], err: IO[str],
             attempt: int) -> int:
    import torch.distributed as dist   # only the launcher's store needs torch here

    heartbeat = tempfile.mkdtemp(prefix="stadyn-heartbeat-")
    store = dist.TCPStore("127.0.0.1", 0, nproc, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=timeout * 1.25 + 5))
    lock = threading.Lock()
    workers: list[_Worker] = []
    base = dict(os.environ)
    base.update(env)
    base.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // nproc)))
    base.update({
        "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": "0",
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(store.port),
        "TORCHELASTIC_USE_AGENT_STORE": "True", HEARTBEAT_ENV: heartbeat,
        TIMEOUT_ENV: f"{timeout * 1.25 + 5:g}", "STADYN_RESTART_COUNT": str(attempt),
        LAUNCHER_ENV: str(os.getpid()),
        "PYTHONUNBUFFERED": "1",
    })
    try:
        for r in range(nproc):
            worker_env = dict(base, RANK=str(r), LOCAL_RANK=str(r))
            try:
                proc = subprocess.Popen(list(argv), env=worker_env, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                        start_new_session=True)
            except OSError as exc:
                _emit(err, lock, [f"stadyn.distributed: cannot start worker rank {r} "
                                  f"({' '.join(argv)}): {exc}"])
                return 127
            workers.append(_Worker(r, proc))
        for w in workers:
            prefix = f"[rank {w.rank}] " if prefix_output else ""
            for stream, target, keep in ((w.proc.stdout, out, False), (w.proc.stderr, err, True)):
                t = threading.Thread(target=_pipe, args=(w, stream, target, prefix, keep, lock),
                                     daemon=True)
                t.start()
                w.threads.append(t)
        return _supervise(workers, timeout, heartbeat, grace, err, lock)
    except KeyboardInterrupt:
        _emit(err, lock, ["stadyn.distributed: interrupted; ending the workers."])
        _kill_all(workers, grace)
        return 130
    finally:
        _kill_all(workers, grace)
        for w in workers:
            for t in w.threads:
                t.join(timeout=5)
        del store
        shutil.rmtree(heartbeat, ignore_errors=True)


def _supervise(workers: list[_Worker], timeout: float, heartbeat: str, grace: float,
               err: IO[str], lock: threading.Lock) -> int:
    next_beat_check = 0.0
    while True:
        now = time.monotonic()
        failures = _poll(workers, now, heartbeat, err, lock)
        if failures:
            culprit, beats = _find_culprit(workers, heartbeat, err, lock)
            _kill_all(workers, grace)
            for t in culprit.threads:
                t.join(timeout=2)
            _report(workers, culprit, beats, err, lock)
            return _status_of(culprit.code)
        if all(_effective_code(w, heartbeat, err, lock) == 0 for w in workers):
            return 0
        if now >= next_beat_check:
            next_beat_check = now + 0.5
            beats = read_heartbeats(heartbeat)
            report = _hang(beats, workers, timeout) or _alone(beats, workers, timeout, now)
            if report:
                _emit(err, lock, [f"stadyn.distributed: {report}; ending the job."])
                _kill_all(workers, grace)
                return 124
        time.sleep(_POLL)


def _alone(beats: dict, workers: Sequence[_Worker], timeout: float, now: float) -> str | None:
    """A report if a worker is still running ``timeout`` seconds after another one finished:
    it cannot meet the finished one in a collective any more, so it is hung outside one (or
    working alone longer than the job allows)."""
    finished = [w for w in workers if (w.code == 0 or w.forgiven) and w.exit_time is not None]
    running = [w for w in workers if w.code is None]
    if not finished or not running:
        return None
    first = min(finished, key=lambda w: w.exit_time)
    alone = now - first.exit_time
    if alone <= timeout:
        return None
    parts = []
    for w in running:
        b = beats.get(w.rank)
        last = "never reached a collective" if b is None else (
            f"was last {_WHERE.get(b[1], b[1])} collective #{b[0]}"
            f"{f' ({b[2]})' if b[2] else ''} {b[3]:.0f} s ago")
        parts.append(f"rank {w.rank} {last}")
    names = ", ".join(f"rank {w.rank}" for w in running)
    return (f"{names} {'is' if len(running) == 1 else 'are'} still running {alone:.0f} s after "
            f"rank {first.rank} finished (timeout {timeout:g} s); {'; '.join(parts)}: hung "
            f"outside a collective?")


def run_workers(target_argv: list[str], nproc: int, timeout: float = 600.0, *,
                max_restarts: int = 0, env: Mapping[str, str] | None = None,
                prefix_output: bool = False, grace: float = 5.0,
                stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:
    """Run ``target_argv`` as ``nproc`` local workers; return the job's exit status.

    Args:
        target_argv: the full command line (``[sys.executable, 'train.py', ...]``).
        nproc: workers to start (ranks 0..nproc-1 on this machine).
        timeout: seconds a worker may wait in a collective for the others before the job is
            ended as hung (see the module docstring).
        max_restarts: rerun the job this many times after a failure.
        env: extra environment variables for the workers.  ``OMP_NUM_THREADS`` defaults to the
            CPU count divided by ``nproc``.
        prefix_output: prefix every line the workers write with ``[rank r]``.
        grace: seconds between SIGTERM and SIGKILL when ending workers.
        stdout, stderr: where the workers' output and the launcher's reports go (default: this
            process's).
    """
    if nproc < 1:
        raise ValueError(f"nproc must be >= 1, got {nproc}")
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    if not target_argv:
        raise ValueError("no command to run")
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    status = 0
    with _terminate_as_interrupt():
        for attempt in range(max_restarts + 1):
            if attempt:
                _emit(err, threading.Lock(), [f"stadyn.distributed: restarting the job "
                                              f"(attempt {attempt + 1} of {max_restarts + 1})."])
            status = _attempt(target_argv, int(nproc), float(timeout), dict(env or {}),
                              prefix_output, grace, out, err, attempt)
            if status in (0, 130):
                break
    return status


@contextlib.contextmanager
def _terminate_as_interrupt():
    """SIGTERM/SIGHUP to the launcher end the workers as Ctrl-C does (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt
    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def build_parser(prog: str = "python -m stadyn.distributed.run") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="Run a training script as N data-parallel workers on this "
        "machine (Gloo on CPUs, NCCL on GPUs); a failed or hung worker ends the job.")
    parser.add_argument("--nproc", "--nproc-per-node", type=int, default=1, dest="nproc",
                        help="workers to start (default 1)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds a worker may wait for the others in a collective before "
                        "the job is ended as hung (default 600)")
    parser.add_argument("--max-restarts", type=int, default=0,
                        help="rerun the job this many times after a failure (default 0)")
    parser.add_argument("--prefix-output", action="store_true",
                        help="prefix the workers' output lines with [rank r]")
    parser.add_argument("-m", "--module", action="store_true",
                        help="run the target as a module (python -m TARGET)")
    parser.add_argument("--no-python", action="store_true",
                        help="run the target as an executable, not with this Python")
    parser.add_argument("target", help="the script (or module, or executable) to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``python -m stadyn.distributed.run [--nproc N] [--timeout S] script.py args...``."""
    args = build_parser().parse_args(argv)
    if args.no_python:
        command = [args.target, *args.args]
    elif args.module:
        command = [sys.executable, "-m", args.target, *args.args]
    else:
        command = [sys.executable, args.target, *args.args]
    return run_workers(command, args.nproc, args.timeout, max_restarts=args.max_restarts,
                       prefix_output=args.prefix_output)

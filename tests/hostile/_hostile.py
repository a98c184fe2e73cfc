"""Run a loader against a hostile file in a process of its own, under a time limit and an
address-space limit, and report how it ended.

Each run forks from multiprocessing's fork server (Stadyn is imported there once, so a run costs
milliseconds, not an interpreter start). The child lowers its address-space limit
(``RLIMIT_AS``) to what it already uses plus ``memory`` bytes, then calls the loader. The parent
waits ``timeout`` seconds for the answer and kills a child that has not answered: a hang is
reported as ``hung``, not waited for.

The loader is a module-level callable (a Stadyn function, or a function of a test module) or a
``"module:name"`` string; its arguments must pickle.

Example (a FIFO blocks ``open`` until someone writes to it)::

    outcome = run_bounded("builtins:open", str(fifo), timeout=5)
    assert outcome.kind == "hung"
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import resource
import signal
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterable

__all__ = ["Outcome", "run_bounded", "check_refused", "snapshot", "DEFAULT_TIMEOUT",
           "DEFAULT_MEMORY"]

# seconds; a loader answers in milliseconds, a FIFO never (STADYN_HOSTILE_TIMEOUT overrides it)
DEFAULT_TIMEOUT = float(os.environ.get("STADYN_HOSTILE_TIMEOUT", "30"))
DEFAULT_MEMORY = 1 << 30      # bytes of address space above what the process has at the start


@dataclass
class Outcome:
    """How one bounded run ended.

    ``kind``: ``"returned"`` (``value`` is the repr of the result), ``"raised"`` (``error`` is
    the exception's qualified type name, ``bases`` those of its whole MRO, ``message`` its text,
    ``detail`` the traceback), ``"hung"`` (killed after ``timeout`` s) or ``"died"`` (the process
    ended without an answer: a signal, ``os._exit``; ``detail`` says how). ``pid`` is the child's
    process id.
    """

    kind: str
    error: str = ""
    bases: tuple[str, ...] = ()
    message: str = ""
    detail: str = ""
    value: str = ""
    exitcode: int | None = None
    pid: int | None = None

    @property
    def stadyn_error(self) -> bool:
        """Did the loader raise a subclass of ``stadyn.StadynError``?"""
        return "stadyn._errors.StadynError" in self.bases

    def __str__(self) -> str:
        if self.kind == "raised":
            return f"raised {self.error}: {self.message}\n{self.detail}"
        if self.kind == "returned":
            return f"returned {self.value}"
        return f"{self.kind} ({self.detail})"


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _resolve(target: Callable | str) -> Callable:
    if callable(target):
        return target
    module, _, name = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _address_space() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def _child(conn, target, args, kwargs, memory: int, file_size: int | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_address_space() + memory, hard))
    if file_size is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # writes past it fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE,
                           (file_size, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    try:
        value = _resolve(target)(*args, **kwargs)
        answer = ("returned", repr(value)[:2000])
    except BaseException as exc:  # noqa: BLE001 - every ending is reported
        answer = ("raised", _qualname(type(exc)), tuple(_qualname(c) for c in type(exc).__mro__),
                  str(exc)[:4000], "".join(traceback.format_exception(exc))[-6000:])
    conn.send(answer)
    conn.close()


def run_bounded(target: Callable | str, *args: Any, timeout: float = DEFAULT_TIMEOUT,
                memory: int = DEFAULT_MEMORY, file_size: int | None = None,
                **kwargs: Any) -> Outcome:
    """Call ``target(*args, **kwargs)`` in a child process with at most ``memory`` more bytes of
    address space and ``timeout`` seconds; ``file_size`` also limits the size of any file it
    writes (``RLIMIT_FSIZE``: a write past it fails with EFBIG, as one on a full disk fails
    with ENOSPC)."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["stadyn.io", "stadyn.serialize"])
    parent, child = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(child, target, args, kwargs, memory, file_size),
                          name="stadyn-hostile", daemon=True)
    process.start()
    child.close()
    try:
        if not parent.poll(timeout):
            process.kill()
            process.join(10)
            return Outcome("hung", detail=f"no answer after {timeout:g} s; killed",
                           pid=process.pid)
        try:
            answer = parent.recv()
        except EOFError:
            process.join(10)
            code = process.exitcode
            how = (f"killed by signal {signal.Signals(-code).name}" if code is not None
                   and code < 0 else f"exit code {code}")
            return Outcome("died", detail=how, exitcode=code, pid=process.pid)
    finally:
        parent.close()
    process.join(10)
    if answer[0] == "returned":
        return Outcome("returned", value=answer[1], exitcode=process.exitcode, pid=process.pid)
    _, error, bases, message, detail = answer
    return Outcome("raised", error=error, bases=bases, message=message, detail=detail,
                   exitcode=process.exitcode, pid=process.pid)


def snapshot(folder: str | os.PathLike) -> set[str]:
    """Every file, folder and link under ``folder`` (hidden ones too), relative to it."""
    found = set()
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(root, name), folder))
    return found


def check_refused(target: Callable | str, *args: Any, names: Iterable[str],
                  watch: str | os.PathLike, timeout: float = DEFAULT_TIMEOUT,
                  memory: int = DEFAULT_MEMORY, **kwargs: Any) -> Outcome:
    """Assert that ``target(*args, **kwargs)``, run bounded, raises a ``StadynError`` whose
    message contains each of ``names`` (the file, what it declares) and leaves nothing new
    under ``watch`` (no output, no temporary file). Returns the outcome for further checks."""
    before = snapshot(watch)
    outcome = run_bounded(target, *args, timeout=timeout, memory=memory, **kwargs)
    assert outcome.kind == "raised" and outcome.stadyn_error, \
        f"expected a StadynError, got: {outcome}"
    for name in names:
        assert str(name) in outcome.message, f"{name!r} is not named in: {outcome.message}"
    left = snapshot(watch) - before
    assert not left, f"left behind under {watch}: {sorted(left)}"
    return outcome

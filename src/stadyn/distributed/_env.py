"""The process group: set up from the launcher's environment, queried by everything else.

``init()`` reads what ``torchrun`` (and :func:`stadyn.distributed.run_workers`) set: ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``.  Without
``WORLD_SIZE`` (or with ``WORLD_SIZE=1``) it does nothing and the process is rank 0 of 1, so the
same script runs alone or under a launcher.  The backend is Gloo on CPUs; where CUDA is
available it is ``cpu:gloo,cuda:nccl`` (NCCL for CUDA tensors, Gloo for CPU ones).

This module and :mod:`._collectives` import only torch: the op catalog reads them at run time.
"""

from __future__ import annotations

import atexit
import datetime
import gc
import os
import sys
from typing import Any

import torch
import torch.distributed as dist

from .._errors import StadynError

__all__ = ["DistributedError", "init", "shutdown", "is_initialized", "rank", "size",
           "local_rank", "local_size", "is_main", "backend", "new_group", "get_group",
           "default_timeout"]

#: Environment variable the launcher sets for the collective timeout (seconds).
TIMEOUT_ENV = "STADYN_DIST_TIMEOUT"
_DEFAULT_TIMEOUT = 600.0

_LAUNCH_HINT = ("launch the script with `python -m stadyn.distributed.run --nproc N script.py` "
                "(or `stadyn train CONFIG --nproc N`, or `torchrun --nproc-per-node N "
                "script.py`), which set RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and "
                "MASTER_PORT for every worker")


class DistributedError(StadynError, RuntimeError):
    """A process group could not be set up, or a collective failed (names the rank and, where
    it can be found, the peer that stopped)."""


DistributedError.__module__ = "stadyn.distributed"   # as tracebacks show it


_groups: dict[str, Any] = {}
_timeout: list[float] = [_DEFAULT_TIMEOUT]


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise DistributedError(f"environment variable {name}={value!r} is not an integer") \
            from None


def default_timeout() -> float:
    """Seconds a collective may wait for its peers: ``init(timeout=...)``, else
    ``STADYN_DIST_TIMEOUT``, else 600."""
    return _timeout[0]


def _seconds(timeout: float | datetime.timedelta | None) -> float:
    if timeout is None:
        env = os.environ.get(TIMEOUT_ENV)
        return float(env) if env else _DEFAULT_TIMEOUT
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _default_backend() -> str:
    if torch.cuda.is_available() and dist.is_nccl_available():
        return "cpu:gloo,cuda:nccl"
    return "gloo"


def init(backend: str | None = None, timeout: float | datetime.timedelta | None = None) -> bool:
    """Join the process group the launcher describes in the environment.

    Returns True when this process is one of several workers, False when it runs alone (no
    ``WORLD_SIZE``, or ``WORLD_SIZE=1``: then nothing is set up and every collective of
    :mod:`stadyn.distributed` is a no-op).  Calling it again is harmless; a group someone else
    initialised (``torch.distributed.init_process_group``) is adopted.

    Args:
        backend: ``'gloo'``, ``'nccl'`` or torch's ``'cpu:gloo,cuda:nccl'`` form; by default
            Gloo, plus NCCL for CUDA tensors where CUDA is available (``STADYN_DIST_BACKEND``
            overrides).
        timeout: seconds (or a timedelta) a collective waits for its peers before failing with
            an error naming this rank (default: ``STADYN_DIST_TIMEOUT``, else 600 s).

    Example:
        >>> import stadyn.distributed as dist
        >>> dist.init()          # no launcher here: one process
        False
        >>> dist.rank(), dist.size(), dist.is_main()
        (0, 1, True)
    """
    if dist.is_available() and dist.is_initialized():
        if timeout is not None:
            _timeout[0] = _seconds(timeout)
        return dist.get_world_size() > 1
    seconds = _seconds(timeout)
    _timeout[0] = seconds
    world = _env_int("WORLD_SIZE")
    if world is None or world == 1:
        return False
    if world < 1:
        raise DistributedError(f"WORLD_SIZE={world}: expected a positive number of workers")
    if not dist.is_available():
        raise DistributedError("this torch build has no torch.distributed")
    missing = [name for name in ("RANK", "MASTER_ADDR", "MASTER_PORT")
               if not os.environ.get(name)]
    if missing:
        raise DistributedError(f"WORLD_SIZE={world} but {', '.join(missing)} "
                               f"{'is' if len(missing) == 1 else 'are'} not set: {_LAUNCH_HINT}")
    r = _env_int("RANK")
    if not 0 <= r < world:
        raise DistributedError(f"RANK={r} is outside 0..{world - 1} (WORLD_SIZE={world})")
    chosen = backend or os.environ.get("STADYN_DIST_BACKEND") or _default_backend()
    if "nccl" in chosen and torch.cuda.is_available():
        torch.cuda.set_device(local_rank() % max(1, torch.cuda.device_count()))
    from ._collectives import beat, describe_peers
    beat(0, "in", "init (rendezvous)")
    try:
        dist.init_process_group(chosen, init_method="env://", rank=r, world_size=world,
                                timeout=datetime.timedelta(seconds=seconds))
    except Exception as exc:  # noqa: BLE001 - rendezvous failures come in many types
        beat(0, "failed", "init")
        where = f"{os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}"
        raise DistributedError(
            f"rank {r} of {world}: could not join the process group at {where} with backend "
            f"{chosen!r} within {seconds:g} s ({type(exc).__name__}: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}){describe_peers(r)}"
        ) from exc
    beat(0, "out", "init")
    sys.excepthook = _noting_uncaught(sys.excepthook)
    atexit.register(_leave_at_exit)
    return True


_uncaught = [False]     # did the script end with an uncaught exception?


def _noting_uncaught(hook):
    """``sys.excepthook`` that first records that the script failed (see _leave_at_exit), in
    the heartbeat too: its exit handlers will tear the process group down and make its peers'
    collectives fail, and the launcher must not blame them."""
    def excepthook(kind, value, tb):
        _uncaught[0] = True
        try:
            from ._collectives import beat, current_sequence, last_state
            if last_state() != "failed":     # a failed collective: a peer is to blame
                beat(current_sequence(), "raised", getattr(kind, "__name__", "an exception"))
        except Exception:  # noqa: BLE001 - never hide the exception being reported
            pass
        hook(kind, value, tb)
    return excepthook


def _leave_at_exit() -> None:
    """Tear the process group down while the interpreter is still whole.

    Left to interpreter finalization, Gloo's worker threads can release the last tensors of
    finished asynchronous work while the interpreter is being torn down and abort the process
    ("terminate called without an active exception", SIGABRT) after a successful run.  This
    drops Stadyn's group handles, destroys the process group and collects garbage first.  A
    worker whose script ended without an uncaught exception also records "finished" in its
    heartbeat before the teardown, so the launcher can tell such an abort from a failure.
    """
    if not (dist.is_available() and dist.is_initialized()):
        return
    if not _uncaught[0]:
        from ._collectives import beat, current_sequence
        beat(current_sequence(), "finished", "the script ended")
    try:
        shutdown()
    except Exception:  # noqa: BLE001 - exiting anyway; never turn success into failure
        pass
    gc.collect()


def shutdown() -> None:
    """Leave the process group (at the end of a script; optional)."""
    _groups.clear()
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def is_initialized() -> bool:
    """True when a process group with more than one worker is active."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    """This worker's rank: from the process group, else from ``RANK`` (0 when alone)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return _env_int("RANK") or 0


def size() -> int:
    """The number of workers: from the process group, else ``WORLD_SIZE`` (1 when alone)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return _env_int("WORLD_SIZE") or 1


def local_rank() -> int:
    """This worker's rank on its machine (``LOCAL_RANK``; 0 when alone): the GPU to use."""
    value = _env_int("LOCAL_RANK")
    return rank() if value is None else value


def local_size() -> int:
    """Workers on this machine (``LOCAL_WORLD_SIZE``; else the world size)."""
    value = _env_int("LOCAL_WORLD_SIZE")
    return size() if value is None else value


def is_main() -> bool:
    """True on rank 0, the worker that prints progress and writes logs and checkpoints."""
    return rank() == 0


def backend() -> str | None:
    """The process group's backend (``'gloo'``, ...), None when running alone."""
    if dist.is_available() and dist.is_initialized():
        return str(dist.get_backend())
    return None


def new_group(name: str, ranks: list[int]) -> None:
    """Create a named sub-group of ``ranks`` (every worker must call it, in the same order);
    ops and communicators find it by ``name`` (``group='world'`` is everyone)."""
    if name == "world":
        raise DistributedError("the group name 'world' is reserved for all workers")
    ranks = sorted(int(r) for r in ranks)
    if is_initialized():
        bad = [r for r in ranks if not 0 <= r < size()]
        if bad:
            raise DistributedError(f"new_group {name!r}: ranks {bad} do not exist "
                                   f"(there are {size()} workers)")
        _groups[name] = (dist.new_group(ranks), tuple(ranks))
    else:
        if ranks != [0]:
            raise DistributedError(f"new_group {name!r} with ranks {ranks} in a single process: "
                                   f"{_LAUNCH_HINT}")
        _groups[name] = (None, (0,))


def get_group(name: Any = "world"):
    """The torch process group for ``name`` (``'world'``/None: the default group, returned as
    None, as torch.distributed expects); a ProcessGroup passes through."""
    if name is None or name == "world":
        return None
    if not isinstance(name, str):
        return name
    try:
        return _groups[name][0]
    except KeyError:
        known = ", ".join(["world", *sorted(_groups)])
        raise DistributedError(f"no process group named {name!r} (known: {known}); create it "
                               "with stadyn.distributed.new_group(name, ranks)") from None


def group_ranks(name: Any = "world") -> tuple[int, ...]:
    """The ranks of a named group."""
    if name is None or name == "world":
        return tuple(range(size()))
    if isinstance(name, str):
        get_group(name)
        return _groups[name][1]
    return tuple(dist.get_process_group_ranks(name))

"""The launcher's environment and the process group as everything else queries it: this
worker's rank, the number of workers, named sub-groups, the collective timeout.

Before the process group is set up (:func:`stadyn.distributed.init`, in ``_process_group.py``)
the answers come from the variables the launcher sets (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``LOCAL_WORLD_SIZE``); running alone, this process is rank 0 of 1.

This module and :mod:`._collectives` import only torch: the op catalog reads them at run time.
"""

from __future__ import annotations

import datetime
import os
from typing import Any

import torch
import torch.distributed as dist

from .._errors import StadynError

__all__ = ["DistributedError", "is_initialized", "rank", "size", "local_rank", "local_size",
           "is_main", "backend", "new_group", "get_group", "group_ranks", "named_groups",
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


#: OpenMPI's names (``mpiexec -n N python script.py``, as CNTK's and NNabla's users launched
#: their workers) for the launcher's variables; read when ``WORLD_SIZE`` is not set
OPENMPI_NAMES = {"RANK": "OMPI_COMM_WORLD_RANK", "WORLD_SIZE": "OMPI_COMM_WORLD_SIZE",
                 "LOCAL_RANK": "OMPI_COMM_WORLD_LOCAL_RANK",
                 "LOCAL_WORLD_SIZE": "OMPI_COMM_WORLD_LOCAL_SIZE"}


def under_mpiexec() -> bool:
    """Whether OpenMPI's ``mpiexec`` started this process and no other launcher's variables
    are set (then ``RANK``, ``WORLD_SIZE``, ... are read from ``OMPI_COMM_WORLD_*``)."""
    return not os.environ.get("WORLD_SIZE") and bool(os.environ.get("OMPI_COMM_WORLD_SIZE"))


def _env_int(name: str) -> int | None:
    if name in OPENMPI_NAMES and under_mpiexec():
        name = OPENMPI_NAMES[name]
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


def is_initialized() -> bool:
    """True when a process group with more than one worker is active."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    """This worker's rank: from the process group, else from ``RANK`` (OpenMPI's
    ``OMPI_COMM_WORLD_RANK`` under ``mpiexec``; 0 when alone).

    Example:
        >>> import stadyn.distributed as dist
        >>> dist.rank(), dist.size(), dist.local_rank(), dist.is_main()    # running alone
        (0, 1, 0, True)
    """
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return _env_int("RANK") or 0


def size() -> int:
    """The number of workers: from the process group, else ``WORLD_SIZE`` (under ``mpiexec``
    ``OMPI_COMM_WORLD_SIZE``; 1 when alone)."""
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
    """The ranks of a group: ``'world'`` (every worker), a name given to :func:`new_group`, or a
    torch ProcessGroup.

    Example:
        >>> import stadyn.distributed as dist
        >>> dist.new_group("first", [0])          # alone, the only group is rank 0
        >>> dist.group_ranks("world"), dist.group_ranks("first")
        ((0,), (0,))
        >>> dist.shutdown()                        # forgets the named groups
    """
    if name is None or name == "world":
        return tuple(range(size()))
    if isinstance(name, str):
        get_group(name)
        return _groups[name][1]
    return tuple(dist.get_process_group_ranks(name))


def named_groups() -> dict[str, tuple[int, ...]]:
    """The sub-groups created with :func:`new_group`: ``{name: ranks}`` (``'world'`` is not
    listed; :func:`shutdown` forgets them).

    Example:
        >>> import stadyn.distributed as dist
        >>> dist.new_group("solo", [0])
        >>> dist.named_groups()
        {'solo': (0,)}
        >>> dist.shutdown()
        >>> dist.named_groups()
        {}
    """
    return {name: ranks for name, (_, ranks) in _groups.items()}

"""Collectives with errors that name ranks, a heartbeat for the launcher, and a differentiable
sum-all-reduce.

Every blocking collective Stadyn issues goes through :func:`run` (or :func:`wait`), which

* counts it (collective #k: every worker issues the same sequence, so the numbers agree);
* writes ``"k in what"`` before and ``"k out"`` after it to this worker's heartbeat file when
  the launcher (:func:`stadyn.distributed.run_workers`) provides a folder for them
  (``STADYN_HEARTBEAT_DIR``) — one ``pwrite`` of a few bytes each;
* turns torch's failure (a Gloo timeout, "connection reset by peer", ...) into a
  :class:`DistributedError` that names this rank, the collective, and — from the other workers'
  heartbeat files — which peer had not arrived and since when.

The launcher reads the same files to end a job whose worker hangs (see ``_launch.py``).
This module imports only torch.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

import torch
import torch.distributed as dist

from ._env import DistributedError, default_timeout, get_group, is_initialized, rank, size

__all__ = ["run", "launch", "wait", "barrier", "beat", "describe_peers", "all_reduce_sum",
           "all_reduce_tensors", "broadcast_tensors", "reduce_tensors", "all_gather_tensors",
           "read_heartbeats", "HEARTBEAT_ENV", "LAUNCHER_ENV"]

HEARTBEAT_ENV = "STADYN_HEARTBEAT_DIR"
LAUNCHER_ENV = "STADYN_LAUNCHER_PID"

_seq = [0]
_fd: list[Any] = [None, None]   # (fd, path) of this worker's heartbeat file
_last = [""]                    # the state this worker last recorded


def _heartbeat_fd() -> int | None:
    folder = os.environ.get(HEARTBEAT_ENV)
    if not folder:
        return None
    path = os.path.join(folder, f"rank{rank()}")
    if _fd[1] != path:
        if _fd[0] is not None:
            os.close(_fd[0])
        _fd[0] = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        _fd[1] = path
    return _fd[0]


def beat(seq: int, state: str, what: str = "") -> None:
    """Record for the launcher that this worker is ``state`` (``in``/``out``/``failed``;
    ``finished`` when its script ended without an uncaught exception, ``raised`` when it ended
    with one that was not a failed collective)
    collective number ``seq``.  A no-op outside the launcher.  A worker whose launcher has died
    ends itself here (its peers will too, at their next collective)."""
    fd = _heartbeat_fd()
    if fd is None:
        return
    launcher = os.environ.get(LAUNCHER_ENV)
    if launcher and not _alive(int(launcher)):
        os.write(2, f"stadyn.distributed: rank {rank()}: the launcher (pid {launcher}) is gone; "
                    "ending this worker\n".encode())
        os._exit(1)
    line = f"{seq} {state} {what}".encode()[:200].ljust(200) + b"\n"
    os.pwrite(fd, line, 0)
    _last[0] = state


def last_state() -> str:
    """The state this worker last recorded in its heartbeat (empty before any)."""
    return _last[0]


def _alive(pid: int) -> bool:
    """Is process ``pid`` still there (works through wrappers such as gdb between launcher
    and worker)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def current_sequence() -> int:
    """The number of the last collective this worker issued (0 before any)."""
    return _seq[0]


def read_heartbeats(folder: str) -> dict[int, tuple[int, str, str, float]]:
    """``{rank: (seq, state, what, seconds since written)}`` from a heartbeat folder."""
    now = time.time()
    result = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return result
    for name in names:
        if not name.startswith("rank"):
            continue
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as f:
                text = f.read().decode(errors="replace").strip()
            age = now - os.stat(path).st_mtime
            seq, state, what = (text.split(" ", 2) + ["", ""])[:3]
            result[int(name[4:])] = (int(seq), state, what.strip(), age)
        except (OSError, ValueError):
            continue
    return result


def describe_peers(me: int, seq: int | None = None) -> str:
    """Where the other workers stand (from the heartbeat files), as a sentence; empty when
    there are none (not under the Stadyn launcher)."""
    folder = os.environ.get(HEARTBEAT_ENV)
    if not folder:
        return ("; a peer worker probably died or hung (its own log says why; under "
                "`python -m stadyn.distributed.run` the launcher names it)")
    beats = read_heartbeats(folder)
    parts = []
    world = os.environ.get("WORLD_SIZE", "")
    for r in range(int(world) if world.isdigit() else 0):
        if r != me and r not in beats:
            parts.append(f"rank {r} never reached a collective (still starting, or stuck "
                         "before stadyn.distributed.init())")
    for r in sorted(beats):
        if r == me:
            continue
        s, state, what, age = beats[r]
        if seq is not None and state == "in" and s == seq:
            continue   # waiting in the same collective: not the culprit
        where = {"in": "waiting in", "out": "done with", "failed": "failed in"}.get(state, state)
        parts.append(f"rank {r} was last {where} collective #{s}"
                     f"{f' ({what})' if what else ''} {age:.0f} s ago")
    if not parts:
        return "; every other worker is waiting in the same collective"
    return "; " + "; ".join(parts)


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _error(what: str, seq: int | None, exc: BaseException, elapsed: float) -> DistributedError:
    me = rank()
    number = f" (collective #{seq})" if seq is not None else ""
    return DistributedError(
        f"rank {me}: {what}{number} failed after {elapsed:.1f} s (timeout "
        f"{default_timeout():g} s): {_message(exc)}{describe_peers(me, seq)}")


def run(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run the blocking collective ``fn(*args, **kwargs)`` as collective #k (see the module
    docstring)."""
    _seq[0] += 1
    seq = _seq[0]
    beat(seq, "in", what)
    start = time.monotonic()
    try:
        result = fn(*args, **kwargs)
    except (RuntimeError, ValueError, OSError) as exc:
        beat(seq, "failed", what)
        raise _error(what, seq, exc, time.monotonic() - start) from exc
    beat(seq, "out", what)
    return result


def launch(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Start an asynchronous collective (``async_op=True``); its :func:`wait` is what counts
    as a collective for the heartbeat."""
    try:
        return fn(*args, async_op=True, **kwargs)
    except (RuntimeError, ValueError, OSError) as exc:
        beat(_seq[0], "failed", what)
        raise _error(what, None, exc, 0.0) from exc


def wait(what: str, works: list) -> None:
    """Wait for asynchronous collectives (``async_op=True`` handles), as one collective #k."""
    def wait_all():
        for w in works:
            w.wait()
    run(what, wait_all)


def active() -> bool:
    """True when collectives must communicate; an error when the launcher started several
    workers but this one has not joined the group yet."""
    if is_initialized():
        return True
    if size() > 1:
        raise DistributedError(f"rank {rank()}: the launcher started {size()} workers but this "
                               "one has not joined the process group: call "
                               "stadyn.distributed.init() (NNabla: comm.init()) first")
    return False


def barrier(group: Any = "world") -> None:
    """Wait until every worker of ``group`` arrives (a no-op when running alone)."""
    if active():
        run("barrier", dist.barrier, group=get_group(group))


class _AllReduceSum(torch.autograd.Function):
    """``y = sum over workers of x``; the gradient of ``x`` is the sum over workers of the
    gradient of ``y`` (every worker's loss depends on ``y``)."""

    @staticmethod
    def forward(ctx, x, group, what):
        ctx.group, ctx.what = group, what
        y = x.clone(memory_format=torch.contiguous_format)
        run(what, dist.all_reduce, y, group=group)
        return y

    @staticmethod
    def backward(ctx, grad):
        g = grad.clone(memory_format=torch.contiguous_format)
        run(ctx.what + " (backward)", dist.all_reduce, g, group=ctx.group)
        return g, None, None


def all_reduce_sum(x: torch.Tensor, group: Any = "world", what: str = "all_reduce"
                   ) -> torch.Tensor:
    """The sum of ``x`` over the workers of ``group`` as a new tensor, differentiable (the
    backward all-reduces the gradient).  ``x`` itself when running alone.

    Example:
        >>> import torch
        >>> import stadyn.distributed as dist
        >>> dist.all_reduce_sum(torch.ones(2)).tolist()    # one process: the sum is x
        [1.0, 1.0]
    """
    if not active():
        return x
    pg = get_group(group)
    if dist.get_world_size(pg) == 1:
        return x
    return _AllReduceSum.apply(x, pg, what)


def chunks(tensors: list[torch.Tensor], cap: int) -> list[list[torch.Tensor]]:
    """Consecutive groups of ``tensors`` of one dtype and device, each about ``cap`` bytes."""
    out: list[list[torch.Tensor]] = []
    nbytes = 0
    for t in tensors:
        size = t.numel() * t.element_size()
        if out and t.dtype == out[-1][0].dtype and t.device == out[-1][0].device \
                and nbytes + size <= cap:
            out[-1].append(t)
            nbytes += size
        else:
            out.append([t])
            nbytes = size
    return out


def _packed(what: str, tensors: list[torch.Tensor], cap: int, collective: Callable) -> None:
    """Run ``collective(flat)`` on packed buffers of ``tensors`` and copy the results back."""
    for chunk in chunks(tensors, cap):
        if len(chunk) == 1 and chunk[0].is_contiguous():
            run(what, collective, chunk[0].detach())   # in place, shares the storage
            continue
        flat = torch.cat([t.detach().reshape(-1) for t in chunk])
        run(what, collective, flat)
        with torch.no_grad():
            offset = 0
            for t in chunk:
                n = t.numel()
                t.copy_(flat[offset:offset + n].view_as(t))
                offset += n


def all_reduce_tensors(tensors: list[torch.Tensor], group: Any = "world", average: bool = False,
                       bucket_bytes: int = 25 << 20, op: Any = None,
                       what: str = "all_reduce") -> None:
    """Sum (or ``average``, or reduce with ``op``) ``tensors`` over the workers, in place,
    packed into buffers of about ``bucket_bytes``.  Running alone, the tensors stay as they are.

    Example:
        >>> import torch
        >>> import stadyn.distributed as dist
        >>> grads = [torch.ones(2), torch.full((3,), 2.0)]
        >>> dist.all_reduce_tensors(grads, average=True)    # one process: unchanged
        >>> [g.tolist() for g in grads]
        [[1.0, 1.0], [2.0, 2.0, 2.0]]
    """
    if not active():
        return
    pg = get_group(group)
    reduce_op = dist.ReduceOp.SUM if op is None else op
    _packed(what, [t for t in tensors], bucket_bytes,
            lambda flat: dist.all_reduce(flat, op=reduce_op, group=pg))
    if average:
        n = dist.get_world_size(pg)
        with torch.no_grad():
            for t in tensors:
                t.div_(n)


def broadcast_tensors(tensors: list[torch.Tensor], src: int = 0, group: Any = "world",
                      bucket_bytes: int = 25 << 20, what: str = "broadcast") -> None:
    """Copy ``tensors`` from group rank ``src`` to every worker, in place (packed).

    Example:
        >>> import torch
        >>> import stadyn.distributed as dist
        >>> weights = [torch.arange(3.0)]
        >>> dist.broadcast_tensors(weights)                  # one process: rank 0's already
        >>> weights[0].tolist()
        [0.0, 1.0, 2.0]
    """
    if not active():
        return
    pg = get_group(group)
    root = src if pg is None else dist.get_global_rank(pg, src)
    _packed(what, list(tensors), bucket_bytes,
            lambda flat: dist.broadcast(flat, src=root, group=pg))


def reduce_tensors(tensors: list[torch.Tensor], dst: int = 0, group: Any = "world",
                   average: bool = False, what: str = "reduce") -> None:
    """Sum (or ``average``) ``tensors`` over the workers of ``group`` into group rank ``dst``'s
    tensors, in place, one collective each; the other workers' tensors are left as torch's
    reduce leaves them.  Running alone, the tensors stay as they are.

    Example:
        >>> import torch
        >>> import stadyn.distributed as dist
        >>> t = torch.ones(3)
        >>> dist.reduce_tensors([t], dst=0, average=True)   # one process: unchanged
        >>> t.tolist()
        [1.0, 1.0, 1.0]
    """
    if not active():
        return
    pg = get_group(group)
    root = dst if pg is None else dist.get_global_rank(pg, dst)
    for t in tensors:
        buf = t if t.is_contiguous() else t.contiguous()
        run(what, dist.reduce, buf, dst=root, group=pg)
        if average:
            buf.div_(dist.get_world_size(pg))
        if buf is not t:
            t.copy_(buf)


def all_gather_tensors(tensor: torch.Tensor, outputs: list[torch.Tensor], group: Any = "world",
                       what: str = "all_gather") -> None:
    """Fill ``outputs[r]`` with group rank r's ``tensor`` (every worker's of the same shape);
    ``outputs`` needs one tensor per worker of ``group`` (a ValueError names the counts).

    Example:
        >>> import torch
        >>> import stadyn.distributed as dist
        >>> out = [torch.zeros(2)]
        >>> dist.all_gather_tensors(torch.tensor([1.0, 2.0]), out)   # one process, one output
        >>> out[0].tolist()
        [1.0, 2.0]
    """
    if not active():
        if len(outputs) != 1:
            raise ValueError(f"{what}: {len(outputs)} output arrays for 1 worker")
        outputs[0].copy_(tensor)
        return
    pg = get_group(group)
    n = dist.get_world_size(pg)
    if len(outputs) != n:
        raise ValueError(f"{what}: {len(outputs)} output arrays for {n} workers")
    bufs = [torch.empty_like(tensor) for _ in range(n)]
    run(what, dist.all_gather, bufs, tensor.contiguous(), group=pg)
    for out, buf in zip(outputs, bufs):
        out.copy_(buf.view_as(out))

"""Data-parallel training: the same model on every worker, gradients summed over workers.

:class:`DataParallel` is what the :class:`stadyn.train.Trainer` calls (``data_parallel=dp``) and
what a hand-written loop calls after ``backward()``:

* ``broadcast_parameters(params)`` copies rank 0's values (running statistics included) to every
  worker, after checking that all workers hold the same parameter names and shapes;
* ``all_reduce_gradients(params, average=False)`` sums the ``.grad`` of the parameters over the
  workers, in place.  Gradients travel in *buckets* of about ``bucket_size_mb``: each bucket is
  one flat buffer, one collective, and a copy back.  Each bucket also carries one flag per
  parameter, so a parameter that got a gradient on some workers only ends with the sum on all
  of them (and one that got none anywhere keeps ``grad = None``, which solvers skip);
* ``synchronize(...)`` is the Trainer's hook: the gradients and the minibatch's sample count,
  loss sum and metric sum are summed, so learners see the *global* minibatch.

**Overlap.** When backward runs through torch's autograd — dynamic graphs, and static graphs that
run eagerly because they hold a collective such as ``sync_batch_normalization`` — a hook on each
parameter (``register_post_accumulate_grad_hook``) marks its gradient final; a bucket whose
gradients are all final starts its all-reduce at once, while backward goes on with the layers
below.  Buckets are filled from the last parameter to the first (the order backward produces
them) and always start in the same order on every worker.  A static graph's generated backward
program writes every gradient at the end, so there the all-reduce starts after it.

Accumulating gradients over several backward passes: run all but the last inside
``with dp.no_sync():``.
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import torch
import torch.distributed as dist

from ..graph import Variable, data_of, grad_of
from . import _collectives as C
from ._env import DistributedError, get_group, is_initialized, rank
from ._process_group import init

__all__ = ["DataParallel"]


def _as_list(params) -> list[Variable]:
    if params is None:
        return []
    if isinstance(params, Mapping):
        return list(params.values())
    if isinstance(params, Variable):
        return [params]
    return list(params)


def _named(params) -> list[tuple[str, Variable]]:
    if isinstance(params, Mapping):
        return [(str(k), v) for k, v in params.items()]
    return [(v.graph_name or f"#{i}", v) for i, v in enumerate(_as_list(params))]


@dataclass(eq=False)
class _Bucket:
    params: list[Variable]
    tensors: list[torch.Tensor]        # the leaf tensors the hooks are on
    numels: list[int]
    dtype: torch.dtype
    device: torch.device
    flat: torch.Tensor | None = None
    work: object = None
    ready: set = field(default_factory=set)
    launched: bool = False

    @property
    def total(self) -> int:
        return sum(self.numels)


class DataParallel:
    """Sum gradients over the workers of a process group (see the module docstring).

    Args:
        parameters: the parameters whose gradients are synchronised (a dict or list of
            Variables); needed up front only for overlapping the all-reduce with backward.
            :meth:`all_reduce_gradients` may also be given them each time.
        bucket_size_mb: target size of one all-reduce (megabytes).
        overlap: start each bucket's all-reduce during backward where autograd runs it.
        group: the process group (``'world'``, a name from :func:`new_group`, or a torch
            ProcessGroup).

    Running alone (no launcher), every method is a no-op and ``is_main`` is True.

    In a hand-written loop, the mean loss per worker and ``average=True`` give the mean
    gradient of the global minibatch when every worker has the same batch size.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F, stadyn.solvers as S
        >>> import stadyn.parametric_functions as PF, stadyn.distributed as dist
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     x = sd.Variable.from_numpy_array(np.ones((4, 3)))
        ...     loss = F.mean(PF.affine(x, 2))
        ...     params = sd.get_parameters()
        ...     dp = dist.DataParallel(params)
        ...     dp.broadcast_parameters(sd.get_parameters(grad_only=False))
        ...     solver = S.Sgd(0.1); solver.set_parameters(params)
        ...     loss.forward(); solver.zero_grad(); loss.backward()
        ...     dp.all_reduce_gradients(average=True); solver.update()
        >>> dp.is_main, dp.size
        (True, 1)
    """

    def __init__(self, parameters=None, *, bucket_size_mb: float = 25.0, overlap: bool = True,
                 group="world"):
        if bucket_size_mb <= 0:
            raise DistributedError(f"bucket_size_mb must be positive, got {bucket_size_mb}")
        init()
        self.group = group
        self._pg = get_group(group)
        self.bucket_bytes = int(bucket_size_mb * 2 ** 20)
        self.overlap = bool(overlap)
        self._params = [p for p in _as_list(parameters) if p.need_grad]
        self._layout_key: tuple | None = None
        self._buckets: list[_Bucket] = []
        self._next_launch = 0
        self._no_sync = False
        self._hooks: list = []
        self.steps = 0
        self.overlapped_buckets = 0   # buckets whose all-reduce started during backward
        if self._params and self.size > 1:
            self._build(self._params)

    # -- who we are --------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return dist.get_rank(self._pg) if is_initialized() else rank()

    @property
    def size(self) -> int:
        return dist.get_world_size(self._pg) if is_initialized() else 1

    @property
    def is_main(self) -> bool:
        """True on rank 0, the worker that writes progress, logs and checkpoints."""
        return self.rank == 0

    # -- parameters --------------------------------------------------------------------------
    def broadcast_parameters(self, params, src: int = 0) -> None:
        """Copy the values of ``params`` (dict name -> Variable, or a list) from rank ``src`` to
        every worker.  All workers must hold the same names, shapes and dtypes; a difference is
        an error naming the first worker that differs."""
        named = _named(params)
        if self.size == 1:
            return
        signature = [(n, tuple(v.shape), str(data_of(v).dtype)) for n, v in named]
        everyone: list = [None] * self.size
        C.run("checking the parameters match", dist.all_gather_object, everyone, signature,
              group=self._pg)
        for r, theirs in enumerate(everyone):
            if theirs != everyone[src]:
                raise DistributedError(_mismatch(everyone[src], theirs, src, r))
        C.broadcast_tensors([data_of(v) for _, v in named], src, self._pg, self.bucket_bytes,
                            "broadcasting the parameters")

    # -- gradients ---------------------------------------------------------------------------
    def all_reduce_gradients(self, params=None, average: bool = False) -> None:
        """Sum (``average``: the mean of) the ``.grad`` of ``params`` over the workers, in place.

        Without ``params`` the constructor's parameters are used.  Call it after ``backward()``
        and before the solver's ``update()``.
        """
        if self.size == 1:
            self._reset_step()
            return
        self._finish(self._start(params), average)

    def synchronize(self, parameters: Sequence[Variable], samples: int, loss_sum: float,
                    metric_sum: float | None) -> tuple[int, float, float | None]:
        """The Trainer's hook: sum the parameters' gradients and the minibatch's sample count,
        loss sum and metric sum over the workers; returns the global ``(samples, loss_sum,
        metric_sum)``."""
        if self.size == 1:
            self._reset_step()
            return samples, loss_sum, metric_sum
        works = self._start(parameters)
        scalars = torch.tensor([float(samples), float(loss_sum),
                                0.0 if metric_sum is None else float(metric_sum)],
                               dtype=torch.float64, device=self._scalar_device())
        works.append(C.launch("all-reduce of the sample count, loss and metric",
                              dist.all_reduce, scalars, group=self._pg))
        self._finish(works, average=False)
        total_samples, total_loss, total_metric = scalars.tolist()
        return (int(round(total_samples)), total_loss,
                None if metric_sum is None else total_metric)

    def all_reduce_scalars(self, *values: float) -> tuple[float, ...]:
        """The sums of ``values`` over the workers (in float64)."""
        if self.size == 1:
            return tuple(float(v) for v in values)
        scalars = torch.tensor([float(v) for v in values], dtype=torch.float64,
                               device=self._scalar_device())
        C.run("all-reduce of scalars", dist.all_reduce, scalars, group=self._pg)
        return tuple(scalars.tolist())

    def all_gather_objects(self, value) -> list:
        """Every worker's ``value`` (any picklable object), in rank order, on every worker."""
        if self.size == 1:
            return [value]
        everyone: list = [None] * self.size
        C.run("gathering objects", dist.all_gather_object, everyone, value, group=self._pg)
        return everyone

    def barrier(self) -> None:
        """Wait until every worker of the group arrives."""
        if self.size > 1:
            C.run("barrier", dist.barrier, group=self._pg)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside this block only accumulate gradients locally (no all-reduce
        starts during them); the next :meth:`all_reduce_gradients` sums everything."""
        previous, self._no_sync = self._no_sync, True
        try:
            yield
        finally:
            self._no_sync = previous

    def close(self) -> None:
        """Remove the backward hooks."""
        for h in self._hooks:
            h.remove()
        self._hooks.clear()

    # -- buckets -----------------------------------------------------------------------------
    def _start(self, params) -> list:
        """Start the all-reduce of every bucket not started during backward; returns the
        handles to wait for."""
        if params is None and not self._params:
            raise DistributedError("DataParallel: which parameters? Give them to "
                                   "DataParallel(params) or to all_reduce_gradients(params)")
        plist = self._params if params is None else [p for p in _as_list(params)
                                                     if p.need_grad]
        self.steps += 1
        if not plist:
            return []
        if self._layout_key != _key(plist):
            self._build(plist)
        while self._next_launch < len(self._buckets):
            self._launch(self._buckets[self._next_launch])
            self._next_launch += 1
        return [b.work for b in self._buckets]

    def _finish(self, works: list, average: bool) -> None:
        try:
            C.wait(f"gradient all-reduce of step {self.steps}", works)
            for b in self._buckets:
                self._unpack(b, average)
        finally:
            self._reset_step()

    def _build(self, plist: list[Variable]) -> None:
        in_flight = [b.work for b in self._buckets if b.work is not None]
        if in_flight:   # started during backward under the old layout: finish, then discard
            C.wait("gradient all-reduce (parameters changed)", in_flight)
        self.close()
        self._buckets = []
        current: list[Variable] = []
        nbytes = 0
        # Backward produces the gradients of the last layers first: fill buckets in reverse.
        for p in reversed(plist):
            t = data_of(p)
            first = data_of(current[0]) if current else None
            if current and (t.dtype != first.dtype or t.device != first.device
                            or nbytes + t.numel() * t.element_size() > self.bucket_bytes):
                self._add_bucket(current)
                current, nbytes = [], 0
            current.append(p)
            nbytes += t.numel() * t.element_size()
        if current:
            self._add_bucket(current)
        self._layout_key = _key(plist)
        self._next_launch = 0
        if self.overlap:
            self._install_hooks()

    def _add_bucket(self, params: list[Variable]) -> None:
        tensors = [data_of(p) for p in params]
        b = _Bucket(params, tensors, [t.numel() for t in tensors], tensors[0].dtype,
                    tensors[0].device)
        self._buckets.append(b)

    def _install_hooks(self) -> None:
        me = weakref.ref(self)
        for b_index, b in enumerate(self._buckets):
            for k, t in enumerate(b.tensors):
                if t.is_leaf and t.requires_grad:
                    self._hooks.append(t.register_post_accumulate_grad_hook(
                        _make_hook(me, b_index, k)))

    def _on_grad_ready(self, b_index: int, k: int) -> None:
        if self._no_sync or self.size == 1:
            return
        b = self._buckets[b_index]
        if b.launched:
            name = b.params[k].graph_name or f"#{k}"
            raise DistributedError(
                f"rank {self.rank}: parameter '{name}' received another gradient after its "
                "bucket's all-reduce started; to accumulate gradients over several backward "
                "passes run all but the last inside `with dp.no_sync():` (or use "
                "DataParallel(overlap=False))")
        b.ready.add(k)
        # Start ready buckets strictly in order, so every worker issues the same sequence.
        while self._next_launch < len(self._buckets):
            nb = self._buckets[self._next_launch]
            if len(nb.ready) < len(nb.tensors):
                break
            self._launch(nb)
            self._next_launch += 1
            self.overlapped_buckets += 1

    def _launch(self, b: _Bucket) -> None:
        n = len(b.params)
        if b.flat is None or b.flat.numel() != b.total + n:
            b.flat = torch.empty(b.total + n, dtype=b.dtype, device=b.device)
        flat = b.flat
        flags = []
        offset = 0
        with torch.no_grad():
            for p, numel in zip(b.params, b.numels):
                g = grad_of(p)
                if g is None:
                    flat[offset:offset + numel].zero_()
                else:
                    flat[offset:offset + numel].copy_(g.reshape(-1))
                flags.append(g is not None)
                offset += numel
            flat[b.total:].copy_(torch.tensor(flags, dtype=b.dtype))
        b.work = C.launch("starting a gradient all-reduce", dist.all_reduce, flat,
                          group=self._pg)
        b.launched = True

    def _unpack(self, b: _Bucket, average: bool) -> None:
        flat = b.flat
        flags = flat[b.total:].tolist()
        if average:
            flat[:b.total].div_(self.size)
        offset = 0
        with torch.no_grad():
            for p, numel, flag in zip(b.params, b.numels, flags):
                if flag > 0.5:
                    value = flat[offset:offset + numel].view(data_of(p).shape)
                    g = grad_of(p)
                    if g is None or g.shape != value.shape:
                        p.grad = value.clone()
                    else:
                        g.copy_(value)
                offset += numel

    def _reset_step(self) -> None:
        for b in self._buckets:
            b.ready.clear()
            b.launched = False
            b.work = None
        self._next_launch = 0

    def _scalar_device(self) -> torch.device:
        if self._buckets:
            return self._buckets[0].device
        return torch.device("cpu")


def _make_hook(me: "weakref.ref[DataParallel]", b_index: int, k: int):
    def hook(_tensor: torch.Tensor) -> None:
        dp = me()
        if dp is not None:
            dp._on_grad_ready(b_index, k)
    return hook


def _key(plist: Iterable[Variable]) -> tuple:
    return tuple((id(data_of(p)), tuple(data_of(p).shape), data_of(p).dtype) for p in plist)


def _mismatch(ours: list, theirs: list, src: int, r: int) -> str:
    a, b = dict((n, (s, d)) for n, s, d in ours), dict((n, (s, d)) for n, s, d in theirs)
    only_src = sorted(set(a) - set(b))
    only_r = sorted(set(b) - set(a))
    if only_src or only_r:
        detail = (f"rank {src} has {only_src[:3]} that rank {r} lacks" if only_src
                  else f"rank {r} has {only_r[:3]} that rank {src} lacks")
    else:
        diff = [n for n in a if a[n] != b[n]]
        if diff:
            n = diff[0]
            detail = (f"'{n}' is {a[n][0]} {a[n][1]} on rank {src} but {b[n][0]} {b[n][1]} "
                      f"on rank {r}")
        else:
            detail = "the parameters come in a different order"
    return (f"the workers hold different models: {detail}; every worker must build the same "
            "network before training data-parallel")

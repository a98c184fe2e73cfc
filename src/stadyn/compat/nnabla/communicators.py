"""``nnabla.communicators`` on Stadyn: NNabla's multi-process communicator on torch.distributed.

NNabla scripts written for MPI/NCCL run under Stadyn's launcher (``python -m
stadyn.distributed.run --nproc N script.py``) or ``torchrun`` with only the imports changed::

    import stadyn.compat.nnabla.communicators as C
    comm = C.MultiProcessDataParalellCommunicator(ctx)
    comm.init()
    ...
    loss.backward()
    comm.all_reduce([v.grad for v in nn.get_parameters().values()], division=True)
    solver.update()

Arrays are NdArrays (``Variable.data`` / ``Variable.grad``), torch tensors, NumPy arrays that
share memory with them (``Variable.d`` / ``.g`` on the CPU), or Variables (their ``.data``).
Results are written into them.  Running alone, every collective leaves the data as it is.
``all_reduce_callback`` (NNabla's hook for ``backward(communicator_callbacks=...)``) has no
counterpart: use :class:`stadyn.distributed.DataParallel`, which overlaps the all-reduce with
backward by itself.

``Communicator`` is the class of every communicator (NNabla's interface class), ``Comm`` and
``Dist`` are NNabla's short names of the multi-process one, and ``Context`` is ``nn.Context``
(NNabla's module re-exports it).  ``DataParallelCommunicator`` -- NNabla's single-process,
several-device communicator, which only its CUDA extension registers -- has no Stadyn
counterpart: as on NNabla's CPU build, making one is a ``RuntimeError`` (run one process per
device with the multi-process communicator instead).
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
import torch

from ... import distributed as D
from ...graph import Context as _StadynContext, Variable, data_of, grad_of
from ._context import TYPE_CONFIGS, Context
from ._ndarray import NdArray

__all__ = ["MultiProcessDataParallelCommunicator", "MultiProcessDataParalellCommunicator",
           "MultiProcessCommunicator", "Comm", "Dist", "Communicator", "Context",
           "DataParallelCommunicator"]


def _tensor(item: Any, index: int, what: str) -> torch.Tensor:
    if isinstance(item, Variable):
        return data_of(item).detach()
    if isinstance(item, NdArray):
        return item._t
    if isinstance(item, torch.Tensor):
        return item.detach()
    if isinstance(item, np.ndarray):
        if not item.flags.writeable or not item.flags.c_contiguous:
            raise TypeError(f"{what}: array {index} is not a writable contiguous NumPy array")
        return torch.from_numpy(item)   # shares memory: results land in the array
    if item is None:
        raise TypeError(f"{what}: item {index} is None (a parameter whose gradient was never "
                        "computed? Stadyn allocates .grad in backward; read .g to get zeros, or "
                        "use stadyn.distributed.DataParallel, which handles missing gradients)")
    raise TypeError(f"{what}: item {index} is a {type(item).__name__}; expected a torch tensor, "
                    "a NumPy array or a Variable")


def _tensors(data: Any, what: str) -> list[torch.Tensor]:
    items = list(data) if isinstance(data, (list, tuple)) else [data]
    return [_tensor(item, i, what) for i, item in enumerate(items)]


class Communicator:
    """NNabla's communicator interface: the class every communicator is an instance of.

    Example:
        >>> from stadyn.compat.nnabla.communicators import Communicator, Comm
        >>> isinstance(Comm(None), Communicator)
        True
    """


def DataParallelCommunicator(ctx: Any) -> Communicator:  # noqa: N802 - NNabla's name
    """NNabla's single-process communicator over several devices: not available, as on NNabla
    1.39's CPU build, where no extension registers one (its CUDA extension does).

    Example:
        >>> from stadyn.compat.nnabla.ext_utils import get_extension_context
        >>> try:
        ...     DataParallelCommunicator(get_extension_context("cpu"))
        ... except RuntimeError as exc:
        ...     print(str(exc).splitlines()[0])
        DataParallelCommunicator: no communicator for any of [cpu:float]
    """
    if isinstance(ctx, Context):
        where = ", ".join(ctx.backend)
    elif isinstance(ctx, _StadynContext):
        where = f"{ctx.backend}:{TYPE_CONFIGS.get(str(ctx.dtype), ctx.dtype)}"
    else:
        where = repr(ctx)
    raise RuntimeError(f"DataParallelCommunicator: no communicator for any of [{where}]\n"
                       "(NNabla's single-process, several-device communicator comes with its "
                       "CUDA extension; Stadyn has none: run one process per device with "
                       "MultiProcessDataParallelCommunicator under `python -m "
                       "stadyn.distributed.run --nproc N script.py`)")


class MultiProcessDataParallelCommunicator(Communicator):
    """NNabla's ``MultiProcessDataParalellCommunicator(ctx)`` (see the module docstring).

    Example (alone, the collectives leave the data unchanged):
        >>> import torch
        >>> from stadyn.compat.nnabla.communicators import MultiProcessDataParalellCommunicator
        >>> comm = MultiProcessDataParalellCommunicator(None)
        >>> comm.init()
        >>> comm.rank, comm.size, comm.local_rank
        (0, 1, 0)
        >>> g = torch.ones(3)
        >>> comm.all_reduce([g], division=True); g.tolist()
        [1.0, 1.0, 1.0]
    """

    def __init__(self, ctx: Any = None):
        self.ctx = ctx
        self._ctx_params: list[tuple[Any, dict]] = []
        self._initialized = False

    # -- set-up ----------------------------------------------------------------------------------
    def init(self) -> None:
        """Join the process group the launcher set up (a no-op when running alone)."""
        D.init()
        self._initialized = True

    def abort(self) -> None:
        """End this worker at once (NNabla's MPI_Abort): the launcher then ends the others."""
        os._exit(1)

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def rank(self) -> int:
        return D.rank()

    @property
    def size(self) -> int:
        return D.size() if D.is_initialized() else 1

    @property
    def local_rank(self) -> int:
        return D.local_rank() if D.is_initialized() else 0

    def add_context_and_parameters(self, ctx_param_dict: tuple[Any, dict]) -> None:
        """Register ``(ctx, {name: Variable})`` (kept for :meth:`all_reduce` without data)."""
        ctx, params = ctx_param_dict
        self._ctx_params.append((ctx, dict(params)))

    def clear_context_parameters(self) -> None:
        self._ctx_params.clear()

    # -- groups ----------------------------------------------------------------------------------
    def new_group(self, name_ranks: tuple[str, Sequence[int]]) -> str:
        """``new_group(("name", [ranks]))``: a sub-group every worker must create."""
        name, ranks = name_ranks
        D.new_group(name, list(ranks))
        return name

    def list_groups(self) -> dict[str, list[int]]:
        groups = {"world": list(range(self.size))}
        groups.update({name: list(ranks) for name, ranks in D.named_groups().items()})
        return groups

    def find_group(self, group: str) -> list[int]:
        return list(D.group_ranks(group))

    # -- collectives -----------------------------------------------------------------------------
    def _registered_grads(self) -> list[torch.Tensor]:
        grads = []
        for _, params in self._ctx_params:
            for v in params.values():
                if v.need_grad and grad_of(v) is not None:
                    grads.append(grad_of(v))
        return grads

    def all_reduce(self, data: Any = None, division: bool = False, inplace: bool = False,
                   group: str = "world") -> None:
        """Sum ``data`` (an array or a list of them) over the workers, in place; ``division``
        divides by the number of workers.  ``inplace=False`` packs the arrays into large
        buffers (fewer collectives); ``inplace=True`` reduces each array on its own.  Without
        ``data``, the gradients of the parameters given to
        :meth:`add_context_and_parameters`."""
        tensors = self._registered_grads() if data is None else _tensors(data, "all_reduce")
        cap = 1 if inplace else 25 << 20
        D.all_reduce_tensors(tensors, group, division, cap, what="all_reduce")

    def reduce(self, data: Any, dst: int = 0, division: bool = False, inplace: bool = False,
               group: str = "world") -> None:
        """Sum ``data`` over the workers into rank ``dst``'s arrays (the others' are left
        undefined, as NNabla's)."""
        D.reduce_tensors(_tensors(data, "reduce"), dst, group, division, what="reduce")

    def bcast(self, data: Any, src: int = 0, inplace: bool = False,
              group: str = "world") -> None:
        """Copy ``data`` from rank ``src`` to every worker, in place."""
        D.broadcast_tensors(_tensors(data, "bcast"), src, group,
                            1 if inplace else 25 << 20, what="bcast")

    def all_gather(self, ndarray: Any, ndarray_list: Sequence[Any],
                   group: str = "world") -> None:
        """Fill ``ndarray_list[r]`` with rank r's ``ndarray`` (all the same shape)."""
        mine = _tensor(ndarray, 0, "all_gather")
        outs = [_tensor(a, i, "all_gather") for i, a in enumerate(ndarray_list)]
        D.all_gather_tensors(mine, outs, group, what="all_gather")

    def barrier(self) -> None:
        """Wait until every worker arrives."""
        D.barrier()


#: NNabla's spelling.
MultiProcessDataParalellCommunicator = MultiProcessDataParallelCommunicator
#: NNabla's newer name.
MultiProcessCommunicator = MultiProcessDataParallelCommunicator
#: NNabla's short names.
Comm = MultiProcessDataParallelCommunicator
Dist = MultiProcessDataParallelCommunicator

"""``nnabla.lms``: ``SwapInOutScheduler``, NNabla's out-of-core GPU memory scheduler (it
moves arrays between the device and the host so a network larger than the GPU's memory can
train).

Stadyn runs on PyTorch's allocator and moves nothing: this scheduler **schedules nothing**.
It takes NNabla's arguments and has NNabla's methods, so a program written for it
(nnabla-examples' ``neu.lms.lms_scheduler``: ``with scheduler:`` around a training step,
``forward(function_pre_hook=scheduler.function_pre_hook, ...)``, ``scheduler.update_pre_hook()``
around ``solver.update()``) runs unchanged and computes what it computes without one.  A network
that does not fit the device's memory needs a smaller batch, or the CPU.

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn
    >>> import stadyn.compat.nnabla.functions as F
    >>> from stadyn.compat.nnabla.lms import SwapInOutScheduler
    >>> host = nn.Context(["cpu:float"], "CpuCachedArray", "0")
    >>> scheduler = SwapInOutScheduler(host, host, 1 << 30)
    >>> x = nn.Variable.from_numpy_array(np.ones((2, 3), np.float32))
    >>> y = F.sum(x * 2)
    >>> with scheduler:
    ...     y.forward(function_pre_hook=scheduler.function_pre_hook,
    ...               function_post_hook=scheduler.function_post_hook)
    >>> float(y.d)
    12.0
"""

from __future__ import annotations

from typing import Any

from ._context import Context

__all__ = ["SwapInOutScheduler"]


class SwapInOutScheduler:
    """``SwapInOutScheduler(h_ctx, d_ctx, size, prefetch_size=None, save_host_mem=False,
    save_host_mem_no_abort=False)``: the host and device contexts (``nn.Context``), the device
    memory budget in bytes and the prefetch window (default ``1.5 * size``), as NNabla's.  The
    methods and the ``with`` block do nothing on Stadyn (see the module)."""

    def __init__(self, h_ctx: Any, d_ctx: Any, size: int, prefetch_size: Any = None,
                 save_host_mem: bool = False, save_host_mem_no_abort: bool = False):
        for what, ctx in (("h_ctx", h_ctx), ("d_ctx", d_ctx)):
            if not isinstance(ctx, Context):
                raise TypeError(f"SwapInOutScheduler: {what} must be an nnabla Context, "
                                f"got {type(ctx).__name__}")
        if prefetch_size is None:
            prefetch_size = size * 1.5
        for what, n in (("size", size), ("prefetch_size", prefetch_size)):
            if int(n) < 0:
                raise OverflowError(f"SwapInOutScheduler: {what} is a byte count, got {n}")
        self.h_ctx, self.d_ctx = h_ctx, d_ctx
        self.size, self.prefetch_size = int(size), int(prefetch_size)
        self.save_host_mem, self.save_host_mem_no_abort = save_host_mem, save_host_mem_no_abort

    def start_scheduling(self) -> None:
        """Begin a scheduled iteration (nothing to begin on Stadyn)."""

    def end_scheduling(self) -> None:
        """End a scheduled iteration."""

    def function_pre_hook(self, func: Any) -> None:
        """For ``forward``/``backward(function_pre_hook=...)``: called before each function."""

    def function_post_hook(self, func: Any) -> None:
        """For ``forward``/``backward(function_post_hook=...)``: called after each function."""

    def update_pre_hook(self) -> None:
        """Called before a solver's update."""

    def update_post_hook(self) -> None:
        """Called after a solver's update."""

    def __enter__(self) -> "SwapInOutScheduler":
        self.start_scheduling()
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.end_scheduling()

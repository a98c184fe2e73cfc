"""What a BrainScript command runs on: this process's place in a data-parallel job
(:class:`Parallel`), the device and precision a command asks for (:func:`device_of`), and the
train command's Trainer (:class:`NetworkTrainer`: cntk.exe's sample counts, the recurrent
state a truncated reader carries, block momentum's merge at each epoch's end).  ``_runner.py``
runs the commands with them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .._errors import ConfigError
from ..graph import Variable, context
from ..train import Trainer
from ._state_carry import StateCarry

__all__ = ["Parallel", "device_of", "NetworkTrainer"]


class Parallel:
    """This process's place in a data-parallel job (``stadyn train --nproc N`` starts the
    workers; each runs the config).  Alone: rank 0 of 1, and every method is a no-op."""

    def __init__(self) -> None:
        self.dist = None
        self.rank, self.size = 0, 1
        try:
            import stadyn.distributed as dist
        except ModuleNotFoundError:
            return
        if dist.init():
            self.dist, self.rank, self.size = dist, dist.rank(), dist.size()

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def data_parallel(self, params: dict[str, Variable], block: dict | None = None):
        """The Trainer's hook: gradients summed (DataParallelSGD), or with ``block`` (the
        options of :func:`._sgd.block_momentum`) the models merged by block momentum."""
        if self.dist is None:
            return None
        if block is None:
            return self.dist.DataParallel(params)
        options = dict(block)
        reset = options.pop("reset_after_block")
        # (cntk.exe's BlockMomentumSGD: every merge, an epoch's end too, takes the momentum
        # of a full block)
        model = self.dist.BlockMomentum(workers=self.size, full_block_momentum=True, **options)
        return self.dist.BlockMomentumParallel(params, model, reset_after_block=reset)

    def barrier(self) -> None:
        if self.dist is not None:
            self.dist.barrier()

    def reader_states(self, state: dict) -> list[dict] | None:
        """Every worker's reader state (each has its own position in the data: CNTK 2.7's
        partitions), ``state`` this worker's; all workers call it together.  None alone, or
        for a reader whose state has no position."""
        if self.dist is None or self.size == 1 or \
                not {"position", "samples"} <= set(state):
            return None
        table = torch.zeros(self.size, 2, dtype=torch.int64)
        table[self.rank, 0], table[self.rank, 1] = int(state["position"]), int(state["samples"])
        self.dist.all_reduce_tensors([table], what="the readers' positions")
        mine = {k: v for k, v in state.items() if k != "sweep_end_reported"}
        return [dict(mine, position=int(p), samples=int(n)) for p, n in table.tolist()]


def device_of(device_id: int | str, precision: str, where: tuple):
    if precision != "float":
        raise ConfigError(f'precision = "{precision}" is not supported yet (Stadyn computes in '
                          'float32; use precision = "float")', *where)
    if device_id == "auto":
        return context("cuda" if torch.cuda.is_available() else "cpu")
    if int(device_id) < 0:
        return context("cpu")
    if not torch.cuda.is_available():
        raise ConfigError(f"deviceId = {device_id} asks for a GPU, but CUDA is not available "
                          "(use deviceId = -1 or auto)", *where)
    return context("cuda", int(device_id), fallback=False)


class NetworkTrainer(Trainer):
    """The train command's Trainer: a minibatch's samples are counted as cntk.exe's SGD counts
    them (:meth:`CommandNetwork.counted`: a criterion that is one number for the minibatch
    counts the network's samples, not one)."""

    def __init__(self, *args: Any, counted: Callable[[Variable], Variable],
                 carry: StateCarry | None = None, **kwargs: Any):
        self._count_for = counted
        self._carry = carry
        super().__init__(*args, **kwargs)

    def _counted(self, criterion: Variable) -> Variable:
        return self._count_for(criterion)

    def _train(self, arguments, outputs, finite_only):
        if self._carry is None:        # (truncated BPTT: the recurrent state carries over)
            return super()._train(arguments, outputs, finite_only)
        ran = False
        try:        # (before() inside: a splice it made before failing is taken out again)
            self._carry.before()
            super()._train(arguments, list(outputs) + self._carry.wanted(), finite_only)
            ran = True
        finally:
            self._carry.after(ran)

    def summarize_training_progress(self) -> None:
        if self._carry is not None:     # (the epoch's steps are done: the graph as built)
            self._carry.release()
        end_epoch = getattr(self.data_parallel, "end_epoch", None)
        if end_epoch is not None:       # (block momentum: cntk.exe merges at the epoch's end)
            end_epoch(self.parameter_learners)
        super().summarize_training_progress()



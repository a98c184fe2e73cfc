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

__all__ = ["Parallel", "QuantizedSGD", "device_of", "NetworkTrainer"]


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

    def data_parallel(self, params: dict[str, Variable], block: dict | None = None,
                      bits: list[int] | None = None, clock: Any = None):
        """The Trainer's hook: gradients summed (DataParallelSGD; with ``bits``, each epoch's
        bits of :func:`._sgd.quantized_bits` and the ``clock`` that tells the epoch, quantized),
        or with ``block`` (the options of :func:`._sgd.block_momentum`) the models merged by
        block momentum."""
        if self.dist is None:
            return None
        if bits is not None:
            return QuantizedSGD(self.dist, bits, clock)
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


class QuantizedSGD:
    """cntk.exe's DataParallelSGD with ``gradientBits`` below 32 (1-bit SGD), the Trainer's
    hook: each minibatch the workers' gradients are summed by
    :class:`stadyn.distributed.QuantizedAllReduce` of the epoch's bits (what quantization left
    out carried to the next minibatch), the sample count, loss and metric in full precision
    (cntk.exe's gradient header).  An epoch whose bits differ from the one before starts a new
    quantizer, its residuals zero, as cntk.exe's SGD.cpp:523-529 makes a new aggregator; an
    epoch of 32 bits sums in full precision.  Otherwise a ``DataParallel`` (broadcast of the
    parameters, sums of scalars)."""

    def __init__(self, dist: Any, bits: list[int], clock: Any):
        # (no parameters given: its buckets would sum the gradients in full precision)
        self._plain = dist.DataParallel()
        self._dist, self._bits, self._clock = dist, list(bits), clock
        self._quantizer: Any = None

    def __getattr__(self, name: str) -> Any:
        plain = self.__dict__.get("_plain")
        if plain is None:
            raise AttributeError(name)
        return getattr(plain, name)

    def _bits_now(self) -> int:
        epoch = self._clock.epoch if self._clock is not None else 0
        return self._bits[min(epoch, len(self._bits) - 1)]

    def synchronize(self, parameters, samples: int, loss_sum: float,
                    metric_sum: float | None) -> tuple[int, float, float | None]:
        bits = self._bits_now()
        params = [p for p in parameters if p.need_grad]
        if bits >= 32:
            self._quantizer = None
            return self._plain.synchronize(params, samples, loss_sum, metric_sum)
        if self._quantizer is None or self._quantizer.bits != bits:
            self._quantizer = self._dist.QuantizedAllReduce(bits)
        self._quantizer.all_reduce_gradients(params)   # (one without a gradient: zeros)
        total, loss, metric = self._plain.all_reduce_scalars(
            samples, loss_sum, 0.0 if metric_sum is None else metric_sum)
        return int(round(total)), loss, None if metric_sum is None else metric


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



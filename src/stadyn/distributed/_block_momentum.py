"""Block momentum (BMUF, CNTK's ``BlockMomentumSGD``) over the workers: the block model every
worker holds, how a block's end moves it, and the Trainer's hook that trains with it.

Each worker trains its own copy of the model with its learners, on its own minibatches; once it
has seen ``block_size / workers`` samples since the last block's end (after
``distributed_after`` samples in all), the workers end the block together: each one's block
gradient (the model at the block's start minus its model now) is summed over the workers, and

    smoothed = m * smoothed + (1 - m) * block_learning_rate * summed
    model    = start - smoothed            (Nesterov: then  model -= m * smoothed)

which is every worker's model, and the next block's start, from then on.  The block momentum
``m`` is ``exp(-n / (T / workers))``, ``n`` the samples this worker saw in the block, ``T``
the time constant (by default the one of a momentum of ``1 - 1/workers`` per block); the
learners' own momentum starts afresh after each block (CNTK's ``resetSGDMomentum``,
``reset_sgd_momentum_after_aggregation``).  Both of CNTK's front ends use this:
``cntk.train.distributed.block_momentum_distributed_learner`` (compat.cntk) and BrainScript's
``ParallelTrain = [ parallelizationMethod = BlockMomentumSGD ]`` (:class:`BlockMomentumParallel`
as the Trainer's ``data_parallel`` hook).

Example:
    >>> import torch
    >>> block = BlockMomentum(block_size=8, workers=1, time_constant=None)
    >>> w = torch.zeros(2)
    >>> block.start([w])
    >>> _ = w.add_(1.0)                     # the local steps of the block
    >>> block.seen(8), block.end([w], lambda tensors, *counts: counts), w.tolist()
    (True, 8, [1.0, 1.0])
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
import torch

from .._errors import ConfigError
from ..graph import Variable, data_of
from . import _collectives as C
from ._data_parallel import DataParallel

__all__ = ["BlockMomentum", "BlockMomentumParallel", "block_momentum_time_constant",
           "block_mismatch"]

_OPTIONS = "options/"       # (the options a checkpoint keeps beside the block)


def block_momentum_time_constant(momentum: float, block_size: int) -> float:
    """The time constant (in samples) of a block momentum ``momentum`` per block of
    ``block_size`` samples: ``-block_size / log(momentum)``; 0 for a momentum of 0 (CNTK's
    ``Momentum2TimeConstant``, BrainScript's ``blockMomentumPerSync``).

    Example:
        >>> import stadyn.distributed as dist
        >>> t = dist.block_momentum_time_constant(0.5, 16)
        >>> round(t, 4), dist.block_momentum_time_constant(0.0, 16)
        (23.0831, 0.0)
    """
    if not 0.0 <= momentum < 1.0:
        raise ConfigError(f"block momentum {momentum:.2f}: it must be in [0, 1) (CNTK 2.7's "
                          "'Block momentum should be in the range of [0,1)')")
    return 0.0 if momentum == 0.0 else -float(block_size) / math.log(momentum)


class BlockMomentum:
    """One worker's block state: the model at the block's start, the block-level smoothed
    gradient, the samples seen (this worker's, in the block and in all; all workers' as of the
    last block's end).  See the module's docstring for the update.

    Args:
        block_size: the samples of all workers per block.
        workers: the number of workers.
        time_constant: the block momentum as a time constant in samples (None: that of a
            momentum of ``1 - 1/workers`` per block).
        nesterov: Nesterov's momentum at the block level.
        block_learning_rate: the factor of the summed block gradient.
        distributed_after: this worker's samples before the first block starts counting.
        full_block_momentum: every merge takes the block momentum of a full block, ``n`` the
            block's samples per worker (cntk.exe's BlockMomentumSGD); by default ``n`` is
            the samples this worker saw in the block (CNTK 2.7's learner).

    Example:
        >>> import stadyn.distributed as dist
        >>> block = dist.BlockMomentum(block_size=100, workers=2, time_constant=None)
        >>> block.period, round(block.time_constant, 2)     # per worker
        (50, 72.13)
    """

    def __init__(self, block_size: int, workers: int, time_constant: "float | None",
                 nesterov: bool = True, block_learning_rate: float = 1.0,
                 distributed_after: int = 0, full_block_momentum: bool = False):
        self.period = int(block_size) // int(workers)       # this worker's samples per block
        if self.period <= 0:
            raise ConfigError(f"Sync period is too small. (block momentum: block_size "
                              f"{block_size} leaves each of the {workers} workers no sample "
                              "per block)")
        if time_constant is None:
            time_constant = block_momentum_time_constant(1.0 - 1.0 / workers, block_size)
        self.time_constant = float(time_constant) / workers     # per worker, as CNTK's
        self.nesterov, self.rate = bool(nesterov), float(block_learning_rate)
        self.after = int(distributed_after)
        self.full_block_momentum = bool(full_block_momentum)
        self.begin: "list[torch.Tensor] | None" = None     # the model at the block's start
        self.smoothed: "list[torch.Tensor] | None" = None
        self.in_block = 0           # this worker's samples since the block began
        self.local_total = 0        # this worker's samples in all
        self.sample_count = 0       # all workers' as of the last block's end, then own added

    def start(self, values: Sequence[torch.Tensor]) -> None:
        """Take ``values`` (the parameters) as the block's start, unless it has one."""
        if self.begin is None:
            self.begin = [v.detach().clone() for v in values]
        if self.smoothed is None:
            self.smoothed = [torch.zeros_like(v) for v in values]

    def seen(self, samples: int) -> bool:
        """Count a minibatch of this worker's; whether its block ends now."""
        self.local_total += int(samples)
        self.sample_count += int(samples)
        if self.after > self.sample_count:
            return False
        self.in_block += int(samples)
        return self.in_block >= self.period

    def end(self, values: Sequence[torch.Tensor],
            sum_over_workers: Callable[..., Sequence[float]]) -> int:
        """End the block on every worker: ``values`` (the parameters, in place) become the
        block model; ``sum_over_workers(tensors, *numbers)`` sums the tensors in place and
        returns the numbers' sums.  Returns all workers' samples in all."""
        total = []

        def sum_tensors(grads: list) -> None:
            total.extend(sum_over_workers(grads, float(self.local_total)))
        self.merge(values, sum_tensors)
        self.sample_count = int(round(total[0]))
        return self.sample_count

    def merge(self, values: Sequence[torch.Tensor],
              sum_tensors: Callable[[list], None]) -> None:
        """The block's end without the sample counts (CNTK's ``AggregateImpl``): ``values``
        (the parameters, in place) become the block model, the block gradients summed over
        the workers by ``sum_tensors(tensors)`` (in place)."""
        samples = self.period if self.full_block_momentum else self.in_block
        momentum = 0.0 if self.time_constant == 0 else \
            math.exp(-samples / self.time_constant)
        grads = [b - v.detach() for b, v in zip(self.begin, values)]
        sum_tensors(grads)
        with torch.no_grad():
            for begin, value, grad, smoothed in zip(self.begin, values, grads, self.smoothed):
                smoothed.mul_(momentum).add_(grad, alpha=(1.0 - momentum) * self.rate)
                value.copy_(begin - smoothed)
                if self.nesterov:
                    value.sub_(smoothed, alpha=momentum)
                begin.copy_(value)
        self.in_block = 0

    def end_with(self, values: Sequence[torch.Tensor], parallel: DataParallel | None,
                 learners: Sequence = (), reset: bool = False) -> int:
        """:meth:`end` with the workers of ``parallel`` (None or one worker: alone); then, with
        ``reset`` (CNTK's resetSGDMomentum), ``learners``' smoothed gradients start again.
        Returns all workers' samples in all."""
        def sum_over_workers(tensors: list, *numbers: float) -> Sequence[float]:
            if parallel is None or parallel.size == 1:
                return numbers
            C.all_reduce_tensors(tensors, what="block momentum: the block gradients")
            return parallel.all_reduce_scalars(*numbers)
        total = self.end(values, sum_over_workers)
        if reset:
            for learner in learners:
                learner.reset_smoothed_gradients()
        return total


class BlockMomentumParallel(DataParallel):
    """The Trainer's ``data_parallel`` hook for block momentum: every worker updates its own
    model from its own minibatches (its learners get its own sample count), and the workers
    merge their models with :class:`BlockMomentum` whenever a worker's block is full (the
    learners' schedules move on by all workers' samples); the
    minibatch's sample count, loss and metric are still summed over the workers (for the
    epoch's progress, as :class:`DataParallel`'s).  :meth:`end_epoch` merges the models at
    each epoch's end, as CNTK's SGD does.

    Args:
        parameters: the parameters the workers merge (a dict or list of Variables).
        block: the :class:`BlockMomentum` state.
        reset_after_block: set the learners' own momentum back after each block's end.
        group: the process group.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.distributed as dist, stadyn.learners as L
        >>> w = sd.Variable.from_numpy_array(np.zeros(2), need_grad=True)
        >>> hook = dist.BlockMomentumParallel([w], dist.BlockMomentum(1, 1, None))
        >>> learner = L.sgd([w], 0.5)
        >>> w.g = np.ones(2)
        >>> hook.synchronize([w], 1, 0.0, None)     # (a block of one sample: it ends now)
        (1, 0.0, None)
        >>> hook.step_learners([learner], 1); w.d.tolist()     # one worker: the learner's step
        [-0.5, -0.5]
    """


    def __init__(self, parameters, block: BlockMomentum, *, reset_after_block: bool = True,
                 group="world"):
        super().__init__(None, overlap=False, group=group)
        self.parameters = [p for p in (parameters.values() if isinstance(parameters, dict)
                                       else parameters)]
        self.block, self.reset_after_block = block, bool(reset_after_block)
        self._local = 0
        self._full = False

    def _values(self) -> list[torch.Tensor]:
        return [data_of(p) for p in self.parameters]

    def synchronize(self, parameters: Sequence[Variable], samples: int, loss_sum: float,
                    metric_sum: float | None) -> tuple[int, float, float | None]:
        """Sum the minibatch's sample count, loss sum and metric sum over the workers (not the
        gradients: each worker updates alone), and whether some worker's block is full after
        it; returns the global ``(samples, loss_sum, metric_sum)``."""
        self._local = int(samples)
        self.block.start(self._values())
        full = self.block.seen(self._local)
        if self.size == 1:
            self._full = full
            return samples, loss_sum, metric_sum
        total, loss, metric, anyone = self.all_reduce_scalars(
            samples, loss_sum, 0.0 if metric_sum is None else metric_sum, float(full))
        self._full = anyone > 0
        return int(round(total)), loss, None if metric_sum is None else metric

    def step_learners(self, learners: Sequence, samples: int) -> None:
        """Update with each of ``learners`` by this worker's samples, their schedules moving on
        by all workers' ``samples`` (cntk.exe's SGD sets the rates of each epoch, an epoch
        counting all workers' samples); then, when a block is full, merge the workers' models
        (all workers call it at the same minibatch)."""
        if self._local:
            for learner in learners:
                # (through its class, as the Trainer's _step_learners: a CNTK UserLearner's
                # ``self.step`` may be the user's attribute)
                type(learner).step(learner, self._local)
        others = int(samples) - self._local
        if others:      # (the schedules' position: all workers' samples, cntk.exe's epochs)
            for learner in learners:
                if hasattr(learner, "samples_seen"):
                    learner.samples_seen += others
        if self._full:
            self._end_block(learners)

    def end_epoch(self, learners: Sequence) -> None:
        """Merge the workers' models at the epoch's end (all workers together), whatever the
        samples since the last merge, none too (cntk.exe's ``OnEpochEnd``: a worker at the
        end of its data always merges)."""
        self.block.start(self._values())
        self._end_block(learners)

    def checkpoint_tensors(self) -> dict[str, torch.Tensor]:
        """What a checkpoint keeps of the block (cntk.exe's ``BMACKP`` section,
        ``BlockMomentumSGD::SaveToCheckPoint``): the model at the block's start and the
        block-level smoothed gradient, ``begin/<k>`` and ``smoothed/<k>`` for the k-th
        parameter, and cntk.exe's options, which a restore takes over the configuration's:
        ``options/reset`` (``reset_after_block``), ``options/time_constant`` and
        ``options/period`` (per worker); nothing before the first minibatch.

        Example:
            >>> import numpy as np, stadyn as sd, stadyn.distributed as dist
            >>> w = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
            >>> hook = dist.BlockMomentumParallel([w], dist.BlockMomentum(4, 1, None))
            >>> hook.checkpoint_tensors()
            {}
            >>> _ = hook.synchronize([w], 1, 0.0, None)
            >>> sorted(hook.checkpoint_tensors())
            ['begin/0', 'options/period', 'options/reset', 'options/time_constant', 'smoothed/0']
        """
        block = self.block
        if block.begin is None or block.smoothed is None:
            return {}
        out = {f"begin/{k}": t for k, t in enumerate(block.begin)}
        out.update({f"smoothed/{k}": t for k, t in enumerate(block.smoothed)})
        out[_OPTIONS + "reset"] = torch.tensor(int(self.reset_after_block))
        out[_OPTIONS + "time_constant"] = torch.tensor(block.time_constant, dtype=torch.float64)
        out[_OPTIONS + "period"] = torch.tensor(block.period)
        return out

    def check_checkpoint_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        """Whether a block a checkpoint kept (:meth:`checkpoint_tensors`) fits the
        parameters: a ValueError naming what does not (:func:`checked_block`)."""
        if tensors:
            checked_block(self._values(), tensors)

    def restore_checkpoint_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        """Go on with the block a checkpoint kept (:meth:`checkpoint_tensors`; cntk.exe's
        ``LoadFromCheckPoint``), with the options it kept over the configuration's (the
        momentum reset, the time constant and the samples per block of each worker, as
        cntk.exe's); none kept: the next block starts afresh, as cntk.exe's without a
        ``BMACKP`` section.  A kept block that does not fit the parameters is a ValueError
        (:func:`checked_block`), nothing changed."""
        if not tensors:
            return
        self.block.begin, self.block.smoothed = checked_block(self._values(), tensors)
        self.block.in_block = 0
        options = {k[len(_OPTIONS):]: t for k, t in tensors.items() if k.startswith(_OPTIONS)}
        if "reset" in options:
            self.reset_after_block = bool(int(options["reset"]))
        if "time_constant" in options:
            self.block.time_constant = float(options["time_constant"])
        if "period" in options:
            self.block.period = int(options["period"])

    def _end_block(self, learners: Sequence) -> None:
        self._full = False
        self.block.end_with(self._values(), self, learners, self.reset_after_block)


def checked_block(values: Sequence[torch.Tensor], tensors: dict[str, torch.Tensor]
                  ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The block a checkpoint kept (``begin/<k>``, ``smoothed/<k>`` of the k-th parameter,
    as :meth:`BlockMomentumParallel.checkpoint_tensors` writes them) as copies on the
    parameters' ``values`` device and dtype: ``(begin, smoothed)``; a ValueError where a
    parameter's pair is missing or of another shape, or the block is of more parameters.

    Example:
        >>> import torch
        >>> from stadyn.distributed._block_momentum import checked_block
        >>> w = torch.zeros(2, 3)
        >>> begin, smoothed = checked_block([w], {"begin/0": torch.ones(2, 3),
        ...                                       "smoothed/0": torch.zeros(2, 3)})
        >>> begin[0].shape
        torch.Size([2, 3])
        >>> checked_block([w], {"begin/0": torch.ones(3, 2), "smoothed/0": torch.zeros(2, 3)})
        Traceback (most recent call last):
        ValueError: the block momentum state kept has no block of the shape (2, 3) of parameter 0
    """
    options = {k: t for k, t in tensors.items() if k.startswith(_OPTIONS)}
    for key, t in options.items():
        if key[len(_OPTIONS):] not in ("reset", "time_constant", "period") or t.numel() != 1:
            raise ValueError(f"the block momentum state kept has an unknown option {key!r} "
                             f"(of {t.numel()} values)")
    if _OPTIONS + "period" in options and int(options[_OPTIONS + "period"]) <= 0:
        raise ValueError("the block momentum state kept has no sample per block")
    tensors = {k: t for k, t in tensors.items() if k not in options}
    parts = [[tensors.get(f"{part}/{k}") for k in range(len(values))]
             for part in ("begin", "smoothed")]
    for part in parts:
        wrong = block_mismatch(values, part)
        if wrong is not None:
            raise ValueError(f"the block momentum state kept has no block of the shape "
                             f"{tuple(values[wrong[1]].shape)} of parameter {wrong[1]}")
    if len(tensors) != 2 * len(values):
        raise ValueError(f"the block momentum state kept is of {len(tensors) // 2} "
                         f"parameters, the model has {len(values)}")
    begin, smoothed = ([t.to(value).clone() for t, value in zip(part, values)]
                       for part in parts)
    return begin, smoothed


def block_mismatch(values: Sequence, arrays: Sequence) -> "tuple[str, int] | None":
    """How a block's arrays kept for the parameters ``values`` (one per parameter, of its
    shape: the block-level smoothed gradients, the model at the block's start) do not fit
    them: ``("count", len(arrays))``, ``("shape", k)`` for the first array ``k`` missing or of
    another shape, or None where they fit -- the one check of a kept block, whoever words its
    error (a Trainer's checkpoint, ``stadyn.compat.cntk``'s block momentum learner).

    Example:
        >>> import numpy as np
        >>> from stadyn.distributed import block_mismatch
        >>> w = [np.zeros((2, 3)), np.zeros(3)]
        >>> block_mismatch(w, [np.ones((2, 3)), np.ones(3)]) is None
        True
        >>> block_mismatch(w, [np.ones((2, 3))]), block_mismatch(w, [np.ones((3, 2)), None])
        (('count', 1), ('shape', 0))
    """
    if len(arrays) != len(values):
        return "count", len(arrays)
    for k, (array, value) in enumerate(zip(arrays, values)):
        if array is None or tuple(np.shape(array)) != tuple(value.shape):
            return "shape", k
    return None

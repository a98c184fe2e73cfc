"""CNTK 2.7's block momentum (BMUF, ``block_momentum_distributed_learner``) over the workers:
the block model every worker holds and how a block's end moves it.

Each worker trains its own copy of the model with its learner, on its own minibatches; once it
has seen ``block_size / workers`` samples since the last block's end (after
``distributed_after`` samples in all), the workers end the block together: each one's block
gradient (the model at the block's start minus its model now) is summed over the workers, and

    smoothed = m * smoothed + (1 - m) * block_learning_rate * summed
    model    = start - smoothed            (Nesterov: then  model -= m * smoothed)

which is every worker's model, and the next block's start, from then on.  The block momentum
``m`` is ``exp(-n / (T / workers))``, ``n`` the samples this worker saw in the block, ``T``
the time constant (by default the one of a momentum of ``1 - 1/workers`` per block); the
learner's own momentum starts afresh after each block (``reset_sgd_momentum_after_aggregation``).
CNTK 2.7 keeps this in BlockMomentumDistributedLearner (its 1-bit SGD component).

Example:
    >>> import torch
    >>> block = BlockModel(block_size=8, workers=1, time_constant=None)
    >>> w = torch.zeros(2)
    >>> block.start([w])
    >>> _ = w.add_(1.0)                     # the local steps of the block
    >>> block.seen(8), block.end([w], lambda tensors, *counts: counts), w.tolist()
    (True, 8, [1.0, 1.0])
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import torch

from ...._errors import ConfigError

__all__ = ["BlockModel", "time_constant_of"]


def time_constant_of(momentum: float, block_size: int) -> float:
    """The time constant (in samples) of a block momentum ``momentum`` per block of
    ``block_size`` samples: ``-block_size / log(momentum)``; 0 for a momentum of 0.

    Example:
        >>> round(time_constant_of(0.5, 16), 4), time_constant_of(0.0, 16)
        (23.0831, 0.0)
    """
    if not 0.0 <= momentum < 1.0:
        raise ConfigError(f"block momentum {momentum:.2f}: it must be in [0, 1) (CNTK 2.7's "
                          "'Block momentum should be in the range of [0,1)')")
    return 0.0 if momentum == 0.0 else -float(block_size) / math.log(momentum)


class BlockModel:
    """One worker's block state: the model at the block's start, the block-level smoothed
    gradient, the samples seen (this worker's, in the block and in all; all workers' as of the
    last block's end)."""

    def __init__(self, block_size: int, workers: int, time_constant: "float | None",
                 nesterov: bool = True, block_learning_rate: float = 1.0,
                 distributed_after: int = 0):
        self.period = int(block_size) // int(workers)       # this worker's samples per block
        if self.period <= 0:
            raise ConfigError(f"Sync period is too small. (block_momentum_distributed_learner: "
                              f"block_size {block_size} leaves each of the {workers} workers "
                              "no sample per block)")
        if time_constant is None:
            time_constant = time_constant_of(1.0 - 1.0 / workers, block_size)
        self.time_constant = float(time_constant) / workers     # per worker, as CNTK's
        self.nesterov, self.rate = bool(nesterov), float(block_learning_rate)
        self.after = int(distributed_after)
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
        momentum = 0.0 if self.time_constant == 0 else \
            math.exp(-self.in_block / self.time_constant)
        grads = [b - v.detach() for b, v in zip(self.begin, values)]
        total = sum_over_workers(grads, float(self.local_total))[0]
        self.sample_count = int(round(total))
        with torch.no_grad():
            for begin, value, grad, smoothed in zip(self.begin, values, grads, self.smoothed):
                smoothed.mul_(momentum).add_(grad, alpha=(1.0 - momentum) * self.rate)
                value.copy_(begin - smoothed)
                if self.nesterov:
                    value.sub_(smoothed, alpha=momentum)
                begin.copy_(value)
        self.in_block = 0
        return self.sample_count

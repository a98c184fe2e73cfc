"""The workers' agreement on what to do next under block momentum (CNTK 2.7's
``BlockMomentumDistributedLearner::SynchronizeAction``): a worker that has reached its block's
end, wants a checkpoint, wants to average the summary's loss and metric, or has run out of
data asks the others, and they do what they agree on, so that a worker without data still
takes its part in the others' block ends until all of them are out of data (then the last
merge).

Every question is one collective over the workers: each gives what it asks for and its own
samples in all; the workers' samples in all become the block's ``sample_count`` (CNTK's
Trainer count).  What they agree on (CNTK's priorities): all asking the same, that; a
worker asking to merge, a merge; else among checkpoints, ends of data and summaries a
checkpoint first (the others wait), then the end of data (a summary's worker gives up its
average), a summary only when all ask for one.

Example:
    >>> import torch
    >>> from stadyn.distributed import BlockAgreement, BlockMomentum
    >>> block = BlockMomentum(block_size=2, workers=1, time_constant=None)
    >>> w = torch.zeros(2)
    >>> agreement = BlockAgreement(block, None)
    >>> agreement.update([w], 1, at_end=False), block.sample_count
    (True, 1)
    >>> agreement.update([w], 0, at_end=True), block.sample_count   # out of data: last merge
    (False, 1)
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from . import _collectives as C
from ._block_momentum import BlockMomentum
from ._data_parallel import DataParallel

__all__ = ["BlockAgreement"]

# CNTK's Action values, in its order
WAIT, MERGE, METRICS, CHECKPOINT, END = range(5)


def _decide(mine: int, asked: Sequence[int]) -> int:
    """What a worker asking ``mine`` does when the workers asked ``asked``."""
    for action in (METRICS, END, CHECKPOINT):
        if all(a == action for a in asked):
            return action
    if all(a in (CHECKPOINT, END, METRICS) for a in asked):
        if mine == END:
            return CHECKPOINT if CHECKPOINT in asked else WAIT if METRICS in asked else END
        if mine == CHECKPOINT:
            return WAIT if END in asked or METRICS in asked else CHECKPOINT
        return END if END in asked else CHECKPOINT          # (mine: METRICS)
    return MERGE


class BlockAgreement:
    """One worker's side of the agreement over a :class:`BlockMomentum` ``block``.

    Args:
        block: the block state.
        parallel: the workers (a :class:`DataParallel`; None: alone).
        learners: the learners whose momentum restarts after each merge (with ``reset``).
        reset: restart the learners' momentum after each merge (CNTK's
            ``reset_sgd_momentum_after_aggregation``).

    Example:
        >>> import torch
        >>> from stadyn.distributed import BlockAgreement, BlockMomentum
        >>> block = BlockMomentum(block_size=4, workers=1, time_constant=None)
        >>> agreement = BlockAgreement(block, None)
        >>> w = torch.ones(1)
        >>> agreement.update([w], 4, at_end=False), block.in_block     # a block's end
        (True, 0)
    """

    def __init__(self, block: BlockMomentum, parallel: DataParallel | None,
                 learners: Sequence = (), reset: bool = False):
        self.block, self.parallel = block, parallel
        self.learners, self.reset = list(learners), bool(reset)
        self.at_end = False         # this worker is out of data

    def _size(self) -> int:
        return 1 if self.parallel is None else self.parallel.size

    def _ask(self, mine: int) -> int:
        """Ask the workers (a collective); the workers' samples become ``sample_count``."""
        size = self._size()
        if size == 1:
            asked, totals = [mine], [self.block.local_total]
        else:
            slots = [0.0] * (2 * size)
            slots[2 * self.parallel.rank] = float(mine)
            slots[2 * self.parallel.rank + 1] = float(self.block.local_total)
            both = self.parallel.all_reduce_scalars(*slots)
            asked = [int(round(a)) for a in both[0::2]]
            totals = [int(round(n)) for n in both[1::2]]
        self.block.sample_count = sum(totals)
        return _decide(mine, asked)

    def _request(self, values: Sequence[torch.Tensor], action: int,
                 gives_way: Sequence[int] = ()) -> bool:
        """Ask for ``action`` until the workers agree on it (True), merging the models
        whenever they agree on a merge; False as soon as they agree on one of ``gives_way``
        (what this worker leaves to the others, asking again later)."""
        while True:
            agreed = self._ask(action)
            if agreed == action:
                return True
            if agreed == MERGE:
                self.merge(values)
            elif agreed in gives_way:
                return False

    def merge(self, values: Sequence[torch.Tensor]) -> None:
        """Merge the workers' models now (every worker calls it; CNTK's AggregateImpl),
        then restart the learners' momentum (with ``reset``)."""
        def sum_tensors(tensors: list) -> None:
            if self._size() > 1:
                C.all_reduce_tensors(tensors, what="block momentum: the block gradients")
        self.block.merge(values, sum_tensors)
        if self.reset:
            for learner in self.learners:
                learner.reset_smoothed_gradients()

    def update(self, values: Sequence[torch.Tensor], samples: int, at_end: bool) -> bool:
        """After this worker's update of ``samples`` (0: none), ``at_end`` once it is out of
        data: the block's end when its block is full, the last merge when every worker is out
        of data (CNTK's PerformDistributedUpdateIfNeeded).  False once training is over (the
        last merge done, or out of data before ``distributed_after``)."""
        block = self.block
        block.start(values)         # (a first block starts here, unless it has)
        self.at_end = self.at_end or bool(at_end)
        block.local_total += int(samples)
        block.sample_count += int(samples)
        if block.after > block.sample_count:
            return not self.at_end
        if not self.at_end:
            block.in_block += int(samples)
            if block.in_block >= block.period:
                self._ask(MERGE)
                self.merge(values)
            return True
        if self._request(values, END, gives_way=(CHECKPOINT,)):
            self.merge(values)      # (every worker out of data: the last merge)
            return False
        return True                 # (the others checkpoint; this worker asks again later)

    def checkpoint(self, values: Sequence[torch.Tensor]) -> None:
        """Before a checkpoint (every worker calls it): the others' block ends first, then a
        merge (CNTK's CreateCheckpoint: the block's start is the model then)."""
        self.block.start(values)
        self._request(values, CHECKPOINT)
        self._ask(MERGE)
        self.merge(values)

    def average_metrics(self, values: Sequence[torch.Tensor], loss: "float | None",
                        metric: "float | None") -> "tuple[float | None, float | None] | None":
        """The summary's ``loss`` and ``metric`` sums (None: none since the last summary)
        averaged over the workers, as CNTK 2.7 averages them in float32
        (DoAggregateMetricsIfNeeded); None where they are not (alone, or when a worker is
        out of data or checkpointing: each keeps its own)."""
        if self._size() == 1:
            return None
        self.block.start(values)
        if not self._request(values, METRICS, gives_way=(CHECKPOINT, END)):
            return None
        pair = np.array([0.0 if loss is None else loss, 0.0 if metric is None else metric],
                        np.float32)
        sums = np.array(self.parallel.all_reduce_scalars(*pair.tolist()), np.float32)
        means = sums / np.float32(self._size())
        return (None if loss is None else float(means[0]),
                None if metric is None else float(means[1]))

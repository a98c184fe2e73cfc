"""CNTK's ``EpochAccumulator`` node (BrainScript; Image/FCN's mean IoU): the mean of every sample
its input has had since the node was last reset, which cntk.exe does at the start of each
epoch (``EpochAccumulatorNode::OnEpochStart``).  The node keeps the mean and the count from run
to run (its ``state``: :class:`EpochMean`, whose ``reset()`` starts again), so a static graph
holding it runs eagerly.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([[1.0, 2.0], [3.0, 6.0]]))
    >>> y = F.cntk_epoch_accumulator(x)
    >>> y.forward(); y.d.tolist()
    [2.0, 4.0]
    >>> x.d = np.array([[8.0, 0.0], [0.0, 0.0]]); y.forward(); y.d.tolist()   # 12 / 4, 8 / 4
    [3.0, 2.0]
    >>> y.parent.state.reset(); y.forward(); y.d.tolist()
    [4.0, 0.0]

Sequences (``x`` of ``(B, T, ...)`` and its ``lengths``) count each real step as a sample, the
steps past a sequence's end not at all (CNTK's ``UpdateRunningAverage`` masks the gaps and
counts ``GetActualNumSamples``):

    >>> x = sd.Variable.from_numpy_array(np.array([[[1.0], [3.0]], [[8.0], [99.0]]]))
    >>> n = sd.Variable.from_numpy_array(np.array([2, 1]))
    >>> y = F.cntk_epoch_accumulator(x, n); y.forward(); y.d.tolist()      # (1 + 3 + 8) / 3
    [4.0]
"""

from __future__ import annotations

import torch

from ._registry import op


class EpochMean:
    """What an ``EpochAccumulator`` node has seen: the running mean and the sample count."""

    def __init__(self) -> None:
        self.mean: torch.Tensor | None = None
        self.count = 0

    def reset(self) -> None:
        """Forget the samples seen (the start of an epoch)."""
        self.mean, self.count = None, 0


def _sample_shape(x, lengths=None):
    lead = 1 if lengths is None else 2
    return torch.empty(tuple(x.shape[lead:]), dtype=x.dtype, device="meta")


@op(None, category="reduction", shape=_sample_shape, traceable=False, state=EpochMean,
    frameworks=("cntk",), sequence="drop")
def cntk_epoch_accumulator(*x, state=None):
    """The mean over the samples of ``x`` (its first axis) and of every run before since the
    node's state was reset: CNTK's ``EpochAccumulator`` (``UpdateRunningAverage``, the old mean
    weighted by its count, the new samples each by one).  With a second input, the sequences'
    ``lengths``, ``x`` is ``(B, T, ...)`` and each sequence's real steps are its samples.  One
    value (a sample's or a step's shape), no gradient.  Example:
    ``F.cntk_epoch_accumulator(intersection_by_class)``."""
    if len(x) not in (1, 2):
        raise ValueError(f"cntk_epoch_accumulator: takes x and optionally its sequences' "
                         f"lengths, got {len(x)} inputs")
    state = state if state is not None else EpochMean()
    batch = x[0].detach().to(torch.float64)
    if len(x) == 2:                       # the real steps of each sequence, the gaps left out
        lengths = x[1].detach().to(torch.int64).reshape(-1)
        steps = torch.arange(batch.shape[1], device=batch.device)
        batch = batch[steps.unsqueeze(0) < lengths.unsqueeze(1)]
    n = int(batch.shape[0])
    total = state.count + n
    mean = batch.sum(0) / max(total, 1)
    if state.mean is not None and total:
        mean = mean + state.mean * (state.count / total)
    state.mean, state.count = mean, total
    return mean.to(x[0].dtype)

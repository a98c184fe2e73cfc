"""Ops that communicate across data-parallel workers.

They are declared ``traceable=False``: a collective cannot be traced into Stadyn's generated code,
so a static graph holding one runs eagerly with torch's autograd (:class:`stadyn.graph.EagerPlan`).
Running alone (no process group), they compute what their local counterparts compute.
"""

from __future__ import annotations

import math

import torch

from ..graph import is_training
from ._registry import op

_C = "neural"


def _sync_bn_shape(x, beta, gamma, mean, variance, comm=None, group="world", axes=(1,),
                   decay_rate=0.9, eps=1e-05, batch_stat=True, output_stat=False,
                   time_constant=None):
    y = torch.empty_like(x)
    if not output_stat:
        return y
    kept = [int(a) % x.ndim for a in axes]
    stat = [x.shape[i] if i in kept else 1 for i in range(x.ndim)]
    return y, x.new_empty(stat), x.new_empty(stat)


@op(5, category=_C, shape=_sync_bn_shape, traceable=False)
def sync_batch_normalization(x, beta, gamma, mean, variance, comm=None, group="world",
                             axes=(1,), decay_rate=0.9, eps=1e-05, batch_stat=True,
                             output_stat=False, time_constant=None):
    """Batch normalisation with the statistics of the *global* minibatch: the batches of every
    worker of ``group`` together (NNabla's ``sync_batch_normalization``).

    Each worker sums its batch over every axis but ``axes``; one all-reduce gives the global mean,
    a second the global variance (two passes, as a single-process batch norm computes them).
    The all-reduces are differentiable, so the backward is that of batch normalisation over the
    global minibatch.  The running statistics are updated with the global mean and the unbiased
    global variance (``r = decay_rate * r + (1 - decay_rate) * batch``; CNTK's
    ``time_constant`` in samples sets ``decay_rate = exp(-global batch / time_constant)``).
    ``comm`` (an NNabla communicator) is accepted and not needed: the group is
    ``torch.distributed``'s (``'world'``, or a name given to
    :func:`stadyn.distributed.new_group`).  ``batch_stat=None`` follows the phase
    (:func:`stadyn.training`).  Alone, this is :func:`batch_normalization` up to rounding.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> s = (1, 3, 1, 1)
        >>> F.sync_batch_normalization(sd.Variable((4, 3, 5, 5)), sd.Variable(s), sd.Variable(s), sd.Variable(s), sd.Variable(s)).shape
        (4, 3, 5, 5)
    """
    from ..distributed._collectives import all_reduce_sum
    kept = [int(a) % x.ndim for a in axes]
    reduced = [a for a in range(x.ndim) if a not in kept]
    if batch_stat is None:
        batch_stat = is_training()
    work = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    if not batch_stat:
        y = (work - mean) * torch.rsqrt(variance + eps)
    else:
        count = math.prod(x.shape[a] for a in reduced)
        # Counts and sums travel in float64 (exact counts beyond 2**24 elements per channel).
        local = torch.cat([work.sum(dim=reduced).reshape(-1).double(),
                           torch.tensor([float(count), float(x.shape[0])], dtype=torch.float64,
                                        device=x.device)])
        total = all_reduce_sum(local, group, "sync_batch_normalization: mean")
        n, batch = total[-2], float(total[-1].detach())
        m = (total[:-2] / n).to(work.dtype).reshape(
            [x.shape[i] if i in kept else 1 for i in range(x.ndim)])
        centred = work - m
        v = all_reduce_sum((centred * centred).sum(dim=reduced, keepdim=True), group,
                           "sync_batch_normalization: variance") / n
        y = centred * torch.rsqrt(v + eps)
        if mean is not None and variance is not None:
            if time_constant is not None:
                decay_rate = (math.exp(-batch / time_constant) if time_constant > 0
                              else 0.0)
            with torch.no_grad():
                n_value = float(n.detach())
                unbiased = v.detach() * (n_value / max(n_value - 1.0, 1.0))
                mean.mul_(decay_rate).add_(m.detach().to(mean.dtype), alpha=1.0 - decay_rate)
                variance.mul_(decay_rate).add_(unbiased.to(variance.dtype),
                                               alpha=1.0 - decay_rate)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    y = y.to(x.dtype)
    if not output_stat:
        return y
    if batch_stat:
        return y, m.to(x.dtype), v.to(x.dtype)
    return y, mean.to(x.dtype, copy=True), variance.to(x.dtype, copy=True)

"""NNabla's ``mean_subtraction``: subtract a running mean that the op itself updates in place
(as ``assign`` writes, so a static graph holding it runs eagerly).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([[0.0, 1.0], [2.0, 3.0]]))
    >>> mean = sd.Variable.from_numpy_array(np.zeros(2))
    >>> t = sd.Variable.from_numpy_array(np.zeros(1))
    >>> with sd.auto_forward():
    ...     y = F.mean_subtraction(x, mean, t)
    >>> y.d.tolist(), mean.d.tolist(), t.d.tolist()
    ([[-1.0, -1.0], [1.0, 1.0]], [1.0, 2.0], [1.0])
"""

from __future__ import annotations

import torch

from ..graph import replaying_a_forward
from ._registry import op


class _SubtractRunning(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mean, scale):
        ctx.scale = scale
        return x - mean

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None, None


def _same_shape(x, mean, t, base_axis=1, update_running_mean=True):
    """The shape rule: the output without running the update."""
    return torch.empty(x.shape, dtype=x.dtype, device="meta").requires_grad_(x.requires_grad)


@op(3, category="normalization", shape=_same_shape, traceable=False)
def mean_subtraction(x, mean, t, base_axis=1, update_running_mean=True):
    """``x - mean`` (NNabla's ``mean_subtraction``; ``mean`` has the shape of ``x``'s axes from
    ``base_axis`` on, ``t`` of shape ``(1,)`` counts the batches seen).  With
    ``update_running_mean`` each run first folds the batch mean into ``mean`` in place --
    ``t = int(t) + 1; mean += (batch_mean - mean) * (1 / t)`` (NNabla 1.39 reads ``t`` as int32,
    truncating a fraction; a count of 0 gives an infinite factor and an inf or NaN mean, as
    NNabla's; ``t`` keeps its dtype here, an int32 one counting exactly past 2**24 and
    wrapping at 2**31 as NNabla's, where compat.nnabla casts ``t`` to int32 first as NNabla's
    forward does) -- and, as NNabla 1.39 computes it, the
    gradient is ``dy * (1 - 1 / (N * t))`` element-wise (``N`` samples); without it ``mean``
    and ``t`` stay and the gradient passes unchanged.  ``mean`` and ``t`` get no gradient.  Run
    again for a backward (a ``need_grad`` set after the forward, ``replaying_a_forward``) it
    updates nothing and computes as that forward did, from the mean and count it left: NNabla
    runs no forward again and differentiates the one that ran.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones((2, 3)))
        >>> mean = sd.Variable.from_numpy_array(np.full(3, 0.5))
        >>> t = sd.Variable.from_numpy_array(np.zeros(1))
        >>> with sd.auto_forward():
        ...     y = F.mean_subtraction(x, mean, t, update_running_mean=False)
        >>> y.d.tolist()
        [[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]]
    """
    base = int(base_axis)
    if tuple(mean.shape) != tuple(x.shape[base:]) or t.numel() != 1:
        raise ValueError(f"mean_subtraction: mean {tuple(mean.shape)} must be x's shape from "
                         f"axis {base} on, {tuple(x.shape[base:])}, and t hold one number, got "
                         f"{tuple(t.shape)}")
    if not update_running_mean:
        return _SubtractRunning.apply(x, mean.detach(), 1.0)
    n = 1
    for s in x.shape[:base]:
        n *= s
    if replaying_a_forward():
        # run again for a backward (a need_grad set after the forward): NNabla 1.39 runs no
        # forward again, it differentiates the one that ran: that forward's output (x minus the
        # mean it left) and its factor (the count it left), the state unchanged
        with torch.no_grad():
            count = int(t.reshape(-1)[0])
            factor = torch.tensor(1.0, dtype=mean.dtype).div(float(count * n))
        return _SubtractRunning.apply(x, mean.detach().clone(), float(1.0 - factor))
    with torch.no_grad():
        # NNabla 1.39 reads t as int32 (a fraction goes) and computes in the array's type:
        # coef = 1.0 / (t + 1) (a counter becoming 0 gives inf, the mean inf or NaN), rm += (m -
        # rm) * coef, and the gradient's factor (T)1 / (t * N) (mean_subtraction.cpp,
        # forward_impl_batch / backward_impl_batch)
        count = int(t.reshape(-1)[0]) + 1     # (int() truncates as the int32 read)
        if t.dtype == torch.int32:
            # an int32 counter (compat.nnabla's: NNabla casts t to int32) wraps as NNabla's
            count = (count + 2**31) % 2**32 - 2**31
        t.fill_(count)
        batch = x.detach().reshape((n,) + tuple(x.shape[base:])).mean(0).to(mean.dtype)
        # (1.0 / count divided as a tensor, not in Python: a count of 0 gives inf, not a
        # ZeroDivisionError; float64, then rounded to the array's type as NNabla's (T)1 / t)
        coef = torch.tensor(1.0, dtype=torch.float64).div(count).to(mean.dtype)
        mean.add_((batch - mean) * coef)
        factor = torch.tensor(1.0, dtype=mean.dtype).div(float(count * n))
    return _SubtractRunning.apply(x, mean.detach().clone(), float(1.0 - factor))

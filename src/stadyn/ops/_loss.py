"""Losses and metrics."""

from __future__ import annotations

import torch
import torch.nn.functional as TF

from ._registry import op
from ._util import norm_axis

_C = "loss"


def _class_axis(x, axis):
    return norm_axis(x.ndim - 1 if axis is None else axis, x.ndim)


@op(2, category=_C, precision="float")
def softmax_cross_entropy(x, target, axis=None):
    """``-log softmax(x)[target]`` along ``axis`` (default: last) with integer class ids.

    ``target`` has ``x``'s shape with size 1 on ``axis`` (``(B, 1)`` for ``(B, C)`` logits), and
    so does the output.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array([[0.0, 0.0]])
        ...     y = F.softmax_cross_entropy(x, sd.Variable.from_numpy_array([[1]]))
        >>> np.round(y.d, 5)
        array([[0.69315]], dtype=float32)
    """
    a = _class_axis(x, axis)
    return -torch.gather(torch.log_softmax(x, a), a, target.long())


@op(2, category=_C, precision="float")
def categorical_cross_entropy(x, target, axis=None):
    """``-log(x[target])`` for probabilities ``x`` (see :func:`softmax_cross_entropy`).
    Example: ``F.categorical_cross_entropy(F.softmax(z), t)``."""
    a = _class_axis(x, axis)
    return -torch.log(torch.gather(x, a, target.long()))


@op(2, category=_C, precision="float")
def sigmoid_cross_entropy(x, target):
    """Element-wise ``-(t log s(x) + (1 - t) log(1 - s(x)))`` for logits ``x``, computed stably.
    Example: ``F.sigmoid_cross_entropy(logits, t)``."""
    return TF.binary_cross_entropy_with_logits(x, target.to(x.dtype), reduction="none")


@op(2, category=_C, precision="float")
def binary_cross_entropy(x, target):
    """Element-wise ``-(t log x + (1 - t) log(1 - x))`` for probabilities ``x``.

    As in NNabla, the logs' arguments are clamped at the smallest normal number and the loss is
    differentiable w.r.t. a float ``target`` too.  Example: ``F.binary_cross_entropy(F.sigmoid(z),
    t)``."""
    t = target.to(x.dtype)
    tiny = torch.finfo(x.dtype).tiny
    return -(t * torch.log(torch.clamp(x, min=tiny))
             + (1 - t) * torch.log(torch.clamp(1 - x, min=tiny)))


@op(2, category=_C, precision="float")
def squared_error(x0, x1):
    """Element-wise ``(x0 - x1) ** 2``.  Example: ``F.mean(F.squared_error(y, t))``."""
    d = x0 - x1
    return d * d


@op(2, category=_C, precision="float")
def absolute_error(x0, x1):
    """Element-wise ``|x0 - x1|``.  Example: ``F.absolute_error(y, t)``."""
    return torch.abs(x0 - x1)


@op(2, category=_C, precision="float")
def huber_loss(x0, x1, delta=1.0):
    """NNabla's Huber loss: ``d ** 2`` where ``|d| < delta``, else ``delta * (2 |d| - delta)``,
    with ``d = x0 - x1``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.huber_loss(sd.Variable.from_numpy_array([0.5, 3.0]), sd.Variable.from_numpy_array([0.0, 0.0]))
        >>> y.d
        array([0.25, 5.  ], dtype=float32)
    """
    d = x0 - x1
    ad = torch.abs(d)
    return torch.where(ad < delta, d * d, delta * (2.0 * ad - delta))


@op(2, category="metric", precision="float")
def top_n_error(x, target, axis=None, n=1):
    """1 where the target class is not among the ``n`` largest scores, else 0 (no gradient).

    NNabla's rule: count the scores ``>=`` the target's (the target's own included); the error
    is ``count > n``, so a target tied with other classes at the cut is an error.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     e = F.top_n_error(sd.Variable.from_numpy_array([[0.1, 0.7, 0.2]]), sd.Variable.from_numpy_array([[2]]), n=2)
        >>> e.d
        array([[0.]], dtype=float32)
    """
    a = _class_axis(x, axis)
    x = x.detach()
    score = torch.gather(x, a, target.long())
    count = (x >= score).sum(dim=a, keepdim=True)
    return (count > n).to(x.dtype if x.dtype.is_floating_point else torch.float32)


@op(1, category="misc")
def one_hot(x, shape):
    """One-hot vectors from integer ids: ``x`` of shape ``(..., len(shape))`` becomes
    ``(..., *shape)``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.one_hot(sd.Variable.from_numpy_array([[2], [0]]), (3,))
        >>> y.d
        array([[0., 0., 1.],
               [1., 0., 0.]], dtype=float32)
    """
    shape = tuple(int(s) for s in shape)
    ids = x.long()
    flat = ids[..., 0]
    for k in range(1, len(shape)):
        flat = flat * shape[k] + ids[..., k]
    size = 1
    for s in shape:
        size *= s
    return TF.one_hot(flat, size).reshape(tuple(x.shape[:-1]) + shape).to(torch.float32)

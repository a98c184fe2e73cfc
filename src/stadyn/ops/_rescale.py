"""Rescalings by a norm or by statistics of the weights (NNabla's names): ``clip_by_norm``,
``norm_normalization``, ``weight_standardization``, ``weight_normalization``.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     y = F.clip_by_norm(sd.Variable.from_numpy_array([3.0, 4.0]), 1.0)
    >>> np.round(y.d, 4)
    array([0.6, 0.8], dtype=float32)
"""

from __future__ import annotations

import torch

from ._normalization import _check_rule, _normalize, nnabla_norm
from ._registry import op
from ._util import norm_axes

_C = "normalization"


def _axes(axis, ndim: int) -> list[int]:
    if axis is None:
        return list(range(ndim))
    return norm_axes(list(axis) if isinstance(axis, (list, tuple, range)) else [axis], ndim)


@op(1, category=_C, precision="float")
def clip_by_norm(x, clip_norm, axis=None):
    """``x * clip_norm / max(||x||_2, clip_norm)``: ``x`` rescaled to L2 norm ``clip_norm``
    where its norm (over ``axis``, default all axes) is larger, unchanged elsewhere.
    Example: ``F.clip_by_norm(g, 5.0, axis=1)``."""
    if float(clip_norm) <= 0:
        raise ValueError(f"clip_by_norm: clip_norm must be positive, got {clip_norm}")
    norm = torch.sqrt((x * x).sum(dim=_axes(axis, x.ndim), keepdim=True))
    return x * float(clip_norm) / torch.clamp(norm, min=float(clip_norm))


@op(1, category=_C, precision="float")
def norm_normalization(x, p=None, axes=None, eps=1e-12, rule="torch"):
    """``x / (sum |x|^p + eps)^(1/p)``, the sum over ``axes`` (default all; ``p`` None is 2).
    ``rule="nnabla"``: NNabla 1.39's ``x / norm(x)``, which ignores ``eps`` (an all-zero slice
    gives NaN) and has the gradient of its ``Norm`` (:func:`._normalization.nnabla_norm`).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.norm_normalization(sd.Variable.from_numpy_array([[3.0, 4.0]]), axes=1)
        >>> np.round(y.d, 4)
        array([[0.6, 0.8]], dtype=float32)
    """
    order = 2.0 if p is None else float(p)
    if order <= 0:
        raise ValueError(f"norm_normalization: p must be positive, got {p}")
    if rule not in ("torch", "nnabla"):
        raise ValueError(f"norm_normalization: rule={rule!r}: 'torch' or 'nnabla'")
    if rule == "nnabla":
        return x / nnabla_norm(x, order, _axes(axes, x.ndim), True)
    total = x.abs().pow(order).sum(dim=_axes(axes, x.ndim), keepdim=True)
    return x / (total + eps).pow(1.0 / order)


@op(1, category=_C, precision="float")
def weight_standardization(w, channel_axis=0, eps=1e-05, output_stat=False, rule="torch"):
    """Each output channel of the weight ``w`` (axis ``channel_axis``) standardised over the
    other axes, ``(w - mean) / sqrt(var + eps)`` (biased variance); ``output_stat`` also returns
    the mean and variance (size 1 on the reduced axes).  ``rule="nnabla"``: NNabla 1.39's, its
    tensor normalisation over the channels with the variance in one pass (as
    ``F.layer_normalization``'s rule).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> w = sd.Variable.from_numpy_array(np.array([[3.0, 3.001]]))
        >>> with sd.auto_forward():
        ...     y = F.weight_standardization(w, rule="nnabla")
        >>> np.round(y.d, 4)
        array([[-0.1581,  0.1581]], dtype=float32)
    """
    c = norm_axes([channel_axis], w.ndim)[0]
    reduce = [a for a in range(w.ndim) if a != c]
    if _check_rule("weight_standardization", rule):
        return _normalize(w, None, None, reduce, eps, output_stat, True)
    var, mean = torch.var_mean(w, dim=reduce, unbiased=False, keepdim=True)
    y = (w - mean) / torch.sqrt(var + eps)
    return (y, mean, var) if output_stat else y


@op(2, category=_C, precision="float")
def weight_normalization(w, g, dim=0, eps=1e-12):
    """``g * w / ||w||``, the norm of each slice of ``w`` along ``dim`` taken over the other
    axes (``+ eps`` under the root); ``g`` has shape ``(w.shape[dim],)``.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.weight_normalization(sd.Variable.from_numpy_array([[3.0, 4.0]]),
        ...                                sd.Variable.from_numpy_array([2.0]))
        >>> np.round(y.d, 4)
        array([[1.2, 1.6]], dtype=float32)
    """
    d = norm_axes([dim], w.ndim)[0]
    reduce = [a for a in range(w.ndim) if a != d]
    norm = torch.sqrt((w * w).sum(dim=reduce, keepdim=True) + eps)
    shape = [1] * w.ndim
    shape[d] = w.shape[d]
    return w * g.reshape(shape) / norm

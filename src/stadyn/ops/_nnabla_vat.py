"""NNabla's ``vat_noise``: the noise of virtual adversarial training (Miyato et al.), a layer of
NNabla's GUI network designer.  Forward, each sample of ``x`` scaled to the norm ``eps``; backward
sends nothing to ``x`` and writes ``eps`` times the output gradient into ``w``'s *values* -- the
next iteration feeds ``w`` back as the noise.  Writing an input in the backward cannot be traced,
so a static graph holding it runs eagerly (``traceable=False``).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([[3.0, 4.0]]), need_grad=True)
    >>> w = sd.Variable.from_numpy_array(np.zeros((1, 2)), need_grad=True)
    >>> y = F.vat_noise(x, w, eps=2.0)
    >>> y.forward(); (y.d * 10).round().tolist()
    [[12.0, 16.0]]
    >>> y.backward(np.array([[1.0, -1.0]], np.float32)); w.d.tolist(), x.g.tolist()
    ([[2.0, -2.0]], [[0.0, 0.0]])
"""

from __future__ import annotations

import math

import torch

from ._registry import op


class _NoiseGradientIntoW(torch.autograd.Function):
    """``y`` forward; backward, ``w``'s values become ``eps * dy`` and no gradient flows."""

    @staticmethod
    def forward(ctx, x, w, y, eps):
        ctx.w, ctx.eps = w, eps
        return y.view_as(y)

    @staticmethod
    def backward(ctx, grad):
        with torch.no_grad():
            ctx.w.copy_(grad.reshape(ctx.w.shape) * ctx.eps)
        return torch.zeros_like(grad), torch.zeros_like(grad), None, None


def _same_shape(x, w, base_axis=1, eps=1.0):
    _check(x, w, base_axis)
    return torch.empty(x.shape, dtype=x.dtype, device="meta").requires_grad_(
        x.requires_grad or w.requires_grad)


def _refined(base_axis: int, x) -> int:
    """A negative ``base_axis`` counted from the end, as NNabla 1.39's ``refine_axis``
    (``include/nbla/utils/axis_utils.hpp``)."""
    return base_axis + x.ndim if -x.ndim <= base_axis < 0 else base_axis


def _check(x, w, base_axis):
    base_axis = _refined(base_axis, x)
    if not 0 < int(base_axis) < x.ndim:
        raise ValueError(f"vat_noise: base_axis must be in 1 .. {x.ndim - 1} (x has {x.ndim} "
                         f"axes), got {base_axis}")
    if tuple(w.shape) != tuple(x.shape):
        raise ValueError(f"vat_noise: w {tuple(w.shape)} must have x's shape {tuple(x.shape)}")


@op(2, category="misc", shape=_same_shape, traceable=False)
def vat_noise(x, w, base_axis=1, eps=1.0):
    """``eps * x / sqrt(sum(x^2) + 1e-8)``, the sum over the axes from ``base_axis`` on, per
    sample (NNabla's ``vat_noise``; ``w`` has ``x``'s shape).  Backward: ``w``'s values become
    ``eps`` times the output gradient (as NNabla's; ``w``'s gradient is left as it was), and
    ``x`` gets no gradient.  The output needs a gradient when ``x`` or ``w`` does.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([[1.0, 1.0, 1.0, 1.0]]))
        >>> w = sd.Variable.from_numpy_array(np.zeros((1, 4)), need_grad=True)
        >>> with sd.auto_forward():
        ...     y = F.vat_noise(x, w, eps=1.0)
        >>> np.round(y.d, 4).tolist()
        [[0.5, 0.5, 0.5, 0.5]]
    """
    _check(x, w, base_axis)
    base = _refined(int(base_axis), x)
    rows = x.detach().reshape(math.prod(x.shape[:base]), -1)
    scale = float(eps) / torch.sqrt((rows * rows).sum(1, keepdim=True) + 1e-8)
    y = (rows * scale).reshape(x.shape)
    if not (x.requires_grad or w.requires_grad) or not torch.is_grad_enabled():
        return y
    return _NoiseGradientIntoW.apply(x, w, y, float(eps))

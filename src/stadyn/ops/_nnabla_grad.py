"""NNabla's gradient shapers: ops whose forward is the identity and whose backward changes the
gradient -- ``clip_grad_by_value``, ``clip_grad_by_norm`` and ``top_k_grad`` (as NNabla 1.39
computes them; checked by tests/compat's ``nnabla_functions_2026`` cases).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
    >>> with sd.auto_forward():
    ...     y = F.clip_grad_by_norm(x, 1.0)
    >>> y.backward(np.array([3.0, 4.0], np.float32))
    >>> x.g.tolist()
    [0.6000000238418579, 0.800000011920929]
"""

from __future__ import annotations

import torch

from ._registry import op
from ._top_k_order import top_k_index
from ._util import norm_axes

_C = "misc"


class _ClipByValue(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(low, high)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        low, high = ctx.saved_tensors
        # above max -> max, else below min -> min, as NNabla 1.39's clip_grad_by_value.cpp
        # (clip_grad_by_value_backward_cpu): where min > max, a gradient above max is max
        return torch.where(grad > high, high, torch.where(grad < low, low, grad)), None, None


class _ClipByNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, clip_norm, axes):
        ctx.clip_norm, ctx.axes = clip_norm, axes
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        norm = grad.square().sum(dim=ctx.axes, keepdim=True).sqrt()
        return grad * (ctx.clip_norm / norm), None, None


class _TopKGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k, use_abs, base_axis):
        ctx.k, ctx.use_abs, ctx.base_axis = k, use_abs, base_axis
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        flat = grad.reshape(tuple(grad.shape[:ctx.base_axis]) + (-1,))
        key = flat.abs() if ctx.use_abs else flat
        keep = torch.zeros_like(flat, dtype=torch.bool)
        keep.scatter_(-1, top_k_index(key, ctx.k), True)   # NNabla's positions among ties
        return torch.where(keep, flat, 0.0).reshape(grad.shape), None, None, None


@op(3, category=_C)
def clip_grad_by_value(x, min, max):  # noqa: A002 - NNabla's names
    """``x`` unchanged; backward, the gradient clipped element-wise to ``[min, max]`` (arrays
    of ``x``'s shape, NNabla's ``clip_grad_by_value``; they get no gradient): above ``max`` it
    is ``max``, else below ``min`` it is ``min``, in that order where ``min > max``.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.zeros(3), need_grad=True)
        >>> lo = sd.Variable.from_numpy_array(np.full(3, -0.5))
        >>> hi = sd.Variable.from_numpy_array(np.full(3, 0.5))
        >>> with sd.auto_forward():
        ...     y = F.clip_grad_by_value(x, lo, hi)
        >>> y.backward(np.array([-1.0, 0.25, 3.0], np.float32))
        >>> x.g.tolist()
        [-0.5, 0.25, 0.5]
    """
    return _ClipByValue.apply(x, min.to(x.dtype).detach(), max.to(x.dtype).detach())


@op(1, category=_C)
def clip_grad_by_norm(x, clip_norm=None, axes=None):
    """``x`` unchanged; backward, the gradient rescaled to the L2 norm ``clip_norm`` (default
    1) over ``axes`` (default: all): ``g * clip_norm / ||g||``.  As NNabla 1.39 computes it,
    a gradient whose norm is already below ``clip_norm`` is scaled up too.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.zeros((2, 2)), need_grad=True)
        >>> with sd.auto_forward():
        ...     y = F.clip_grad_by_norm(x, 2.0, axes=[1])
        >>> y.backward(np.array([[3.0, 4.0], [0.0, 1.0]], np.float32))
        >>> x.g.tolist()
        [[1.2000000476837158, 1.600000023841858], [0.0, 2.0]]
    """
    clip = 1.0 if clip_norm is None else float(clip_norm)
    dims = tuple(range(x.ndim)) if axes is None else tuple(norm_axes(axes, x.ndim))
    return _ClipByNorm.apply(x, clip, dims)


@op(1, category=_C)
def top_k_grad(x, k, abs=False, base_axis=1):  # noqa: A002 - NNabla's name
    """``x`` unchanged; backward, only the ``k`` largest gradient values (``abs``: of the
    largest magnitude) of each sample pass, the rest are zero (NNabla's ``top_k_grad``; a
    sample is the axes from ``base_axis`` on).  Among equal values the lowest positions pass,
    as in NNabla 1.39.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.zeros((1, 3)), need_grad=True)
        >>> with sd.auto_forward():
        ...     y = F.top_k_grad(x, 1, abs=True)
        >>> y.backward(np.array([[1.0, -5.0, 2.0]], np.float32))
        >>> x.g.tolist()
        [[0.0, -5.0, 0.0]]
    """
    base = int(base_axis) % x.ndim if x.ndim else 0
    size = 1
    for s in x.shape[base:]:
        size *= s
    if not 0 < int(k) <= size:
        raise ValueError(f"top_k_grad: k={k} must be in 1..{size} (the size of a sample of "
                         f"shape {tuple(x.shape[base:])})")
    return _TopKGrad.apply(x, int(k), bool(abs), base)

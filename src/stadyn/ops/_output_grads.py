"""Gradients that read the op's output ``y``, as NNabla 1.39's backward kernels do (``rule=
"nnabla"`` of ``swish``, ``mul_n`` and ``prod``): NNabla's ``Swish`` backward computes ``dy * (y
+ sigmoid(x) * (1 - y))``, ``MulN``'s ``dy * y / x_i`` (``0 / 0``, NaN, where an ``x_i`` is 0)
and ``Prod``'s ``dy * y / x`` (0 where ``x`` is 0), each from ``y``'s array -- so what a user
wrote into ``y.d`` before the backward changes the gradient.  Of float16 CPU values in a node
bound to NNabla's ``cpu:half`` (``half=True``: the op's ``OpSpec.half_formula``) ``Swish``
computes both in ``Half`` steps, each rounded (``ops/_half_elementwise.py``); Stadyn's own
float16 values compute them with torch's float16 kernels.

Each backward is one operator of Stadyn's own (:func:`._kernel_op.kernel_op`) taking the output
gradient, the input and ``y``: a static plan's trace records it as one call that needs the
output gradient, so the plan keeps ``y`` itself for the backward (and reads what the user wrote
there: ``graph/_shared_values.saved_as_held``) rather than a product of ``y`` computed in the
forward.  Under ``create_graph`` the same formula is computed by torch ops, differentiable.

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> x = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
    >>> y = F.prod(x)                   # (rule="nnabla")
    >>> y.forward()
    >>> y.d = 4.0                       # written before the backward: NNabla reads it
    >>> y.backward()
    >>> x.g.tolist()
    [4.0, 2.0]
"""

from __future__ import annotations

import torch

from ._half_elementwise import half_exp, half_sigmoid
from ._kernel_op import kernel_op

__all__ = ["nnabla_swish", "nnabla_mul_n", "nnabla_prod"]


def _half_cpu(x) -> bool:
    return x.dtype == torch.float16 and x.device.type == "cpu"


def _swish_grad(dy, x, y, half):
    # in NNabla's cpu:half (half) its Half steps: its sigmoid rounded three times
    s = half_sigmoid(x) if half else torch.sigmoid(x)
    return dy * (y + s * (1 - y))


def _quotient_grad(dy, x, y, zero_is_zero: bool):
    dx = dy * y / x
    return torch.where(x == 0, 0.0, dx) if zero_is_zero else dx


_swish_grad_op = kernel_op("stadyn_kernels::nnabla_swish_grad",
                           "(Tensor dy, Tensor x, Tensor y, bool half) -> Tensor", _swish_grad,
                           lambda dy, x, y, half: torch.empty_like(x))
_quotient_grad_op = kernel_op(
    "stadyn_kernels::nnabla_quotient_grad",
    "(Tensor dy, Tensor x, Tensor y, bool zero_is_zero) -> Tensor",
    lambda dy, x, y, z: _quotient_grad(dy, x, y, z).expand_as(x).clone(),
    lambda dy, x, y, z: torch.empty_like(x))


def _swish_grad_any(dy, x, y, half):
    """The opaque operator, or the differentiable torch ops under ``create_graph``."""
    if torch.is_grad_enabled():
        return _swish_grad(dy, x, y, half)
    return _swish_grad_op(dy, x, y, half)


def _quotient_grad_any(dy, x, y, zero_is_zero):
    if torch.is_grad_enabled():
        return _quotient_grad(dy, x, y, zero_is_zero).expand_as(x)
    return _quotient_grad_op(dy, x, y, zero_is_zero)


class _Swish(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, half):
        # NNabla's ``x / ((T)1 + exp(-x))``, in float16 every step rounded (swish.hpp)
        y = x / (1 + half_exp(-x)) if half else x * torch.sigmoid(x)
        ctx.half = half
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, y = ctx.saved_tensors
        return _swish_grad_any(dy, x, y, ctx.half), None


class _MulN(torch.autograd.Function):
    @staticmethod
    def forward(ctx, *xs):
        y = xs[0]
        for v in xs[1:]:
            y = y * v
        if len(xs) == 1:
            y = y.clone()
        ctx.save_for_backward(y, *xs)
        return y

    @staticmethod
    def backward(ctx, dy):
        y, *xs = ctx.saved_tensors
        return tuple(_quotient_grad_any(dy, x, y, False) if need else None
                     for x, need in zip(xs, ctx.needs_input_grad))


class _Prod(torch.autograd.Function):
    """The product over ``axes`` (sorted), in one pass over them moved last, as NNabla does."""

    @staticmethod
    def forward(ctx, x, axes, keepdims):
        keep = [a for a in range(x.ndim) if a not in axes]
        moved = x.permute(*keep, *axes).reshape(*[x.shape[a] for a in keep], -1)
        y = moved.prod(-1)
        kept_shape = [1 if a in axes else x.shape[a] for a in range(x.ndim)]
        y = y.reshape(kept_shape).clone() if keepdims else y     # (no view: the user writes y)
        ctx.kept_shape = kept_shape
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, y = ctx.saved_tensors
        shape = ctx.kept_shape
        return _quotient_grad_any(dy.reshape(shape), x, y.reshape(shape), True), None, None


def nnabla_swish(x: torch.Tensor, half: bool = False) -> torch.Tensor:
    """``x * sigmoid(x)`` with NNabla's backward, which reads the output; ``half``: NNabla's
    ``Half`` expressions of a float16 CPU ``x`` (a node bound to its ``cpu:half``), else
    torch's kernels.

    Example:
        >>> import torch
        >>> nnabla_swish(torch.zeros(2)).tolist()
        [0.0, 0.0]
        >>> x = torch.tensor([0.978515625], dtype=torch.float16)
        >>> nnabla_swish(x).item(), nnabla_swish(x, half=True).item()    # torch's, NNabla's
        (0.71142578125, 0.7109375)
    """
    return _Swish.apply(x, bool(half) and _half_cpu(x))


def nnabla_mul_n(*xs: torch.Tensor) -> torch.Tensor:
    """The product of ``xs`` (one shape) with NNabla's backward ``dy * y / x_i``.

    Example:
        >>> import torch
        >>> nnabla_mul_n(torch.tensor([2.0]), torch.tensor([3.0])).tolist()
        [6.0]
    """
    return _MulN.apply(*xs)


def nnabla_prod(x: torch.Tensor, axes: list, keepdims: bool) -> torch.Tensor:
    """The product over ``axes`` with NNabla's backward ``dy * y / x`` (0 where ``x`` is 0).

    Example:
        >>> import torch
        >>> nnabla_prod(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), [1], False).tolist()
        [2.0, 12.0]
    """
    return _Prod.apply(x, sorted(axes), keepdims)

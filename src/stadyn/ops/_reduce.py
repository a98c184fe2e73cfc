"""Reductions over axes."""

from __future__ import annotations

import torch

from ._half_sum import fold_mean, fold_sum
from ._output_grads import nnabla_prod
from ._picks import cntk_extreme, cntk_max_pool, first_extreme_index
from ._registry import op
from ._sequence_axis import unless_axes
from ._util import norm_axes

_C = "reduction"


def _reduce(fn, x, axis, keepdims):
    axes = norm_axes(axis, x.ndim)
    if axes is None:
        axes = list(range(x.ndim))
    if not axes:  # nothing to reduce (torch would read an empty ``dim`` as "every axis")
        return x.view_as(x)
    return fn(x, dim=axes, keepdim=keepdims)


def _half_fold(x, axis, rule, rules=("torch", "nnabla")) -> list | None:
    """The axes to fold over in half precision where ``rule`` asks for NNabla's reduction
    and ``x`` is float16 on the CPU (``ops/_half_sum.py``: NNabla's CPU kernel; elsewhere
    torch's sum), else None; refuses an unknown ``rule``."""
    if rule not in rules:
        raise ValueError(f"rule={rule!r}: one of {', '.join(map(repr, rules))}")
    if rule == "torch" or x.dtype != torch.float16 or x.device.type != "cpu":
        return None
    axes = norm_axes(axis, x.ndim)
    return list(range(x.ndim)) if axes is None else list(axes)


def _nnabla_in_half(attrs: dict) -> bool:
    """``OpSpec.computes_in_half`` of ``sum`` and ``mean``: NNabla's rule adds in fp16."""
    return attrs.get("rule", "torch") != "torch"


@op(1, category=_C, precision="float", sequence=unless_axes(), shape="reduce",
    computes_in_half=_nnabla_in_half)
def sum(x, axis=None, keepdims=False, rule="torch"):  # noqa: A001 - NNabla's name
    """Sum over ``axis`` (an int, a list, or None for all axes).  ``rule="nnabla"``: of float16
    values, NNabla 1.39's CPU sum, rounded to float16 after each addition (and computed in
    float16 in a node bound to a ``cpu:half`` context); see ``ops/_half_sum.py``.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.sum(sd.Variable.from_numpy_array(np.ones((2, 3))), axis=1)
        >>> y.d
        array([3., 3.], dtype=float32)
    """
    axes = _half_fold(x, axis, rule)
    if axes:
        return fold_sum(x, axes, keepdims)
    return _reduce(torch.sum, x, axis, keepdims)


@op(1, category=_C, precision="float", sequence=unless_axes(), shape="reduce",
    computes_in_half=_nnabla_in_half)
def mean(x, axis=None, keepdims=False, rule="torch"):
    """Mean over ``axis`` (None: all axes, giving shape ``()``); of integers, a float32 mean
    (as NNabla 1.39).  ``rule="nnabla"``: of float16 values, NNabla 1.39's CPU mean, the sum
    of :func:`sum` divided by the count as a float16; ``"nnabla_reduce"``: its
    ``reduce_mean``, which divides by the exact count.  Example: ``F.mean(loss)``."""
    axes = _half_fold(x, axis, rule, ("torch", "nnabla", "nnabla_reduce"))
    if axes:
        return fold_mean(x, axes, keepdims, count_in_type=rule == "nnabla")
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(torch.float32)
    return _reduce(torch.mean, x, axis, keepdims)


@op(1, category=_C, precision="float", sequence=unless_axes(), shape="reduce")
def prod(x, axis=None, keepdims=False, rule="torch"):
    """Product over ``axis``.  ``rule="nnabla"``: NNabla 1.39's, the axes in one pass and the
    backward ``dy * y / x`` (0 where ``x`` is 0), which reads the output (what a user wrote
    into it included).  Example: ``F.prod(x, axis=0)``."""
    if rule not in ("torch", "nnabla"):
        raise ValueError(f"prod: rule={rule!r}: 'torch' or 'nnabla'")
    axes = norm_axes(axis, x.ndim)
    if axes is None:
        axes = list(range(x.ndim))
    if rule == "nnabla" and axes and x.is_floating_point():
        return nnabla_prod(x, axes, keepdims)
    y = x.view_as(x)
    for a in sorted(axes, reverse=True):
        y = torch.prod(y, dim=a, keepdim=keepdims)
    return y


def _extreme(fn, x, axis, keepdims, with_index, only_index, rule="torch"):
    if rule not in ("torch", "cntk", "cntk_pooling", "nnabla") or (
            rule == "cntk_pooling" and (fn is torch.min or with_index or only_index)):
        raise ValueError(f"rule={rule!r}: 'torch', 'cntk' or 'nnabla' ('cntk_pooling': max's "
                         "values only)")
    axes = norm_axes(axis, x.ndim)
    if axes is None:
        axes = list(range(x.ndim))
    if rule == "cntk":
        return _cntk_rule(fn is torch.min, x, axes, keepdims, with_index, only_index)
    if rule == "nnabla" and x.is_floating_point() and axes:
        return _nnabla_rule(fn is torch.min, x, axes, keepdims, with_index, only_index)
    if rule == "cntk_pooling":
        return _cntk_pooled_max(x, axes, keepdims)
    if len(axes) == 1:
        values, index = fn(x, dim=axes[0], keepdim=keepdims)
    else:
        # Move the reduced axes last and flatten them into one.
        keep = [a for a in range(x.ndim) if a not in axes]
        moved = x.permute(*keep, *axes).reshape(*[x.shape[a] for a in keep], -1)
        values, index = fn(moved, dim=-1)
        if keepdims:
            shape = [1 if a in axes else x.shape[a] for a in range(x.ndim)]
            values, index = values.reshape(shape), index.reshape(shape)
    if only_index:
        return index
    if with_index:
        return values, index
    return values


class _NnablaExtreme(torch.autograd.Function):
    """NNabla 1.39's Max/Min CPU kernel over the last axis (max.cpp, min.cpp): a scan from
    ``m = -1e8`` (min: ``1e8``, in the input's type) taking each value ``v > m`` (``v < m``), so
    NaN is passed by, the first of tied values is the index, and a row with no value past the
    start gives the start at index 0; backward, the output gradient goes to the index."""

    @staticmethod
    def forward(ctx, moved, smaller):
        start = torch.tensor(1e8 if smaller else -1e8, dtype=moved.dtype, device=moved.device)
        past = (moved < start) if smaller else (moved > start)       # NaN: False
        worst = float("inf") if smaller else float("-inf")
        masked = torch.where(past, moved, torch.full_like(moved, worst))
        if moved.shape[-1] == 0:
            best = start.expand(moved.shape[:-1]).clone()
            index = torch.zeros(moved.shape[:-1], dtype=torch.long, device=moved.device)
        else:
            best = masked.amin(-1) if smaller else masked.amax(-1)
            hit = past & (masked == best.unsqueeze(-1))
            found = past.any(-1)
            index = torch.where(found, hit.to(torch.int8).argmax(-1), 0)
            best = torch.where(found, best, start)
        ctx.save_for_backward(index)
        ctx.shape = tuple(moved.shape)
        ctx.mark_non_differentiable(index)
        return best, index

    @staticmethod
    def backward(ctx, dy, _):
        (index,) = ctx.saved_tensors
        dx = dy.new_zeros(ctx.shape)
        if ctx.shape[-1]:
            dx.scatter_(-1, index.unsqueeze(-1), dy.unsqueeze(-1))
        return dx, None


def _nnabla_rule(smaller, x, axes, keepdims, with_index, only_index):
    """NNabla 1.39's Max/Min (see :class:`_NnablaExtreme`) over ``axes``, flattened."""
    keep = [a for a in range(x.ndim) if a not in axes]
    kept_shape = [x.shape[a] for a in keep]
    moved = x.permute(*keep, *axes).reshape(*kept_shape, -1)
    values, index = _NnablaExtreme.apply(moved, bool(smaller))
    shape = [1 if a in axes else x.shape[a] for a in range(x.ndim)] if keepdims else kept_shape
    values, index = values.reshape(shape), index.reshape(shape)
    if only_index:
        return index
    return (values, index) if with_index else values


def _cntk_pooled_max(x, axes, keepdims):
    """CNTK 2.7's max pooling with one window over ``axes`` (its GlobalMaxPooling)."""
    keep = [a for a in range(x.ndim) if a not in axes]
    kept_shape = [x.shape[a] for a in keep]
    n = 1
    for a in axes:
        n *= x.shape[a]
    if not axes or n == 0:          # nothing to pool: torch's own answer (or its error)
        return torch.amax(x, dim=axes, keepdim=keepdims) if axes else x.view_as(x)
    moved = x.permute(*keep, *axes).reshape(-1, 1, n)
    y = cntk_max_pool(moved, [n], [n], [0])
    shape = [1 if a in axes else x.shape[a] for a in range(x.ndim)] if keepdims else kept_shape
    return y.reshape(shape)


def _cntk_rule(smaller, x, axes, keepdims, with_index, only_index):
    """CNTK 2.7's ReduceMax/Min and Argmax/Argmin (see :func:`max`)."""
    index = None
    if with_index or only_index:
        keep = [a for a in range(x.ndim) if a not in axes]
        moved = x.detach().permute(*keep, *axes).reshape(*[x.shape[a] for a in keep], -1)
        index = first_extreme_index(moved, moved.ndim - 1, smaller)
        shape = ([1 if a in axes else x.shape[a] for a in range(x.ndim)] if keepdims
                 else [x.shape[a] for a in keep])
        index = index.reshape(shape)
        if only_index:
            return index
    values = cntk_extreme(x, axes, keepdims, smaller)
    return (values, index) if with_index else values


@op(1, category=_C, sequence=unless_axes(), shape="reduce")
def max(x, axis=None, keepdims=False, with_index=False, only_index=False,  # noqa: A001
        rule="torch"):
    """Maximum over ``axis``; ``with_index`` also returns the (flat, over the reduced axes)
    index; ``only_index`` returns just the index.  ``rule="cntk"`` computes CNTK 2.7's
    ``reduce_max`` and ``argmax``: NaN is passed by (only NaN: NaN), every value equal to the
    maximum takes the gradient, and the index is the first value no later one exceeds (a NaN
    in the first place wins); ``"torch"`` (the default) propagates NaN, the gradient goes to
    the one index taken, and the index is the first largest, a NaN counting as largest.
    ``rule="cntk_pooling"`` (values only) is CNTK 2.7's max pooling with one window over
    ``axis``, its ``GlobalMaxPooling``: NaN passed by (only NaN: -inf, with no gradient), the
    first of tied values takes the gradient.  ``rule="nnabla"`` is NNabla 1.39's CPU kernel
    (compat.nnabla's ``F.max``): a scan from -1e8 taking each larger value, so NaN is passed
    by, ties take the first, and a row of NaN or of values at most -1e8 gives -1e8 at index 0
    (which takes the gradient); ``F.min`` alike from 1e8.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.array([[np.nan, 1.0, 2.0, 2.0]]))
        ...     y = F.max(x, axis=1, rule="cntk")
        >>> y.d
        array([2.], dtype=float32)
    """
    return _extreme(torch.max, x, axis, keepdims, with_index, only_index, rule)


@op(1, category=_C, sequence=unless_axes(), shape="reduce")
def min(x, axis=None, keepdims=False, with_index=False, only_index=False,  # noqa: A001
        rule="torch"):
    """Minimum over ``axis`` (see :func:`max`; ``rule="cntk"``: CNTK 2.7's ``reduce_min`` and
    ``argmin``; ``rule="nnabla"``: NNabla 1.39's, from 1e8).  Example: ``F.min(x, axis=1)``."""
    return _extreme(torch.min, x, axis, keepdims, with_index, only_index, rule)

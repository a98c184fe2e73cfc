"""Reductions over axes."""

from __future__ import annotations

import torch

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


@op(1, category=_C, precision="float", sequence=unless_axes())
def sum(x, axis=None, keepdims=False):  # noqa: A001 - NNabla's name
    """Sum over ``axis`` (an int, a list, or None for all axes).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.sum(sd.Variable.from_numpy_array(np.ones((2, 3))), axis=1)
        >>> y.d
        array([3., 3.], dtype=float32)
    """
    return _reduce(torch.sum, x, axis, keepdims)


@op(1, category=_C, precision="float", sequence=unless_axes())
def mean(x, axis=None, keepdims=False):
    """Mean over ``axis`` (None: all axes, giving shape ``()``); of integers, a float32 mean
    (as NNabla 1.39).  Example: ``F.mean(loss)``."""
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(torch.float32)
    return _reduce(torch.mean, x, axis, keepdims)


@op(1, category=_C, precision="float", sequence=unless_axes())
def prod(x, axis=None, keepdims=False):
    """Product over ``axis``.  Example: ``F.prod(x, axis=0)``."""
    axes = norm_axes(axis, x.ndim)
    if axes is None:
        axes = list(range(x.ndim))
    y = x.view_as(x)
    for a in sorted(axes, reverse=True):
        y = torch.prod(y, dim=a, keepdim=keepdims)
    return y


def _extreme(fn, x, axis, keepdims, with_index, only_index):
    axes = norm_axes(axis, x.ndim)
    if axes is None:
        axes = list(range(x.ndim))
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


@op(1, category=_C, sequence=unless_axes())
def max(x, axis=None, keepdims=False, with_index=False, only_index=False):  # noqa: A001
    """Maximum over ``axis``; ``with_index`` also returns the (flat, over the reduced axes)
    index; ``only_index`` returns just the index.  Example: ``F.max(x, axis=1)``."""
    return _extreme(torch.max, x, axis, keepdims, with_index, only_index)


@op(1, category=_C, sequence=unless_axes())
def min(x, axis=None, keepdims=False, with_index=False, only_index=False):  # noqa: A001
    """Minimum over ``axis`` (see :func:`max`).  Example: ``F.min(x, axis=1)``."""
    return _extreme(torch.min, x, axis, keepdims, with_index, only_index)

"""Indexing, ordering and scans (NNabla's): ``gather``, ``gather_nd``, ``sort``,
``top_k_data``, ``cumsum`` and ``cumprod``.  Gradients flow to the data (never to indices).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     y = F.cumsum(sd.Variable.from_numpy_array([[1.0, 2.0, 3.0]]), axis=1, exclusive=True)
    >>> y.d
    array([[0., 1., 3.]], dtype=float32)
"""

from __future__ import annotations

import math

import torch

from ._registry import op
from ._sequence_axis import gather_rule, top_k_rule, unless_axes
from ._top_k_order import top_k_index
from ._util import norm_axis

_C = "indexing"


@op(2, category=_C, sequence=gather_rule)
def gather(x, Indices, axis=None, batch_dims=None):  # noqa: N803 - NNabla's name
    """The slices of ``x`` along ``axis`` (default 0) at ``Indices`` (TensorFlow's ``gather``):
    output shape ``x.shape[:axis] + Indices.shape[batch_dims:] + x.shape[axis + 1:]``; the first
    ``batch_dims`` axes of both are batch axes, gathered sample by sample.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.gather(sd.Variable.from_numpy_array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]),
        ...                  sd.Variable.from_numpy_array(np.array([2, 0])), axis=1)
        >>> y.d
        array([[2., 0.],
               [5., 3.]], dtype=float32)
    """
    b = int(batch_dims or 0)
    axis = norm_axis(0 if axis is None else int(axis), x.ndim)
    if not 0 <= b <= axis or tuple(x.shape[:b]) != tuple(Indices.shape[:b]):
        raise ValueError(f"gather: batch_dims {b} must be <= axis {axis} and the first {b} axes "
                         f"of x {tuple(x.shape)} and Indices {tuple(Indices.shape)} must agree")
    ids = Indices.long()
    batch = math.prod(x.shape[:b])
    xb = x.reshape((batch,) + tuple(x.shape[b:])).movedim(axis - b + 1, 1)
    flat = ids.reshape(batch, -1)
    picked = xb[torch.arange(batch, device=x.device)[:, None], flat]   # (B, K, pre..., post...)
    pre = axis - b
    k = tuple(Indices.shape[b:])
    picked = picked.reshape((batch,) + k + tuple(picked.shape[2:]))
    order = [0] + [1 + len(k) + i for i in range(pre)] + [1 + i for i in range(len(k))] + \
        list(range(1 + len(k) + pre, picked.ndim))
    return picked.permute(order).reshape(tuple(x.shape[:axis]) + k + tuple(x.shape[axis + 1:]))


@op(2, category=_C, sequence="drop")
def gather_nd(data, indices):
    """The elements (or slices) of ``data`` at the index tuples along ``indices``' first axis:
    ``out[j] = data[indices[0, j], ..., indices[M - 1, j]]`` (NNabla's ``gather_nd``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.gather_nd(sd.Variable.from_numpy_array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]),
        ...                     sd.Variable.from_numpy_array(np.array([[1, 0], [2, 0]])))
        >>> y.d
        array([5., 0.], dtype=float32)
    """
    ids = indices.long()
    if ids.shape[0] > data.ndim:
        raise ValueError(f"gather_nd: indices {tuple(indices.shape)} index {ids.shape[0]} axes "
                         f"of data {tuple(data.shape)}")
    return data[tuple(ids[i] for i in range(ids.shape[0]))]


@op(1, category=_C, sequence=unless_axes(default=-1))
def sort(x, axis=-1, reverse=False, with_index=False, only_index=False, rule="torch"):
    """``x`` sorted along ``axis`` (descending with ``reverse``; ties keep their order);
    ``with_index`` also returns the positions the values came from, ``only_index`` only those
    (int64).  ``rule="nnabla"`` (compat.nnabla's ``F.sort``) takes NNabla 1.39's backward,
    which gathers the output gradient by the sort index (``dx[i] = dy[index[i]]``, sort.cpp)
    where the derivative scatters it (``dx[index[i]] = dy[i]``).  Example:
    ``F.sort(x, axis=1, reverse=True)``."""
    if rule not in ("torch", "nnabla"):
        raise ValueError(f"sort: rule must be 'torch' or 'nnabla', got {rule!r}")
    dim = norm_axis(axis, x.ndim)
    values, index = torch.sort(x, dim=dim, descending=bool(reverse), stable=True)
    if only_index:
        return index
    if rule == "nnabla":
        values = _NnablaSortGrad.apply(x, values.detach(), index, dim)
    return (values, index) if with_index else values


class _NnablaSortGrad(torch.autograd.Function):
    """``values`` (``x`` sorted along ``dim`` by ``index``) with NNabla 1.39's backward of
    Sort: ``dx[i] = dy[index[i]]`` along ``dim``."""

    @staticmethod
    def forward(ctx, x, values, index, dim):
        ctx.save_for_backward(index)
        ctx.dim = dim
        return values.clone()

    @staticmethod
    def backward(ctx, dy):
        (index,) = ctx.saved_tensors
        return torch.gather(dy, ctx.dim, index), None, None, None


@op(1, category=_C, sequence=top_k_rule)
def top_k_data(x, k, abs=False, reduce=True, base_axis=1, largest=True,  # noqa: A002
               with_index=False, ties="nnabla"):
    """The ``k`` largest (``largest=False``: smallest) values of each sample, the axes from
    ``base_axis`` on taken as one; by magnitude with ``abs`` (the signed values are returned).
    ``reduce``: shape ``x.shape[:base_axis] + (k,)``, in order, the gradient going to the values
    kept; otherwise ``x``'s shape with the others set to 0 and, as NNabla does, the whole
    gradient passed back.  ``with_index`` also returns the flat positions (int64).  Among
    equal values the positions taken, and their order, are NNabla 1.39's (``ties="nnabla"``)
    or CNTK 2.7's ``top_k``'s (``"cntk"``): their heaps', replayed on the host for the samples
    with such ties (``ops/_top_k_order.py``); ``"lowest"``: the lowest position first, all on
    the device.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.top_k_data(sd.Variable.from_numpy_array([[3.0, 1.0, -5.0]]), 2, abs=True)
        >>> y.d
        array([[-5.,  3.]], dtype=float32)
    """
    base_axis = norm_axis(base_axis, x.ndim)
    flat = x.reshape(tuple(x.shape[:base_axis]) + (-1,))
    key = flat.abs() if abs else flat
    index = top_k_index(key, k, largest, ties)
    values = torch.gather(flat, -1, index)
    if not reduce:   # NNabla passes the whole gradient back here, not only the kept values
        kept = torch.zeros_like(flat).scatter(-1, index, values).reshape(x.shape)
        values = x + (kept - x).detach()
    return (values, index) if with_index else values


def _scan(fn, x, axis, exclusive, reverse, identity):
    axis = norm_axis(0 if axis is None else int(axis), x.ndim)
    if reverse:
        x = x.flip(axis)
    y = fn(x, dim=axis)
    if exclusive:
        first = torch.full_like(y.narrow(axis, 0, 1), identity)
        y = torch.cat([first, y.narrow(axis, 0, y.shape[axis] - 1)], dim=axis)
    return y.flip(axis) if reverse else y


@op(1, category=_C)
def cumsum(x, axis=None, exclusive=False, reverse=False):
    """Running sums along ``axis`` (default 0); ``exclusive`` leaves each element out of its
    own sum, ``reverse`` runs from the end.  Example: ``F.cumsum(x, axis=1)``."""
    return _scan(torch.cumsum, x, axis, exclusive, reverse, 0.0)


@op(1, category=_C)
def cumprod(x, axis=None, exclusive=False, reverse=False):
    """Running products along ``axis`` (default 0); ``exclusive`` and ``reverse`` as for
    :func:`cumsum`.  Example: ``F.cumprod(x, axis=1, reverse=True)``."""
    return _scan(torch.cumprod, x, axis, exclusive, reverse, 1.0)


@op(2, category=_C, sequence="of:values")
def searchsorted(sorted_sequence, values, right=False):
    """Where each of ``values`` would be inserted in the rows (last axis) of
    ``sorted_sequence`` to keep them sorted: the first such place, or the last with ``right``;
    the leading axes of the two are the same.  The positions come back as ``values``' float
    type, as NNabla returns them.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.searchsorted(sd.Variable.from_numpy_array([[1.0, 3.0, 5.0]]),
        ...                        sd.Variable.from_numpy_array([[3.0, 6.0]]))
        >>> y.d
        array([[1., 3.]], dtype=float32)
    """
    if sorted_sequence.shape[:-1] != values.shape[:-1]:
        raise ValueError(f"searchsorted: the leading axes of {tuple(sorted_sequence.shape)} "
                         f"and {tuple(values.shape)} differ")
    index = torch.searchsorted(sorted_sequence.detach().contiguous(), values.detach().contiguous(),
                               right=bool(right))
    return index.to(values.dtype)

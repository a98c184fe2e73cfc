"""NNabla's functions whose output shape depends on their inputs' values: ``nonzero``,
``unique``, ``bool_gather``, ``pack_padded_sequence`` and ``pad_packed_sequence`` (declared
with ``value_shape``), and ``bool_scatter``, ``bool_gather``'s inverse (whose shape does not).

The rule in a static graph (docs/getting-started-nnabla.md, "Shapes that depend on values"):
building the graph gives such an op's output its exact shape when every input Variable holds
a value (a leaf given data), else the provisional shape of the op's shape rule (an upper
bound: every element nonzero, every entry unique, every sequence full); the plan of a graph
holding one runs eagerly (its ``code`` says why), and after each forward the Variables it
fills report the shapes of their values.  NNabla sizes them at setup and asks for the
network to be rebuilt per iteration.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]))
    >>> F.nonzero(x).shape               # x holds values: the exact shape
    (2, 3)
    >>> y = F.nonzero(x * 2.0)           # x * 2 has no value yet: the provisional shape
    >>> y.shape
    (2, 6)
    >>> y.forward()
    >>> y.shape, y.d.tolist()
    ((2, 3), [[0, 1, 1], [1, 0, 2]])
    >>> y.forward()                      # (its first run, an evaluation, ran eagerly anyway)
    >>> y._plan.code
    "# runs eagerly: an output shape depends on values: nonzero (x's count of nonzero elements)"
"""

from __future__ import annotations

import math

import torch
from torch._subclasses.fake_tensor import FakeTensor

from ._registry import op
from ._util import norm_axis

_C = "indexing"


def _holds_values(t) -> bool:
    """Whether ``t`` has values to check (not a shape-inference or tracing stand-in)."""
    return t.device.type != "meta" and not isinstance(t, FakeTensor)


def _meta(shape, dtype, grad=False):
    return torch.empty(tuple(shape), dtype=dtype, device="meta").requires_grad_(grad)


# -- nonzero ------------------------------------------------------------------------------------
def _nonzero_shape(x):
    return _meta((x.ndim, x.numel()), torch.int64)


@op(1, category=_C, shape=_nonzero_shape, value_shape="x's count of nonzero elements")
def nonzero(x):
    """The indices of ``x``'s nonzero elements, ``(x.ndim, count)`` in C order (as ONNX's
    NonZero and NNabla's ``nonzero``; int64 where NNabla's are uint64).  No gradient.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([[1.0, 0.0, 3.0], [0.0, 5.0, 0.0]]))
        >>> with sd.auto_forward():
        ...     y = F.nonzero(x)
        >>> y.d.tolist()
        [[0, 0, 1], [0, 2, 1]]
    """
    return torch.nonzero(x.detach()).T.contiguous()


# -- unique -------------------------------------------------------------------------------------
class _NoGradient(torch.autograd.Function):
    """The identity forward; backward refuses, as NNabla 1.39's ``unique`` does."""

    @staticmethod
    def forward(ctx, y, x):
        return y.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("unique has no gradient (NNabla 1.39's backward is not implemented "
                           "either); use its indices with gather for one")


def _unique_axis(x, flatten, axis):
    if flatten:
        return None
    if axis is None:
        raise ValueError("unique: flatten=False needs an axis")
    return norm_axis(int(axis), x.ndim)


def _unique_shape(x, flatten=True, axis=None, sorted=True, with_index=False,  # noqa: A002
                  with_inverse=False, with_counts=False):
    dim = _unique_axis(x, flatten, axis)
    size = x.numel() if dim is None else x.shape[dim]
    outs = [_meta((size,) if dim is None else x.shape, x.dtype, x.requires_grad)]
    for flag, length in ((with_index, size), (with_inverse, size), (with_counts, size)):
        if flag:
            outs.append(_meta((length,), torch.int32))
    return outs[0] if len(outs) == 1 else tuple(outs)


@op(1, category=_C, shape=_unique_shape, value_shape="x's count of distinct values")
def unique(x, flatten=True, axis=None, sorted=True, with_index=False,  # noqa: A002
           with_inverse=False, with_counts=False):
    """The distinct values of ``x`` (``flatten``: of all its elements; else the distinct
    slices along ``axis``), ascending (``sorted``) or in order of first occurrence, then as
    asked: ``indices`` (the first occurrence of each), ``inverse_indices`` (each element's
    position in the result) and ``counts`` (int32, as NNabla's ``unique``).  NNabla 1.39
    refuses ``axis=None`` even with ``flatten=True``; Stadyn takes it.  No gradient (NNabla's
    backward raises; Stadyn's too).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([3.0, 1.0, 2.0, 3.0, 1.0]))
        >>> with sd.auto_forward():
        ...     y, first, inverse, counts = F.unique(x, sorted=False, with_index=True,
        ...                                          with_inverse=True, with_counts=True)
        >>> y.d.tolist(), first.d.tolist(), inverse.d.tolist(), counts.d.tolist()
        ([3.0, 1.0, 2.0], [0, 1, 2], [0, 1, 2, 0, 1], [2, 2, 1])
    """
    dim = _unique_axis(x, flatten, axis)
    data = x.detach().reshape(-1) if dim is None else x.detach()
    along = 0 if dim is None else dim
    values, inverse, counts = torch.unique(data, sorted=True, return_inverse=True,
                                           return_counts=True, dim=along)
    positions = torch.arange(inverse.numel(), device=x.device)
    first = torch.full((counts.numel(),), inverse.numel(), dtype=torch.long, device=x.device)
    first = first.scatter_reduce(0, inverse, positions, reduce="amin")
    if not sorted:
        order = torch.argsort(first)
        rank = torch.empty_like(order).scatter_(0, order, torch.arange(order.numel(),
                                                                       device=x.device))
        values, first, counts, inverse = (values.index_select(along, order), first[order],
                                          counts[order], rank[inverse])
    y = _NoGradient.apply(values, x) if x.requires_grad else values
    outs = [y]
    for flag, value in ((with_index, first), (with_inverse, inverse), (with_counts, counts)):
        if flag:
            outs.append(value.to(torch.int32))
    return outs[0] if len(outs) == 1 else tuple(outs)


# -- bool_gather / bool_scatter ---------------------------------------------------------------
def _check_mask(name, data, mask):
    if mask.ndim == 0 or tuple(data.shape[:mask.ndim]) != tuple(mask.shape):
        raise ValueError(f"{name}: the mask {tuple(mask.shape)} must be the leading axes of "
                         f"the input {tuple(data.shape)}")


def _bool_gather_shape(input, mask):  # noqa: A002
    _check_mask("bool_gather", input, mask)
    rows = math.prod(mask.shape)
    return _meta((rows,) + tuple(input.shape[mask.ndim:]), input.dtype, input.requires_grad)


@op(2, category=_C, shape=_bool_gather_shape, value_shape="mask's count of nonzero elements")
def bool_gather(input, mask):  # noqa: A002 - NNabla's name
    """The slices of ``input`` ``(B1..BN, D1..DM)`` where ``mask`` ``(B1..BN)`` is nonzero:
    ``(count, D1..DM)``, in C order (NNabla's ``bool_gather``).  Backward: ``input`` gets the
    gradient at the gathered slices; the mask gets none.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
        >>> m = sd.Variable.from_numpy_array(np.array([1, 0, 1]))
        >>> with sd.auto_forward():
        ...     y = F.bool_gather(x, m)
        >>> y.d.tolist()
        [[1.0, 2.0], [5.0, 6.0]]
    """
    _check_mask("bool_gather", input, mask)
    rows = torch.nonzero(mask.detach().reshape(-1)).reshape(-1)
    flat = input.reshape((-1,) + tuple(input.shape[mask.ndim:]))
    return flat.index_select(0, rows)


def _check_scatter(input, mask, output):  # noqa: A002
    shape = tuple(mask.shape) + tuple(input.shape[1:])
    if mask.ndim == 0 or input.ndim == 0:
        raise ValueError(f"bool_scatter: input {tuple(input.shape)} must be (count, D1..DM) and "
                         f"mask {tuple(mask.shape)} (B1..BN)")
    if output is not None and tuple(output.shape) != shape:
        raise ValueError(f"bool_scatter: output {tuple(output.shape)} must be mask.shape + "
                         f"input.shape[1:] = {shape}")
    return shape


@op(3, category=_C)
def bool_scatter(input, mask, output=None):  # noqa: A002 - NNabla's names
    """``input`` ``(count, D1..DM)`` written, row by row in C order, to the positions where
    ``mask`` ``(B1..BN)`` is nonzero of a ``(B1..BN, D1..DM)`` array: zeros elsewhere, or
    ``output``'s values where given (NNabla writes into ``output``; Stadyn returns the new
    array).  ``input`` must have a row per nonzero of the mask.  Backward: ``input`` gets the
    gradient at the written positions, ``output`` elsewhere; the mask gets none.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([[11.0, 12.0], [15.0, 16.0]]))
        >>> m = sd.Variable.from_numpy_array(np.array([1, 0, 1]))
        >>> with sd.auto_forward():
        ...     y = F.bool_scatter(x, m)
        >>> y.d.tolist()
        [[11.0, 12.0], [0.0, 0.0], [15.0, 16.0]]
    """
    shape = _check_scatter(input, mask, output)
    keep = mask.detach().reshape(-1) != 0
    if _holds_values(keep) and int(keep.sum()) != input.shape[0]:
        raise ValueError(f"bool_scatter: the mask has {int(keep.sum())} nonzero elements, the "
                         f"input {input.shape[0]} rows")
    row = (torch.cumsum(keep.long(), 0) - 1).clamp(min=0)
    rows = input.index_select(0, row.clamp(max=max(input.shape[0] - 1, 0)))
    where = keep.reshape((-1,) + (1,) * (input.ndim - 1))
    base = (output.reshape(rows.shape).to(input.dtype) if output is not None
            else torch.zeros_like(rows))
    return torch.where(where, rows, base).reshape(shape)


# -- pack_padded_sequence / pad_packed_sequence -------------------------------------------------
def _pack_shape(padded_sequence, lengths, batch_first=False):
    _check_pack(padded_sequence, lengths, batch_first)
    t, b = padded_sequence.shape[:2] if not batch_first else padded_sequence.shape[1::-1]
    return (_meta((t * b,) + tuple(padded_sequence.shape[2:]), padded_sequence.dtype,
                  padded_sequence.requires_grad), _meta((t,), torch.int32))


def _check_pack(padded_sequence, lengths, batch_first):
    if padded_sequence.ndim < 2 or lengths.ndim != 1:
        raise ValueError(f"pack_padded_sequence: the padded sequence "
                         f"{tuple(padded_sequence.shape)} must be (T, B, *) (batch_first: "
                         f"(B, T, *)) and the lengths {tuple(lengths.shape)} (B,)")
    b = padded_sequence.shape[0 if batch_first else 1]
    if lengths.shape[0] != b:
        raise ValueError(f"pack_padded_sequence: {lengths.shape[0]} lengths for a batch of {b}")


@op(2, category=_C, shape=_pack_shape, value_shape="the sum of lengths")
def pack_padded_sequence(padded_sequence, lengths, batch_first=False):
    """Pack padded sequences ``(T, B, *)`` (``batch_first``: ``(B, T, *)``) of ``lengths``
    (sorted in decreasing order, as NNabla assumes and does not check) into the steps that
    exist, time-major: ``(sum(lengths), *)``, and the batch size of each time step ``(T,)``
    (int32) -- NNabla's ``pack_padded_sequence``.  Backward: the padded sequence gets the
    packed gradient at its steps, zero at the padding.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.arange(6.0).reshape(3, 2))   # T=3, B=2
        >>> n = sd.Variable.from_numpy_array(np.array([3, 1]))
        >>> with sd.auto_forward():
        ...     packed, batch_sizes = F.pack_padded_sequence(x, n)
        >>> packed.d.tolist(), batch_sizes.d.tolist()
        ([0.0, 1.0, 2.0, 4.0], [2, 1, 1])
    """
    _check_pack(padded_sequence, lengths, batch_first)
    x = padded_sequence.transpose(0, 1) if batch_first else padded_sequence
    t, b = x.shape[:2]
    steps = lengths.detach().to(x.device).long()
    batch_sizes = (steps[None, :] > torch.arange(t, device=x.device)[:, None]).sum(1)
    keep = torch.arange(b, device=x.device)[None, :] < batch_sizes[:, None]
    rows = torch.nonzero(keep.reshape(-1)).reshape(-1)
    packed = x.reshape((t * b,) + tuple(x.shape[2:])).index_select(0, rows)
    return packed, batch_sizes.to(torch.int32)


def _pad_shape(packed_sequence, batch_sizes, batch_first=False, padding_value=None,
               total_length=None):
    _check_pad(packed_sequence, batch_sizes)
    t = max(batch_sizes.shape[0], -1 if total_length is None else int(total_length))
    b = packed_sequence.shape[0]
    shape = (b, t) if batch_first else (t, b)
    return (_meta(shape + tuple(packed_sequence.shape[1:]), packed_sequence.dtype,
                  packed_sequence.requires_grad), _meta((b,), torch.int32))


def _check_pad(packed_sequence, batch_sizes):
    if packed_sequence.ndim < 1 or batch_sizes.ndim != 1:
        raise ValueError(f"pad_packed_sequence: the packed sequence "
                         f"{tuple(packed_sequence.shape)} must be (N, *) and the batch sizes "
                         f"{tuple(batch_sizes.shape)} (T,)")


@op(2, category=_C, shape=_pad_shape, value_shape="the largest batch size")
def pad_packed_sequence(packed_sequence, batch_sizes, batch_first=False, padding_value=None,
                        total_length=None):
    """The inverse of :func:`pack_padded_sequence`: the padded sequences ``(T, B, *)``
    (``batch_first``: ``(B, T, *)``; ``T`` is ``total_length`` where that is longer) and
    their lengths ``(B,)`` (int32).  As NNabla 1.39 computes it, the padding is zero whatever
    ``padding_value`` says.  Backward: the packed sequence gets the gradient at its steps.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> p = sd.Variable.from_numpy_array(np.array([0.0, 1.0, 2.0, 4.0]))
        >>> s = sd.Variable.from_numpy_array(np.array([2, 1, 1]))
        >>> with sd.auto_forward():
        ...     x, n = F.pad_packed_sequence(p, s, batch_first=True)
        >>> x.d.tolist(), n.d.tolist()
        ([[0.0, 2.0, 4.0], [1.0, 0.0, 0.0]], [3, 1])
    """
    _check_pad(packed_sequence, batch_sizes)
    sizes = batch_sizes.detach().to(packed_sequence.device).long()
    t = sizes.shape[0]
    b = int(sizes.max()) if t else 0
    total = max(t, -1 if total_length is None else int(total_length))
    if int(sizes.sum()) != packed_sequence.shape[0]:
        raise ValueError(f"pad_packed_sequence: the batch sizes sum to {int(sizes.sum())}, the "
                         f"packed sequence has {packed_sequence.shape[0]} steps")
    keep = torch.arange(b, device=sizes.device)[None, :] < sizes[:, None]
    slot = torch.nonzero(keep.reshape(-1)).reshape(-1)
    tail = tuple(packed_sequence.shape[1:])
    padded = packed_sequence.new_zeros((t * b,) + tail).index_copy(0, slot, packed_sequence)
    padded = padded.reshape((t, b) + tail)
    if total > t:
        padded = torch.cat([padded, padded.new_zeros((total - t, b) + tail)])
    lengths = keep.sum(0).to(torch.int32)
    return (padded.transpose(0, 1) if batch_first else padded), lengths

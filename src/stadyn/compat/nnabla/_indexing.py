"""NNabla's ``Variable[key]``: NumPy-like indexing that builds graph functions.

NNabla 1.39 turns ``x[key]`` into functions of the graph (its ``_indexing.pyx``): a key of
slices, integers, ``...`` and ``None`` ("basic" indexing) is one ``slice`` (an integer ``i``
taken as ``i:i+1``, a negative one counted from the end) and, where integers drop axes or
``None`` adds them, a ``reshape``; a key of index arrays ("advanced" indexing: lists, NumPy
arrays, Variables, or one boolean mask) is a ``gather_nd``.  Gradients flow back through
them.  What NNabla refuses, this refuses alike: an integer out of the axis (``IndexError``),
more indices than axes, two ``...``, integers mixed with index arrays
(``NotImplementedError``), any other key (``TypeError``; NumPy's integer scalars too, as in
NNabla).

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn
    >>> x = nn.Variable.from_numpy_array(np.arange(24.0).reshape(2, 3, 4))
    >>> y = x[:, 0, 1:3]
    >>> y.forward(); y.shape, y.d.tolist()
    ((2, 2), [[1.0, 2.0], [13.0, 14.0]])
    >>> z = x[None, ..., -1]
    >>> z.forward(); z.shape, z.d.tolist()
    ((1, 2, 3), [[[3.0, 7.0, 11.0], [15.0, 19.0, 23.0]]])
    >>> w = x[[1, 0], [2, 0]]
    >>> w.forward(); w.d.tolist()
    [[20.0, 21.0, 22.0, 23.0], [0.0, 1.0, 2.0, 3.0]]
"""

from __future__ import annotations

import numpy as np

from ... import functions as _F
from ...graph import Variable as _Variable
from ._ndarray import NdArray

__all__ = ["getitem"]


def _basic_key(shape, key: list):
    """``(key, start, stop, step)`` of a basic ``key`` (a list of slices, ints, ``...`` and
    ``None``) on an array of ``shape``: ``key`` with its ``...`` expanded and slices appended
    for the axes it leaves out; one ``start``/``stop``/``step`` per axis (an int ``i`` is
    ``i:i+1``)."""
    ndim = len(shape)
    idx = [k for k in key if k is not None]
    if not idx:
        idx = ndim * [slice(None)]
        key.extend(idx)
    if Ellipsis in idx:
        n = ndim - len(idx) + 1
        pos = idx.index(Ellipsis)
        idx[pos:pos + 1] = n * [slice(None)]
        pos = key.index(Ellipsis)
        key[pos:pos + 1] = n * [slice(None)]
    if Ellipsis in idx:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if len(idx) > ndim:
        raise IndexError(f"too many indices for {ndim}-D array")
    idx.extend((ndim - len(idx)) * [slice(None)])
    key.extend((ndim - len(key)) * [slice(None)])
    for axis, size in enumerate(shape):
        i = idx[axis]
        if isinstance(i, int):
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {size}")
            i = i + size if i < 0 else i
            idx[axis] = slice(i, i + 1, 1)
    start, stop, step = zip(*((s.start, s.stop, s.step) for s in idx))
    return key, start, stop, step


def _basic(x, key: list):
    key, start, stop, step = _basic_key(tuple(x.shape), key)
    sliced = _F.slice(x, start, stop, step)
    axes = iter(sliced.shape)
    shape = []
    for k in key:
        if isinstance(k, int):
            next(axes)                          # an integer drops its axis
        else:
            shape.append(1 if k is None else next(axes))
    shape = tuple(shape)
    return sliced if tuple(sliced.shape) == shape else _F.reshape(sliced, shape)


def _is_array(k) -> bool:
    return isinstance(k, (NdArray, _Variable))


def _values(k) -> np.ndarray:
    return k.data if isinstance(k, NdArray) else k.d


def _advanced(x, key):
    idx = [k for k in key if k is not None]
    new_axes = [1 if k is None else 0 for k in key]
    one = idx[0] if len(idx) == 1 else None
    if one is not None and _is_array(one) and np.asarray(_values(one)).dtype == bool:
        indices = np.vstack(np.nonzero(_values(one)))
    elif one is not None and (isinstance(one, (tuple, list)) and one
                              and all(isinstance(v, bool) for v in one)
                              or isinstance(one, np.ndarray) and one.dtype == bool):
        indices = np.vstack(np.nonzero(one))
    elif all(_is_array(k) for k in idx):
        indices = _F.stack(*idx)
    elif all(isinstance(k, (int, tuple, list, np.ndarray)) for k in idx):
        indices = np.array(idx)
    else:
        raise NotImplementedError("mixed advanced indexing: "
                                  + ", ".join(repr(k) for k in key))
    if isinstance(indices, np.ndarray):     # a graph leaf holding them
        indices = _Variable.from_numpy_array(indices)
    out = _F.gather_nd(x, indices)
    if sum(new_axes):
        first = new_axes.index(0)
        shape = new_axes[:first] + [out.shape[0]] + sum(new_axes[first:]) * [1] \
            + list(out.shape[1:])
        out = _F.reshape(out, shape)
    return out


def getitem(x, key):
    """``x[key]`` as NNabla 1.39 computes it (the module docstring)."""
    if isinstance(key, (list, np.ndarray)) or _is_array(key):
        return _advanced(x, [key])
    if isinstance(key, (slice, int, type(Ellipsis), type(None))):
        return _basic(x, [key])
    if isinstance(key, tuple):
        if any(isinstance(k, (tuple, list, np.ndarray)) or _is_array(k) for k in key):
            return _advanced(x, key)
        return _basic(x, list(key))
    raise TypeError(f"invalid index {key!r}")

"""NNabla's ``Variable[key]``: NumPy-like indexing that builds graph functions.

NNabla 1.39 turns ``x[key]`` into functions of the graph (its ``_indexing.pyx``): a key of
slices, integers, ``...`` and ``None`` ("basic" indexing) is one ``slice`` (an integer ``i``
taken as ``i:i+1``, a negative one counted from the end) and, where integers drop axes or
``None`` adds them, a ``reshape``; a key of index arrays ("advanced" indexing: lists, NumPy
arrays, Variables, or one boolean mask) is a ``gather_nd``.  Gradients flow back through
them; their values are float32 whatever ``x`` holds (NNabla's ``Slice`` and ``GatherNd``
write float32: an integer or bool ``x`` is cast first).  What NNabla refuses, this refuses alike: an
integer out of the axis (``IndexError``), more indices than axes, two ``...``, integers mixed
with index arrays (``NotImplementedError``), any other key (``TypeError``; NumPy's integer
scalars too, as in NNabla).

``x[key] = value`` (:func:`setitem`, ``Variable.__setitem__``) makes ``x`` the output of a
graph writing ``value``, broadcast to the indexed shape, into what ``x`` was; the same keys,
the same refusals.  As NNabla's, the graph is one ``scatter_nd(value, indices, out=x)``
(``x.parent`` is that ``ScatterNd``, its inputs the value, the index tuples and what ``x``
was), with NNabla's values and gradients.  An NdArray indexes alike, at once: ``a[key]`` is a
new float32 NdArray, ``a[key] = value`` writes a float32 array in place (another dtype becomes
float32, in new memory).

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
    >>> x[0, :, 0] = -1.0
    >>> x.forward(); x.d[0, :, :2].tolist()
    [[-1.0, 1.0], [-1.0, 5.0], [-1.0, 9.0]]
"""

from __future__ import annotations

import numpy as np

from ... import functions as _F
from ..._errors import ShapeError
from ...graph import Variable as _Variable, format_location as _format_location
from ...graph import user_location as _user_location
from ._composed import slice as _nnabla_slice
from ._float_inputs import as_float32 as _as_float32
from ._ndarray import NdArray, imperative

__all__ = ["getitem", "setitem"]


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
    # NNabla's F.slice fills the None entries, so the function's arguments are its numbers
    # (``x[:, :5].parent.arguments`` is ``F.slice(x, (0, 0), (10, 5), (1, 1))``'s)
    sliced = _nnabla_slice(x, start, stop, step)
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


def _index_tuples(idx: list, key):
    """The index tuples (one row per indexed axis) of an advanced ``key`` whose indices, less
    its ``None``s, are ``idx``: a mask's positions, Variables or NdArrays stacked, integer
    lists as an array; NNabla refuses mixing them."""
    one = idx[0] if len(idx) == 1 else None
    if one is not None and _is_array(one) and np.asarray(_values(one)).dtype == bool:
        return np.vstack(np.nonzero(_values(one)))
    if one is not None and (isinstance(one, (tuple, list)) and one
                            and all(isinstance(v, bool) for v in one)
                            or isinstance(one, np.ndarray) and one.dtype == bool):
        return np.vstack(np.nonzero(one))
    if all(_is_array(k) for k in idx):
        return _F.stack(*idx)
    if all(isinstance(k, (int, tuple, list, np.ndarray)) for k in idx):
        return np.array(idx)
    raise NotImplementedError("mixed advanced indexing: " + ", ".join(repr(k) for k in key))


def _advanced(x, key):
    idx = [k for k in key if k is not None]
    new_axes = [1 if k is None else 0 for k in key]
    indices = _index_tuples(idx, key)
    if isinstance(indices, np.ndarray):     # a graph leaf holding them
        indices = _Variable.from_numpy_array(indices)
    out = _F.gather_nd(x, indices)
    if sum(new_axes):
        first = new_axes.index(0)
        shape = new_axes[:first] + [out.shape[0]] + sum(new_axes[first:]) * [1] \
            + list(out.shape[1:])
        out = _F.reshape(out, shape)
    return out


def _dispatch(key, basic, advanced):
    """``basic(list_of_keys)`` or ``advanced(keys)`` as NNabla 1.39 tells them apart."""
    if isinstance(key, (list, np.ndarray)) or _is_array(key):
        return advanced([key])
    if isinstance(key, (slice, int, type(Ellipsis), type(None))):
        return basic([key])
    if isinstance(key, tuple):
        if any(isinstance(k, (tuple, list, np.ndarray)) or _is_array(k) for k in key):
            return advanced(key)
        return basic(list(key))
    raise TypeError(f"invalid index {key!r}")


def getitem(x, key):
    """``x[key]`` as NNabla 1.39 computes it (the module docstring).  An integer or bool
    ``x`` gives float32 values: NNabla's ``Slice`` and ``GatherNd`` write float32 whatever
    they read (``lengths[unsorted_indices]`` in its ``utils.rnn.pad_packed_sequence`` too;
    cases ``nnabla_user_37.user37_packed_sequence_tagger``,
    ``nnabla_review_mends_37.indexing_dtypes__float32``)."""
    x = _read_as_float32(x)
    return _dispatch(key, lambda k: _basic(x, k), lambda k: _advanced(x, k))


def _read_as_float32(x):
    """``x`` cast to float32 when it is a Variable of integers or bools (``as_float32`` leaves
    bools alone: NNabla's functions over them are not all float)."""
    if isinstance(x, _Variable) and isinstance(x.dtype, np.dtype) and x.dtype.kind == "b":
        return _F.cast(x, "float32")
    return _as_float32(x)


def _broadcast(value, shape: tuple, key):
    """``value`` broadcast to ``shape`` as NumPy broadcasts (leading axes added)."""
    vshape = tuple(value.shape)
    if vshape == shape:
        return value
    if len(vshape) > len(shape) or any(v not in (1, s) for v, s in
                                       zip(vshape[::-1], shape[::-1])):
        line = _format_location(_user_location())
        raise ShapeError(f"x[{key!r}] = value: a value of shape {vshape} cannot be broadcast "
                         f"to the indexed shape {shape}" + (f" (at {line})" if line else ""))
    full = (len(shape) - len(vshape)) * (1,) + vshape
    if full != vshape:
        value = _F.reshape(value, full)
    return _F.broadcast(value, shape)


def _basic_scatter(shape: tuple, key: list, value, label):
    """The index tuples and the values ``x[key] = value`` writes, ``key`` basic."""
    key, start, stop, step = _basic_key(shape, key)
    ranges = [np.arange(size)[slice(a, b, c)] for size, a, b, c in zip(shape, start, stop, step)]
    sliced = tuple(len(r) for r in ranges)
    axes = iter(sliced)
    target = []
    for k in key:
        if isinstance(k, int):
            next(axes)
        else:
            target.append(1 if k is None else next(axes))
    value = _broadcast(value, tuple(target), label)
    if tuple(value.shape) != sliced:
        value = _F.reshape(value, sliced)
    return np.array(np.meshgrid(*ranges, indexing="ij")), value


def _advanced_scatter(shape: tuple, key, value, label):
    """The index tuples and the values ``x[key] = value`` writes, ``key`` advanced."""
    idx = [k for k in key if k is not None]
    new_axes = [1 if k is None else 0 for k in key]
    if sum(new_axes):
        sub = new_axes.index(0)
        vshape = tuple(value.shape)
        value = _F.reshape(value, vshape[sub:sub + 1] + vshape[sum(new_axes) + 1:])
    indices = _index_tuples(idx, key)
    ishape = tuple(indices.shape)
    return indices, _broadcast(value, ishape[1:] + shape[ishape[0]:], label)


def setitem(x, key, value):
    """``x`` with ``x[key] = value`` written in, a new Variable in the graph, as NNabla 1.39
    computes it: ``value`` (a Variable) broadcast to the indexed shape; the gradient reaches
    ``x`` except where it was overwritten, and ``value`` at the places it was written to
    (when ``value`` needs no gradient, NNabla's backward gives ``x`` all of it, the
    overwritten places too): one ``scatter_nd(value, indices, out=x)``, as NNabla's graph.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> x = nn.Variable.from_numpy_array(np.zeros((2, 3)))
        >>> y = setitem(x, (slice(None), 1), nn.Variable.from_numpy_array(np.array(5.0)))
        >>> y.forward(); y.d.tolist()
        [[0.0, 5.0, 0.0], [0.0, 5.0, 0.0]]
    """
    # NNabla 1.39's ScatterNd writes float32: an integer x becomes a float32 array holding
    # ``value`` untruncated (x[1:3] = [2.7, -1.5] over int32 gives 2.7 and -1.5)
    x = _as_float32(x)
    shape = tuple(x.shape)
    indices, updates = _dispatch(key, lambda k: _basic_scatter(shape, k, value, key),
                                 lambda k: _advanced_scatter(shape, k, value, key))
    if isinstance(indices, np.ndarray):
        indices = _Variable.from_numpy_array(indices)
    # NNabla's ScatterNd masks the gradient to ``x`` only when it propagates one to the value
    # (src/nbla/function/generic/scatter_nd.cpp, backward_impl): the op does the same
    return _F.scatter_nd(updates, indices, out=x)


def _masks_as_numpy(key):
    """``key`` with each boolean NdArray or Variable in it (a mask) given as its NumPy array:
    ``imperative`` reads every NdArray as float32, which would make a mask's
    ``True``/``False`` the indices 1 and 0 (``a[mask]`` gathered ``a[1], a[0], ...``)."""
    def mask(k):
        if _is_array(k) and np.asarray(_values(k)).dtype == bool:
            return np.asarray(_values(k))
        return k
    return tuple(mask(k) for k in key) if isinstance(key, tuple) else mask(key)


def _ndarray_getitem(self, key) -> NdArray:
    """``a[key]`` of an NdArray, as NNabla 1.39's: computed at once by the same functions as
    ``Variable[key]``, a new float32 NdArray (a copy, not a view; integers become floats as
    NNabla's functions make them).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> a = nn.NdArray.from_numpy_array(np.arange(6).reshape(2, 3))
        >>> a[1].data, a[[1, 0]].shape
        (array([3., 4., 5.], dtype=float32), (2, 3))
    """
    out = imperative(getitem, self, _masks_as_numpy(key))
    return NdArray._wrap(out._t.clone())    # a slice's result may view the array: a copy


def _ndarray_setitem(self, key, value) -> None:
    """``a[key] = value`` of an NdArray, as NNabla 1.39's: ``value`` (an NdArray, an array or
    a number, broadcast) is written into a float32 array in place; an array of another dtype
    becomes float32, in new memory (a NumPy array taken from it before keeps the old values).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> a = nn.NdArray.from_numpy_array(np.zeros((2, 2), np.int64))
        >>> a[0] = 3; a.data
        array([[3., 3.],
               [0., 0.]], dtype=float32)
    """
    if not isinstance(value, (NdArray, _Variable)):
        value = NdArray.from_numpy_array(np.asarray(value))
    self._inplace(imperative(setitem, self, _masks_as_numpy(key), value))


NdArray.__getitem__ = _ndarray_getitem
NdArray.__setitem__ = _ndarray_setitem

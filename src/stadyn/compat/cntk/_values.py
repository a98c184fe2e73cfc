"""CNTK's value containers: ``NDArrayView`` (an array on a device), ``Value`` (a minibatch of
data for a variable), and ``asarray``/``asvalue`` between them and NumPy.  Stadyn's values are
NumPy arrays and torch tensors, so these are thin holders of a NumPy array."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...graph import pad_sequences
from ._cntk_attributes import CNTK_ATTRIBUTES
from ._graph import SPARSE_OUTPUTS
from ._sparse_sequences import sparse_sequences
from ._variables import dims_text

__all__ = ["HandedArrayView", "HandedShape", "HandedValue", "NDArrayView", "Value", "arrays_of",
           "asarray", "asvalue", "output_value", "root_gradient"]


def _is_scipy_sparse(value) -> bool:
    return hasattr(value, "toarray") and hasattr(value, "nnz")


def _dtype_of(data: Any):
    """The type an NDArrayView or Value keeps ``data`` in: a NumPy array's own (float64
    stays float64, as CNTK's), float32 for Python numbers and lists."""
    if isinstance(data, np.ndarray) or np.asarray(data).dtype != np.float64:
        return None
    return np.float32


class NDArrayView:
    """A dense array (CNTK's ``NDArrayView``).

    Example:
        >>> v = NDArrayView.from_dense(np.ones((2, 3), np.float32))
        >>> v.shape, float(v.asarray().sum()), v.is_sparse
        ((2, 3), 6.0, False)
    """

    def __init__(self, data: Any, device=None):
        self._data = np.array(data, dtype=_dtype_of(data))

    @staticmethod
    def from_dense(np_array, device=None, read_only: bool = False, borrow: bool = False):
        """An NDArrayView holding a copy of ``np_array``."""
        return NDArrayView(np_array, device)

    @staticmethod
    def from_data(data, device=None, read_only: bool = False, borrow: bool = False):
        """An NDArrayView of dense ``data``."""
        return NDArrayView(data, device)

    @property
    def shape(self) -> tuple:
        return tuple(self._data.shape)

    @property
    def dtype(self):
        return self._data.dtype.type

    @property
    def is_sparse(self) -> bool:
        return False

    def asarray(self) -> np.ndarray:
        """A copy as a NumPy array."""
        return self._data.copy()

    to_ndarray = asarray

    def slice_view(self, start_offset, extent, read_only: bool = True) -> "NDArrayView":
        """The block from ``start_offset`` (one offset per axis) of ``extent`` (its shape:
        for the last ``len(extent)`` axes, the axes before it taken 1 long), sharing this
        view's memory.  As CNTK 2.7's, the block must be contiguous in memory (else
        ValueError).

        Example:
            >>> nd = NDArrayView.from_dense(np.arange(6, dtype=np.float32).reshape(1, 2, 3))
            >>> nd.slice_view([0, 1, 1], [1, 2]).asarray().tolist()
            [[4.0, 5.0]]
        """
        start, ext = [int(i) for i in start_offset], [int(i) for i in extent]
        shape = tuple(self._data.shape)
        if len(start) != len(shape) or len(ext) > len(shape):
            raise ValueError(f"NDArrayView.slice_view: the offset {start} must have one entry "
                             f"per axis of the shape {shape}, the extent {ext} at most as "
                             "many")
        full = [1] * (len(shape) - len(ext)) + ext
        if any(s < 0 or e < 0 or s + e > n for s, e, n in zip(start, full, shape)):
            raise ValueError(f"NDArrayView.slice_view: the slice at {start} of extent {ext} "
                             f"does not fit in the shape {shape}")
        block = self._data[tuple(slice(s, s + e) for s, e in zip(start, full))]
        if block.size and not block.flags.c_contiguous:
            raise ValueError(f"NDArrayView.slice_view: cannot create a slice which is not "
                             f"contiguous in memory (shape {shape}, offset {start}, extent "
                             f"{ext})")
        view = NDArrayView.__new__(NDArrayView)
        view._data = block.reshape(ext)
        return view

    def __array__(self, dtype=None, copy=None):
        return self._data.copy() if dtype is None else self._data.astype(dtype)

    def __repr__(self) -> str:
        return f"NDArrayView({tuple(self._data.shape)})"


#: the NumPy types CNTK 2.7's ``Value`` keeps (its C++ side refuses any other array)
_VALUE_DTYPES = (np.int8, np.int16, np.float16, np.float32, np.float64)


def _batch_array(batch) -> np.ndarray:
    """``Value(batch)``'s data as CNTK 2.7 takes it: a NumPy array of one of
    ``_VALUE_DTYPES`` (else RuntimeError), a SciPy sparse matrix (held dense) or an
    NDArrayView; anything else (a list of lists, a list of arrays, a number, a Value) is
    NotImplementedError as CNTK's overloaded constructor refuses it."""
    if isinstance(batch, NDArrayView):
        return batch.asarray()
    if _is_scipy_sparse(batch):
        return np.asarray(batch.toarray())
    if not isinstance(batch, np.ndarray):
        raise NotImplementedError(
            f"Value(batch): batch must be a NumPy array, a SciPy sparse matrix or an "
            f"NDArrayView, not {type(batch).__name__} (CNTK 2.7: 'Wrong number or type of "
            f"arguments for overloaded function new_Value'); Value.create(variable, data) "
            f"takes lists")
    if batch.dtype.type not in _VALUE_DTYPES:
        raise RuntimeError(f"Value(batch): NumPy array of type int8, int16, float16, float32 "
                           f"or float64 expected, not {batch.dtype.name}")
    return np.array(batch)


def sequence_starts(value) -> list[bool] | None:
    """The sequence-begin flags ``Value.create`` was given for ``value`` (a list of bools),
    or None (data other than a Value of sequences, or none given): a run fed the Value
    takes them as CNTK 2.7 does.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> s = C.sequence.input_variable(2)
        >>> sequence_starts(Value.create(s, [np.ones((2, 2)), np.ones((1, 2))], [True, False]))
        [True, False]
    """
    starts = value._starts if isinstance(value, Value) else None
    return list(starts) if starts is not None else None


class Value:
    """A minibatch of data for a variable (CNTK's ``Value``): ``Value(array)`` (or
    ``batch=array``) or ``Value.create(variable, data)``; ``asarray()`` gives the array back.
    ``seq_starts`` (of ``Value.create``) is kept for :attr:`mask` and for a run fed the
    Value (its sequence-begin flags: :func:`sequence_starts`).

    Example:
        >>> Value(np.zeros((4, 3), np.float32)).shape
        (4, 3)
    """

    def __init__(self, batch, seq_starts=None, device=None):
        self._data = _batch_array(batch)
        self.lengths = None       # a batch of sequences: their lengths (the data padded)
        self._sparse = _is_scipy_sparse(batch)      # sparse data (held dense)
        self._device = device
        self._starts = None         # Value.create's seq_starts (for the mask)

    @staticmethod
    def _holding(array: np.ndarray) -> "Value":
        """A Value of an array Stadyn computed (any NumPy type, held as it is)."""
        value = Value.__new__(Value)
        Value.__init__(value, np.zeros(0, np.float32))
        value._data = array
        return value

    @staticmethod
    def _of_sequences(seqs: list):
        """A Value of a run's output for a sequence (one array per sequence, as
        ``output_value`` gives them): padded with zeros to the longest, their lengths kept, as
        CNTK 2.7's ``eval(..., as_numpy=False)`` returns it; ``seqs`` itself when its steps
        differ in shape (nothing to pad them into)."""
        arrays = [np.asarray(a) for a in seqs]
        if not arrays or any(a.ndim == 0 or a.shape[1:] != arrays[0].shape[1:] for a in arrays):
            return seqs
        lengths = [len(a) for a in arrays]
        data = np.zeros((len(arrays), max(lengths)) + arrays[0].shape[1:], arrays[0].dtype)
        for k, a in enumerate(arrays):
            data[k, :len(a)] = a
        value = Value._holding(data)
        value.lengths = lengths
        return value

    @property
    def mask(self) -> np.ndarray:
        """Which steps of each sequence hold data, as CNTK 2.7's (int8, ``(sequences,
        longest)``): 2 the first step of a sequence that starts here, 1 a step, 0 padding.
        Like CNTK's, a Value with nothing to mask (every sequence as long as the longest, each
        starting here) has no mask: AttributeError.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> s = C.sequence.input_variable(2)
            >>> Value.create(s, [np.ones((3, 2)), np.ones((1, 2))]).mask.tolist()
            [[2, 1, 1], [2, 0, 0]]
        """
        longest = self._data.shape[1] if self._data.ndim > 1 else 0
        lengths = self.lengths if self.lengths is not None else [longest] * len(self._data)
        starts = self._starts if self._starts is not None else [True] * len(lengths)
        if all(n == longest for n in lengths) and all(starts):
            raise AttributeError("'Value' object has no attribute 'mask' (CNTK 2.7's Value of "
                                 "sequences all as long as the longest, each starting in "
                                 "the minibatch, has no mask)")
        mask = np.zeros((len(lengths), longest), np.int8)
        for k, (n, start) in enumerate(zip(lengths, starts)):
            mask[k, :n] = 1
            if n:
                mask[k, 0] = 2 if start else 1
        return mask

    @property
    def device(self):
        """The device it is on: the one it was made for, else the default device (CNTK 2.7's
        ``DeviceDescriptor``, printed ``CPU``).

        Example:
            >>> Value(batch=np.zeros((2, 3), np.float32)).device
            CPU
        """
        from .device import use_default_device
        return self._device if self._device is not None else use_default_device()

    @property
    def dtype(self):
        """The NumPy type of the values (``np.float64`` for a float64 array's, as CNTK's)."""
        return self._data.dtype.type

    def as_sequences(self, variable=None) -> list:
        """One array per sequence (a plain batch: one per sample); of a sparse Value, as CNTK
        2.7 gives them, a SciPy CSR matrix per sequence, refused without ``variable``
        (:mod:`._sparse_sequences`)."""
        self._check_unpackable()
        if self.lengths is None:
            out = list(self._data)
        else:
            out = [d[:n] for d, n in zip(self._data, self.lengths)]
        return sparse_sequences(out, variable) if self.is_sparse else out

    def _check_unpackable(self) -> None:
        """Nothing: a truncated minibatch's ``MinibatchData.data`` sets its own check, which
        refuses what CNTK 2.7 cannot unpack (RuntimeError), as its ``asarray()`` does."""

    @staticmethod
    def create(var, data, seq_starts=None, device=None, read_only: bool = False):
        """A Value of ``data`` for ``var``: an array (its first axis the samples), or a list of
        sequences, as CNTK 2.7 reads it: each entry ``(steps, *var.shape)``, or one sample
        ``var.shape`` (a sequence of one step); the sequences padded with zeros to the
        longest, shape ``(N, longest, *var.shape)``, their lengths kept (for a sequence
        ``var``, or where they differ).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> s = C.sequence.input_variable(2)
            >>> v = Value.create(s, [np.ones((2, 2)), np.ones((3, 2))])
            >>> v.shape, v.lengths, [a.shape for a in v.as_sequences()]
            ((2, 3, 2), [2, 3], [(2, 2), (3, 2)])
        """
        dtype = np.dtype(getattr(var, "dtype", np.float32))
        sparse = _is_scipy_sparse(data) or (isinstance(data, list) and bool(data) and all(
            _is_scipy_sparse(d) for d in data))     # (CNTK's sparse Value, held dense)
        if not isinstance(data, list):
            value = Value(batch=np.asarray(data.toarray() if sparse else data, dtype=dtype))
            value._sparse = sparse
            return value
        rank = len(tuple(getattr(var, "shape", ()) or ()))
        seqs = [np.asarray(d.toarray() if sparse else d, dtype=dtype) for d in data]
        seqs = [a[None] if a.ndim == rank else a for a in seqs]
        steps = {a.shape[1:] for a in seqs}
        sample = tuple(getattr(var, "shape", ()) or ())
        if len(steps) > 1 and -3 in sample:     # (a free dimension: one length per minibatch)
            k = next(k for k, a in enumerate(seqs) if a.shape[1:] != seqs[0].shape[1:])
            dims = [dims_text(tuple(shape)) for shape in (np.shape(data[k]), sample)]
            raise ValueError(f"Value::Create: The shape '[{dims[0]}]' of sequence #{k} is not "
                             f"compatible with the sample shape '[{dims[1]}]'.\nValue.create: "
                             "the samples of one minibatch have one length on each free "
                             "dimension (-3)")
        if len(steps) > 1:
            raise ValueError(f"Value.create: the sequences' steps have different shapes "
                             f"{sorted(steps)}")
        lengths = [len(a) for a in seqs]
        step = steps.pop() if steps else tuple(getattr(var, "shape", ()) or ())
        batch = np.zeros((len(seqs), max(lengths, default=0)) + tuple(step), dtype)
        for k, a in enumerate(seqs):
            batch[k, :len(a)] = a
        value = Value(batch=batch)
        value._sparse = sparse
        if len(getattr(var, "dynamic_axes", ()) or ()) > 1 or len(set(lengths)) > 1:
            value.lengths = lengths
        if seq_starts is not None and value.lengths is not None:
            value._starts = [bool(b) for b in seq_starts]
        return value

    #: the index that stands for a row of zeros in :meth:`one_hot` (CNTK 2.7's value)
    ONE_HOT_SKIP = 2 ** 32 - 1

    @staticmethod
    def one_hot(batch, num_classes, dtype=None, device=None):
        """A batch of sequences of class indices (a list of lists, of any lengths) as one-hot
        rows: shape ``(sequences, longest, num_classes)``, each sequence's ``lengths`` kept, so
        that it feeds a sequence input (or, sequences of one step, a plain input) as CNTK's.
        ``Value.ONE_HOT_SKIP`` in place of an index gives a row of zeros; ``num_classes`` may
        be a sample shape ``(k, n)``: each step takes ``k`` indices.

        Example:
            >>> v = Value.one_hot([[1, 2], [0]], 3)
            >>> v.shape, v.lengths, [a[:n].argmax(1).tolist() for a, n in zip(v.asarray(),
            ...                                                              v.lengths)]
            ((2, 2, 3), [2, 1], [[1, 2], [0]])
            >>> Value.one_hot([[Value.ONE_HOT_SKIP, 1]], 2).asarray().tolist()
            [[[0.0, 0.0], [0.0, 1.0]]]
        """
        sample = tuple(int(d) for d in num_classes) if isinstance(num_classes, (tuple, list)) \
            else (int(num_classes),)
        per_step = int(np.prod(sample[:-1], dtype=np.int64))
        eye = np.concatenate([np.eye(sample[-1], dtype=dtype or np.float32),
                              np.zeros((1, sample[-1]), dtype=dtype or np.float32)])
        seqs = []
        for s in batch:
            ids = np.asarray(s, dtype=np.int64).reshape(-1)
            if len(ids) % per_step:
                raise ValueError(f"Value.one_hot: a sequence of {len(ids)} indices does not "
                                 f"fill steps of sample shape {sample}")
            bad = ids[(ids != Value.ONE_HOT_SKIP) & ((ids < 0) | (ids >= sample[-1]))]
            if bad.size and bad[0] < 0:     # (CNTK 2.7's SWIG refuses a negative index)
                raise NotImplementedError(
                    f"Value.one_hot: the index {int(bad[0])} is negative (CNTK 2.7: wrong "
                    "number or type of arguments for overloaded function "
                    "'Value_create_one_hot_float')")
            if bad.size:
                raise ValueError(f"Value::Create: one-hot index value ({int(bad[0])}) exceeds "
                                 f"vocabulary size ({sample[-1]}).")
            ids = np.where(ids == Value.ONE_HOT_SKIP, sample[-1], ids)
            seqs.append(eye[ids].reshape((-1,) + sample))
        lengths = [len(s) for s in seqs]
        data = np.zeros((len(seqs), max(lengths, default=0)) + sample, eye.dtype)
        for i, s in enumerate(seqs):
            data[i, :len(s)] = s
        value = Value(batch=data)
        value.lengths = lengths
        value._sparse = True        # (CNTK's one-hot Value is sparse)
        return value

    @property
    def shape(self) -> tuple:
        return tuple(self._data.shape)

    @property
    def data(self) -> NDArrayView:
        return NDArrayView(self._data)

    @property
    def is_sparse(self) -> bool:
        """Whether it holds a sparse stream's data (a reader's; Stadyn holds it dense)."""
        return self._sparse

    def asarray(self) -> np.ndarray:
        self._check_unpackable()
        return self._data.copy()

    def __len__(self) -> int:
        """The number of samples (sequences) it holds: its first axis, as CNTK 2.7's
        (LightRNN's reader counts a minibatch's sequences so).

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> len(C.Value.one_hot(batch=np.arange(8).reshape(2, 4), num_classes=10))
            2
        """
        return self.shape[0]

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype)

    def __repr__(self) -> str:
        return f"Value({self.shape})"



class HandedShape:
    """The shape a :class:`HandedValue`'s ``shape()`` gives: SWIG's ``cntk_py.NDShape``, as
    CNTK 2.7's binding shows it (``cntk_py.i``'s ``%extend CNTK::NDShape``): ``dimensions()``
    (NumPy's order), ``rank()``, ``total_size()``, ``as_string()``, ``sub_shape(begin, end)``
    over CNTK's own (reversed) axes, given as a tuple; indexing in NumPy's order whose
    out-of-range index is the C++ vector's RuntimeError (so iterating it raises), no
    ``len``, and ``==`` the binding's NameError (its ``NDShape_eq`` is missing).

    Example:
        >>> s = HandedShape((2, 3))
        >>> s.dimensions(), s.rank(), s.total_size(), s.as_string(), s[-1], s.sub_shape(1)
        ((2, 3), 2, 6, '[2 x 3]', 3, (2,))
    """

    __slots__ = ("_dims",)

    def __init__(self, dims):
        self._dims = tuple(int(d) for d in dims)

    def dimensions(self) -> tuple:
        return self._dims

    def rank(self) -> int:
        return len(self._dims)

    def total_size(self) -> int:
        return int(np.prod(self._dims, dtype=np.int64))

    def is_scalar(self) -> bool:
        return not self._dims

    def is_unknown(self) -> bool:
        return False

    def has_inferred_dimension(self) -> bool:
        return False

    def has_free_dimension(self) -> bool:
        return False

    def has_unbound_dimension(self) -> bool:
        return False

    def as_string(self) -> str:
        return "[" + " x ".join(map(str, self._dims)) + "]"

    def sub_shape(self, begin_axis_id: int = 0, end_axis_id: "int | None" = None) -> tuple:
        """The axes ``[begin, end)`` counted as CNTK stores them (the last of NumPy's first),
        in NumPy's order; CNTK's ValueError for a range past the rank or reversed."""
        rank = len(self._dims)
        end = rank if end_axis_id is None else int(end_axis_id)
        begin = int(begin_axis_id)
        if end < begin or end > rank:
            raise ValueError(f"NDShape::SubShape: The specified endAxisId ({end}) must not "
                             f"exceed the rank ({rank}) of 'this' NDShape and must be >= than "
                             f"the specified beginAxisId ({begin})")
        return tuple(reversed(self._dims[::-1][begin:end]))

    def __getitem__(self, i: int) -> int:
        rank = len(self._dims)
        at = -int(i) - 1 if i < 0 else rank - 1 - int(i)      # (CNTK's index, reversed)
        if not 0 <= at < rank:
            raise RuntimeError(f"vector::_M_range_check: __n (which is {at % 2 ** 64}) >= "
                               f"this->size() (which is {rank})")
        return self._dims[rank - 1 - at]

    def __eq__(self, other):
        raise NameError("name 'NDShape_eq' is not defined (CNTK 2.7's binding cannot compare "
                        "an NDShape: compare its dimensions())")

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        return f"<cntk.cntk_py.NDShape; proxy of {self.as_string()}>"


class HandedArrayView(NDArrayView):
    """The array a :class:`HandedValue`'s ``data()`` gives: SWIG's ``cntk_py.NDArrayView``,
    whose ``shape()`` is a method giving an ``NDShape`` (:class:`HandedShape`), as CNTK 2.7's
    binding shows it (``cntk.core.NDArrayView``'s ``shape`` is a property: the tuple).

    Example:
        >>> d = HandedValue.of(np.ones((2, 3), np.float32)).data()
        >>> d.shape().dimensions(), d.shape().rank(), float(d.asarray().sum())
        ((2, 3), 2, 6.0)
    """

    def shape(self) -> HandedShape:
        return HandedShape(self._data.shape)


class HandedValue(Value):
    """The Value CNTK 2.7 hands a ``UserFunction`` made with ``as_numpy=False`` (its
    ``forward``'s arguments, its ``backward``'s root gradients): SWIG's ``cntk_py.Value``, not
    ``cntk.core.Value``, so ``shape()`` (an ``NDShape``: :class:`HandedShape`), ``device()``
    and ``data()`` are methods, and
    ``deep_clone()`` gives another of its kind holding a copy (CNTK's BinaryConvolution
    example keeps one as its state and runs a CNTK graph on it).  Fed to a Function it is a
    Value; returned from ``forward`` or ``backward``, an array.

    Example:
        >>> import numpy as np
        >>> v = HandedValue.of(np.ones((2, 3), np.float32))
        >>> v, v.shape().dimensions(), v.device(), float(v.deep_clone().asarray().sum())
        (Value([2 x 3], CPU), (2, 3), CPU, 6.0)
    """

    @staticmethod
    def of(data) -> "HandedValue":
        """``data`` (one array; a list of a sequence input's arrays, padded as CNTK pads a
        batch of sequences) as the Value CNTK 2.7 hands over."""
        value = Value._of_sequences(data) if isinstance(data, list) else Value._holding(
            np.asarray(data))
        value.__class__ = HandedValue
        return value

    def shape(self) -> HandedShape:
        """Its shape as SWIG's ``NDShape`` (:class:`HandedShape`; ``dimensions()`` the
        tuple)."""
        return HandedShape(self._data.shape)

    def device(self):
        return Value.device.fget(self)

    def data(self) -> HandedArrayView:
        """Its array as SWIG's ``NDArrayView`` (:class:`HandedArrayView`: ``shape()`` a
        method)."""
        return HandedArrayView(self._data)

    def deep_clone(self) -> "HandedValue":
        other = HandedValue.of(self._data.copy())
        other.lengths = self.lengths
        other._device = self._device
        return other

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        """As CNTK 2.7 shows one: ``Value([2 x 3], CPU)`` (the axes in NumPy's order)."""
        return f"Value([{' x '.join(map(str, self._data.shape))}], {self.device()})"


def arrays_of(value):
    """What a user function returned (an array, a Value, a list of a sequence's arrays) as
    NumPy: a Value of sequences as its sequences' arrays."""
    if isinstance(value, Value):
        return value.as_sequences() if value.lengths is not None else value.asarray()
    return value

def asarray(value, dtype=None) -> np.ndarray:
    """``value`` (a Value, an NDArrayView, anything with ``asarray``, or array-like) as a NumPy
    array (of ``dtype`` if given)."""
    if hasattr(value, "asarray"):
        value = value.asarray()
    else:
        kind = type(value)
        value = np.asarray(value)
        if value.dtype == object:
            raise ValueError(f"could not convert instance of type {kind} to an array")
    return value.astype(dtype) if dtype is not None else value


def asvalue(variable, data_array) -> Value:
    """``data_array`` as a Value for ``variable``."""
    return Value.create(variable, data_array)


def output_value(v, array: np.ndarray | None = None):
    """A value of the Stadyn Variable ``v`` as CNTK returns it (``array``, else ``v``'s own):
    an array, or for a sequence one array per sequence."""
    array = v.d if array is None else array
    lengths = v.sequence_lengths
    if lengths is None and array.ndim == 2 and (
            v in SPARSE_OUTPUTS or CNTK_ATTRIBUTES.get(v, {}).get("OutputSparse") is True):
        # (eye_like's sparse_output; a loaded file's EyeLikeOp's OutputSparse)
        try:
            from scipy import sparse        # (CNTK 2.7's own dependency; Stadyn's optional)
        except ImportError:
            return array.copy()
        return sparse.csr_matrix(array)
    if lengths is None:
        return array.copy()
    return [array[b, :int(n)].copy() for b, n in enumerate(lengths.d)]


def root_gradient(v, seed) -> np.ndarray:
    """A root gradient for the Stadyn Variable ``v``: one array per sequence (padded) for a
    sequence."""
    if v.sequence_lengths is not None and isinstance(seed, (list, tuple)):
        padded = pad_sequences(seed, v.shape[2:], np.float32)[0]
        extra = v.shape[1] - padded.shape[1]     # a value padded past its longest sequence
        return np.pad(padded, [(0, 0), (0, max(extra, 0))] + [(0, 0)] * (padded.ndim - 2))
    seed = np.asarray(seed, dtype=np.float32)
    shape = tuple(v.shape)
    if seed.shape == shape or seed.ndim <= len(shape):
        return seed
    # (CNTK 2.7 takes a batch of one-element rows for a scalar output: (N, 1) for (N,))
    if len(shape) == 1 and seed.shape == shape + (1,):
        return seed.reshape(shape)
    raise ValueError(f"backward: a root gradient of shape {seed.shape} for an output of shape "
                     f"{shape[1:]} (a batch of {shape[0] if shape else 0}): give one value of "
                     "the output's shape per sample")

"""NumpyDeserializer: samples held in NumPy arrays in memory."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .._errors import DataError
from ._deserializer import Deserializer, StreamBatch, StreamSpec, pad_sequences
from ._random import SampleRandom
from ._streams import StreamDef, iter_stream_defs

__all__ = ["NumpyDeserializer"]


def _dense(value) -> np.ndarray:
    """``value`` as an array: a SciPy sparse matrix (anything with ``toarray``) densified."""
    if hasattr(value, "toarray") and hasattr(value, "tocsr"):
        return np.asarray(value.toarray())
    return np.asarray(value)


def _typed(value):
    """``(data, type)`` of a CNTK-typed value ``(data, Sequence[Tensor[3]])`` (a type is a
    mapping with ``shape`` and ``dynamic_axes``, as ``cntk.layers.typing``'s are), else
    ``(value, None)``."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], Mapping) \
            and "dynamic_axes" in value[1] and "shape" in value[1]:
        return value
    return value, None


def _array(name: str, value) -> np.ndarray:
    """An untyped ``value`` as one (N, ...) array; ragged rows are a ValueError that says
    how to give sequences."""
    try:
        return _dense(value)
    except ValueError as exc:
        raise ValueError(f"array {name!r}: its rows have different shapes ({exc}); give "
                         f"sequences of different lengths with their type, "
                         f"{{{name!r}: ([arrays (T, ...)], Sequence[Tensor[...]])}}") from exc


def _is_sparse(value) -> bool:
    """Whether ``value`` is a SciPy sparse matrix (its stream is sparse, as in CNTK 2.7)."""
    return hasattr(value, "toarray") and hasattr(value, "tocsr")


def _stored_zeros(value) -> np.ndarray | None:
    """Where a SciPy sparse matrix stores a zero as an entry, as a bool array of its dense
    shape (None where it stores none).  CNTK 2.7 keeps such an entry in the sparse data it
    makes of the matrix, so the row-sparse gradient of a weight it multiplies has a block for
    its row, which the learners update (``StreamBatch.stored``, as a CTF file's ``3:0``)."""
    coo = value.tocoo()
    zero = np.asarray(coo.data) == 0
    if not zero.any():
        return None
    mask = np.zeros(coo.shape, dtype=bool)
    mask[coo.row[zero], coo.col[zero]] = True
    return mask


def _known_shape(shape, data) -> tuple:
    """A ``Sequence[...]`` type's sample shape; where the type leaves it unknown
    (``Sequence[tensor]``: a negative or None dimension) the first sequence's, as CNTK 2.7
    implants it."""
    shape = tuple(shape) if shape is not None else (-2,)
    if all(isinstance(d, int) and d >= 0 for d in shape):
        return shape
    first = data[0] if isinstance(data, (list, tuple)) and data else data
    return tuple(int(d) for d in getattr(first, "shape", np.shape(first))[1:])


def _sequences(name: str, data, shape: tuple) -> list[np.ndarray]:
    """The sequences of a ``Sequence[...]``-typed stream: a list of (T_i, *shape) arrays,
    each a NumPy array or a SciPy sparse matrix (densified), or an (N, T, *shape) array."""
    if hasattr(data, "toarray") and hasattr(data, "tocsr"):
        raise ValueError(f"array {name!r}: a Sequence[...] stream takes a list of sequences "
                         "(arrays or SciPy sparse matrices), not one sparse matrix")
    if isinstance(data, np.ndarray):
        data = list(data)
    if not isinstance(data, (list, tuple)):
        raise ValueError(f"array {name!r}: a Sequence[...] stream takes a list of sequences, "
                         f"got {type(data).__name__}")
    out = []
    for k, seq in enumerate(data):
        a = _dense(seq)
        if a.ndim == len(shape):          # one sample: a sequence of length 1
            a = a[None]
        if a.ndim != len(shape) + 1 or tuple(a.shape[1:]) != shape or a.shape[0] == 0:
            raise ValueError(f"array {name!r}: sequence {k} has shape {a.shape}; the type "
                             f"says (T, {', '.join(map(str, shape))}) with T >= 1")
        out.append(a)
    if out and len({a.dtype for a in out}) != 1:
        dtype = np.result_type(*out)
        out = [a.astype(dtype) for a in out]
    return out


class NumpyDeserializer(Deserializer):
    """Samples from arrays of one length N: sample i of a stream is ``array[i]``.

    Args:
        data: array name -> array (N, ...), all with the same N.
        streams: ``StreamDefs(name=StreamDef(field=array_name))``; without it each array is a
            stream of its own name.

    Arrays keep their dtype; a SciPy sparse matrix (CNTK takes ``csr_matrix`` one-hot labels
    here) is read as its dense rows, the zeros it stores as entries kept (``StreamBatch.stored``,
    as CNTK 2.7 keeps them). Arrays of length 0 are a DataError (a source would end at
    once).  A value may carry its CNTK type, ``(data, Tensor[3])`` or, for sequences of
    different lengths, ``([arrays (T_i, 3)], Sequence[Tensor[3]])`` (each sequence an array or
    a SciPy sparse matrix, read dense): such a stream gives zero-padded ``(N, T, 3)`` batches
    with each sequence's length, as CNTK 2.7's ``MinibatchSourceFromData`` does.

    Example:
        >>> des = NumpyDeserializer({'x': np.arange(6.0).reshape(3, 2), 'y': np.eye(3)})
        >>> len(des), des.read(1)['x'].tolist()
        (3, [2.0, 3.0])
    """

    path = "<arrays>"

    def __init__(self, data: Mapping[str, np.ndarray], streams: dict[str, StreamDef] | None = None):
        arrays, self._sequences = {}, {}
        self._sparse: set[str] = set()      # the arrays given as SciPy sparse matrices
        self._stored: dict[str, np.ndarray] = {}    # their stored zeros, where they have any
        for k, v in data.items():
            name = str(k)
            v, typ = _typed(v)
            if typ is not None and len(typ["dynamic_axes"]) > 1:
                shape = _known_shape(typ["shape"], v)
                if _is_sparse(v[0] if isinstance(v, (list, tuple)) and v else v):
                    self._sparse.add(name)
                seqs = _sequences(name, v, shape)
                self._sequences[name] = seqs
                # (the rows' placeholder: its length is the number of sequences)
                arrays[name] = np.zeros((len(seqs), 0) + shape,
                                        seqs[0].dtype if seqs else np.float32)
                continue
            if _is_sparse(v):
                self._sparse.add(name)
                stored = _stored_zeros(v)
                if stored is not None:
                    self._stored[name] = stored
            arrays[name] = _array(name, v)
        if not arrays:
            raise ValueError("NumpyDeserializer needs at least one array")
        for name, a in arrays.items():
            if a.ndim == 0:
                raise ValueError(f"array {name!r} is a scalar; give (N, ...) arrays")
        lengths = {name: len(a) for name, a in arrays.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"arrays have different lengths: {lengths}")
        self._seq_of = {}          # stream name -> its sequences, for Sequence-typed ones
        self._sparse_streams = set(self._sparse)
        self._stored_of: dict[str, np.ndarray] = {}   # stream name -> its stored zeros
        if streams is None:
            self._streams = dict(arrays)
            self._seq_of = dict(self._sequences)
            self._stored_of = dict(self._stored)
        else:
            self._streams = {}
            self._sparse_streams = set()
            for name, definition in iter_stream_defs(streams):
                fld = definition.field or name
                if fld in self._sparse:
                    self._sparse_streams.add(name)
                if fld not in arrays:
                    raise ValueError(f"stream {name!r}: no array named {fld!r} (have "
                                     f"{sorted(arrays)})")
                a = arrays[fld]
                if fld in self._sequences:
                    self._streams[name] = a
                    self._seq_of[name] = self._sequences[fld]
                    continue
                if definition.shape is not None and tuple(a.shape[1:]) != definition.shape:
                    a = a.reshape((len(a),) + definition.shape)
                self._streams[name] = a
                if fld in self._stored:
                    self._stored_of[name] = self._stored[fld].reshape(a.shape)
        self._length = next(iter(lengths.values()))
        if self._length == 0:
            raise DataError("no samples (the arrays have length 0)", self.path)

    def __len__(self) -> int:
        return self._length

    def stream_specs(self) -> dict[str, StreamSpec]:
        return {name: StreamSpec(tuple(a.shape[2:] if name in self._seq_of else a.shape[1:]),
                                 a.dtype, is_sparse=name in self._sparse_streams,
                                 is_sequence=name in self._seq_of)
                for name, a in self._streams.items()}

    def sequence_lengths(self) -> np.ndarray | None:
        """Samples per sequence: the longest of each sequence's streams (None without
        Sequence-typed streams)."""
        if not self._seq_of:
            return None
        return np.max([[len(a) for a in seqs] for seqs in self._seq_of.values()],
                      axis=0).astype(np.int64)

    def read_batch(self, ids: Sequence[int],
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        index = np.asarray(ids, dtype=np.int64)
        out = {}
        for name, a in self._streams.items():
            if name in self._seq_of:
                seqs = self._seq_of[name]
                out[name] = pad_sequences([seqs[i] for i in index], a.shape[2:], a.dtype)
            else:
                stored = self._stored_of.get(name)
                out[name] = StreamBatch(a[index], None, None if stored is None else stored[index])
        return out

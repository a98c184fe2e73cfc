"""NumpyDeserializer: samples held in NumPy arrays in memory."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .._errors import DataError
from ._deserializer import Deserializer, StreamBatch, StreamSpec
from ._random import SampleRandom
from ._streams import StreamDef, iter_stream_defs

__all__ = ["NumpyDeserializer"]


def _dense(value) -> np.ndarray:
    """``value`` as an array: a SciPy sparse matrix (anything with ``toarray``) densified."""
    if hasattr(value, "toarray") and hasattr(value, "tocsr"):
        return np.asarray(value.toarray())
    return np.asarray(value)


class NumpyDeserializer(Deserializer):
    """Samples from arrays of one length N: sample i of a stream is ``array[i]``.

    Args:
        data: array name -> array (N, ...), all with the same N.
        streams: ``StreamDefs(name=StreamDef(field=array_name))``; without it each array is a
            stream of its own name.

    Arrays keep their dtype; a SciPy sparse matrix (CNTK takes ``csr_matrix`` one-hot labels
    here) is read as its dense rows. Arrays of length 0 are a DataError (a source would end at
    once).

    Example:
        >>> des = NumpyDeserializer({'x': np.arange(6.0).reshape(3, 2), 'y': np.eye(3)})
        >>> len(des), des.read(1)['x'].tolist()
        (3, [2.0, 3.0])
    """

    path = "<arrays>"

    def __init__(self, data: Mapping[str, np.ndarray], streams: dict[str, StreamDef] | None = None):
        arrays = {str(k): _dense(v) for k, v in data.items()}
        if not arrays:
            raise ValueError("NumpyDeserializer needs at least one array")
        for name, a in arrays.items():
            if a.ndim == 0:
                raise ValueError(f"array {name!r} is a scalar; give (N, ...) arrays")
        lengths = {name: len(a) for name, a in arrays.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"arrays have different lengths: {lengths}")
        if streams is None:
            self._streams = dict(arrays)
        else:
            self._streams = {}
            for name, definition in iter_stream_defs(streams):
                fld = definition.field or name
                if fld not in arrays:
                    raise ValueError(f"stream {name!r}: no array named {fld!r} (have "
                                     f"{sorted(arrays)})")
                a = arrays[fld]
                if definition.shape is not None and tuple(a.shape[1:]) != definition.shape:
                    a = a.reshape((len(a),) + definition.shape)
                self._streams[name] = a
        self._length = next(iter(lengths.values()))
        if self._length == 0:
            raise DataError("no samples (the arrays have length 0)", self.path)

    def __len__(self) -> int:
        return self._length

    def stream_specs(self) -> dict[str, StreamSpec]:
        return {name: StreamSpec(tuple(a.shape[1:]), a.dtype) for name, a in self._streams.items()}

    def read_batch(self, ids: Sequence[int],
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        index = np.asarray(ids, dtype=np.int64)
        return {name: StreamBatch(a[index]) for name, a in self._streams.items()}

"""What a ``MinibatchSource`` returns: one stream's ``MinibatchData`` (the data, sample and
sequence counts, the sweep end, the sequence lengths and mask, stored zeros of a sparse stream)
and the minibatch, a dict by stream that answers an unknown key with CNTK's error.

Example:
    >>> import numpy as np
    >>> from stadyn.io._minibatch_data import MinibatchData
    >>> d = MinibatchData(np.zeros((2, 3), np.float32), 2, 2, False)
    >>> d.num_samples, d.shape
    (2, (2, 3))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._streams import StreamInformation

__all__ = ["MinibatchData", "Minibatch"]


class MinibatchData:
    """The data of one stream in one minibatch (CNTK's ``MinibatchData``).

    Attributes:
        data: NumPy array, batch first: ``(N, *shape)``; for sequence streams
            ``(N, T, *shape)`` padded with zeros (see :attr:`mask`).
        num_samples: samples in the batch (for sequences, the sum of their lengths).
        num_sequences: sequences (rows) in the batch.
        end_of_sweep: the batch holds the last sample of a sweep.
        stored: a sparse stream's zeros its samples store explicitly (a CTF file's ``3:0``),
            bool of ``data``'s shape, or None where there are none: CNTK 2.7's sparse data
            holds them as entries (a row-sparse gradient has their rows).
    """

    __slots__ = ("data", "num_samples", "num_sequences", "end_of_sweep", "lengths", "is_sparse",
                 "stored")

    def __init__(self, data: np.ndarray, num_samples: int, num_sequences: int, end_of_sweep: bool,
                 lengths: np.ndarray | None = None, is_sparse: bool = False,
                 stored: np.ndarray | None = None):
        self.data = data
        self.num_samples = int(num_samples)
        self.num_sequences = int(num_sequences)
        self.end_of_sweep = bool(end_of_sweep)
        self.lengths = lengths
        self.is_sparse = bool(is_sparse)
        self.stored = stored

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    @property
    def sweep_end(self) -> bool:  # CNTK 2.0 spelling
        return self.end_of_sweep

    @property
    def mask(self) -> np.ndarray | None:
        """(N, T) bool, True where a sequence has a sample; None for non-sequence streams."""
        if self.lengths is None:
            return None
        steps = self.data.shape[1] if self.data.ndim > 1 else 0
        return np.arange(steps)[None, :] < self.lengths[:, None]

    def asarray(self) -> np.ndarray:
        """The data as a NumPy array."""
        return self.data

    def as_sequences(self) -> list[np.ndarray]:
        """One array per sequence (unpadded); for non-sequence streams one ``(1, *shape)`` each."""
        if self.lengths is None:
            return [row[None] for row in self.data]
        return [row[:int(n)] for row, n in zip(self.data, self.lengths)]

    def __len__(self) -> int:
        return self.num_sequences

    def __array__(self, dtype=None, copy=None):
        return self.data if dtype is None else self.data.astype(dtype)

    def __repr__(self) -> str:
        return (f"MinibatchData(shape={self.shape}, num_samples={self.num_samples}, "
                f"end_of_sweep={self.end_of_sweep})")


class Minibatch(dict):
    """A minibatch: key -> MinibatchData; a stream's name also finds it."""

    def __missing__(self, key: Any) -> MinibatchData:
        if isinstance(key, str):
            for k, v in self.items():
                if isinstance(k, StreamInformation) and k.name == key:
                    return v
        if isinstance(key, StreamInformation):
            for k, v in self.items():
                if isinstance(k, str) and k == key.name:
                    return v
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        try:
            self.__missing__(key)
            return True
        except KeyError:
            return False

"""Padding a minibatch of sequences of different lengths (NumPy only; see ``_sequence.py``)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .._errors import ShapeError

__all__ = ["pad_sequences"]


def pad_sequences(sequences: Sequence[Any], sample_shape: Sequence[int] | None = None,
                  dtype: Any = np.float32) -> tuple[np.ndarray, np.ndarray]:
    """``(padded, lengths)``: sequences (arrays of shape ``(T_b, *sample)``) stacked into
    ``(B, max T_b, *sample)`` with zeros after each sequence's end.  As in CNTK, a sequence of
    the sample's own shape is one step, and where a step is one value (``sample_shape``
    ``(1,)``) a sequence may leave that axis out: ``(T_b,)`` is ``T_b`` steps.

    Example:
        >>> from stadyn.graph import pad_sequences
        >>> padded, lengths = pad_sequences([[1.0, 2.0], [3.0]])
        >>> padded.tolist(), lengths.tolist()
        ([[1.0, 2.0], [3.0, 0.0]], [2, 1])
        >>> pad_sequences([[1.0, 2.0], [3.0]], (1,))[0].tolist()
        [[[1.0], [2.0]], [[3.0], [0.0]]]
    """
    arrays = [np.asarray(s, dtype=dtype) for s in sequences]
    if not arrays:
        raise ShapeError("a minibatch of sequences needs at least one sequence")
    sample = tuple(arrays[0].shape[1:]) if sample_shape is None else tuple(sample_shape)
    for k, a in enumerate(arrays):
        if a.ndim == len(sample) and a.ndim and tuple(a.shape) == sample:
            a = a[None]
            arrays[k] = a
        elif sample == (1,) and a.ndim == 1:         # steps of one value, the axis left out
            a = a[:, None]
            arrays[k] = a
        if a.ndim == 0 or tuple(a.shape[1:]) != sample:
            raise ShapeError(f"sequence {k} has shape {tuple(a.shape)}; the sequences of this "
                             f"input have steps of shape {sample}")
    lengths = np.array([len(a) for a in arrays], dtype=np.int64)
    padded = np.zeros((len(arrays), max(1, int(lengths.max()))) + sample, dtype=dtype)
    for k, a in enumerate(arrays):
        padded[k, :len(a)] = a
    return padded, lengths

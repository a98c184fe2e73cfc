"""MinibatchSourceFromData: a MinibatchSource over NumPy arrays in memory, CNTK's
``MinibatchSourceFromData`` (moved out of ``_source.py`` unchanged)."""

from __future__ import annotations

import numbers
from typing import Any, Mapping

import numpy as np

from ._numpy_deserializer import NumpyDeserializer
from ._source import INFINITELY_REPEAT, MinibatchSource

__all__ = ["MinibatchSourceFromData"]


class _SourceFromData(MinibatchSource):
    """A source whose minibatches end at the end of a sweep, as CNTK's
    ``MinibatchSourceFromData`` does (5 samples in minibatches of 3: 3, 2, 3, 2, ...).
    Partitions share out each minibatch of the whole stream, as that Python source slices
    its arrays (``begin + rank :: W``), not as CNTK's readers walk a partition's own
    sequences."""

    _cntk_partitions = False

    def next_minibatch(self, minibatch_size_in_samples: int, input_map=None, device=None,
                       num_data_partitions=None, partition_index=None) -> dict:
        n = minibatch_size_in_samples
        if self._lengths is None and isinstance(n, numbers.Integral) and n >= 1 \
                and self._sweep_length:
            n = min(int(n), self._sweep_length - self._position % self._sweep_length)
        elif isinstance(n, numbers.Integral) and n >= 1 and self._sweep_length:
            # sequences (positions count them): the samples left in this sweep
            rest = np.arange(self._position, self._position + self._sweep_length
                             - self._position % self._sweep_length)
            self._refuse_longer_sequence(int(n), rest[0])
            n = min(int(n), int(self._lengths[self._sample_ids(rest)].sum()))
        return super().next_minibatch(n, input_map, device, num_data_partitions,
                                      partition_index)


    def _refuse_longer_sequence(self, n: int, position: int) -> None:
        """CNTK 2.7's ``MinibatchSourceFromData`` takes whole sequences and makes a minibatch
        of none when the next sequence is longer than the minibatch size (or than the samples
        ``max_samples`` leaves): its ValueError, from ``Value.create`` of no sequences.  The
        source stays where it was, so a larger minibatch reads that sequence."""
        if self._exhausted(self._position, self._samples):
            return
        index = int(self._sample_ids(np.array([position]))[0])
        length = int(self._lengths[index])
        left = (self._max_samples - self._samples if self._max_samples != INFINITELY_REPEAT
                else None)
        if length <= n and (left is None or length <= left):
            return
        limit = (f"the minibatch size {n}" if length > n
                 else f"the {left} samples max_samples={self._max_samples} leaves")
        raise ValueError(
            f"Value::Create:: The number of sequences must be > 0 (MinibatchSourceFromData: "
            f"sequence {index} has {length} samples, more than {limit}, and CNTK 2.7 makes "
            "a minibatch of whole sequences only: ask for at least the longest sequence's "
            "length)")


def MinibatchSourceFromData(data_streams: Mapping[str, np.ndarray],
                            max_samples: int = INFINITELY_REPEAT, **kwargs: Any) -> MinibatchSource:
    """A source over NumPy arrays in memory, in order (CNTK's ``MinibatchSourceFromData``); a
    minibatch ends at the end of a sweep.

    Example:
        >>> src = MinibatchSourceFromData({'x': np.eye(5, dtype=np.float32)}, max_samples=8)
        >>> [src.next_minibatch(3)['x'].shape[0] for _ in range(3)]
        [3, 2, 3]
    """
    kwargs.setdefault("randomize", False)
    return _SourceFromData(NumpyDeserializer(data_streams), max_samples=max_samples, **kwargs)

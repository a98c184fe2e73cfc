"""MinibatchSourceFromData: a MinibatchSource over NumPy arrays in memory, CNTK's
``MinibatchSourceFromData`` (moved out of ``_source.py`` unchanged)."""

from __future__ import annotations

import numbers
from typing import Any, Mapping

import numpy as np

from ._deserializer import StreamBatch
from ._numpy_deserializer import NumpyDeserializer
from ._source import INFINITELY_REPEAT, MinibatchSource

__all__ = ["MinibatchSourceFromData"]


class _SourceFromData(MinibatchSource):
    """A source whose minibatches end at the end of a sweep, as CNTK's
    ``MinibatchSourceFromData`` does (5 samples in minibatches of 3: 3, 2, 3, 2, ...).
    Partitions share out each minibatch of the whole stream (partition r of W: its positions
    ``p % W == r``), not as CNTK's readers walk a partition's own sequences; the compat
    source reads CNTK 2.7's slices instead (:meth:`_worker_slice`)."""

    _cntk_partitions = False
    #: partition r of W reads CNTK 2.7's Python source's slice of each minibatch (set by
    #: ``compat.cntk``'s ``MinibatchSourceFromData``): see :meth:`_worker_slice`
    _cntk_worker_slices = False

    def next_minibatch(self, minibatch_size_in_samples: int, input_map=None, device=None,
                       num_data_partitions=None, partition_index=None) -> dict:
        n = self._sweep_limited(minibatch_size_in_samples)
        if self._cntk_worker_slices and (num_data_partitions or 1) > 1:
            count, index = self._check_partition(num_data_partitions, partition_index or 0)
            return self._worker_slice(n, count, index, input_map)
        return super().next_minibatch(n, input_map, device, num_data_partitions,
                                      partition_index)

    def _sweep_limited(self, minibatch_size_in_samples):
        """The minibatch size, cut at the end of the sweep."""
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
        return n

    def _worker_slice(self, n: int, count: int, index: int, input_map) -> dict:
        """Worker ``index`` of ``count``: CNTK 2.7's ``MinibatchSourceFromData`` (a Python
        source, cntk/io/__init__.py) plans the minibatch as one worker would, from ``begin``
        to ``end``, and gives each worker the rows ``begin + index``, ``begin + index +
        count``, ... before ``end + index`` (so a worker's last row may be the next
        minibatch's first, and a worker may get none), cut at the end of the arrays; the
        counts and the end of the sweep are the whole minibatch's, and every worker moves on
        to ``end``."""
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            return super().next_minibatch(n)            # (its error)
        targets = self._resolve_input_map(input_map)
        begin = self._position
        end, taken = self._plan(begin, self._samples, int(n))
        if end == begin:
            return {}
        stop = min(end + index, (begin // self._sweep_length + 1) * self._sweep_length)
        rows = self._composite.materialize(*self._job(np.arange(begin, stop)), self._seed)
        whole = {s: b.take(0, end - begin) for s, b in rows.items()}
        mine = np.arange(index, stop - begin, count)
        if not len(mine) and self._lengths is not None:
            raise ValueError(
                f"Value::Create:: The number of sequences must be > 0 (MinibatchSourceFromData: "
                f"worker {index} of {count} has no sequence of the minibatch of positions "
                f"{begin % self._sweep_length}..{(end - 1) % self._sweep_length}, and CNTK 2.7 "
                "makes no Value of none)")
        result = self._deliver({s: _rows(b, mine) for s, b in rows.items()}, end, taken, targets)
        for key, info in targets:
            result[key].num_samples = whole[info.name].num_samples
            result[key].num_sequences = whole[info.name].rows
        return result


    def _deliver(self, batch, end: int, taken: int, targets) -> dict:
        """A minibatch that reaches ``max_samples`` ends the sweep, as CNTK 2.7's source says."""
        result = super()._deliver(batch, end, taken, targets)
        if self._max_samples != INFINITELY_REPEAT and self._samples >= self._max_samples:
            for data in result.values():
                data.end_of_sweep = True
        return result

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


def _rows(batch: StreamBatch, rows: np.ndarray) -> StreamBatch:
    if batch.lengths is None:
        return StreamBatch(batch.data[rows], None,
                           None if batch.stored is None else batch.stored[rows])
    lengths = batch.lengths[rows]
    return StreamBatch(batch.data[rows][:, :int(lengths.max(initial=0))], lengths)


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

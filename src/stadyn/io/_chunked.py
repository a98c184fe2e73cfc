"""ChunkedDeserializer: samples a subclass hands over a chunk at a time (CNTK's
``UserDeserializer`` model), read on demand and kept in a small cache of chunks."""

from __future__ import annotations

import abc
import collections
from typing import Any, Sequence

import numpy as np

from .._errors import DataError
from ._deserializer import Deserializer, StreamBatch, StreamSpec, pad_sequences
from ._random import SampleRandom

__all__ = ["ChunkedDeserializer"]


def _is_csr(value: Any) -> bool:
    return hasattr(value, "toarray") and hasattr(value, "tocsr")


class ChunkedDeserializer(Deserializer):
    """A deserializer whose data comes in chunks: a subclass says what its streams are
    (:meth:`declared_streams`), how many chunks it has (:meth:`num_chunks`) and gives one chunk
    on request (:meth:`get_chunk`).

    A chunk is a dict stream name -> data, every declared stream present, all with the same
    number of sequences:

    * an array ``(N, *shape)`` (or a SciPy ``csr_matrix`` of N rows): N samples, each a
      sequence of one step;
    * a list of N arrays ``(T_i, *shape)`` (or ``csr_matrix`` of ``T_i`` rows): N sequences.

    The data's dtype and the shape of its rows are the stream's (no silent conversion). A
    stream given as a list in any chunk is a sequence stream. A source needs the number of
    samples of a sweep before its first minibatch, so the chunks are scanned once when it is
    made: every chunk is read to count its sequences (CNTK 2.7 reads them as it goes). Later a
    chunk is read again only when a minibatch needs one that is not among the last
    :attr:`chunks_in_memory` read (they all stay in memory below that number). Randomized, a
    source reads such a deserializer as CNTK 2.7 does (its chunks shuffled, then taken in
    windows of ``randomization_window_in_chunks`` chunks whose samples are shuffled), so with
    a window no larger than :attr:`chunks_in_memory` each chunk is read once per sweep.

    Example:
        >>> class Squares(ChunkedDeserializer):
        ...     def declared_streams(self):
        ...         return {'x': StreamSpec((1,), np.dtype(np.float32))}
        ...     def num_chunks(self):
        ...         return 2
        ...     def get_chunk(self, chunk_id):
        ...         k = np.arange(3 * chunk_id, 3 * chunk_id + 3, dtype=np.float32)
        ...         return {'x': (k * k)[:, None]}
        >>> d = Squares()
        >>> len(d), d.read(4)['x'].tolist()
        (6, [16.0])
    """

    #: how many chunks are kept in memory (CNTK's default randomization window, in chunks)
    chunks_in_memory: int = 128

    @abc.abstractmethod
    def declared_streams(self) -> dict[str, StreamSpec]:
        """Stream name -> shape, dtype and sparseness (``is_sequence`` is found from the
        chunks)."""

    @abc.abstractmethod
    def num_chunks(self) -> int:
        """The number of chunks (at least one)."""

    @abc.abstractmethod
    def get_chunk(self, chunk_id: int) -> dict:
        """Chunk ``chunk_id`` (``0 <= chunk_id < num_chunks()``) as described above."""

    def size_stream(self) -> str | None:
        """The stream whose steps a minibatch's size counts (CNTK's ``defines_mb_size``);
        ``None`` (this default): each sequence counts its longest stream."""
        return None

    @property
    def path(self) -> str:  # type: ignore[override]
        return f"<{type(self).__name__}>"

    # -- the scan

    def _index(self) -> dict:
        index = vars(self).get("_chunk_index")
        if index is None:
            index = self._scan()
            self._chunk_index = index
        return index

    def _scan(self) -> dict:
        declared = dict(self.declared_streams())
        if not declared:
            raise ValueError(f"{type(self).__name__} must declare at least one stream")
        total = int(self.num_chunks())
        if total < 1:
            raise ValueError(f"{type(self).__name__} must provide at least one chunk (num_chunks"
                             f"() returned {total})")
        sizing = self.size_stream()
        if sizing is not None and sizing not in declared:
            raise ValueError(f"{type(self).__name__}: the minibatch size is to count stream "
                             f"{sizing!r}, which is not one of {sorted(declared)}")
        index = {"declared": declared, "counts": [], "lengths": [], "sequence": set()}
        for chunk_id in range(total):
            chunk = self._chunk(chunk_id, index)
            counts = {len(v) if isinstance(v, list) else v.shape[0] for v in chunk.values()}
            index["counts"].append(counts.pop())
            lengths = {name: np.array([s.shape[0] for s in v], np.int64) if isinstance(v, list)
                       else np.ones(v.shape[0], np.int64) for name, v in chunk.items()}
            index["lengths"].append(lengths[sizing] if sizing is not None else
                                    np.max(np.stack(list(lengths.values())), axis=0))
            index["sequence"].update(n for n, v in chunk.items() if isinstance(v, list))
        index["starts"] = np.concatenate([[0], np.cumsum(index["counts"])]).astype(np.int64)
        index["lengths"] = np.concatenate(index["lengths"])
        return index

    # -- reading and checking one chunk

    def _cache(self) -> collections.OrderedDict:
        cache = vars(self).get("_chunk_cache")
        if cache is None:
            cache = self._chunk_cache = collections.OrderedDict()
        return cache

    def _chunk(self, chunk_id: int, index: dict) -> dict:
        cache = self._cache()
        chunk = cache.get(chunk_id)
        if chunk is not None:
            cache.move_to_end(chunk_id)
            return chunk
        chunk = self._checked(chunk_id, self.get_chunk(chunk_id), index["declared"])
        cache[chunk_id] = chunk
        while len(cache) > max(1, int(self.chunks_in_memory)):
            cache.popitem(last=False)
        return chunk

    def _checked(self, chunk_id: int, chunk: Any, declared: dict[str, StreamSpec]) -> dict:
        where = f"chunk {chunk_id}"
        if not isinstance(chunk, dict):
            raise DataError(f"{where} is a {type(chunk).__name__}; get_chunk returns a dict of "
                            f"stream name -> array, csr_matrix or list of those", self.path)
        unknown = sorted(set(map(str, chunk)) - set(declared))
        if unknown:
            raise DataError(f"{where} has data for {unknown}, which are not streams (the streams "
                            f"are {sorted(declared)})", self.path)
        missing = sorted(set(declared) - set(map(str, chunk)))
        if missing:
            raise DataError(f"{where} has no data for stream(s) {missing}", self.path)
        out = {}
        for name, spec in declared.items():
            value = chunk[name]
            if isinstance(value, (list, tuple)):
                out[name] = [self._rows(v, spec, f"{where}, stream {name!r}, sequence {k}")
                             for k, v in enumerate(value)]
            else:
                out[name] = self._rows(value, spec, f"{where}, stream {name!r}")
        counts = {name: len(v) if isinstance(v, list) else v.shape[0] for name, v in out.items()}
        if len(set(counts.values())) != 1:
            raise DataError(f"{where}: the streams have different numbers of sequences "
                            f"{counts}; every stream needs one per sequence", self.path)
        if not next(iter(counts.values())):
            raise DataError(f"{where} has no sequences", self.path)
        return out

    def _rows(self, value: Any, spec: StreamSpec, where: str) -> np.ndarray:
        """``value`` as (rows, *shape) of the stream's dtype, or a DataError saying why not."""
        if _is_csr(value):
            if not spec.is_sparse:
                raise DataError(f"{where}: a sparse matrix for a dense stream", self.path)
            value = value.toarray()
        if not isinstance(value, np.ndarray):
            raise DataError(f"{where}: a {type(value).__name__}; give a NumPy array, a "
                            f"csr_matrix or a list of those", self.path)
        if value.dtype != spec.dtype:
            raise DataError(f"{where}: data of dtype {value.dtype}, the stream is declared "
                            f"{np.dtype(spec.dtype).name}", self.path)
        if value.ndim < 1 or tuple(value.shape[1:]) != tuple(spec.shape):
            raise DataError(f"{where}: an array of shape {value.shape}; give (rows, "
                            f"{', '.join(map(str, spec.shape))}), a row per step", self.path)
        return value

    # -- the Deserializer interface

    def stream_specs(self) -> dict[str, StreamSpec]:
        index = self._index()
        return {name: StreamSpec(tuple(spec.shape), np.dtype(spec.dtype), spec.is_sparse,
                                 name in index["sequence"])
                for name, spec in index["declared"].items()}

    def __len__(self) -> int:
        return int(self._index()["starts"][-1])

    #: CNTK 2.7 reads a Python deserializer with its local-timeline randomizer
    randomizer = "tumbling"

    def chunk_sizes(self) -> np.ndarray:
        return np.diff(self._index()["starts"]).astype(np.int64)

    def sequence_lengths(self) -> np.ndarray | None:
        index = self._index()
        return index["lengths"] if index["sequence"] else None

    def read_batch(self, ids: Sequence[int],
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        index = self._index()
        ids = np.asarray(ids, dtype=np.int64)
        chunk_of = np.searchsorted(index["starts"], ids, side="right") - 1
        rows = ids - index["starts"][chunk_of]
        declared, sequence = index["declared"], index["sequence"]
        dense = {name: np.empty((len(ids),) + tuple(spec.shape), spec.dtype)
                 for name, spec in declared.items() if name not in sequence}
        steps: dict[str, list] = {name: [None] * len(ids) for name in sequence}
        for chunk_id in np.unique(chunk_of).tolist():
            chunk = self._chunk(chunk_id, index)
            sel = np.flatnonzero(chunk_of == chunk_id)
            for name, data in chunk.items():
                if name in dense:
                    dense[name][sel] = data[rows[sel]]
                    continue
                for k, row in zip(sel.tolist(), rows[sel].tolist()):
                    steps[name][k] = data[row] if isinstance(data, list) else \
                        data[row:row + 1]
        out = {name: StreamBatch(a) for name, a in dense.items()}
        for name in steps:
            spec = declared[name]
            out[name] = pad_sequences(steps[name], tuple(spec.shape), np.dtype(spec.dtype))
        return {name: out[name] for name in declared}

    def close(self) -> None:
        """Forget the chunks held in memory (they are read again when needed)."""
        self._cache().clear()

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state.pop("_chunk_cache", None)
        return state

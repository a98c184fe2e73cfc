"""Several deserializers joined by sequence key: what a source reads and ships to its workers."""

from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np

from .._errors import DataError
from ._deserializer import INVALID_ROWS, Deserializer, StreamBatch, StreamSpec
from ._random import SampleRandom

__all__ = ["Composite", "DuplicateStreamError"]


class _Rngs(Sequence):
    """Per-sample generators, made only for the samples a deserializer asks about."""

    def __init__(self, seed: int, sweeps: np.ndarray, positions: np.ndarray, stream: int):
        self._seed, self._sweeps, self._positions, self._stream = seed, sweeps, positions, stream

    def __len__(self) -> int:
        return len(self._sweeps)

    def __getitem__(self, k):  # type: ignore[override]
        return SampleRandom(self._seed, int(self._sweeps[k]), int(self._positions[k]),
                            self._stream)


def _broadcast(batch: StreamBatch, lengths: np.ndarray) -> StreamBatch:
    """Each sequence's first step repeated ``lengths[k]`` times (zero-padded to the longest)."""
    first = batch.data[:, 0] if batch.lengths is not None else batch.data
    steps = int(lengths.max(initial=0))
    data = np.repeat(first[:, None], steps, axis=1)
    data[np.arange(steps)[None, :] >= lengths[:, None]] = 0
    return StreamBatch(data, lengths.astype(np.int64))


class DuplicateStreamError(RuntimeError, ValueError):
    """Two deserializers of one source define a stream of the same name: CNTK 2.7's
    RuntimeError (a ValueError too, as Stadyn refused it before)."""


class Composite:
    """The first deserializer's samples, each joined with the same key's sample of the others.

    Deserializers of equal length whose keys agree are joined by position. Streams must have
    distinct names. A deserializer other than the first whose ``broadcast`` attribute is true
    delivers one step per sequence, repeated to the length of the joined sequence (CNTK's
    ``expandToUtterance``: i-vectors beside speech features).
    """

    def __init__(self, deserializers: Sequence[Deserializer], leave_out_invalid: bool = False):
        # (one deserializer, or anything else that cannot be iterated: refused below by name)
        if isinstance(deserializers, Deserializer) or not hasattr(deserializers, "__iter__"):
            deserializers = [deserializers]
        self.deserializers = list(deserializers)
        if not self.deserializers:
            raise ValueError("a minibatch source needs at least one deserializer")
        for d in self.deserializers:
            if not isinstance(d, Deserializer):
                raise TypeError(f"not a deserializer: {d!r}")
        if leave_out_invalid:   # (copies: the user's deserializers keep raising)
            self.deserializers = [d.leaving_out_invalid() for d in self.deserializers]
        self.specs: dict[str, StreamSpec] = {}
        for d in self.deserializers:
            for name, spec in d.stream_specs().items():
                if name in self.specs:
                    raise DuplicateStreamError(
                        f"two deserializers define a stream named {name!r} (CNTK 2.7: 'Two "
                        f"streams with the same name '{name}' have been found. Please rename "
                        f"the duplicate.')")
                self.specs[name] = spec
        primary = self.deserializers[0]
        if getattr(primary, "broadcast", False):
            raise ValueError("the first deserializer cannot be broadcast: its sequences give the "
                             "length the others are broadcast to")
        self._broadcast = [bool(getattr(d, "broadcast", False)) for d in self.deserializers]
        self._length = len(primary)
        if self._length == 0:       # a source over it would end at once, and training with it
            raise DataError("no samples", getattr(primary, "path", None) or repr(primary))
        self.maps: list[np.ndarray | None] = [None]
        self._primary_chunks: np.ndarray | None = None
        primary_keys = None
        wheres: list[dict[str, int] | None] = []
        for d in self.deserializers[1:]:
            keys = d.keys()
            if primary_keys is None:
                primary_keys = [str(k) for k in (primary.keys() or range(self._length))]
            other = [str(k) for k in (keys or range(len(d)))]
            # (a key given twice joins its first sequence, as CNTK 2.7's key lookup does)
            wheres.append(None if other == primary_keys
                          else {k: i for i, k in reversed(list(enumerate(other)))})
        if primary_keys is not None:
            self._join(primary, primary_keys, wheres)
        self.lengths = self._sequence_lengths()

    def _join(self, primary: Deserializer, primary_keys: list[str],
              wheres: list[dict[str, int] | None]) -> None:
        """Keep the first deserializer's sequences every other one has, as CNTK 2.7's Bundler
        does (an utterance without an MLF label is skipped), with a warning naming them."""
        keep = np.ones(len(primary_keys), dtype=bool)
        for d, where in zip(self.deserializers[1:], wheres):
            if where is None:
                continue
            missing = [i for i, k in enumerate(primary_keys) if k not in where]
            if missing:
                keep[missing] = False
                shown = ", ".join(repr(primary_keys[i]) for i in missing[:5])
                warnings.warn(f"{getattr(d, 'path', None) or d!r}: no sequence for "
                              f"{len(missing)} of the {len(primary_keys)} sequences of "
                              f"{getattr(primary, 'path', None) or primary!r} ({shown}"
                              f"{', ...' if len(missing) > 5 else ''}); they are skipped, as "
                              f"CNTK skips an utterance without labels", stacklevel=4)
        if not keep.any():
            raise DataError("no sequence has a key that every deserializer has (CNTK: 'Keys "
                            "of logical sequences do not match')",
                            getattr(primary, "path", None) or repr(primary))
        kept = np.flatnonzero(keep)
        if not keep.all():
            self.maps[0] = kept
            self._length = len(kept)
            sizes = primary.chunk_sizes()
            if sizes is not None:   # a chunk left without sequences is dropped, as in CNTK
                chunk_of = np.repeat(np.arange(len(sizes)), np.asarray(sizes, dtype=np.int64))
                counts = np.bincount(chunk_of[kept], minlength=len(sizes))
                self._primary_chunks = counts[counts > 0]
        for where in wheres:
            self.maps.append(None if where is None and self.maps[0] is None
                             else kept if where is None
                             else np.array([where[primary_keys[i]] for i in kept],
                                           dtype=np.int64))

        self.lengths = self._sequence_lengths()

    def _sequence_lengths(self) -> np.ndarray | None:
        total = None
        for d, index, broadcast in zip(self.deserializers, self.maps, self._broadcast):
            lengths = d.sequence_lengths()
            if lengths is None or broadcast:
                continue
            lengths = np.asarray(lengths, dtype=np.int64)
            if index is not None:
                lengths = lengths[index]
            total = lengths if total is None else np.maximum(total, lengths)
        return total

    def __len__(self) -> int:
        return self._length

    @property
    def counted_lengths(self) -> np.ndarray | None:
        """The samples CNTK 2.7 counts for each sequence of a lone deserializer where they are
        not what it delivers (:meth:`Deserializer.counted_lengths`), for data of one sample a
        sequence; else None.  Its sweeps then end by these counts (the deserializer's chunks
        count one sample a sequence).  A join of several is :attr:`joined_counts`."""
        counted = self.deserializers[0].counted_lengths()
        if counted is None or self.lengths is not None or len(self.deserializers) > 1:
            return None
        return np.asarray(counted, dtype=np.int64)

    @property
    def joined_counts(self) -> np.ndarray | None:
        """The samples CNTK 2.7 counts for each sequence of a join of several deserializers
        where one of them counts other samples than it delivers: the most any of them counts
        (its Bundler, Bundler.cpp:94-125, takes the largest sequence info of them all and sums
        them into its chunks' samples, so a sweep ends after its last sequence); else None."""
        if len(self.deserializers) < 2 or \
                all(d.counted_lengths() is None for d in self.deserializers):
            return None
        total = np.ones(self._length, dtype=np.int64)
        for d, index, broadcast in zip(self.deserializers, self.maps, self._broadcast):
            counts = d.counted_lengths()
            if counts is None:
                counts = d.sequence_lengths()
            if counts is None or broadcast:
                continue
            counts = np.asarray(counts, dtype=np.int64)
            total = np.maximum(total, counts if index is None else counts[index])
        return total

    def keys(self) -> list[str]:
        """The key of each joined sequence, in order: the first deserializer's (its position
        where it has none), as CNTK's Bundler keys a bundle by its primary's sequence."""
        primary = self.deserializers[0]
        keys = primary.keys() or range(len(primary))
        kept = self.maps[0] if self.maps[0] is not None else range(self._length)
        return [str(keys[int(i)]) for i in kept]

    @property
    def randomizer(self) -> str:
        """How CNTK 2.7 randomizes the joined data: as it does the first deserializer's."""
        return self.deserializers[0].randomizer

    @property
    def chunked(self) -> bool:
        """Whether the first deserializer cuts its data into chunks as CNTK 2.7 would (False
        for data CNTK has no reader of, such as arrays: one chunk, no CNTK rule to follow)."""
        return self._primary_chunks is not None or \
            self.deserializers[0].chunk_sizes() is not None

    @property
    def loads_whole_chunks(self) -> bool:
        """Whether :meth:`load_chunks` reaches the first deserializer (its chunks are the
        joined data's: none was dropped for want of keys)."""
        return self._primary_chunks is None and self.deserializers[0].loads_whole_chunks

    def load_chunks(self, chunk_ids) -> None:
        """Have the first deserializer read chunks ``chunk_ids`` whole (CNTK 2.7 loads a
        randomization window's chunks before it reads from them)."""
        if self.loads_whole_chunks:
            self.deserializers[0].load_chunks(chunk_ids)

    def release_chunks(self) -> None:
        """Have every deserializer forget what loading chunks kept for sequences not read yet."""
        for d in self.deserializers:
            d.release_chunks()

    def defer_error_counts(self) -> None:
        """Have every deserializer skip malformed inputs without counting them (a worker
        process's copy: ``Deserializer.defer_error_counts``)."""
        for d in self.deserializers:
            d.defer_error_counts()

    def deferred_errors(self) -> list:
        """The malformed inputs each deserializer skipped uncounted since the last call:
        (its place, its records) of each that has some."""
        return [(k, met) for k, d in enumerate(self.deserializers)
                if (met := d.deferred_errors())]

    def count_errors(self, met: list) -> None:
        """Have each deserializer count what its copy skipped (:meth:`deferred_errors`)."""
        for k, records in met:
            self.deserializers[k].count_errors(records)

    def chunk_sizes(self) -> np.ndarray:
        """Sequences per chunk: the first deserializer's chunks (CNTK bundles the others'
        sequences into them)."""
        sizes = (self._primary_chunks if self._primary_chunks is not None
                 else self.deserializers[0].chunk_sizes())
        if sizes is None:
            return np.array([self._length], dtype=np.int64)
        sizes = np.asarray(sizes, dtype=np.int64)
        if int(sizes.sum()) != self._length or (sizes < 0).any():
            raise ValueError(f"{type(self.deserializers[0]).__name__}.chunk_sizes() gives "
                             f"{int(sizes.sum())} sequences, not its {self._length}")
        return sizes

    def materialize(self, ids: np.ndarray, sweeps: np.ndarray, positions: np.ndarray,
                    seed: int) -> dict[str, StreamBatch]:
        """Read samples ``ids``; sample k draws its randomness from
        (seed, sweeps[k], positions[k])."""
        out: dict[str, StreamBatch] = {}
        if len(ids) == 0:
            for name, spec in self.specs.items():
                shape = (0,) + ((0,) if spec.is_sequence else ()) + (spec.shape or ())
                lengths = np.zeros(0, np.int64) if spec.is_sequence else None
                out[name] = StreamBatch(np.zeros(shape, spec.dtype), lengths)
            return out
        for stream, (d, index) in enumerate(zip(self.deserializers, self.maps)):
            sub = ids if index is None else index[ids]
            batch = d.read_batch(sub, _Rngs(seed, sweeps, positions, stream))
            if INVALID_ROWS in batch:   # (rows one left out: marked for every stream)
                batch = dict(batch)
                invalid = batch.pop(INVALID_ROWS).data
                if INVALID_ROWS in out:
                    invalid = invalid | out[INVALID_ROWS].data
                out[INVALID_ROWS] = StreamBatch(invalid)
            if self._broadcast[stream]:
                batch = {name: _broadcast(b, self.lengths[ids] if self.lengths is not None
                                          else np.ones(len(ids), np.int64))
                         for name, b in batch.items()}
            out.update(batch)
        return out

    def materialize_steps(self, ids: np.ndarray, steps: np.ndarray, sweeps: np.ndarray,
                          positions: np.ndarray, seed: int) -> dict[str, StreamBatch]:
        """Step ``steps[k]`` of joined sequence ``ids[k]`` of every stream (frame mode): a
        broadcast deserializer gives its one step, one without sequences its sample."""
        out: dict[str, StreamBatch] = {}
        for stream, (d, index) in enumerate(zip(self.deserializers, self.maps)):
            sub = ids if index is None else index[ids]
            rngs = _Rngs(seed, sweeps, positions, stream)
            if d.sequence_lengths() is None:
                out.update(d.read_batch(sub, rngs))
            else:
                at = np.zeros_like(steps) if self._broadcast[stream] else steps
                out.update(d.read_steps(sub, at, rngs))
        return out

    def close(self) -> None:
        for d in self.deserializers:
            d.close()

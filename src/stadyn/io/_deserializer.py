"""The one interface every deserializer implements, and the batch arrays it returns."""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .._errors import DataError
from ._random import SampleRandom

__all__ = ["Deserializer", "StreamBatch", "StreamSpec", "stack_samples", "pad_sequences",
           "concat_batches", "INVALID_ROWS", "drop_invalid", "byte_chunks"]

#: The key under which a batch marks its rows a deserializer could not read and left out
#: (a bool ``StreamBatch``; ``ImageDeserializer.skips_undecodable``): :func:`drop_invalid`
#: removes them.  No stream can have this name (``StreamDefs`` names are identifiers).
INVALID_ROWS = "\x00invalid"


@dataclass(frozen=True)
class StreamSpec:
    """What a deserializer produces for one stream (before a source numbers the streams)."""

    shape: tuple[int, ...] | None
    dtype: np.dtype
    is_sparse: bool = False
    is_sequence: bool = False


@dataclass
class StreamBatch:
    """The rows of one stream for a list of samples.

    ``data`` is ``(N, *shape)``, or ``(N, T, *shape)`` padded with zeros for a sequence stream,
    whose ``lengths`` (N,) give each sequence's number of samples.  ``stored`` (a sparse
    stream's, where it has any; bool, ``data``'s shape) marks the zeros its samples store
    explicitly (a CTF file's ``3:0``), which CNTK 2.7 keeps as entries of its sparse data.
    """

    data: np.ndarray
    lengths: np.ndarray | None = None
    stored: np.ndarray | None = None

    @property
    def rows(self) -> int:
        return int(self.data.shape[0])

    @property
    def num_samples(self) -> int:
        return self.rows if self.lengths is None else int(self.lengths.sum())

    def take(self, start: int, stop: int) -> "StreamBatch":
        lengths = None if self.lengths is None else self.lengths[start:stop]
        data = self.data[start:stop]
        stored = None if self.stored is None else self.stored[start:stop]
        if lengths is not None and data.shape[0]:
            data = data[:, :int(lengths.max(initial=0))]
            stored = None if stored is None else stored[:, :data.shape[1]]
        return StreamBatch(data, lengths, stored)

    def rows_at(self, order: np.ndarray) -> "StreamBatch":
        """The rows in ``order`` (indices).

        Example:
            >>> StreamBatch(np.arange(3.0)[:, None]).rows_at(np.array([2, 0])).data.tolist()
            [[2.0], [0.0]]
        """
        return StreamBatch(self.data[order], None if self.lengths is None else
                           self.lengths[order], None if self.stored is None else
                           self.stored[order])


class Deserializer(abc.ABC):
    """A list of samples; each sample has one array per named stream.

    Subclasses set ``self.path`` (for messages) and implement :meth:`stream_specs`,
    :meth:`__len__` and :meth:`read_batch`. A deserializer is pickled into worker processes, so
    open files and archives are kept in attributes that start with ``_h_`` and are reopened
    lazily in each process.
    """

    path: str = "<memory>"

    @abc.abstractmethod
    def stream_specs(self) -> dict[str, StreamSpec]:
        """Stream name -> what that stream delivers."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """Number of sequences (samples) in one sweep."""

    @abc.abstractmethod
    def read_batch(self, ids: Sequence[int],
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        """Read (and transform) samples ``ids``; ``rngs[k]`` drives the augmentation of
        ``ids[k]``."""

    def keys(self) -> Sequence[Any] | None:
        """Sequence keys used to join deserializers (``None``: the position is the key)."""
        return None

    def sequence_lengths(self) -> np.ndarray | None:
        """Samples per sequence (``None`` when every sequence is one sample)."""
        return None

    def counted_lengths(self) -> np.ndarray | None:
        """Samples CNTK 2.7's randomizers count for each sequence where that is not what the
        sequence delivers (``None``: what it delivers), while its sweep holds one sample a
        sequence: a base64 image sequence of several lines (``_base64_image.py``).  A source
        fills its minibatches and ends its sweeps by these counts."""
        return None

    #: Whether frame mode cuts this deserializer's sequences into frames, as CNTK 2.7's HTK
    #: feature and MLF deserializers do (their ``frameMode``).  Every other CNTK reader gives
    #: its sequences whole there, and CNTK's frame packer refuses a minibatch holding one of
    #: more than one sample: "Detected a non-frame sequence of size 2 in frame mode."
    #: (FramePacker.cpp:20-25, a RuntimeError); see ``_frame_mode.py``.
    frames_in_frame_mode: bool = False

    def sequence_line(self, i: int) -> int | None:
        """The line of its file where sequence ``i`` starts (1-based), where that is known,
        for messages."""
        return None

    #: Which of CNTK 2.7's randomizers reads this deserializer, ``"block"`` (the one of its
    #: built-in deserializers) or ``"tumbling"`` (the local-timeline randomizer it uses for a
    #: Python ``UserDeserializer``); see ``_cntk_order.py``.
    randomizer: str = "block"

    def chunk_sizes(self) -> np.ndarray | None:
        """Sequences per chunk, the chunks in file order, as CNTK 2.7 cuts this data into the
        chunks its randomizer shuffles (``None``: the whole sweep is one chunk)."""
        return None

    #: Whether a :class:`MinibatchSource` made over this deserializer reads a copy of it
    #: (:meth:`copy_for_source`), as CNTK 2.7 makes the reader of one of its built-in
    #: deserializers from its configuration when the source is made: ``d[key] = value``
    #: later changes nothing under that source.  A deserializer of Python code (CNTK's
    #: ``UserDeserializer``, which CNTK calls back) is read itself.
    copied_by_sources: bool = False

    def copy_for_source(self) -> "Deserializer":
        """The deserializer a new source reads: a copy of it where :attr:`copied_by_sources`
        (no open file, none of what loading chunks kept, settings of its own), else itself."""
        if not self.copied_by_sources:
            return self
        copy = type(self).__new__(type(self))
        copy.__setstate__(self.__getstate__())
        if "_settings" in vars(copy):
            copy._settings = dict(copy._settings)
        return copy

    #: Whether this deserializer reads a chunk whole when CNTK 2.7 would load it
    #: (:meth:`load_chunks`): a randomized source then tells it the chunks of each
    #: minibatch's randomization window before reading the minibatch.
    loads_whole_chunks: bool = False

    def load_chunks(self, chunk_ids: Sequence[int]) -> None:
        """Read chunks ``chunk_ids`` (of :meth:`chunk_sizes`) whole now, as CNTK 2.7 loads
        them, so a bad sequence in them raises here (a no-op unless
        :attr:`loads_whole_chunks`)."""

    def release_chunks(self) -> None:
        """Forget what :meth:`load_chunks` kept in memory for sequences not read yet (a
        source calls it at each sweep's end and when it is closed); a no-op here."""

    def defer_error_counts(self) -> None:
        """Skip the malformed inputs a count such as CNTK's ``maxErrors`` lets be skipped
        without counting them (a worker process's copy: the source counts them,
        :meth:`count_errors`); a no-op here."""

    def deferred_errors(self) -> list:
        """The malformed inputs skipped and not counted since the last call (none here)."""
        return []

    def count_errors(self, met: list) -> None:
        """Count the malformed inputs another copy skipped (:meth:`deferred_errors`), a
        DataError past the count; a no-op here."""

    def read_steps(self, ids: Sequence[int], steps: np.ndarray,
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        """Step ``steps[k]`` of sequence ``ids[k]`` of every stream, ``(N, *shape)`` (frame
        mode). This default reads the whole sequences; a deserializer that can reach one step
        directly (HTK features, MLF labels) overrides it. A stream without that step is a
        DataError naming this deserializer's file."""
        ids = np.asarray(ids, dtype=np.int64)
        steps = np.asarray(steps, dtype=np.int64)
        unique, first, rows = np.unique(ids, return_index=True, return_inverse=True)
        batch = self.read_batch(unique, [rngs[int(k)] for k in first])
        out = {}
        for name, b in batch.items():
            if b.lengths is None:
                out[name] = StreamBatch(b.data[rows], None,
                                        None if b.stored is None else b.stored[rows])
                continue
            have = b.lengths[rows]
            short = np.flatnonzero(steps >= have)
            if short.size:
                k = int(short[0])
                raise DataError(f"stream {name!r} has {int(have[k])} step(s) in sequence "
                                f"{int(ids[k])}; frame mode reads step {int(steps[k])}",
                                self.path)
            out[name] = StreamBatch(b.data[rows, steps], None,
                                    None if b.stored is None else b.stored[rows, steps])
        return out

    def read(self, i: int, rng: SampleRandom | None = None) -> dict[str, np.ndarray]:
        """One sample as stream name -> array (no batch axis). Meant for inspection and tests."""
        if not 0 <= i < len(self):
            raise IndexError(f"sample {i} out of range 0..{len(self) - 1}")
        batch = self.read_batch([i], [rng or SampleRandom(0, 0, i)])
        out = {}
        for name, b in batch.items():
            row = b.data[0]
            out[name] = row if b.lengths is None else row[:int(b.lengths[0])]
        return out

    def leaving_out_invalid(self) -> "Deserializer":
        """This deserializer as a source that counts invalid sequences reads it
        (``MinibatchSource(max_invalid_sequences=n)``): where it can leave a sequence it cannot
        read out of its batch (marked in ``INVALID_ROWS``) rather than raise, a copy that does
        so; this one is left as it is.  The default returns ``self`` (it raises), as CNTK
        2.7's readers other than its base64 image reader do.

        Example:
            >>> from stadyn.io import NumpyDeserializer
            >>> d = NumpyDeserializer({'x': np.zeros((2, 1))})
            >>> d.leaving_out_invalid() is d
            True
        """
        return self

    def close(self) -> None:
        """Close files this process opened (they reopen lazily on the next read)."""
        self._close_handles()

    def _close_handles(self) -> None:
        """Close the open files and archives kept in ``_h_*`` attributes (:meth:`close`'s
        work, for a deserializer that closes what it opened while it was being made)."""
        for name in [k for k in vars(self) if k.startswith("_h_")]:
            handle = vars(self)[name]
            if handle is not None:
                handle.close()
                setattr(self, name, None)

    def __getstate__(self) -> dict:
        state = dict(vars(self))
        for name in [k for k in state if k.startswith("_h_")]:
            state[name] = None
        return state

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)


def stack_samples(arrays: Sequence[np.ndarray], stream: str, path: str,
                  where: Sequence[str] = ()) -> np.ndarray:
    """Stack per-sample arrays into (N, ...); samples of different shapes are a DataError."""
    if not arrays:
        raise ValueError("nothing to stack")
    first = arrays[0].shape
    for k, a in enumerate(arrays):
        if a.shape != first:
            place = f" ({where[k]})" if k < len(where) else ""
            raise DataError(
                f"stream {stream!r}: sample shapes differ in one minibatch, {first} and "
                f"{a.shape}{place}; add a scale transform so that all images have one size", path)
    return np.stack(arrays)


def pad_sequences(arrays: Sequence[np.ndarray], sample_shape: tuple[int, ...],
                  dtype: np.dtype) -> StreamBatch:
    """(T_i, *shape) arrays -> (N, max T, *shape) zero-padded plus lengths."""
    lengths = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    t_max = int(lengths.max(initial=0))
    data = np.zeros((len(arrays), t_max) + tuple(sample_shape), dtype=dtype)
    for k, a in enumerate(arrays):
        data[k, :a.shape[0]] = a
    return StreamBatch(data, lengths)


def concat_batches(pieces: Sequence[StreamBatch]) -> StreamBatch:
    """Concatenate row blocks of one stream (re-padding sequence streams to one length)."""
    if len(pieces) == 1:
        return pieces[0]
    stored = [p.stored if p.stored is not None else np.zeros(p.data.shape, bool)
              for p in pieces] if any(p.stored is not None for p in pieces) else None
    if pieces[0].lengths is None:
        return StreamBatch(np.concatenate([p.data for p in pieces]), None,
                           None if stored is None else np.concatenate(stored))
    t_max = max(p.data.shape[1] for p in pieces)
    return StreamBatch(np.concatenate(_padded([p.data for p in pieces], t_max)),
                       np.concatenate([p.lengths for p in pieces]),
                       None if stored is None else np.concatenate(_padded(stored, t_max)))


def _padded(arrays: Sequence[np.ndarray], t_max: int) -> list[np.ndarray]:
    """``(N, T, ...)`` arrays padded with zeros (False) to ``t_max`` steps."""
    out = []
    for a in arrays:
        if a.shape[1] < t_max:
            out.append(np.pad(a, [(0, 0), (0, t_max - a.shape[1])] + [(0, 0)] * (a.ndim - 2)))
        else:
            out.append(a)
    return out


def drop_invalid(batch: dict[str, StreamBatch]) -> tuple[dict[str, StreamBatch], int]:
    """``batch`` without the rows its ``INVALID_ROWS`` marks, and how many there were.

    Example:
        >>> b = {'x': StreamBatch(np.arange(3.0)[:, None]),
        ...      INVALID_ROWS: StreamBatch(np.array([False, True, False]))}
        >>> kept, dropped = drop_invalid(b)
        >>> kept['x'].data.ravel().tolist(), dropped, sorted(kept)
        ([0.0, 2.0], 1, ['x'])
    """
    if INVALID_ROWS not in batch:
        return batch, 0
    batch = dict(batch)
    invalid = np.asarray(batch.pop(INVALID_ROWS).data, dtype=bool)
    keep = np.flatnonzero(~invalid)
    out = {}
    for name, b in batch.items():
        lengths = None if b.lengths is None else b.lengths[keep]
        data = b.data[keep]
        stored = None if b.stored is None else b.stored[keep]
        if lengths is not None:
            data = data[:, :int(lengths.max(initial=0))]
            stored = None if stored is None else stored[:, :data.shape[1]]
        out[name] = StreamBatch(data, lengths, stored)
    return out, int(invalid.sum())


def byte_chunks(starts: np.ndarray, ends: np.ndarray, limit: int) -> np.ndarray:
    """Sequences per chunk as CNTK 2.7's text indexes cut a file into chunks of ``limit``
    bytes (ReaderLib/Index.cpp's ``Index::AddSequence``): sequences (bytes ``starts[k]`` to
    ``ends[k]``, in file order) are added to a chunk while the chunk's bytes, from its first
    sequence's start to its last one's end, plus the next sequence's stay within ``limit``;
    a chunk holds one sequence at least.  The text-format and base64 image readers' chunks.

    Example:
        >>> byte_chunks(np.array([0, 4, 8, 12]), np.array([4, 8, 12, 30]), 9).tolist()
        [2, 1, 1]
    """
    sizes, first, n = [], 0, len(starts)
    while first < n:
        stop = min(int(np.searchsorted(starts, int(starts[first]) + limit, side="right")) + 1, n)
        k = np.arange(first + 1, stop)
        grown = (ends[k - 1] - starts[first]) + (ends[k] - starts[k])
        over = np.flatnonzero(grown > limit)
        end = int(k[over[0]]) if over.size else stop
        sizes.append(end - first)
        first = end
    return np.asarray(sizes, dtype=np.int64)

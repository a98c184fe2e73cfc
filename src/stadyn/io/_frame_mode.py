"""Frame mode: every step of every sequence a sample of its own (CNTK's ``frame_mode``).

CNTK 2.7 cuts only its HTK feature and MLF deserializers' utterances into frames there
(their ``frameMode``, HTKDeserializer.cpp:287-310); its other readers (text, binary, images,
a Python ``UserDeserializer``) give their sequences whole, and its frame packer refuses a
minibatch holding one of more than one sample (FramePacker.cpp:20-25, a RuntimeError "Detected
a non-frame sequence of size 2 in frame mode.") when that minibatch is read.
"""

from __future__ import annotations

import numpy as np

from .._errors import DataError
from ._composite import Composite
from ._deserializer import StreamBatch, StreamSpec

__all__ = ["FrameComposite", "NonFrameSequenceError"]


class NonFrameSequenceError(RuntimeError, DataError):
    """A sequence of more than one sample read in frame mode from a deserializer that frame
    mode does not cut into frames: CNTK 2.7's RuntimeError, and a DataError naming the file
    and the line the sequence starts on, where known."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        DataError.__init__(self, message, path, line)


class FrameComposite:
    """The frames of a :class:`Composite`'s joined sequences as samples: sample ``j`` is step
    ``t`` of sequence ``i``, in order. The deserializers are joined by sequence key first, so
    frame mode costs no key per frame, and each reads only the steps asked for
    (:meth:`Deserializer.read_steps`); a stream shorter than the sequence (labels with fewer
    frames than the features) is a DataError when the missing frame is read. A composite
    without sequences is used as it is.  Where no deserializer is one that CNTK 2.7 cuts into
    frames (:attr:`Deserializer.frames_in_frame_mode`: HTK features, MLF labels), every
    sequence stays one sample, and reading one of more than one step is a
    :class:`NonFrameSequenceError`, as in CNTK.  A minibatch still counts such a sequence by
    its steps (``sample_counts``), as CNTK 2.7's randomizer does when it fills a minibatch, so
    the refusal comes with the minibatch CNTK's comes with.

    Example:
        >>> from stadyn.io import CTFDeserializer, StreamDef, StreamDefs
        >>> ctf = CTFDeserializer.from_bytes(b'0 |x 1\\n0 |x 2\\n1 |x 3\\n',
        ...                                  StreamDefs(x=StreamDef(shape=1)))
        >>> frames = FrameComposite(Composite([ctf]))    # (CNTK cuts no CTF sequence)
        >>> len(frames), frames.materialize(np.array([1]), np.zeros(1, np.int64),
        ...                                 np.array([1]), 0)['x'].data.tolist()
        (2, [[3.0]])
        >>> first = np.array([0])
        >>> frames.materialize(first, first * 0, first, 0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        stadyn.io._frame_mode.NonFrameSequenceError: <bytes>:1: a sequence of 2 samples ...
    """

    def __init__(self, composite: Composite):
        self.inner = composite
        self.deserializers = composite.deserializers
        lengths = composite.lengths
        self._starts = None
        self._whole: np.ndarray | None = None   # the sequences' lengths where none is cut
        #: what each sample counts in a minibatch's size: its steps where sequences stay
        #: whole (None: one each)
        self.sample_counts: np.ndarray | None = None
        if lengths is None:
            self.specs, self.lengths = composite.specs, None
            return
        self.specs = {name: StreamSpec(spec.shape, spec.dtype, spec.is_sparse, False)
                      for name, spec in composite.specs.items()}
        self.lengths = None
        if not any(getattr(d, "frames_in_frame_mode", False) for d in self.deserializers):
            self._whole = self.sample_counts = np.asarray(lengths, dtype=np.int64)
            return
        self._starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        if self._starts[-1] == 0:
            raise DataError("no frames (every sequence is empty)", composite.deserializers[0].path)

    def __len__(self) -> int:
        return len(self.inner) if self._starts is None else int(self._starts[-1])

    @property
    def randomizer(self) -> str:
        return self.inner.randomizer

    @property
    def chunked(self) -> bool:
        return self.inner.chunked

    def chunk_sizes(self) -> np.ndarray:
        """Frames per chunk: in frame mode every frame is a sequence of its chunk."""
        sizes = self.inner.chunk_sizes()
        if self._starts is None:
            return sizes
        bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return np.diff(self._starts[bounds])

    @property
    def loads_whole_chunks(self) -> bool:
        return self.inner.loads_whole_chunks

    def load_chunks(self, chunk_ids) -> None:
        """Have the joined data read chunks ``chunk_ids`` whole (a chunk's frames are its
        sequences' frames: :meth:`chunk_sizes`), as CNTK 2.7 loads them in frame mode too."""
        self.inner.load_chunks(chunk_ids)

    def release_chunks(self) -> None:
        self.inner.release_chunks()

    def defer_error_counts(self) -> None:
        self.inner.defer_error_counts()

    def deferred_errors(self) -> list:
        return self.inner.deferred_errors()

    def count_errors(self, met: list) -> None:
        self.inner.count_errors(met)

    def materialize(self, ids: np.ndarray, sweeps: np.ndarray, positions: np.ndarray,
                    seed: int) -> dict[str, StreamBatch]:
        if self._starts is None and self._whole is None:
            return self.inner.materialize(ids, sweeps, positions, seed)
        ids = np.asarray(ids, dtype=np.int64)
        if self._whole is not None and len(ids):
            longer = np.flatnonzero(self._whole[ids] > 1)
            if longer.size:
                raise self._non_frame(int(ids[longer[0]]))
            return self.inner.materialize_steps(ids, np.zeros_like(ids), sweeps, positions,
                                                seed)
        if len(ids) == 0:
            return {name: StreamBatch(b.data[:, 0] if b.data.ndim > 1 else b.data)
                    for name, b in self.inner.materialize(ids, sweeps, positions, seed).items()}
        seqs = np.searchsorted(self._starts, ids, side="right") - 1
        return self.inner.materialize_steps(seqs, ids - self._starts[seqs], sweeps, positions,
                                            seed)

    def _non_frame(self, i: int) -> NonFrameSequenceError:
        """CNTK 2.7's refusal of joined sequence ``i``, naming the deserializer whose
        sequence is longer than one sample and the line it starts on."""
        for d, index in zip(self.deserializers, self.inner.maps):
            lengths = d.sequence_lengths()
            if lengths is None or getattr(d, "broadcast", False):
                continue
            j = i if index is None else int(index[i])
            if int(lengths[j]) > 1:
                return NonFrameSequenceError(
                    f"a sequence of {int(lengths[j])} samples in frame mode (CNTK 2.7: "
                    f"'Detected a non-frame sequence of size {int(lengths[j])} in frame "
                    f"mode.'): frame mode cuts only HTK features and MLF labels into frames; "
                    f"read {type(d).__name__} without frame_mode, or give each line a "
                    f"sequence id of its own", d.path, d.sequence_line(j))
        raise AssertionError("no sequence longer than one sample")   # (callers checked)

    def close(self) -> None:
        self.inner.close()

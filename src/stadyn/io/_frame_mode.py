"""Frame mode: every step of every sequence a sample of its own (CNTK's ``frame_mode``)."""

from __future__ import annotations

import numpy as np

from .._errors import DataError
from ._composite import Composite
from ._deserializer import StreamBatch, StreamSpec

__all__ = ["FrameComposite"]


class FrameComposite:
    """The frames of a :class:`Composite`'s joined sequences as samples: sample ``j`` is step
    ``t`` of sequence ``i``, in order. The deserializers are joined by sequence key first, so
    frame mode costs no key per frame, and each reads only the steps asked for
    (:meth:`Deserializer.read_steps`); a stream shorter than the sequence (labels with fewer
    frames than the features) is a DataError when the missing frame is read. A composite
    without sequences is used as it is.

    Example:
        >>> from stadyn.io import CTFDeserializer, StreamDef, StreamDefs
        >>> ctf = CTFDeserializer.from_bytes(b'0 |x 1\\n0 |x 2\\n1 |x 3\\n',
        ...                                  StreamDefs(x=StreamDef(shape=1)))
        >>> frames = FrameComposite(Composite([ctf]))
        >>> len(frames), frames.materialize(np.array([1, 2]), np.zeros(2, np.int64),
        ...                                 np.array([1, 2]), 0)['x'].data.tolist()
        (3, [[2.0], [3.0]])
    """

    def __init__(self, composite: Composite):
        self.inner = composite
        self.deserializers = composite.deserializers
        lengths = composite.lengths
        if lengths is None:
            self.specs, self.lengths = composite.specs, None
            self._starts = None
            return
        self.specs = {name: StreamSpec(spec.shape, spec.dtype, spec.is_sparse, False)
                      for name, spec in composite.specs.items()}
        self.lengths = None
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

    def materialize(self, ids: np.ndarray, sweeps: np.ndarray, positions: np.ndarray,
                    seed: int) -> dict[str, StreamBatch]:
        if self._starts is None:
            return self.inner.materialize(ids, sweeps, positions, seed)
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) == 0:
            return {name: StreamBatch(b.data[:, 0] if b.data.ndim > 1 else b.data)
                    for name, b in self.inner.materialize(ids, sweeps, positions, seed).items()}
        seqs = np.searchsorted(self._starts, ids, side="right") - 1
        return self.inner.materialize_steps(seqs, ids - self._starts[seqs], sweeps, positions,
                                            seed)

    def close(self) -> None:
        self.inner.close()

"""Frame mode: every step of every sequence a sample of its own (CNTK's ``frame_mode``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from ._deserializer import Deserializer, StreamBatch, StreamSpec
from ._random import SampleRandom

__all__ = ["FrameModeDeserializer"]


class FrameModeDeserializer(Deserializer):
    """The frames of a sequence deserializer as samples: sample ``j`` is step ``t`` of
    sequence ``i``, in order, keyed ``(key of i, t)`` so that frame-mode deserializers join
    frame by frame. A deserializer without sequences is passed through unchanged.

    Example:
        >>> import numpy as np
        >>> from stadyn.io import CTFDeserializer, StreamDef, StreamDefs
        >>> ctf = CTFDeserializer.from_bytes(b'0 |x 1\\n0 |x 2\\n1 |x 3\\n',
        ...                                  StreamDefs(x=StreamDef(shape=1)))
        >>> frames = FrameModeDeserializer(ctf)
        >>> len(frames), frames.read(1)['x'].tolist()
        (3, [2.0])
    """

    def __init__(self, inner: Deserializer):
        if getattr(inner, "broadcast", False):
            raise ValueError("frame mode cannot broadcast a stream over utterances; read the "
                             "broadcast stream in sequence mode (frame_mode=False)")
        self.inner = inner
        self.path = inner.path
        lengths = inner.sequence_lengths()
        self._passthrough = lengths is None
        if self._passthrough:
            return
        lengths = np.asarray(lengths, dtype=np.int64)
        self._starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        keys = inner.keys() or [str(i) for i in range(len(inner))]
        self._keys = [f"{k}\x00{t}" for k, n in zip(keys, lengths.tolist()) for t in range(n)]

    def __len__(self) -> int:
        return len(self.inner) if self._passthrough else int(self._starts[-1])

    def keys(self):
        return self.inner.keys() if self._passthrough else self._keys

    def stream_specs(self) -> dict[str, StreamSpec]:
        specs = self.inner.stream_specs()
        return specs if self._passthrough else {
            name: replace(spec, is_sequence=False) for name, spec in specs.items()}

    def read_batch(self, ids: Sequence[int],
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        if self._passthrough:
            return self.inner.read_batch(ids, rngs)
        ids = np.asarray(ids, dtype=np.int64)
        seqs = np.searchsorted(self._starts, ids, side="right") - 1
        steps = ids - self._starts[seqs]
        unique, first, rows = np.unique(seqs, return_index=True, return_inverse=True)
        batch = self.inner.read_batch(unique, [rngs[int(k)] for k in first])
        return {name: StreamBatch(b.data[rows, steps]) for name, b in batch.items()}

    def close(self) -> None:
        self.inner.close()

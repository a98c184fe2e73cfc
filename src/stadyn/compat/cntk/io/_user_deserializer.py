"""``cntk.io.UserDeserializer``: a deserializer written in Python that hands its data over a
chunk at a time (Stadyn's :class:`stadyn.io.ChunkedDeserializer` with CNTK's method names)."""

from __future__ import annotations

import numpy as np

from .... import io as _io
from .._variables import Record

__all__ = ["UserDeserializer"]


class _FromStreamInfos(_io.ChunkedDeserializer):
    """What :class:`stadyn.io.ChunkedDeserializer` asks of a subclass, answered from CNTK's
    ``stream_infos()``. Kept off :class:`UserDeserializer` itself, whose own members are
    CNTK's."""

    def size_stream(self) -> str | None:
        """The stream declared with ``defines_mb_size=True``, whose steps a minibatch's size
        counts (else each sequence counts its longest stream)."""
        self.declared_streams()
        return self._size_stream

    def declared_streams(self) -> dict[str, _io.StreamSpec]:
        infos = list(self.stream_infos())
        if not infos:
            raise ValueError(f"{type(self).__name__} must provide at least one stream "
                             f"(stream_infos() returned none)")
        sizing = [info.name for info in infos if info.defines_mb_size]
        if len(sizing) > 1:
            raise ValueError(f"{type(self).__name__}: only one stream can define the minibatch "
                             f"size (defines_mb_size), got {sizing}")
        self._size_stream = sizing[0] if sizing else None
        self.streams = Record(**{info.name: info for info in infos})
        return {info.name: _io.StreamSpec(tuple(info.sample_shape), np.dtype(info.dtype),
                                          bool(info.is_sparse)) for info in infos}


class UserDeserializer(_FromStreamInfos):
    """Base class of deserializers written in Python: override ``stream_infos()`` (a list of
    :class:`StreamInformation`), ``num_chunks()`` and ``get_chunk(chunk_id)``, and pass an
    instance to :class:`MinibatchSource`.

    ``get_chunk`` returns a dict stream name -> data for every stream: an array
    ``(N, *shape)`` or a ``csr_matrix`` of N rows (N samples), or a list of N arrays
    ``(T_i, *shape)`` / ``csr_matrix`` (N sequences); every stream has the same N, and the
    data's dtype is the stream's. Minibatches come out as from CNTK 2.7: in chunk order
    without randomization, with it in CNTK 2.7's own random order (its chunks shuffled, then
    windows of chunks shuffled: the same samples in the same order for the same seed and
    window), ``max_samples`` / ``max_sweeps``, checkpoints and ``frame_mode``. Once a
    source has read the streams, ``streams`` holds them by name.

    Where CNTK 2.7 differs: it refuses a ``UserDeserializer`` beside other deserializers (here
    they are joined by position, the first one's order), refuses sequences in frame mode (here
    they are cut into frames). A malformed chunk is a
    ``DataError`` naming the chunk and stream (CNTK 2.7 crashes on a missing stream and reads
    a row of the wrong size without a word).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> class Counting(C.io.UserDeserializer):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.info = C.io.StreamInformation('x', 0, 'dense', np.float32, (1,))
        ...     def stream_infos(self):
        ...         return [self.info]
        ...     def num_chunks(self):
        ...         return 2
        ...     def get_chunk(self, chunk_id):
        ...         return {'x': np.arange(3 * chunk_id, 3 * chunk_id + 3,
        ...                                dtype=np.float32)[:, None]}
        >>> src = C.io.MinibatchSource(Counting(), randomize=False, max_sweeps=1)
        >>> mb = src.next_minibatch(4)
        >>> mb[src.streams.x].asarray().ravel().tolist(), mb[src.streams.x].end_of_sweep
        ([0.0, 1.0, 2.0, 3.0], False)
        >>> mb = src.next_minibatch(4)
        >>> mb[src.streams.x].asarray().ravel().tolist(), mb[src.streams.x].end_of_sweep
        ([4.0, 5.0], True)
    """

    def __init__(self):
        pass

    def stream_infos(self) -> list:
        """The streams this deserializer delivers (a list of :class:`StreamInformation`);
        override it."""
        raise NotImplementedError("should return a list of StreamInformation for all streams")

    def num_chunks(self) -> int:
        """The number of chunks; override it."""
        raise NotImplementedError("should return the total number of chunks.")

    def get_chunk(self, chunk_id: int) -> dict:
        """The data of chunk ``chunk_id`` (``0 <= chunk_id < num_chunks()``) as stream name ->
        array, ``csr_matrix`` or list of those; override it."""
        raise NotImplementedError("should return data for the chunk.")

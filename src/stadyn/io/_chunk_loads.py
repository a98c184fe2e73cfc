"""Which chunks a :class:`~stadyn.io.MinibatchSource` has its data read whole before a
minibatch, as CNTK 2.7 loads them (a bad text line or HTK frame range then raises from the
minibatch CNTK's raises from): in file order (``NoRandomizer``) the chunks of the sequences
delivered; randomized (``BlockRandomizer::LoadDataChunks``) every chunk of the randomization
windows of the sequences walked over, of data partition r of W only those whose shuffled
place ``% W == r``.  In this process the source loads them (``Composite.load_chunks``); with
worker processes each job carries the chunks no earlier job was given, which its worker
loads first.  A mix-in of ``MinibatchSource`` (``_source.py``), whose state it reads: the
composite, the sweep length, the randomization (``_randomize``, ``_chunks``, ``_seed``,
``_window``, ``_block_window``)."""

from __future__ import annotations

import numpy as np

from ._cntk_order import block_window_chunks
from ._deserializer import StreamBatch

__all__ = ["ChunkLoads"]


class ChunkLoads:
    """The chunk loads of ``MinibatchSource`` (see the module docstring)."""

    def _load_windows(self, positions: np.ndarray, count: int = 1, index: int = 0) -> None:
        """Have the data read whole the chunks CNTK 2.7 loads to deliver global
        ``positions``, where it reads chunks whole (the text format's: a bad line then raises
        where CNTK's does): see :meth:`_window_chunks`."""
        chunks = self._window_chunks(positions, count, index)
        if len(chunks):
            self._composite.load_chunks(chunks)

    def _window_chunks(self, positions: np.ndarray, count: int = 1,
                       index: int = 0) -> np.ndarray:
        """The chunks CNTK 2.7 loads to deliver global ``positions`` (none where the data is
        not read in whole chunks): in file order, their chunks (a partition gives its own
        positions, NoRandomizer.cpp:200-210); randomized, the chunks of their chunks'
        randomization windows (``block_window_chunks``), of partition ``index`` of ``count``
        only its own (a partition gives every position it walked), in the order CNTK loads
        them (shuffled: a text chunk's malformed inputs count in that order).  In frame mode
        positions are frames and chunks count frames (``FrameComposite.chunk_sizes``)."""
        none = np.zeros(0, np.int64)
        if not (len(positions) and self._composite.randomizer == "block"
                and getattr(self._composite, "loads_whole_chunks", False)):
            return none
        n = self._sweep_length
        if not self._randomize:
            ends = self.__dict__.get("_chunk_ends")
            if ends is None:
                ends = self._chunk_ends = np.cumsum(self._composite.chunk_sizes())
            return np.unique(np.searchsorted(ends, positions % n, side="right"))
        found = [none]
        for sweep in np.unique(positions // n).tolist():
            kept = self.__dict__.get("_windows_of")
            if kept is None or kept[0] != sweep:
                kept = self._windows_of = (sweep, block_window_chunks(
                    self._chunks, self._seed + sweep, self._window[0], **self._block_window()))
            found.append(kept[1](positions[positions // n == sweep] % n, count, index))
        found = np.concatenate(found)       # (in the order loaded, each chunk once)
        return found[np.sort(np.unique(found, return_index=True)[1])]

    def _chunks_to_send(self, positions: np.ndarray, count: int = 1,
                        index: int = 0) -> np.ndarray | None:
        """The chunks CNTK 2.7 loads to deliver ``positions`` (``_window_chunks``) that no
        job was given yet: the job that reads them has its worker read them whole first."""
        sent = self.__dict__.setdefault("_chunks_sent", set())
        new = [c for c in self._window_chunks(positions, count, index).tolist()
               if c not in sent]
        sent.update(new)
        return np.array(new, dtype=np.int64) if new else None

    def _read_here(self, end: int, count: int, index: int) -> dict[str, StreamBatch]:
        """This process reads the positions up to ``end`` (the partition's share), the
        chunks CNTK 2.7 loads for them read whole first (read as one partition)."""
        positions = self._partition_positions(self._position, self._samples, end, count,
                                             index)
        if count == 1:
            self._load_windows(positions)
        return self._composite.materialize(*self._job(positions), self._seed)

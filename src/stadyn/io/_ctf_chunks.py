"""Text format chunks parsed whole when a source loads them, as CNTK 2.7's ``TextParser``
loads a chunk at its first use (so a bad line anywhere in it raises then): the parses of the
sequences not yet delivered wait, up to a budget of values, for the read that delivers them.
:class:`WholeChunkParses` is the part of :class:`~stadyn.io.CTFDeserializer` that does it; it
keeps the parses out of a pickled copy (a worker process parses its own)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ._ctf_values import text_format_errors

__all__ = ["WholeChunkParses"]

# what a parse of whole chunks leaves on the deserializer (a copy of it starts without)
_PARSE_STATE = ("_chunks_read", "_parsed", "_kept")


class WholeChunkParses:
    """Whole-chunk parsing of a text format deserializer, which gives ``chunk_sizes`` and
    ``_parse_sequence(i, zeros=...)`` (see the module docstring).

    Example:
        >>> from stadyn.io import CTFDeserializer, StreamDef, StreamDefs
        >>> d = CTFDeserializer.from_bytes(b'|x 1\\n|x 2\\n', StreamDefs(x=StreamDef(shape=1)))
        >>> d.load_chunks([0]); sorted(d._parsed)
        [0, 1]
        >>> d.read(1)["x"].tolist(), sorted(d._parsed)
        ([2.0], [0])
    """

    #: whether :meth:`load_chunks` (a source's, before it reads a minibatch) parses chunks
    #: whole, as CNTK 2.7's text reader loads a chunk (so a bad line raises from the first
    #: minibatch that loads its chunk); ``benchmarks/ctf_chunk_parse_ab.py`` measures it
    #: against parsing each sequence when it is read (:meth:`read_batch` alone does that)
    _whole_chunks = True
    #: how many parsed values (float32) of chunks read whole but not yet delivered are kept;
    #: past that a sequence is parsed again when it is read
    _kept_values = 1 << 25

    @property
    def loads_whole_chunks(self) -> bool:
        return self._whole_chunks

    def _drop_parses(self) -> None:
        """Forget the chunks parsed and the parses kept (their chunks changed)."""
        for name in ("_chunk_starts",) + _PARSE_STATE:
            self.__dict__.pop(name, None)

    @text_format_errors
    def load_chunks(self, chunk_ids: Sequence[int]) -> None:
        """Parse chunks ``chunk_ids`` whole, in that order (CNTK 2.7's load order: the
        malformed inputs count in it), unless they were (CNTK 2.7's ``TextParser`` loads
        a chunk at its first use, so any bad line in it raises then); their sequences'
        results wait in ``_parsed`` for the read that delivers them."""
        if not self._whole_chunks:
            return
        if self.__dict__.get("_chunk_starts") is None:
            self._chunk_starts = np.cumsum(self.chunk_sizes())
        done = self.__dict__.setdefault("_chunks_read", set())
        parsed = self.__dict__.setdefault("_parsed", {})
        for chunk in dict.fromkeys(int(c) for c in chunk_ids):     # (in the order given)
            if chunk in done:
                continue
            ends = self._chunk_starts
            begin = int(ends[chunk - 1]) if chunk else 0
            kept = self.__dict__.get("_kept", 0)
            self._loading = chunk       # (a worker's copy tags the inputs it skips with it)
            try:
                for i in range(begin, int(ends[chunk])):
                    zeros: dict[str, list] = {}
                    out = self._parse_sequence(i, zeros=zeros)
                    size = sum(int(a.size) for v in out.values() for a in v)
                    if i not in parsed and kept + size <= self._kept_values:
                        parsed[i] = (out, zeros, size)
                        kept += size
            finally:
                del self._loading
            self._kept = kept
            done.add(chunk)

    def release_chunks(self) -> None:
        """Forget the parses :meth:`load_chunks` kept for sequences not yet read (a source
        does at a sweep's end and when it is closed; a read parses such a sequence again).
        The chunks stay known as read whole: they are not parsed whole again.

        Example:
            >>> from stadyn.io import CTFDeserializer, StreamDef, StreamDefs
            >>> d = CTFDeserializer.from_bytes(b'|x 1\\n|x 2\\n', StreamDefs(x=StreamDef(shape=1)))
            >>> d.load_chunks([0]); sorted(d._parsed)
            [0, 1]
            >>> d.release_chunks(); "_parsed" in vars(d), d.read(1)["x"].tolist()
            (False, [2.0])
        """
        self.__dict__.pop("_parsed", None)
        self.__dict__.pop("_kept", None)

    def _take(self, i: int, zeros: dict) -> dict[str, list[np.ndarray]]:
        """Sequence ``i`` parsed: the result its chunk's parse kept, else parsed now."""
        kept = self.__dict__.get("_parsed", {}).pop(i, None)
        if kept is None:
            return self._parse_sequence(i, zeros=zeros)
        self._kept -= kept[2]
        zeros.update(kept[1])
        return kept[0]

    def __getstate__(self) -> dict:
        """The state less the parses kept (up to ``_kept_values`` values): a worker process
        the deserializer is sent to parses what it reads itself."""
        state = super().__getstate__()
        for name in _PARSE_STATE:
            state.pop(name, None)
        return state

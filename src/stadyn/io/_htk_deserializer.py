"""HTKFeatureDeserializer: speech features (HTK files listed by a script file), one utterance a
sequence, each frame optionally widened with its neighbours."""

from __future__ import annotations

import numbers
import os
import warnings
from typing import Sequence

import numpy as np

from .._errors import DataError
from ._deserializer import Deserializer, StreamBatch, StreamSpec, pad_sequences
from ._htk_file import HTKHeader, ScriptEntry, decode_frames, read_htk_features, \
    read_htk_header, read_script_file
from ._random import SampleRandom
from ._reader_errors import reader_errors
from ._settings import DictSettings
from ._streams import StreamDef, iter_stream_defs

__all__ = ["HTKFeatureDeserializer", "splice_frames"]


def splice_frames(frames: np.ndarray, left: int, right: int) -> np.ndarray:
    """Each frame preceded by its ``left`` and followed by its ``right`` neighbours:
    (T, d) -> (T, d * (left + 1 + right)), frames beyond the ends repeating the edge frame.

    Example:
        >>> splice_frames(np.array([[1.0], [2.0], [3.0]]), 1, 1).tolist()
        [[1.0, 1.0, 2.0], [1.0, 2.0, 3.0], [2.0, 3.0, 3.0]]
    """
    t = frames.shape[0]
    offsets = np.arange(-left, right + 1)
    index = np.clip(np.arange(t)[:, None] + offsets[None, :], 0, t - 1)
    return frames[index].reshape(t, -1)


#: CNTK 2.7's chunk of utterances: one is closed once it holds more than 15 minutes of 10 ms
#: frames (HTKDeserializer.cpp:174-200)
_CHUNK_FRAMES = 15 * 60 * 100



def _chunks_of(script_frames: list[int], kept: list[int] | None) -> np.ndarray:
    """Utterances per chunk: CNTK 2.7 counts off the frames of the script's utterances
    ``script_frames`` in order, a chunk taking them until it holds more than 90,000; then
    only those at positions ``kept`` stay (``None``: all), a chunk left empty dropped."""
    chunk_of: list[int] = []
    chunk, frames = -1, 0
    for n in script_frames:
        if chunk < 0 or frames > _CHUNK_FRAMES:
            chunk, frames = chunk + 1, 0
        chunk_of.append(chunk)
        frames += n
    at = np.array(chunk_of, dtype=np.int64)
    counts = np.bincount(at if kept is None else at[np.asarray(kept, np.int64)],
                         minlength=chunk + 1)
    return counts[counts > 0]


class _OpenFiles:
    """Feature files this process opened for frame reads, kept open (closed by ``close``)."""

    def __init__(self):
        self._fds: dict[str, int] = {}

    def fd(self, path: str) -> int:
        fd = self._fds.get(path)
        if fd is None:
            try:
                fd = self._fds[path] = os.open(path, os.O_RDONLY)
            except OSError as exc:
                raise DataError(f"cannot open the HTK feature file: {exc.strerror or exc}",
                                path) from None
        return fd

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


class _Stream:
    __slots__ = ("name", "entries", "dim", "left", "right", "broadcast", "header", "headers")

    def __init__(self, name: str, definition: StreamDef):
        self.name = name
        if definition.field is not None:
            raise ValueError(f"HTKFeatureDeserializer: stream {name!r} has field "
                             f"{definition.field!r}; HTK streams take no field name")
        if definition.scp is None:
            raise ValueError(f"HTKFeatureDeserializer: stream {name!r} needs scp (the script "
                             f"file listing its feature files)")
        if definition.shape is None or len(definition.shape) != 1:
            raise ValueError(f"HTKFeatureDeserializer: stream {name!r} needs shape (the feature "
                             f"dimension)")
        scripts = definition.scp if isinstance(definition.scp, tuple) else (definition.scp,)
        entries: list[ScriptEntry] = []
        for script in scripts:
            entries.extend(read_script_file(script))
        if not entries:
            raise DataError("no utterances (the script file is empty)",
                            os.path.abspath(scripts[0]))
        self.entries = entries
        self.broadcast = bool(definition.broadcast)
        self.headers: dict[str, HTKHeader] = {}
        first = entries[0]
        self.header = read_htk_header(first.path)
        io_dim = self.header.dim
        left, right = definition.context or (0, 0)
        width = 1 + left + right
        declared = definition.shape[0]
        if left or right:
            if declared != io_dim:
                raise DataError(f"stream {name!r} declares shape {declared} with context "
                                f"({left}, {right}), but the file's frames have {io_dim} values "
                                f"(with context, shape is the dimension of one frame)",
                                first.path)
            self.dim = io_dim * width
        else:
            if declared % io_dim:
                raise DataError(f"stream {name!r} declares shape {declared}, not a multiple of "
                                f"the file's {io_dim} values a frame", first.path)
            window = declared // io_dim
            if window % 2 == 0:
                raise DataError(f"stream {name!r}: shape {declared} is {window} frames of "
                                f"{io_dim}, which is no symmetric window (give context=(left, "
                                f"right))", first.path)
            left = right = window // 2
            self.dim = declared
        self.left, self.right = left, right
        self.headers[first.path] = self.header

    def header_of(self, entry: ScriptEntry) -> HTKHeader:
        h = self.headers.get(entry.path)
        if h is None:
            h = read_htk_header(entry.path)
            first = self.header
            if (h.kind, h.dim, h.period) != (first.kind, first.dim, first.period):
                raise DataError(f"feature kind {h.kind} of {h.dim} values every {h.period} differs "
                                f"from the first file's {first.kind} of {first.dim} every "
                                f"{first.period}", entry.path)
            self.headers[entry.path] = h
        if entry.last >= h.frames:
            raise DataError(f"utterance {entry.key!r} reads frames [{entry.first},{entry.last}] "
                            f"of {entry.path}, which has {h.frames}", entry.script, entry.line)
        return h


class HTKFeatureDeserializer(DictSettings, Deserializer):
    """Speech features from HTK files (CNTK's ``HTKFeatureDeserializer``).

    Args:
        streams: ``StreamDefs(features=StreamDef(shape=dim, scp='train.scp',
            context=(left, right)))``; several streams read several script files whose
            utterances are joined by key.
        pairing: ``"key"`` (CNTK 2.7's deserializer) joins the streams' utterances by key;
            ``"position"`` (cntk.exe's ``HTKMLFReader``) pairs line ``i`` of each script file
            whatever its key: the script files must list as many utterances, and a key that
            appears twice is kept.
        max_sequence_size: utterances of more frames (in any stream) are skipped (CNTK 2.7's
            ``maxSequenceSize`` of the deserializer, also ``d["maxSequenceSize"] = n``);
            ``None``, the default as in CNTK 2.7, skips none.  A ``StreamDef``'s
            ``max_sequence_length`` is not read (CNTK 2.7's Python passes it under a key its
            HTK reader never reads, so it skips nothing).

    Every utterance of the script (``key=file.htk[first,last]`` lines, see
    :func:`stadyn.io.read_script_file`) is a sequence of frames, float32 ``(T, dim)``. With
    ``context=(l, r)`` each frame is preceded by its ``l`` and followed by its ``r`` neighbours
    (the edge frame repeats at the ends) and ``shape`` is the file's frame size; without it a
    ``shape`` of an odd multiple of the file's frame size widens symmetrically. Utterances longer
    than ``max_sequence_size`` are skipped, and so are (with a warning) utterances whose key
    appears twice, and utterances of the first stream whose key another stream's script does
    not list, as CNTK 2.7 drops them. A stream with ``broadcast=True`` holds one frame per utterance
    (i-vectors) and delivers it repeated over the length of the first deserializer's
    utterance. Errors name the script line or the feature file.

    Example:
        >>> import os, tempfile, numpy as np
        >>> from stadyn.io import StreamDef, StreamDefs, write_htk_features
        >>> d = tempfile.mkdtemp(); p = os.path.join(d, 'u.htk')
        >>> write_htk_features(p, np.arange(6, dtype=np.float32).reshape(3, 2))
        >>> _ = open(os.path.join(d, 'f.scp'), 'w').write(f'u={p}[0,2]\\n')
        >>> des = HTKFeatureDeserializer(StreamDefs(x=StreamDef(shape=2,
        ...     scp=os.path.join(d, 'f.scp'), context=(1, 0))))
        >>> des.read(0)['x'].tolist()
        [[0.0, 1.0, 0.0, 1.0], [0.0, 1.0, 2.0, 3.0], [2.0, 3.0, 4.0, 5.0]]
    """

    frames_in_frame_mode = True     # (CNTK 2.7 cuts its utterances into frames there)

    # CNTK 2.7's configuration keys (``d[key] = value``, ``_settings.py``)
    cntk_type = "HTKFeatureDeserializer"
    refused_keys = {"frameMode": "use MinibatchSource(frame_mode=True)"}
    applied_keys = {"maxSequenceSize": "_set_max_sequence_size"}

    @reader_errors
    def __init__(self, streams: dict[str, StreamDef], *, pairing: str = "key",
                 max_sequence_size: int | None = None):
        if pairing not in ("key", "position"):
            raise ValueError(f"HTKFeatureDeserializer: pairing must be 'key' or 'position', "
                             f"got {pairing!r}")
        self._streams = [_Stream(name, d) for name, d in iter_stream_defs(streams)]
        if not self._streams:
            raise ValueError("HTKFeatureDeserializer needs at least one stream")
        self.path = self._streams[0].entries[0].script
        self._pairing = pairing
        self._select(max_sequence_size)
        self._h_files: _OpenFiles | None = None

    def _select(self, limit: int | None) -> None:
        """The utterances read (none longer than ``limit`` frames in any stream) and CNTK
        2.7's chunks of them (:meth:`chunk_sizes`)."""
        if self._pairing == "key":
            self._rows, script_frames, kept = self._pair_by_key(limit)
        else:
            self._rows = self._pair_by_position(limit)
            script_frames, kept = [e.frames for e in self._rows[0]], None
        if not self._rows[0]:
            raise DataError("no utterances to read (all are longer than maxSequenceSize, or "
                            "repeated)", self.path)
        self._max_size = limit
        self._keys = [e.key for e in self._rows[0]]
        self._lengths = np.array([e.frames for e in self._rows[0]], dtype=np.int64)
        self._chunks = _chunks_of(script_frames, kept)

    def _pair_by_key(self, limit: int | None):
        """The first stream's utterances, each with the same key's utterance of every other
        stream (CNTK 2.7's ``HTKFeatureDeserializer``): utterances longer than ``limit`` are
        left out, and so is every utterance whose key a script repeats or another stream's
        script lacks (with a warning: CNTK 2.7 drops those without one).  Also the frames of
        the first stream's utterances before that last join and the positions among them of
        those kept: CNTK 2.7 chunks the first script so (its composite drops the others)."""
        first = self._streams[0]
        keyed: list[dict[str, ScriptEntry]] = []
        for s in self._streams:
            seen: dict[str, ScriptEntry] = {}
            dupes: set[str] = set()
            for e in s.entries:
                if limit is not None and e.frames > limit:
                    continue
                if e.key in seen:
                    dupes.add(e.key)
                seen[e.key] = e
            if dupes:
                warnings.warn(f"{len(dupes)} utterance key(s) appear twice in the script of "
                              f"stream {s.name!r} (first {sorted(dupes)[0]!r}); CNTK drops every "
                              f"such utterance, and so does Stadyn", stacklevel=3)
            keyed.append({k: e for k, e in seen.items() if k not in dupes})
        script = list(keyed[0])
        order = script
        for s, table in zip(self._streams[1:], keyed[1:]):
            missing = [k for k in order if k not in table]
            if missing:     # CNTK 2.7 drops them (silently)
                warnings.warn(f"{len(missing)} utterance(s) of stream {first.name!r} have no "
                              f"utterance of that key in the script of stream {s.name!r} "
                              f"({s.entries[0].script}; first {missing[0]!r}); CNTK 2.7 drops "
                              f"them, and so does Stadyn", stacklevel=3)
                order = [k for k in order if k in table]
        at = {k: i for i, k in enumerate(script)}
        return ([[table[k] for k in order] for table in keyed],
                [keyed[0][k].frames for k in script], [at[k] for k in order])

    def _pair_by_position(self, limit: int | None) -> list[list[ScriptEntry]]:
        """Line ``i`` of every script together, whatever its key (cntk.exe's HTKMLFReader):
        the scripts must list as many utterances; a line longer than ``limit`` in any of them
        leaves out that line of every script; repeated keys are kept."""
        first = self._streams[0]
        for s in self._streams[1:]:
            if len(s.entries) != len(first.entries):
                raise DataError(f"stream {s.name!r} lists {len(s.entries)} utterances and stream "
                                f"{first.name!r} {len(first.entries)}; their script files are "
                                f"paired line by line, so they must list as many (cntk.exe: "
                                f"number of files in each scriptfile inconsistent)",
                                s.entries[0].script)
        kept = [i for i in range(len(first.entries))
                if limit is None or all(s.entries[i].frames <= limit for s in self._streams)]
        return [[s.entries[i] for i in kept] for s in self._streams]

    @property
    def broadcast(self) -> bool:
        """The streams repeat one frame over the first deserializer's sequences."""
        return all(s.broadcast for s in self._streams)

    def __len__(self) -> int:
        return len(self._keys)

    def keys(self) -> list[str]:
        return self._keys

    def sequence_lengths(self) -> np.ndarray:
        return self._lengths

    def chunk_sizes(self) -> np.ndarray:
        """Utterances per chunk as CNTK 2.7's HTK deserializer counts them off in script
        order (the first stream's frames): a chunk takes utterances until it holds more than
        90,000 frames, so it runs a little over.  The utterances of the first script that
        another stream lacks count there too (CNTK 2.7 drops them from their chunk later),
        those longer than ``maxSequenceSize`` do not."""
        return self._chunks

    def _set_max_sequence_size(self, value) -> None:
        """``d["maxSequenceSize"] = n``: utterances of more than ``n`` frames in any stream
        are skipped, before chunking, as CNTK 2.7's HTK reader does with that key of its
        deserializer (the ``max_sequence_length`` of a ``StreamDef`` reaches nothing there).
        Set it before a source is made over the deserializer."""
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
            raise TypeError(f"HTKFeatureDeserializer: maxSequenceSize takes a frame count, "
                            f"got {value!r}")
        self._select(int(value))
        self.__dict__.pop("_chunks_checked", None)

    #: (:meth:`load_chunks`: CNTK 2.7 reads a chunk's utterances when it loads the chunk)
    loads_whole_chunks = True

    @reader_errors
    def load_chunks(self, chunk_ids: Sequence[int]) -> None:
        """Check every utterance of chunks ``chunk_ids`` against its file's header (an HTK
        frame range past the file's end raises then, as CNTK 2.7's ``GetChunk`` reads the
        chunk's utterances at once)."""
        ends = np.cumsum(self._chunks)
        done = self.__dict__.setdefault("_chunks_checked", set())
        for chunk in sorted(set(int(c) for c in chunk_ids) - done):
            for i in range(int(ends[chunk - 1]) if chunk else 0, int(ends[chunk])):
                for s, rows in zip(self._streams, self._rows):
                    s.header_of(rows[i])
            done.add(chunk)

    def stream_lengths(self) -> dict[str, np.ndarray]:
        """Frames of each utterance in each stream that is not broadcast (the first stream's
        are :meth:`sequence_lengths`; another script may give an utterance other frames)."""
        return {s.name: np.array([e.frames for e in rows], dtype=np.int64)
                for s, rows in zip(self._streams, self._rows) if not s.broadcast}

    def stream_specs(self) -> dict[str, StreamSpec]:
        return {s.name: StreamSpec((s.dim,), np.dtype(np.float32), False, True)
                for s in self._streams}

    def utterance(self, stream: int, i: int) -> np.ndarray:
        """The spliced frames of utterance ``i`` of stream number ``stream``."""
        s = self._streams[stream]
        e = self._rows[stream][i]
        h = s.header_of(e)
        frames = read_htk_features(e.path, e.first, e.last, h)
        if s.broadcast and frames.shape[0] != 1:
            raise DataError(f"stream {s.name!r} is broadcast, so its utterances must be one "
                            f"frame; {e.key!r} has {frames.shape[0]}", e.path)
        return splice_frames(frames, s.left, s.right)

    @reader_errors
    def read_steps(self, ids: Sequence[int], steps: np.ndarray,
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        """Frame ``steps[k]`` of utterance ``ids[k]`` (spliced with its neighbours): per
        utterance of the minibatch one read of the frames its steps' windows span."""
        out = {}
        if self._h_files is None:
            self._h_files = _OpenFiles()
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        steps = np.asarray(steps, dtype=np.int64).reshape(-1)
        unique, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
        for k, s in enumerate(self._streams):
            rows = np.empty((len(ids), s.dim), dtype=np.float32)
            ts = np.zeros_like(steps) if s.broadcast else steps
            frames = np.array([self._rows[k][i].frames for i in unique.tolist()],
                              dtype=np.int64)[inverse]
            bad = np.flatnonzero((ts < 0) | (ts >= frames))
            if bad.size:
                e, t = self._rows[k][int(ids[bad[0]])], int(ts[bad[0]])
                raise DataError(f"stream {s.name!r}: utterance {e.key!r} has {e.frames} "
                                f"frame(s); frame mode reads frame {t}", e.script, e.line)
            span = np.arange(-s.left, s.right + 1)
            for u in np.argsort(first, kind="stable").tolist():  # (in the order first read)
                e = self._rows[k][int(unique[u])]
                h = s.header_of(e)
                where = np.flatnonzero(inverse == u)
                t = ts[where]
                lo = max(int(t.min()) - s.left, 0)
                hi = min(int(t.max()) + s.right, e.frames - 1)
                count = hi - lo + 1
                data = os.pread(self._h_files.fd(e.path), count * h.frame_bytes,
                                h.data_offset + (e.first + lo) * h.frame_bytes)
                if len(data) != count * h.frame_bytes:
                    raise DataError("HTK file changed while it was read (it is shorter)", e.path)
                window = decode_frames(data, h, count)
                index = np.clip(t[:, None] + span, 0, e.frames - 1) - lo
                rows[where] = window[index].reshape(len(where), -1)
            out[s.name] = StreamBatch(rows)
        return out

    @reader_errors
    def read_batch(self, ids: Sequence[int],
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        out = {}
        for k, s in enumerate(self._streams):
            arrays = [self.utterance(k, int(i)) for i in ids]
            out[s.name] = pad_sequences(arrays, (s.dim,), np.dtype(np.float32))
        return out

"""HTK master label files (MLF) and HTKMLFDeserializer: frame labels of speech utterances.

An MLF starts with ``#!MLF!#``; each utterance is a quoted name (``"*/utt1.lab"``: the key is
``utt1``, the ``*/`` and the extension removed), lines ``start end state [...]`` and a line
``.``. ``start`` and ``end`` are HTK times in 100 ns units (a frame is 10 ms, 100000 units) or,
when a line spans less than 99999 units, frame numbers; the ranges must follow one another from
frame 0. ``state`` is looked up in the label mapping file (one state name a line, numbered from
0); without one (cntk.exe's readers given no ``labelMappingFile``), a line has exactly four
columns ``start end name id`` and ``id`` is the class id (htkfeatio.h:876-884,
MLFUtils.cpp:86-93).
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from .._errors import DataError
from ._deserializer import Deserializer, StreamBatch, StreamSpec, pad_sequences
from ._files import read_text_file
from ._random import SampleRandom
from ._reader_errors import reader_errors
from ._settings import DictSettings
from ._streams import StreamDef, iter_stream_defs

__all__ = ["HTKMLFDeserializer", "MLFUtterance", "read_mlf", "read_state_list"]

_HTK_TIME_TO_FRAME = 100000.0
_MAX_FRAMES = 1 << 24     # an utterance's last frame (a bound on what a line can make us allocate)


def read_state_list(path: str | os.PathLike) -> dict[str, int]:
    """State name -> class id (its position among the non-empty lines).

    Example:
        >>> import os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), 'states.txt')
        >>> _ = open(p, 'w').write('sil\\na_s2\\n\\na_s3\\n')
        >>> read_state_list(p)
        {'sil': 0, 'a_s2': 1, 'a_s3': 2}
    """
    path = os.path.abspath(os.fspath(path))
    states: dict[str, int] = {}
    for number, raw in enumerate(read_text_file(path, "label mapping file").split("\n"), 1):
        name = raw.rstrip("\r")
        if not name:
            continue
        if name in states:
            raise DataError(f"state {name!r} appears twice", path, number)
        states[name] = len(states)
    if not states:
        raise DataError("the label mapping file holds no states", path)
    return states


class MLFUtterance:
    """The labels of one utterance: ``(first frame, frames, class id)`` rows, where they are."""

    __slots__ = ("key", "ranges", "path", "line")

    def __init__(self, key: str, ranges: np.ndarray, path: str, line: int):
        self.key, self.ranges, self.path, self.line = key, ranges, path, line

    @property
    def frames(self) -> int:
        return int(self.ranges[-1, 0] + self.ranges[-1, 1])

    def labels(self, dim: int, phone_boundaries: bool = False) -> np.ndarray:
        """One-hot float32 (frames, dim); with ``phone_boundaries`` the first frame of every
        label range holds 2 instead of 1 (CNTK's marking for CTC)."""
        out = np.zeros((self.frames, dim), dtype=np.float32)
        starts, counts, ids = self.ranges.T
        frames = np.repeat(ids, counts)
        out[np.arange(len(frames)), frames] = 1.0
        if phone_boundaries:
            real = counts > 0                 # a zero-length range marks nothing
            out[starts[real], ids[real]] = 2.0
        return out


def _frame_range(tokens: list[str], path: str, line: int) -> tuple[int, int]:
    try:
        start, end = float(tokens[0]), float(tokens[1])
    except ValueError:
        raise DataError(f"cannot read the frame range {tokens[0]!r} {tokens[1]!r}", path,
                        line) from None
    if end - start >= _HTK_TIME_TO_FRAME - 1:   # HTK times, 100 ns units
        first, last = int(start / _HTK_TIME_TO_FRAME + 0.5), int(end / _HTK_TIME_TO_FRAME + 0.5)
    else:
        first, last = int(start), int(end)
    if start < 0 or last < first:
        raise DataError(f"frame range {tokens[0]} {tokens[1]}: the end is before the start",
                        path, line)
    if last > _MAX_FRAMES:
        raise DataError(f"frame range {tokens[0]} {tokens[1]} ends at frame {last}, past "
                        f"{_MAX_FRAMES} frames (46 hours of 10 ms frames)", path, line)
    return first, last


def _class_id(tokens: list[str], path: str, line: int) -> int:
    """The class id of a line of an MLF read without a state list: its fourth column, of
    exactly four (cntk.exe: "htkmlfentry: currently we only support 4-column format")."""
    if len(tokens) != 4:
        raise DataError(f"expected 4 columns 'start end name class-id' (an MLF read without a "
                        f"labelMappingFile: CNTK reads only that format), found {len(tokens)}",
                        path, line)
    if not tokens[3].isdigit():
        raise DataError(f"cannot read the class id {tokens[3]!r} (the 4th column of an MLF read "
                        f"without a labelMappingFile)", path, line)
    return int(tokens[3])


def read_mlf(path: str | os.PathLike,
             states: dict[str, int] | None) -> dict[str, MLFUtterance]:
    """The utterances of a master label file, by key; ``states`` maps state names to ids
    (None: each line's fourth and last column is its class id, as cntk.exe reads an MLF
    without a ``labelMappingFile``).

    Example:
        >>> import os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), 'l.mlf')
        >>> _ = open(p, 'w').write('#!MLF!#\\n"*/u1.lab"\\n0 200000 a\\n200000 300000 b\\n.\\n')
        >>> read_mlf(p, {'a': 0, 'b': 1})['u1'].ranges.tolist()
        [[0, 2, 0], [2, 1, 1]]
        >>> _ = open(p, 'w').write('#!MLF!#\\n"*/u1.lab"\\n0 200000 dr3 3\\n.\\n')
        >>> read_mlf(p, None)['u1'].ranges.tolist()
        [[0, 2, 3]]
    """
    path = os.path.abspath(os.fspath(path))
    lines = read_text_file(path, "master label file (MLF)").split("\n")
    out: dict[str, MLFUtterance] = {}
    key: str | None = None
    start_line = 0
    rows: list[tuple[int, int, int]] = []
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or (number == 1 and line == "#!MLF!#"):
            continue
        if key is None:
            if len(line) < 3 or line[0] != '"' or line[-1] != '"':
                raise DataError(f"expected a quoted utterance name (\"*/name.lab\"), found "
                                f"{line[:40]!r}", path, number)
            name = line[1:-1]
            if name.startswith("*/"):
                name = name[2:]
            dot = name.rfind(".")
            key, start_line, rows = (name if dot < 0 else name[:dot]), number, []
            continue
        if line == ".":
            if not rows:
                raise DataError(f"utterance {key!r} has no labels", path, start_line)
            if key not in out:
                out[key] = MLFUtterance(key, np.array(rows, dtype=np.int64), path, start_line)
            key = None
            continue
        tokens = line.split()
        if len(tokens) < 3:
            raise DataError(f"expected 'start end state ...', found {line[:40]!r}", path, number)
        first, last = _frame_range(tokens, path, number)
        state = _class_id(tokens, path, number) if states is None else states.get(tokens[2])
        if state is None:
            raise DataError(f"state {tokens[2]!r} is not in the label mapping file", path, number)
        expected = rows[-1][0] + rows[-1][1] if rows else 0
        if first != expected:
            what = "the first range must start at frame 0" if not rows else \
                f"the previous range ends at frame {expected}"
            raise DataError(f"labels of {key!r} are not consecutive: this range starts at frame "
                            f"{first}, {what}", path, number)
        rows.append((first, last - first, state))
    if key is not None:
        raise DataError(f"utterance {key!r} is not closed by a '.' line", path, start_line)
    return out


class HTKMLFDeserializer(DictSettings, Deserializer):
    """Frame labels of speech utterances from HTK master label files (CNTK's
    ``HTKMLFDeserializer``); it joins an :class:`HTKFeatureDeserializer` by utterance key.

    Args:
        label_mapping_file: the state list: one state name a line, the line's position among
            the non-empty lines its class id.
        streams: one stream, ``StreamDefs(labels=StreamDef(shape=num_states, mlf='a.mlf'))``
            (``mlf`` may be a list of files).
        phoneBoundaries: mark the first frame of every label range with 2 instead of 1 (for
            CTC training), as CNTK does.

    Every utterance is a sequence of one-hot float32 frames ``(T, shape)`` (sparse in CNTK,
    delivered dense). A malformed line, an unknown state, labels that do not follow one another
    from frame 0 or a class id outside ``shape`` is an error naming the file and line.

    Example:
        >>> import os, tempfile
        >>> from stadyn.io import StreamDef, StreamDefs
        >>> d = tempfile.mkdtemp()
        >>> _ = open(os.path.join(d, 's.txt'), 'w').write('a\\nb\\n')
        >>> mlf = '#!MLF!#\\n"u.lab"\\n0 1 b\\n1 3 a\\n.\\n'
        >>> _ = open(os.path.join(d, 'l.mlf'), 'w').write(mlf)
        >>> des = HTKMLFDeserializer(os.path.join(d, 's.txt'), StreamDefs(y=StreamDef(shape=2,
        ...     mlf=os.path.join(d, 'l.mlf'))))
        >>> des.read(0)['y'].tolist()
        [[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]]
    """

    frames_in_frame_mode = True     # (CNTK 2.7 cuts its utterances into frames there)

    # CNTK 2.7's configuration keys (``d[key] = value``, ``_settings.py``)
    cntk_type = "HTKMLFDeserializer"
    refused_keys = {"frameMode": "use MinibatchSource(frame_mode=True)"}
    # (its chunks only page labels in: an MLF deserializer is never CNTK's primary, whose
    # chunks are the ones randomized; MLFDeserializer.cpp:315-326)
    quiet_keys = ("chunkSizeInBytes",)

    @reader_errors
    def __init__(self, label_mapping_file: str | os.PathLike, streams: dict[str, StreamDef],
                 phoneBoundaries: bool = False):
        if not label_mapping_file:      # (CNTK 2.7's Python API: ValueError)
            raise ValueError("HTKMLFDeserializer needs a label mapping file (the state list)")
        self._setup(read_state_list(label_mapping_file), streams, phoneBoundaries)

    @classmethod
    @reader_errors
    def from_class_ids(cls, streams: dict[str, StreamDef],
                       phoneBoundaries: bool = False) -> "HTKMLFDeserializer":
        """The deserializer of MLFs without a state list, as cntk.exe reads a label stream
        given ``mlfFile`` and ``labelDim`` but no ``labelMappingFile`` (its HTKMLFReader,
        HTKMLFReader.cpp:222 and htkfeatio.h:876-884, and its HTKMLFDeserializer,
        MLFUtils.cpp:86-93): every line has exactly four columns, ``start end name id``,
        and ``id`` is the class id.  CNTK 2.7's Python ``HTKMLFDeserializer`` refuses an
        empty label mapping file (ValueError), as this class's constructor does.

        Example:
            >>> import os, tempfile
            >>> from stadyn.io import StreamDef, StreamDefs
            >>> d = tempfile.mkdtemp()
            >>> _ = open(os.path.join(d, 'r.mlf'), 'w').write(
            ...     '#!MLF!#\\n"u.lab"\\n0 1 dr1 1\\n1 3 dr0 0\\n.\\n')
            >>> des = HTKMLFDeserializer.from_class_ids(StreamDefs(y=StreamDef(shape=2,
            ...     mlf=os.path.join(d, 'r.mlf'))))
            >>> des.read(0)['y'].tolist()
            [[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]]
        """
        self = cls.__new__(cls)
        self._setup(None, streams, phoneBoundaries)
        return self

    def _setup(self, states: dict[str, int] | None, streams: dict[str, StreamDef],
               phoneBoundaries: bool) -> None:
        defs = list(iter_stream_defs(streams))
        if len(defs) != 1:
            raise ValueError("HTKMLFDeserializer only accepts a single stream")
        self._name, definition = defs[0]
        if definition.field is not None:
            raise ValueError(f"HTKMLFDeserializer: stream {self._name!r} has field "
                             f"{definition.field!r}; MLF streams take no field name")
        if definition.mlf is None:
            raise ValueError(f"HTKMLFDeserializer: stream {self._name!r} needs mlf (the master "
                             f"label file)")
        if definition.shape is None or len(definition.shape) != 1:
            raise ValueError(f"HTKMLFDeserializer: stream {self._name!r} needs shape (the number "
                             f"of states)")
        self._dim = int(definition.shape[0])
        self._phone_boundaries = bool(phoneBoundaries)
        files = definition.mlf if isinstance(definition.mlf, tuple) else (definition.mlf,)
        self._utterances: dict[str, MLFUtterance] = {}
        for file in files:
            for key, u in read_mlf(file, states).items():
                self._utterances.setdefault(key, u)
        self.path = os.path.abspath(files[0])
        if not self._utterances:
            raise DataError("no utterances in the master label file", self.path)
        for u in self._utterances.values():
            top = int(u.ranges[:, 2].max())
            if top >= self._dim:
                row = int(np.argmax(u.ranges[:, 2]))
                raise DataError(f"class id {top} is outside the stream's {self._dim} classes "
                                f"(shape)", u.path, u.line + 1 + row)
        self._keys = list(self._utterances)
        self._lengths = np.array([u.frames for u in self._utterances.values()], dtype=np.int64)

    def __len__(self) -> int:
        return len(self._keys)

    def keys(self) -> list[str]:
        return self._keys

    def sequence_lengths(self) -> np.ndarray:
        return self._lengths

    def stream_specs(self) -> dict[str, StreamSpec]:
        return {self._name: StreamSpec((self._dim,), np.dtype(np.float32), True, True)}

    @reader_errors
    def read_steps(self, ids: Sequence[int], steps: np.ndarray,
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        """The one-hot label of frame ``steps[k]`` of utterance ``ids[k]``."""
        out = np.zeros((len(ids), self._dim), dtype=np.float32)
        for j, (i, t) in enumerate(zip(np.asarray(ids).tolist(), np.asarray(steps).tolist())):
            u = self._utterances[self._keys[i]]
            if not 0 <= t < u.frames:
                raise DataError(f"utterance {u.key!r} has {u.frames} labelled frame(s); frame "
                                f"mode reads frame {t}", u.path, u.line)
            row = u.ranges[int(np.searchsorted(u.ranges[:, 0], t, side="right")) - 1]
            if row[1] == 0:     # zero-length ranges share their start with the next one
                row = u.ranges[(u.ranges[:, 0] <= t) & (u.ranges[:, 1] > 0)][-1]
            boundary = self._phone_boundaries and t == row[0]
            out[j, row[2]] = 2.0 if boundary else 1.0
        return {self._name: StreamBatch(out)}

    @reader_errors
    def read_batch(self, ids: Sequence[int],
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        arrays = [self._utterances[self._keys[int(i)]].labels(self._dim, self._phone_boundaries)
                  for i in ids]
        return {self._name: pad_sequences(arrays, (self._dim,), np.dtype(np.float32))}

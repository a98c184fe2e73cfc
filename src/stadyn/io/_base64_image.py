"""Base64ImageDeserializer: images stored inside the map file, base64-encoded."""

from __future__ import annotations

import base64
import binascii
import copy
import os
import re

from typing import Sequence

import numpy as np

from .._errors import DataError
from .._fileutil import refuse_special_file
from ._deserializer import StreamBatch, byte_chunks
from ._image import ImageReadError
from ._image_deserializer import ImageDeserializer
from ._map_file import MapTable
from ._random import SampleRandom
from ._reader_errors import reader_errors
from ._streams import StreamDef, StreamDefs

__all__ = ["Base64ImageDeserializer"]


_ID = re.compile(rb"[0-9]+")


def _has_sequence_ids(first_line: bytes) -> bool:
    """Whether CNTK 2.7 reads a base64 file as one with sequence ids: its literal first line
    (a blank one too) has three tab-separated fields, the last not empty
    (``Base64ImageDeserializer.cpp`` ``HasSequenceKeys``, ``std::getline`` thrice)."""
    parts = first_line.split(b"\t", 2)
    return len(parts) == 3 and parts[2] != b""


class _Index:
    """The sequences of a base64 file as CNTK 2.7's text index finds them (``IndexBuilder.cpp``).

    Whether the file has sequence ids is decided by its first line alone
    (:func:`_has_sequence_ids`).  Blank lines (only white space) before the first text are
    skipped.  With ids (``PopulateImpl``) a sequence runs from a line starting with an id
    (its leading digits, a number) up to the next line starting with another id: a line
    starting with the same id, a blank line or one starting with no digits is a line of the
    sequence before it, counted as one of its samples, though the sequence delivers only its
    first line's label and image (:meth:`Base64ImageDeserializer.counted_lengths`).  Without
    ids (``PopulateFromLines``) every line is a sequence: its label is the text before the
    first tab, its image all after it (a line of three fields then holds no image CNTK can
    decode), and a blank one reads the label and image of the next line, as ``strtoull``
    skips white space (``GetSequence``).

    Per sequence: ``starts``/``sizes`` (byte offset and length of its image text),
    ``line_bytes`` (its bytes, ends of lines included), ``reads`` (for a blank line of a file
    without ids, the sequence whose label and image it reads, else -1), ``counted`` (the lines
    CNTK counts as its samples) and ``unreadable`` (why CNTK cannot read its label, or None).
    """

    def __init__(self, path: str):
        self.path = path
        self.table = table = MapTable(path)
        self.starts: list[int] = []
        self.sizes: list[int] = []
        self.line_bytes: list[int] = []
        self.reads: list[int] = []
        self.counted: list[int] = []
        self.unreadable: list[str | None] = []
        self._labels: list[int] = []
        self._lines: list[int] = []
        waiting: list[int] = []     # (blank sequences of a file without ids, before their line)
        with_ids = prev_id = None
        with open(path, "rb") as f:
            offset = 0
            for number, raw in enumerate(f, 1):
                here, offset = offset, offset + len(raw)
                if with_ids is None:
                    with_ids = _has_sequence_ids(raw[:-1] if raw.endswith(b"\n") else raw)
                line = raw.rstrip(b"\r\n")
                if with_ids:
                    m = _ID.match(line if self.starts else line.lstrip())
                    if self.starts and (m is None or int(m.group()) == prev_id):
                        self.line_bytes[-1] += len(raw)
                        self.counted[-1] += 1
                        continue
                    if m is None:
                        if not line.strip():
                            continue    # (white space before the first text)
                        raise DataError("expected a sequence id (digits) at the start of the "
                                        "file's first text: its first line has three "
                                        "tab-separated fields, so CNTK 2.7 reads the file as "
                                        "one with ids (CNTK: Expected a sequence id)",
                                        path, number)
                    prev_id = int(m.group())
                    self._sequence_with_id(line, here, raw, number, str(prev_id))
                    continue
                if not line.strip():
                    if self.starts:
                        waiting.append(len(self.starts))
                        self._add(0, 0, len(raw), 0, number, None)
                    continue
                fields = line.split(b"\t", 1)
                if len(fields) < 2:
                    raise DataError("expected [sequenceId<TAB>]label<TAB>base64 image, found "
                                    "1 tab-separated field", path, number)
                label, data = fields
                value, why = self._label(label, path, number, str(number - 1))
                if not data.strip():
                    raise DataError("the image field is empty", path, number)
                for blank in waiting:
                    self.starts[blank] = here + len(line) - len(data)
                    self.sizes[blank], self._labels[blank] = len(data), value
                    self.reads[blank], self.unreadable[blank] = len(self.starts), why
                waiting.clear()
                self._add(here + len(line) - len(data), len(data), len(raw), value, number, None,
                          why)
        for blank in waiting:       # (blank lines at the end: nothing after them to read)
            self.reads[blank] = len(self.starts)
        table.labels = np.asarray(self._labels, dtype=np.int64)
        table.lines = np.asarray(self._lines, dtype=np.int64)

    def _add(self, start: int, size: int, line_bytes: int, label: int, number: int,
             key: str | None, unreadable: str | None = None) -> None:
        self.starts.append(start)
        self.sizes.append(size)
        self.line_bytes.append(line_bytes)
        self.reads.append(-1)
        self.counted.append(1)
        self.unreadable.append(unreadable)
        self._labels.append(label)
        self._lines.append(number)
        self.table.keys.append(key)
        self.table.paths.append(f"line {number}")
        self.table.members.append(None)

    def _sequence_with_id(self, line: bytes, here: int, raw: bytes, number: int,
                          key: str) -> None:
        """A sequence's first line in a file with ids: CNTK reads its label after the first
        tab and its image after the next one; without them the sequence cannot be read."""
        fields = line.split(b"\t")
        if len(fields) > 3:
            raise DataError(f"expected [sequenceId<TAB>]label<TAB>base64 image, found "
                            f"{len(fields)} tab-separated fields", self.path, number)
        if len(fields) < 3:
            self._add(0, 0, len(raw), 0, number, key,
                      "cannot parse a label value: the line has no label and image fields "
                      f"after its sequence id (CNTK: Cannot parse label value for sequence "
                      f"'{key}')")
            return
        value, why = self._label(fields[1], self.path, number, key)
        data = fields[2]
        if not data.strip():
            raise DataError("the image field is empty", self.path, number)
        self._add(here + len(line) - len(data), len(data), len(raw), value, number, key, why)

    @staticmethod
    def _label(label: bytes, path: str, number: int, key: str) -> tuple[int, str | None]:
        """(the label, None), or (0, why) for a label that is not an integer, which CNTK 2.7
        refuses when it reads the sequence ("Cannot parse label value"); a negative one is
        refused now."""
        try:
            value = int(label)
        except ValueError:
            return 0, (f"label {label[:20].decode('utf-8', 'replace')!r} is not an integer "
                       f"(CNTK: Cannot parse label value for sequence '{key}')")
        if value < 0:
            raise DataError(f"label {value} is negative", path, number)
        return value, None


def _byte_chunks(sizes: np.ndarray, limit: int) -> np.ndarray:
    """Sequences per chunk where lines of ``sizes`` bytes, one after the other, are cut into
    chunks as CNTK 2.7's text index cuts them (:func:`~stadyn.io._deserializer.byte_chunks`)."""
    ends = np.cumsum(sizes)
    return byte_chunks(ends - sizes, ends, limit)


class Base64ImageDeserializer(ImageDeserializer):
    """Images and labels from one text file, a line per image (CNTK's
    ``Base64ImageDeserializer``): ``[sequenceId<TAB>]label<TAB>base64 of the encoded image``.

    Args:
        filename: the file.
        streams: as for :class:`ImageDeserializer`: ``StreamDef(field='image',
            transforms=[...])`` and ``StreamDef(field='label', shape=num_classes)``.

    The images come out as an :class:`ImageDeserializer`'s (float32 ``(C, H, W)``, BGR), the
    labels one-hot. The file is indexed when the deserializer is made; a label outside the label
    stream's shape is refused when its chunk is first read (as CNTK 2.7 does), a line's image
    when it is read. A malformed line, a bad label or an image that is not base64 or not an
    image is an error naming the file and line.

    Example:
        >>> import base64, os, tempfile, numpy as np
        >>> from stadyn.io import StreamDef, StreamDefs, encode_image
        >>> p = os.path.join(tempfile.mkdtemp(), 'images.txt')
        >>> png = base64.b64encode(encode_image(np.full((2, 3, 3), 7, np.uint8))).decode()
        >>> _ = open(p, 'w').write(f'1\\t{png}\\n')
        >>> des = Base64ImageDeserializer(p, StreamDefs(
        ...     features=StreamDef(field='image'), labels=StreamDef(field='label', shape=2)))
        >>> s = des.read(0); s['features'].shape, s['labels'].tolist()
        ((3, 2, 3), [0.0, 1.0])
    """

    cntk_type = "Base64ImageDeserializer"   # (its configuration's, ``_settings.py``)

    @reader_errors
    def __init__(self, filename: str | os.PathLike, streams: dict[str, StreamDef] | None = None,
                 *, channel_order: str = "bgr"):
        self._given_file = os.fspath(filename)
        self.path = os.path.abspath(self._given_file)
        refuse_special_file(self.path, DataError)
        try:
            index = _Index(self.path)
        except FileNotFoundError:
            raise DataError("file does not exist", self.path) from None
        except IsADirectoryError:
            raise DataError("expected a base64 image file, found a folder", self.path) from None
        except OSError as exc:
            raise DataError(f"cannot read the file: {exc.strerror or exc}", self.path) from None
        self._table = index.table
        self._starts, self._sizes, self._line_bytes, self._blank_reads, self._counted = (
            np.asarray(v, dtype=np.int64) for v in (index.starts, index.sizes, index.line_bytes,
                                                    index.reads, index.counted))
        self._unreadable = index.unreadable
        if not len(self._table):
            raise DataError("no samples (the file is empty or holds only blank lines)",
                            self.path)
        self.class_names = None
        self._from_folder = False
        if streams is None:
            top = int(self._table.labels.max(initial=-1)) + 1
            streams = StreamDefs(features=StreamDef(field="image"),
                                 labels=StreamDef(field="label", shape=max(top, 1)))
        self._channel_order = channel_order
        self._configure(streams)
        self._h_zips = None
        self._h_file = None

    #: CNTK 2.7's chunk size for this file (its text index's 32 MiB; not configurable there)
    chunk_bytes = 32 * 1024 * 1024

    def chunk_sizes(self) -> np.ndarray:
        """CNTK 2.7's chunks: lines (each its bytes, end of line included) are added to a chunk
        while it stays within :attr:`chunk_bytes` (its text index, ``IndexBuilder.cpp``'s
        ``PopulateFromLines``); a multi-view transform makes each line that many sequences.

        Example:
            >>> import base64, os, tempfile
            >>> from stadyn.io import StreamDef, StreamDefs, encode_image
            >>> p = os.path.join(tempfile.mkdtemp(), 'images.txt')
            >>> png = base64.b64encode(encode_image(np.zeros((2, 2, 3), np.uint8))).decode()
            >>> _ = open(p, 'w').write(f'0\\t{png}\\n' * 5)
            >>> d = Base64ImageDeserializer(p, StreamDefs(f=StreamDef(field='image')))
            >>> d.chunk_sizes().tolist()
            [5]
            >>> d.chunk_bytes = 2 * (len(png) + 3); d.chunk_sizes().tolist()
            [2, 2, 1]
        """
        return _byte_chunks(self._line_bytes, self.chunk_bytes) * self._pipeline.views

    def counted_lengths(self) -> np.ndarray | None:
        """The lines of each sequence of a file with sequence ids, which CNTK 2.7 counts as
        its samples though it delivers one image (see :class:`_Index`); ``None`` where every
        sequence is one line.

        Example:
            >>> import base64, os, tempfile
            >>> from stadyn.io import StreamDef, StreamDefs, encode_image
            >>> p = os.path.join(tempfile.mkdtemp(), 'images.txt')
            >>> png = base64.b64encode(encode_image(np.zeros((2, 2, 3), np.uint8))).decode()
            >>> _ = open(p, 'w').write(''.join(f'{k}\\t0\\t{png}\\n' for k in (7, 7, 8)))
            >>> d = Base64ImageDeserializer(p, StreamDefs(f=StreamDef(field='image')))
            >>> len(d), d.keys(), d.counted_lengths().tolist()
            (2, ['7', '8'], [2, 1])
        """
        if not (self._counted > 1).any():
            return None
        return np.repeat(self._counted, self._pipeline.views)

    def _check_labels(self, start: int = 0, stop: int | None = None) -> None:
        # (CNTK 2.7 checks a line's label when it reads the line's chunk, at the first
        # minibatch that reads from it, Base64ImageDeserializer.cpp:87-89: read_batch)
        if stop is not None:
            super()._check_labels(start, stop)

    @reader_errors
    def read_batch(self, ids: Sequence[int],
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        """As :meth:`ImageDeserializer.read_batch`; the labels of each chunk read for the first
        time are checked first, as CNTK 2.7 checks them when it reads a chunk."""
        if self._label_stream is not None:
            self._check_chunk_labels(ids)
        self._check_blank_lines(ids)
        for entry in (np.asarray(ids, dtype=np.int64) // self._pipeline.views).tolist():
            if self._unreadable[entry] is not None:
                raise DataError(self._unreadable[entry], *self._where(entry))
        return super().read_batch(ids, rngs)

    def _cut(self) -> tuple[int, np.ndarray, set]:
        """(chunk size, the chunks' ends in sequences, the chunks whose labels are checked),
        kept for the chunk size they were cut with."""
        cut = self.__dict__.get("_chunk_ends")
        if cut is None or cut[0] != self.chunk_bytes:
            cut = self._chunk_ends = (
                self.chunk_bytes, np.cumsum(_byte_chunks(self._line_bytes, self.chunk_bytes)),
                set())
        return cut

    def _check_blank_lines(self, ids: Sequence[int]) -> None:
        """Refuse a blank line of a file without sequence ids when no image line follows it
        in its chunk: CNTK 2.7 reads its label from the lines after it within the chunk it
        read (``Base64ImageDeserializer.cpp`` ``GetSequence``: RuntimeError "Cannot parse
        label value for sequence ..."); one followed by an image line there reads that line."""
        entries = np.asarray(ids, dtype=np.int64) // self._pipeline.views
        reads = self._blank_reads[entries]
        if not (reads >= 0).any():
            return
        ends = self._cut()[1]
        for entry, target in zip(entries[reads >= 0].tolist(), reads[reads >= 0].tolist()):
            if target >= len(self._table) or np.searchsorted(ends, target, side="right") != \
                    np.searchsorted(ends, entry, side="right"):
                raise DataError("cannot parse a label value: the line is blank and no image "
                                "line follows it in its chunk (CNTK 2.7 reads a blank line as "
                                "a sequence with the label and image of the next line in its "
                                "chunk)", *self._where(entry))

    def _check_chunk_labels(self, ids: Sequence[int]) -> None:
        """Check the labels of the chunks of ``ids`` not checked yet."""
        _, ends, checked = self._cut()
        if len(checked) == len(ends):
            return
        entries = np.asarray(ids, dtype=np.int64) // self._pipeline.views
        for chunk in np.unique(np.searchsorted(ends, entries, side="right")).tolist():
            if chunk not in checked:
                self._check_labels(int(ends[chunk - 1]) if chunk else 0, int(ends[chunk]))
                checked.add(chunk)

    def leaving_out_invalid(self) -> "Base64ImageDeserializer":
        """A copy that leaves an image it cannot decode out of its batch with a warning (CNTK
        2.7's ``SequenceCleaner``), for a source that counts them; this one still raises.

        Example:
            >>> import base64, os, tempfile
            >>> from stadyn.io import StreamDef, StreamDefs
            >>> p = os.path.join(tempfile.mkdtemp(), 'images.txt')
            >>> _ = open(p, 'w').write('0\\t' + base64.b64encode(b'no image').decode() + '\\n')
            >>> d = Base64ImageDeserializer(p, StreamDefs(f=StreamDef(field='image')))
            >>> d.leaving_out_invalid().skips_undecodable, d.skips_undecodable
            (True, False)
        """
        out = copy.copy(self)       # (its open files are not shared: ``__getstate__``)
        out.skips_undecodable = True
        return out

    def _read_bytes(self, entry: int) -> bytes:
        if self._h_file is None:
            try:
                self._h_file = open(self.path, "rb")
            except OSError as exc:
                raise ImageReadError(f"cannot open the file: {exc.strerror or exc}") from None
        size = int(self._sizes[entry])
        text = os.pread(self._h_file.fileno(), size, int(self._starts[entry]))
        if len(text) != size:
            raise ImageReadError("the file changed since it was indexed (it is shorter)")
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ImageReadError(f"the image is not valid base64 ({exc})") from None

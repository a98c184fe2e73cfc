"""Base64ImageDeserializer: images stored inside the map file, base64-encoded."""

from __future__ import annotations

import base64
import binascii
import copy
import os

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


def _index(path: str) -> tuple[MapTable, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(table of keys, labels and lines; byte offset and length of each line's image text;
    bytes of each sequence, its end of line included; for a sequence that is a blank line, the
    sequence whose label and image it reads, else -1).

    Blank lines (only white space) are indexed as CNTK 2.7's text index
    (``IndexBuilder.cpp``) indexes them: before the first line they are skipped; in a file with
    sequence ids a sequence runs to the next line starting with an id (``PopulateImpl``), so a
    blank line's bytes count into the sequence before it; without ids every line is a sequence
    (``PopulateFromLines``), and a blank one reads the label and image of the next line, as
    ``strtoull`` skips white space (``Base64ImageDeserializer.cpp``, ``GetSequence``)."""
    table = MapTable(path)
    starts, sizes, labels, lines, line_bytes, reads = [], [], [], [], [], []
    with_ids = None
    waiting: list[int] = []     # (blank sequences of a file without ids, before their line)
    with open(path, "rb") as f:
        offset = 0
        for number, raw in enumerate(f, 1):
            here, offset = offset, offset + len(raw)
            line = raw.rstrip(b"\r\n")
            if not line.strip():
                if with_ids:
                    line_bytes[-1] += len(raw)
                elif with_ids is not None:
                    waiting.append(len(starts))
                    starts.append(0)
                    sizes.append(0)
                    line_bytes.append(len(raw))
                    labels.append(0)
                    lines.append(number)
                    reads.append(-1)
                    table.keys.append(None)
                    table.paths.append(f"line {number}")
                    table.members.append(None)
                continue
            fields = line.split(b"\t")
            if len(fields) == 2:
                key, label, data = None, fields[0], fields[1]
            elif len(fields) == 3:
                key, label, data = fields
            else:
                raise DataError(f"expected [sequenceId<TAB>]label<TAB>base64 image, found "
                                f"{len(fields)} tab-separated fields", path, number)
            if with_ids is None:
                with_ids = key is not None
            try:
                value = int(label)
            except ValueError:
                raise DataError(f"label {label[:20].decode('utf-8', 'replace')!r} is not an "
                                f"integer", path, number) from None
            if value < 0:
                raise DataError(f"label {value} is negative", path, number)
            if not data.strip():
                raise DataError("the image field is empty", path, number)
            skip = len(line) - len(data)
            for blank in waiting:
                starts[blank], sizes[blank] = here + skip, len(data)
                labels[blank], reads[blank] = value, len(starts)
            waiting.clear()
            starts.append(here + skip)
            sizes.append(len(data))
            line_bytes.append(len(raw))
            labels.append(value)
            lines.append(number)
            reads.append(-1)
            table.keys.append(None if key is None else key.decode("utf-8", "replace"))
            table.paths.append(f"line {number}")
            table.members.append(None)
    for blank in waiting:       # (blank lines at the end: nothing after them to read)
        reads[blank] = len(starts)
    table.labels = np.asarray(labels, dtype=np.int64)
    table.lines = np.asarray(lines, dtype=np.int64)
    return (table, np.asarray(starts, dtype=np.int64), np.asarray(sizes, dtype=np.int64),
            np.asarray(line_bytes, dtype=np.int64), np.asarray(reads, dtype=np.int64))


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
            (self._table, self._starts, self._sizes, self._line_bytes,
             self._blank_reads) = _index(self.path)
        except FileNotFoundError:
            raise DataError("file does not exist", self.path) from None
        except IsADirectoryError:
            raise DataError("expected a base64 image file, found a folder", self.path) from None
        except OSError as exc:
            raise DataError(f"cannot read the file: {exc.strerror or exc}", self.path) from None
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

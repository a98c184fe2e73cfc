"""MXNet RecordIO: ``.rec`` framing, ``.idx`` indexes, image records (IRHeader), ``.lst`` lists.

The format, byte for byte (docs/recordio.md has a worked example):

- a record is written as parts ``[magic u32][lrec u32][payload][zero padding to 4 bytes]``,
  little-endian, ``magic = 0xCED7230A``, ``lrec = cflag << 29 | length``;
- the writer looks for the magic's 4 bytes at 4-byte-aligned offsets of the payload only; each
  one found ends a part there (cflag 1 for the first part, 2 after) and is dropped; the rest is
  the last part (cflag 3), or the only part (cflag 0) when none was found;
- the reader joins the parts, putting the magic back between them;
- an ``.idx`` line is ``key<TAB>offset``, offset = the byte position of the record's first magic;
- an image record payload is ``struct.pack('<IfQQ', flag, label, id, id2)``, then ``flag``
  float32 labels when ``flag > 0`` (the header label is then 0), then the encoded image.
"""

from __future__ import annotations

import io
import os
import struct
from collections import namedtuple
from dataclasses import dataclass
from typing import BinaryIO, Iterator, Sequence

import numpy as np

from .._errors import DataError
from .._fileutil import refuse_special_file
from ._files import AtomicFile, atomic_write
from ._image import ImageReadError, decode_image, encode_image

__all__ = ["MAGIC", "RecordIOWriter", "RecordIOReader", "IndexedRecordIO", "IRHeader",
           "pack_image_record", "unpack_image_record", "pack_image", "unpack_image",
           "read_idx_file", "write_idx_file", "ListEntry", "read_list_file", "write_list_file",
           "frame_record"]

MAGIC = 0xCED7230A
MAGIC_BYTES = struct.pack("<I", MAGIC)
_LENGTH_MASK = (1 << 29) - 1
_MAX_OFFSET = (1 << 63) - 1           # the largest file offset the system can seek to
_IR_FORMAT = "<IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)

IRHeader = namedtuple("IRHeader", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """Header of an MXNet image record: ``flag`` (number of labels that follow, 0 for
one label held in ``label``), ``label`` (float, or an array when ``flag > 0``), ``id``, ``id2``."""


def _part(cflag: int, payload: bytes) -> bytes:
    length = len(payload)
    return (struct.pack("<II", MAGIC, (cflag << 29) | length) + payload
            + b"\x00" * (((length + 3) & ~3) - length))


def frame_record(payload: bytes) -> bytes:
    """The exact bytes the RecordIO writer emits for one record.

    Example:
        >>> frame_record(b'abcde').hex(' ')
        '0a 23 d7 ce 05 00 00 00 61 62 63 64 65 00 00 00'
    """
    payload = bytes(payload)
    if len(payload) > _LENGTH_MASK:
        raise ValueError(f"a record holds at most {_LENGTH_MASK} bytes, got {len(payload)}")
    parts = []
    start = 0
    hit = payload.find(MAGIC_BYTES)
    while hit >= 0:
        if hit % 4 == 0:
            parts.append(_part(1 if start == 0 else 2, payload[start:hit]))
            start = hit + 4
            hit = payload.find(MAGIC_BYTES, start)
        else:
            hit = payload.find(MAGIC_BYTES, hit + 1)
    parts.append(_part(3 if parts else 0, payload[start:]))
    return b"".join(parts)


class RecordIOWriter:
    """Write records to a ``.rec`` file (MXNet's ``MXRecordIO(path, 'w')``).

    A path is written under a temporary name and renamed when the writer is closed; leaving a
    ``with`` block by an exception deletes it. A binary file object is written as is.

    Example:
        >>> buf = io.BytesIO()
        >>> with RecordIOWriter(buf) as w:
        ...     w.write(b'first'), w.write(b'second')
        (0, 16)
        >>> [r for r in RecordIOReader(io.BytesIO(buf.getvalue()))]
        [b'first', b'second']
    """

    def __init__(self, file: str | os.PathLike | BinaryIO):
        if isinstance(file, (str, os.PathLike)):
            self._atomic: AtomicFile | None = AtomicFile(file)
            self._file: BinaryIO = self._atomic.file
        else:
            self._atomic = None
            self._file = file
        self._closed = False

    def tell(self) -> int:
        return self._file.tell()

    def write(self, payload: bytes) -> int:
        """Append one record; returns the byte offset where it starts (for the index)."""
        offset = self._file.tell()
        self._file.write(frame_record(payload))
        return offset

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._atomic is not None:
                self._atomic.commit()

    def discard(self) -> None:
        """Abandon the output (a path is deleted)."""
        if not self._closed:
            self._closed = True
            if self._atomic is not None:
                self._atomic.discard()

    def __enter__(self) -> "RecordIOWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()


class RecordIOReader:
    """Read records from a ``.rec`` file or a binary file object.

    Errors (bad magic, a truncated part, a broken multi-part record) are DataErrors that name the
    file and the record number counted from where reading started.

    Example:
        >>> data = frame_record(b'one') + frame_record(b'tw\\x0a\\x23\\xd7\\xce')
        >>> reader = RecordIOReader(io.BytesIO(data), 'demo.rec')
        >>> reader.read(), reader.read(), reader.read()
        (b'one', b'tw\\n#\\xd7\\xce', None)
        >>> RecordIOReader(io.BytesIO(data[:-3]), 'demo.rec').scan_offsets()
        Traceback (most recent call last):
        ...
        stadyn._errors.DataError: demo.rec (record 1): truncated: a part of 6 bytes runs past ...
    """

    def __init__(self, file: str | os.PathLike | BinaryIO, name: str | None = None):
        if isinstance(file, (str, os.PathLike)):
            self.path = os.fspath(file)
            refuse_special_file(self.path, DataError)
            try:
                self._file: BinaryIO = open(self.path, "rb")
            except FileNotFoundError:
                raise DataError("RecordIO file does not exist", self.path) from None
            except OSError as exc:
                raise DataError(f"cannot open: {exc.strerror or exc}", self.path) from None
            self._owns = True
        else:
            self.path = name or getattr(file, "name", None) or "<stream>"
            self._file = file
            self._owns = False
        self.record = 0

    def tell(self) -> int:
        return self._file.tell()

    def seek(self, offset: int, record: int | None = None) -> None:
        """Move to a record's first magic (from an index); ``record`` numbers it in errors."""
        self._file.seek(offset)
        self.record = record if record is not None else 0

    def _fail(self, message: str, offset: int) -> DataError:
        return DataError(f"{message} (byte offset {offset})", self.path, record=self.record)

    def read(self) -> bytes | None:
        """The next record, or None at the end of the file."""
        parts: list[bytes] = []
        first = True
        while True:
            offset = self._file.tell()
            head = self._file.read(8)
            if not head and first:
                return None
            if len(head) < 8:
                raise self._fail("truncated: the file ends inside a record header", offset)
            magic, lrec = struct.unpack("<II", head)
            if magic != MAGIC:
                raise self._fail(f"bad magic 0x{magic:08x} (expected 0x{MAGIC:08x}): not a "
                                 f"RecordIO file, or a corrupt one", offset)
            cflag, length = lrec >> 29, lrec & _LENGTH_MASK
            if first and cflag not in (0, 1):
                raise self._fail(f"a record starts with a continuation part (cflag {cflag})",
                                 offset)
            if not first and cflag not in (2, 3):
                raise self._fail(f"a multi-part record is cut short by a new record (cflag "
                                 f"{cflag})", offset)
            padded = (length + 3) & ~3
            left = self._left(padded)
            data = self._file.read(padded) if left is None else b""
            if len(data) < padded:
                raise self._fail(f"truncated: a part of {length} bytes has only "
                                 f"{len(data) if left is None else left} left in the file",
                                 offset)
            parts.append(data[:length])
            if cflag in (0, 3):
                break
            parts.append(MAGIC_BYTES)
            first = False
        self.record += 1
        return b"".join(parts)

    def _left(self, count: int) -> int | None:
        """The bytes left in the file when they are fewer than ``count``, else None. A header can
        declare 512 MB in a file of 16 bytes: ``read`` would allocate all of it first."""
        if count <= 1 << 16:
            return None
        try:
            left = self._size() - self._file.tell()
        except (OSError, ValueError, io.UnsupportedOperation):
            return None                      # a stream that cannot tell: read what comes
        return left if left < count else None

    def read_at(self, offset: int, record: int | None = None,
                index: tuple[str, int, object] | None = None) -> bytes:
        """The record whose first magic is at ``offset``.

        ``index`` is ``(idx file, line, key)`` when the offset came from an index: if no record
        starts at ``offset``, the error then names that index line rather than this file.
        """
        self.seek(offset, record)
        try:
            data = self.read()
        except DataError:
            problem = None if index is None else self._no_record_at(offset)
            if problem is None:
                raise
            raise self._bad_index(index, offset, problem) from None
        if data is None:
            if index is not None:
                raise self._bad_index(index, offset, f"the file has {self._size()} bytes")
            raise DataError(f"no record at byte offset {offset}: the file ends there", self.path,
                            record=record)
        return data

    def _no_record_at(self, offset: int) -> str | None:
        """Why no record starts at ``offset`` (None when a record's first header is there)."""
        self._file.seek(offset)
        head = self._file.read(8)
        if len(head) < 8:
            return None  # a truncated file: the reader's own error says so
        magic, lrec = struct.unpack("<II", head)
        if magic != MAGIC:
            return f"bad magic 0x{magic:08x} there"
        if lrec >> 29 not in (0, 1):
            return f"the middle of a multi-part record (cflag {lrec >> 29}) is there"
        return None

    def _bad_index(self, index: tuple[str, int, object], offset: int, problem: str) -> DataError:
        idx_path, line, key = index
        return DataError(f"offset {offset} (key {key}) points at no record of {self.path} "
                         f"({problem}): a wrong or stale index", idx_path, line)

    def __iter__(self) -> Iterator[bytes]:
        while True:
            data = self.read()
            if data is None:
                return
            yield data

    def scan_offsets(self) -> list[int]:
        """Byte offsets of every record from the current position (reads headers only)."""
        offsets = []
        size = self._size()
        while self._file.tell() < size:
            offsets.append(self._file.tell())
            self._skip_record(size)
        return offsets

    def _size(self) -> int:
        here = self._file.tell()
        size = self._file.seek(0, io.SEEK_END)
        self._file.seek(here)
        return size

    def _skip_record(self, size: int) -> None:
        first = True
        while True:
            offset = self._file.tell()
            head = self._file.read(8)
            if len(head) < 8:
                raise self._fail("truncated: the file ends inside a record header", offset)
            magic, lrec = struct.unpack("<II", head)
            if magic != MAGIC:
                raise self._fail(f"bad magic 0x{magic:08x} (expected 0x{MAGIC:08x})", offset)
            cflag, length = lrec >> 29, lrec & _LENGTH_MASK
            if (first and cflag not in (0, 1)) or (not first and cflag not in (2, 3)):
                raise self._fail(f"unexpected part (cflag {cflag})", offset)
            end = offset + 8 + ((length + 3) & ~3)
            if end > size:
                raise self._fail(f"truncated: a part of {length} bytes runs past the end of the "
                                 f"file", offset)
            self._file.seek(end)
            if cflag in (0, 3):
                break
            first = False
        self.record += 1

    def seek_to_next_record(self, offset: int) -> int:
        """Move to the first record that starts at or after ``offset`` (how a byte range of a
        sharded file finds its first record): the next 4-byte-aligned word equal to the magic
        whose cflag is 0 or 1. Returns the new position (the file size when there is none)."""
        base = (offset + 3) & ~3
        self._file.seek(base)
        window = b""
        while True:
            chunk = self._file.read(1 << 16)
            window += chunk
            hit = window.find(MAGIC_BYTES)
            while 0 <= hit and hit + 8 <= len(window):
                if hit % 4 == 0 and struct.unpack_from("<I", window, hit + 4)[0] >> 29 in (0, 1):
                    self._file.seek(base + hit)
                    return base + hit
                hit = window.find(MAGIC_BYTES, hit + 1)
            if not chunk:
                self._file.seek(base + len(window))
                return base + len(window)
            keep = max(0, len(window) - 8) & ~3   # a candidate may straddle the next read
            base += keep
            window = window[keep:]

    def close(self) -> None:
        if self._owns:
            self._file.close()

    def __enter__(self) -> "RecordIOReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _parse_key(text: str, key_type: type) -> object:
    return key_type(text)


def read_idx_file(path: str | os.PathLike, key_type: type = int) -> list[tuple[object, int]]:
    """(key, byte offset) pairs of an ``.idx`` file, in file order.

    Example:
        >>> import tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), 'a.idx')
        >>> write_idx_file(p, [(0, 0), (1, 1856)])
        >>> read_idx_file(p)
        [(0, 0), (1, 1856)]
    """
    return [(key, offset) for key, offset, _ in read_idx_entries(path, key_type)]


def read_idx_entries(path: str | os.PathLike,
                     key_type: type = int) -> list[tuple[object, int, int]]:
    """(key, byte offset, 1-based line) of every entry of an ``.idx`` file, in file order."""
    path = os.fspath(path)
    refuse_special_file(path, DataError)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise DataError("index file does not exist", path) from None
    except OSError as exc:
        raise DataError(f"cannot read the index file: {exc.strerror or exc}", path) from None
    return _parse_idx(data, path, key_type)


def parse_idx_text(data: bytes, path: str, key_type: type = int) -> list[tuple[object, int]]:
    """Parse ``.idx`` content; a malformed line is a DataError naming ``path`` and the line."""
    return [(key, offset) for key, offset, _ in _parse_idx(data, path, key_type)]


def _parse_idx(data: bytes, path: str, key_type: type) -> list[tuple[object, int, int]]:
    items = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        line = raw.strip()
        if not line:
            continue
        fields = line.split(b"\t")
        if len(fields) != 2:
            raise DataError("expected 'key<TAB>offset'", path, number)
        try:
            key = _parse_key(fields[0].decode("utf-8").strip(), key_type)
            text = fields[1].decode("ascii").strip()
            if not text.isdigit():
                raise ValueError(text)
            offset = int(text)
        except (ValueError, UnicodeDecodeError):
            raise DataError(f"expected 'key<TAB>offset' with an integer offset, found "
                            f"{line[:60]!r}", path, number) from None
        if offset > _MAX_OFFSET:
            raise DataError(f"offset {text[:40]} is past any file (the largest offset is "
                            f"{_MAX_OFFSET})", path, number)
        items.append((key, offset, number))
    return items


def write_idx_file(path: str | os.PathLike, items: Sequence[tuple[object, int]]) -> None:
    """Write ``key<TAB>offset`` lines (whole or not at all)."""
    atomic_write(path, "".join(f"{key}\t{int(offset)}\n" for key, offset in items))


class IndexedRecordIO:
    """A ``.rec`` file with its ``.idx`` (MXNet's ``MXIndexedRecordIO``): records by key.

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> with IndexedRecordIO(os.path.join(d, 'a.idx'), os.path.join(d, 'a.rec'), 'w') as w:
        ...     for k in range(3):
        ...         w.write_idx(k, b'record %d' % k)
        >>> r = IndexedRecordIO(os.path.join(d, 'a.idx'), os.path.join(d, 'a.rec'), 'r')
        >>> r.keys, r.read_idx(2)
        ([0, 1, 2], b'record 2')
    """

    def __init__(self, idx_path: str | os.PathLike, rec_path: str | os.PathLike, flag: str = "r",
                 key_type: type = int):
        self.idx_path, self.rec_path = os.fspath(idx_path), os.fspath(rec_path)
        self.flag = flag
        self.key_type = key_type
        self.idx: dict[object, int] = {}
        self.keys: list[object] = []
        self._positions: dict[object, tuple[int, int]] = {}  # key -> (record, idx line)
        if flag == "r":
            for position, (key, offset, line) in enumerate(read_idx_entries(self.idx_path,
                                                                            key_type)):
                self.idx[key] = offset
                self._positions[key] = (position, line)
                self.keys.append(key)
            self._reader: RecordIOReader | None = RecordIOReader(self.rec_path)
            self._writer: RecordIOWriter | None = None
        elif flag == "w":
            self._reader = None
            self._writer = RecordIOWriter(self.rec_path)
        else:
            raise ValueError(f"flag must be 'r' or 'w', got {flag!r}")

    def __len__(self) -> int:
        return len(self.keys)

    def read_idx(self, key: object) -> bytes:
        """The record stored under ``key``."""
        if self._reader is None:
            raise ValueError("this IndexedRecordIO was opened for writing")
        if key not in self.idx:
            raise KeyError(key)
        record, line = self._positions[key]
        return self._reader.read_at(self.idx[key], record, (self.idx_path, line, key))

    def write_idx(self, key: object, payload: bytes) -> None:
        """Append a record and index it under ``key``."""
        if self._writer is None:
            raise ValueError("this IndexedRecordIO was opened for reading")
        key = self.key_type(key)
        self.idx[key] = self._writer.write(payload)
        self.keys.append(key)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            write_idx_file(self.idx_path, [(k, self.idx[k]) for k in self.keys])
            self._writer = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def __enter__(self) -> "IndexedRecordIO":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and self._writer is not None:
            self._writer.discard()
            self._writer = None
        self.close()


def pack_image_record(header: IRHeader | tuple, data: bytes) -> bytes:
    """An image-record payload: IRHeader, extra labels, then ``data`` (MXNet's ``pack``).

    A number as ``header.label`` is stored in the header with flag 0; a sequence of labels sets
    flag to their count, the header label to 0, and follows the header as float32.

    Example:
        >>> pack_image_record(IRHeader(0, 3.0, 7, 0), b'IMG').hex(' ')
        '00 00 00 00 00 00 40 40 07 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 49 4d 47'
        >>> unpack_image_record(pack_image_record(IRHeader(0, [1, 2], 7, 0), b'IMG'))[0].flag
        2
    """
    header = IRHeader(*header)
    if isinstance(header.label, (int, float, np.number)):
        head = struct.pack(_IR_FORMAT, 0, float(header.label), int(header.id), int(header.id2))
        return head + bytes(data)
    labels = np.asarray(header.label, dtype="<f4").reshape(-1)
    head = struct.pack(_IR_FORMAT, labels.size, 0.0, int(header.id), int(header.id2))
    return head + labels.tobytes() + bytes(data)


def unpack_image_record(payload: bytes, path: str = "<record>",
                        record: int | None = None) -> tuple[IRHeader, bytes]:
    """(IRHeader, image bytes) of an image-record payload; with ``flag > 0`` the header's label
    is a float32 array of ``flag`` labels. A payload too short is a DataError."""
    if len(payload) < _IR_SIZE:
        raise DataError(f"image record of {len(payload)} bytes is shorter than its "
                        f"{_IR_SIZE}-byte header", path, record=record)
    flag, label, rid, rid2 = struct.unpack_from(_IR_FORMAT, payload)
    rest = payload[_IR_SIZE:]
    if flag > 0:
        if len(rest) < 4 * flag:
            raise DataError(f"image record says it holds {flag} labels but has only "
                            f"{len(rest)} bytes after its header", path, record=record)
        label = np.frombuffer(rest, dtype="<f4", count=flag).astype(np.float32)
        rest = rest[4 * flag:]
    return IRHeader(flag, label, rid, rid2), rest


def pack_image(header: IRHeader | tuple, image: np.ndarray, quality: int = 95,
               img_fmt: str = ".jpg") -> bytes:
    """Encode an (H, W, C) BGR uint8 image with OpenCV and pack it (MXNet's ``pack_img``)."""
    return pack_image_record(header, encode_image(image, img_fmt, quality))


def unpack_image(payload: bytes, channels: int = 3, path: str = "<record>",
                 record: int | None = None) -> tuple[IRHeader, np.ndarray]:
    """(IRHeader, decoded (H, W, C) BGR uint8 image) of an image record."""
    header, data = unpack_image_record(payload, path, record)
    try:
        return header, decode_image(data, channels)
    except ImageReadError as exc:
        raise DataError(f"image record: {exc}", path, record=record) from None


@dataclass(frozen=True)
class ListEntry:
    """One line of an im2rec ``.lst`` file."""

    index: int
    labels: tuple[float, ...]
    path: str


def _format_label(value: float) -> str:
    return f"{value:f}"


def write_list_file(path: str | os.PathLike, entries: Sequence[ListEntry]) -> None:
    """Write ``index<TAB>label[<TAB>label...]<TAB>path`` lines, labels as ``%f`` (as im2rec)."""
    lines = []
    for e in entries:
        if "\t" in e.path or "\n" in e.path:
            raise ValueError(f"path {e.path!r} cannot be written in a list file")
        labels = "".join(_format_label(v) + "\t" for v in e.labels)
        lines.append(f"{int(e.index)}\t{labels}{e.path}\n")
    atomic_write(path, "".join(lines))


def read_list_file(path: str | os.PathLike) -> list[ListEntry]:
    """Read an im2rec ``.lst`` file; a malformed line is a DataError naming the line (an index
    that an image record header cannot hold, 0 to 2**64 - 1, a path with a NUL byte)."""
    path = os.fspath(path)
    refuse_special_file(path, DataError)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise DataError("list file does not exist", path) from None
    except OSError as exc:
        raise DataError(f"cannot read the list file: {exc.strerror or exc}", path) from None
    entries = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise DataError("not UTF-8 text", path, number) from None
        if not line:
            continue
        fields = [f.strip() for f in line.split("\t")]
        if len(fields) < 3:
            raise DataError("expected 'index<TAB>label[<TAB>label...]<TAB>path'", path, number)
        try:
            index = int(fields[0])
            labels = tuple(float(v) for v in fields[1:-1])
        except ValueError:
            raise DataError(f"index must be an integer and labels numbers: {line[:60]!r}", path,
                            number) from None
        if not 0 <= index < 1 << 64:
            raise DataError(f"index {index} is outside 0..2**64-1 (an image record's id)", path,
                            number)
        if "\x00" in fields[-1]:
            raise DataError(f"image path {fields[-1][:80]!r} holds a NUL byte", path, number)
        entries.append(ListEntry(index, labels, fields[-1]))
    return entries

"""MXNet RecordIO: ``.rec`` framing, read and written (:mod:`._recordio_index`: ``.idx`` indexes;
:mod:`._recordio_images`: image records, IRHeader, ``.lst`` lists).

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
from typing import BinaryIO, Iterator


from .._errors import DataError
from .._fileutil import refuse_special_file
from ._files import AtomicFile

__all__ = ["MAGIC", "RecordIOWriter", "RecordIOReader", "frame_record"]

MAGIC = 0xCED7230A
MAGIC_BYTES = struct.pack("<I", MAGIC)
_LENGTH_MASK = (1 << 29) - 1


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

"""MXNet RecordIO's ``.idx`` indexes (a line ``key<TAB>offset``, the offset of the record's
first magic) and :class:`IndexedRecordIO`, a ``.rec`` file read and written by key
(:mod:`._recordio` has the format)."""

from __future__ import annotations

import os
from typing import Sequence

from .._errors import DataError
from ._files import atomic_write, read_data_file
from ._recordio import RecordIOReader, RecordIOWriter

__all__ = ["read_idx_file", "read_idx_entries", "parse_idx_text", "write_idx_file",
           "IndexedRecordIO"]

_MAX_OFFSET = (1 << 63) - 1           # the largest file offset the system can seek to


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
    return _parse_idx(read_data_file(path, "index file"), path, key_type)


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

"""Output files that are never half-written: write beside the target, then rename over it."""

from __future__ import annotations

import os
import tempfile
from typing import BinaryIO

from .._fileutil import atomic_write as write_atomically

__all__ = ["AtomicFile", "atomic_write"]


class AtomicFile:
    """A binary file written under a temporary name in the target's folder.

    :meth:`commit` renames it to the target (``os.replace``); :meth:`discard` (or leaving a
    ``with`` block by an exception) deletes it, so a reader never sees a partial file.

    Example:
        >>> import tempfile, os
        >>> target = os.path.join(tempfile.mkdtemp(), 'out.bin')
        >>> with AtomicFile(target) as f:
        ...     _ = f.write(b'abc')
        >>> open(target, 'rb').read()
        b'abc'
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, self.tmp_path = tempfile.mkstemp(prefix="." + os.path.basename(self.path) + ".",
                                             suffix=".tmp", dir=folder)
        self.file: BinaryIO = os.fdopen(fd, "wb")

    def write(self, data: bytes) -> int:
        return self.file.write(data)

    def tell(self) -> int:
        return self.file.tell()

    def commit(self) -> None:
        if self.file.closed and not os.path.exists(self.tmp_path):
            return
        self.file.close()
        os.replace(self.tmp_path, self.path)

    def discard(self) -> None:
        self.file.close()
        if os.path.exists(self.tmp_path):
            os.unlink(self.tmp_path)

    def __enter__(self) -> "AtomicFile":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


def atomic_write(path: str | os.PathLike, data: bytes | str) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` whole or not at all."""
    payload = data.encode("utf-8") if isinstance(data, str) else data

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(payload)

    write_atomically(path, write)

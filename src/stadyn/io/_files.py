"""Whole files in and out: output files that are never half-written (write beside the target,
then rename over it), and input files read at once with their errors as a DataError naming
them."""

from __future__ import annotations

import os
from typing import BinaryIO

from .._errors import DataError
from .._fileutil import atomic_write as write_atomically
from .._fileutil import check_writable, make_temp, publish, refuse_special_file

__all__ = ["AtomicFile", "atomic_write", "read_data_file", "read_text_file"]


class AtomicFile:
    """A binary file written under a temporary name in the target's folder.

    :meth:`commit` flushes it to the disk, gives it the permissions of the file it replaces (for a
    new file those ``open(path, 'wb')`` would give: ``0o666`` less the umask) and renames it to
    the target (``os.replace``); :meth:`discard` (or leaving a ``with`` block by an exception)
    deletes it, so a reader never sees a partial file.  A failed write, flush or commit (a full
    disk) deletes it too, even when closing the file fails again.  The temporary name is short
    whatever the target's (see :mod:`stadyn._fileutil`).
    A missing folder (FileNotFoundError) or a folder at the target (IsADirectoryError) is an error
    naming the target, raised before anything is written.  ``sync=False`` skips the flush to
    the disk (a few ms per file) for tools that write many small files and flush them all at
    once (:func:`os.sync`) before the index that lists them.

    Example:
        >>> import tempfile, os
        >>> target = os.path.join(tempfile.mkdtemp(), 'out.bin')
        >>> with AtomicFile(target) as f:
        ...     _ = f.write(b'abc')
        >>> open(target, 'rb').read()
        b'abc'
    """

    def __init__(self, path: str | os.PathLike, sync: bool = True):
        self.path = os.fspath(path)
        self.sync = sync
        folder = check_writable(self.path)
        fd, self.tmp_path = make_temp(folder, os.path.splitext(self.path)[1])
        self.file: BinaryIO = os.fdopen(fd, "wb")

    def write(self, data: bytes) -> int:
        return self.file.write(data)

    def tell(self) -> int:
        return self.file.tell()

    def commit(self) -> None:
        if self.file.closed and not os.path.exists(self.tmp_path):
            return
        try:
            if not self.file.closed:
                self.file.flush()
                if self.sync:
                    os.fsync(self.file.fileno())     # the data is on disk before the rename
                self.file.close()
            publish(self.tmp_path, self.path)
        except BaseException:
            self.discard()
            raise

    def discard(self) -> None:
        """Delete the temporary file (closing it may fail again, as a full disk does: the
        buffered data cannot be flushed; the file is deleted all the same)."""
        try:
            self.file.close()
        except OSError:
            pass
        finally:
            try:
                os.unlink(self.tmp_path)
            except FileNotFoundError:
                pass

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


def read_data_file(path: str, what: str) -> bytes:
    """The bytes of the ``what`` (``"index file"``) at ``path``; a special file, a missing one
    or one that cannot be read is a DataError naming ``path``.

    Example:
        >>> try:
        ...     read_data_file('/no/such.idx', 'index file')
        ... except DataError as e:
        ...     print(e)
        /no/such.idx: index file does not exist
    """
    refuse_special_file(path, DataError)
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise DataError(f"{what} does not exist", path) from None
    except IsADirectoryError:
        raise DataError(f"expected a {what}, found a folder", path) from None
    except OSError as exc:
        raise DataError(f"cannot read the {what}: {exc.strerror or exc}", path) from None


def read_text_file(path: str, what: str) -> str:
    """The UTF-8 text of the ``what`` (``"label mapping file"``) at ``path``, its line ends
    ``\\n`` as Python's text mode reads them (``\\r\\n`` and ``\\r`` too): the errors of
    :func:`read_data_file`, and a DataError naming ``path`` for bytes that are not UTF-8.

    Example:
        >>> import os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), 'labels.txt')
        >>> _ = open(p, 'wb').write(b'a\\xff\\n')
        >>> try:
        ...     read_text_file(p, 'label mapping file')
        ... except DataError as e:
        ...     print(str(e).replace(p, 'labels.txt'))
        labels.txt: label mapping file is not UTF-8 text: invalid start byte
    """
    data = read_data_file(path, what)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{what} is not UTF-8 text: {exc.reason}", path) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")

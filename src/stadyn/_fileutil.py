"""Writing files safely: a temporary name in the same folder, flushed to disk, then an atomic
rename."""

from __future__ import annotations

import os
import tempfile
from typing import Callable

__all__ = ["atomic_write", "check_writable", "fsync_path", "publish"]


def check_writable(path: str | os.PathLike) -> str:
    """Raise a clear error, naming ``path``, when a file cannot be written there: its folder is
    missing or ``path`` is a folder.  Returns the absolute folder."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot write {path}: folder {folder} does not exist")
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot write {path}: it is a folder")
    return folder


def fsync_path(path: str | os.PathLike) -> None:
    """Flush a file's (or a folder's) data to the disk; a no-op where the system cannot."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def publish(tmp: str, path: str) -> None:
    """Give the finished temporary file ``tmp`` the permissions ``open(path, 'w')`` would
    (``0o666`` less the umask: ``mkstemp`` made it owner-only, and files are not secrets) and
    rename it over ``path``."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, path)


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)`` and move the result over ``path`` only if it succeeded.

    A crash, an exception or a power loss never leaves a half-written ``path``: the data reaches
    the disk before the rename, and the old file (if any) stays until the new one is complete.
    A missing folder, or a folder at ``path``, is an error that names ``path`` before anything
    is written.

    Example:
        >>> import os, pathlib, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
        >>> atomic_write(path, lambda tmp: pathlib.Path(tmp).write_text("hello"))
        >>> open(path).read()
        'hello'
    """
    path = os.fspath(path)
    folder = check_writable(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix="-" + os.path.basename(path), dir=folder)
    os.close(fd)
    try:
        write(tmp)
        fsync_path(tmp)
        publish(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_path(folder)                       # the rename itself

"""Files, safely: writes go to a temporary name in the target's folder, reach the disk and are
renamed over the target; reads refuse files that would block or never end.

Temporary files are named ``.tmp-stadyn-HOST-BOOT-PID-RANDOM[.ext]``: a bounded length whatever
the target's name (a 255-byte target name still works), the target's extension kept (libraries
that pick a format by extension see the same one), and the owner recognisable.  A process killed
while writing (``kill -9``, a power loss) leaves its temporary file behind; the first atomic
write of a later process into the same folder removes every such file whose owner is gone: same
host (``HOST``, a hash of the host name), and an earlier boot (``BOOT``, a hash of the kernel's
boot id) or a process id that no longer runs.  A file of another host (a shared network folder)
is never touched.

This module is a leaf: it imports nothing from Stadyn, so any layer may use it.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import secrets
import socket
import stat
from typing import Callable

__all__ = ["atomic_write", "check_writable", "fsync_path", "publish", "make_temp",
           "remove_stale_temps", "refuse_special_file", "special_file_kind", "TEMP_PREFIX"]

TEMP_PREFIX = ".tmp-stadyn-"
_MAX_EXT = 16
_swept: set[str] = set()          # folders this process has already cleaned


def _token(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


_HOST = _token(socket.gethostname())
_BOOT = _token(_boot_id())


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


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False                 # alive, owned by someone else (or not a pid at all)
    return False


def _is_stale(name: str) -> bool:
    """Is ``name`` a temporary file of this host whose writer can no longer finish it?"""
    parts = name[len(TEMP_PREFIX):].split("-", 3)
    if len(parts) != 4 or parts[0] != _HOST or not parts[2].isdigit():
        return False
    return parts[1] != _BOOT or _process_gone(int(parts[2]))


def remove_stale_temps(folder: str | os.PathLike) -> list[str]:
    """Delete the temporary files in ``folder`` left by killed writers of this host (see the
    module docstring); returns their names.  Files of live processes and of other hosts stay.

    Example:
        >>> import os, tempfile
        >>> d = tempfile.mkdtemp()
        >>> fd, tmp = make_temp(d, ".bin")
        >>> os.close(fd)
        >>> remove_stale_temps(d)          # this process is alive: its file stays
        []
    """
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if entry.name.startswith(TEMP_PREFIX) and _is_stale(entry.name):
            try:
                os.unlink(entry.path)
                removed.append(entry.name)
            except OSError:
                pass                 # gone already (another cleaner), or not ours to delete
    return removed


def make_temp(folder: str, ext: str = "") -> tuple[int, str]:
    """Create a new, empty, owner-only temporary file in ``folder`` for a write that will be
    renamed over its target; returns ``(fd, path)``.  The first call for a folder in a process
    removes the stale temporary files of killed writers there (:func:`remove_stale_temps`).
    ``ext`` (the target's extension) is kept when it is short and plain."""
    folder = os.path.abspath(folder)
    if folder not in _swept:
        remove_stale_temps(folder)
        _swept.add(folder)
    if len(ext) > _MAX_EXT or not ext[1:].replace("_", "").isalnum():
        ext = ""
    while True:
        name = f"{TEMP_PREFIX}{_HOST}-{_BOOT}-{os.getpid()}-{secrets.token_hex(4)}{ext}"
        path = os.path.join(folder, name)
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                           0o600), path
        except FileExistsError:
            continue


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)          # no /proc: read it the racy way
    os.umask(umask)
    return umask


def publish(tmp: str, path: str) -> None:
    """Rename the finished temporary file ``tmp`` over ``path``, with the permissions of the file
    it replaces, or, for a new file, those ``open(path, 'w')`` would give (``0o666`` less the
    umask; the temporary file was owner-only while it was written)."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        mode = 0o666 & ~_umask()
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)`` and move the result over ``path`` only if it succeeded.

    A crash, an exception or a power loss never leaves a half-written ``path``: the data reaches
    the disk before the rename, and the old file (if any) stays until the new one is complete;
    a failed write (a full disk) removes its temporary file.  An existing file keeps its
    permissions.  A missing folder, or a folder at ``path``, is an error that names ``path``
    before anything is written.

    Example:
        >>> import os, pathlib, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
        >>> atomic_write(path, lambda tmp: pathlib.Path(tmp).write_text("hello"))
        >>> open(path).read()
        'hello'
    """
    path = os.fspath(path)
    folder = check_writable(path)
    fd, tmp = make_temp(folder, os.path.splitext(path)[1])
    os.close(fd)
    try:
        write(tmp)
        fsync_path(tmp)
        publish(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_path(folder)                       # the rename itself


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def special_file_kind(mode: int) -> str | None:
    """What a file of ``st_mode`` is when it is neither a regular file nor a folder (a FIFO, a
    device, a socket: files a reader can block on forever or read without end), else None.

    Example:
        >>> special_file_kind(os.stat("/dev/null").st_mode), special_file_kind(os.stat("/").st_mode)
        ('a character device', None)
    """
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def refuse_special_file(path: str | os.PathLike, error: type[Exception] = OSError) -> None:
    """Raise ``error`` naming ``path`` when it is a FIFO, a device or a socket.

    Call it before a file is opened for reading: opening a FIFO blocks until someone writes to
    it, and a device such as ``/dev/zero`` never ends.  Regular files, folders and missing paths
    pass (the caller's own open reports those).  Symbolic links are followed.  An error class
    whose constructor takes ``path`` (``DataError``, ``ConfigError``) gets it; others get a
    message that starts with the path.

    Example:
        >>> refuse_special_file(__file__)
        >>> refuse_special_file("/dev/zero")
        Traceback (most recent call last):
        ...
        OSError: /dev/zero: is a character device, not a regular file (Stadyn reads only ...
    """
    path = os.fspath(path)
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    kind = special_file_kind(mode)
    if kind is None:
        return
    reason = f"is {kind}, not a regular file (Stadyn reads only regular files)"
    try:
        takes_path = "path" in inspect.signature(error).parameters
    except (TypeError, ValueError):  # a built-in's constructor
        takes_path = False
    raise error(reason, path=path) if takes_path else error(f"{path}: {reason}")

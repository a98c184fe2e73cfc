"""Writing files safely: a temporary name in the same folder, then an atomic rename."""

from __future__ import annotations

import os
import tempfile
from typing import Callable

__all__ = ["atomic_write"]


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)`` and move the result over ``path`` only if it succeeded.

    A crash or an exception never leaves a half-written ``path``; the old file (if any) stays
    until the new one is complete.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix="-" + os.path.basename(path), dir=folder)
    os.close(fd)
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)        # mkstemp made it owner-only; files are not secrets
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise

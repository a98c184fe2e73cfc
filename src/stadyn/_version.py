"""Stadyn's version, read from where ``pyproject.toml`` puts it: the installed package's metadata.

A leaf module (it imports nothing from Stadyn), so that the root package (``stadyn.__version__``),
the model files (their ``producer``) and ``stadyn --version`` all read the one version without
importing each other.  A source tree that is not installed reads its own ``pyproject.toml``.

Example:
    >>> from stadyn._version import __version__
    >>> __version__.count(".") >= 1
    True
"""

from __future__ import annotations

import os
import re
from importlib import metadata

__all__ = ["__version__", "version_from_pyproject"]

_PYPROJECT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pyproject.toml")


def version_from_pyproject(path: str) -> str | None:
    """The ``version`` of the ``[project]`` table of a ``pyproject.toml`` (None when the file or
    the key is missing).

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "pyproject.toml")
        >>> _ = open(path, "w").write('[tool.x]\\nversion = "9"\\n[project]\\nname = "stadyn"\\n'
        ...                           'version = "1.2.3"\\n')
        >>> version_from_pyproject(path)
        '1.2.3'
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    table = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    found = re.search(r'^version\s*=\s*"([^"]+)"', table.group(1), re.M) if table else None
    return found.group(1) if found else None


def _version() -> str:
    try:
        return metadata.version("stadyn")
    except metadata.PackageNotFoundError:      # a source tree that is not installed
        return version_from_pyproject(_PYPROJECT) or "0+unknown"


__version__ = _version()

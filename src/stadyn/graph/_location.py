"""Where the user made a node: the ``file:line`` of the first frame outside Stadyn.

Every :class:`~stadyn.graph.FunctionNode` records it when it is created (:func:`apply`), so an
error raised for the op later — a shape error while a graph is re-inferred, a failure in a static
replay, a NaN found by :func:`stadyn.check_numerics` — can name the user's line, not Stadyn's.
Recording it is a walk up a few frames comparing file names with Stadyn's folder; no source is
read until a message is made.
"""

from __future__ import annotations

import contextlib
import os
import sys

__all__ = ["user_location", "format_location", "source_location"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_fixed: list = []      # locations set by a front end that knows better (a BrainScript line)


@contextlib.contextmanager
def source_location(location: tuple[str, int] | None):
    """Within this block, nodes record ``location`` (a ``(file, line)``, or None for none)
    instead of the Python caller's line: a front end whose users write another language
    (BrainScript) names their line.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import source_location
        >>> with source_location(("net.bs", 7)):
        ...     y = F.relu(sd.Variable((2,)))
        >>> y.parent.where
        'net.bs:7'
    """
    _fixed.append(location)
    try:
        yield
    finally:
        _fixed.pop()


def user_location() -> tuple[str, int] | None:
    """``(file, line)`` of the innermost frame of the caller's stack that is not Stadyn's own
    code (so a CNTK-compat or ``PF`` call is placed at the user's line), or None.

    Example:
        >>> from stadyn.graph._location import user_location
        >>> file, line = user_location()
        >>> line > 0
        True
    """
    if _fixed:
        return _fixed[-1]
    frame = sys._getframe(1)
    package = _PACKAGE
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame = frame.f_back
    if frame is None:
        return None
    return frame.f_code.co_filename, frame.f_lineno


def format_location(location: tuple[str, int] | None) -> str | None:
    """``'file:line'`` (the path relative to the working folder when it is below it).

    Example:
        >>> import os
        >>> from stadyn.graph._location import format_location
        >>> format_location((os.path.join(os.getcwd(), "train.py"), 12))
        'train.py:12'
        >>> format_location(None) is None
        True
    """
    if location is None:
        return None
    file, line = location
    try:
        rel = os.path.relpath(file)
        if not rel.startswith(os.pardir):
            file = rel
    except ValueError:          # another drive (Windows)
        pass
    return f"{file}:{line}"

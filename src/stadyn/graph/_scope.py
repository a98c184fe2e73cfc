"""The name scope that ops and parameters are created in (``'cnn/conv1'``).

``stadyn.parametric`` pushes parameter scopes here; every graph node records the scope it was
created in, so errors and exported files can name where in the model an op sits.
"""

from __future__ import annotations

import contextlib
import contextvars

__all__ = ["current_scope", "name_scope"]

_scope: contextvars.ContextVar[str] = contextvars.ContextVar("stadyn_scope", default="")


def current_scope() -> str:
    """The scope new ops and parameters are created in (``''`` at the top).

    Example:
        >>> import stadyn as sd
        >>> from stadyn.graph import current_scope
        >>> with sd.parameter_scope('cnn'), sd.parameter_scope('conv1'):
        ...     current_scope()
        'cnn/conv1'
    """
    return _scope.get()


def _join(prefix: str, name: str) -> str:
    name = str(name).strip("/")
    if not name:
        return prefix
    return f"{prefix}/{name}" if prefix else name


@contextlib.contextmanager
def name_scope(name: str, *, absolute: bool = False):
    """Push ``name`` (which may hold ``/``) onto the current scope for a ``with`` block."""
    token = _scope.set(_join("" if absolute else _scope.get(), name))
    try:
        yield _scope.get()
    finally:
        _scope.reset(token)

"""Static or dynamic: whether ops execute as they are created.

The flag lives in a :class:`contextvars.ContextVar`; the hot path reads it through
:func:`is_auto_forward` (one ``ContextVar.get``).
"""

from __future__ import annotations

import contextlib
import contextvars

__all__ = ["auto_forward", "set_auto_forward", "get_auto_forward"]

_auto_forward: contextvars.ContextVar[bool] = contextvars.ContextVar("stadyn_auto_forward",
                                                                    default=False)
is_auto_forward = _auto_forward.get


def get_auto_forward() -> bool:
    """True in dynamic mode (ops run as they are created)."""
    return _auto_forward.get()


def set_auto_forward(auto: bool) -> None:
    """Switch dynamic mode on or off for the current context."""
    _auto_forward.set(bool(auto))


@contextlib.contextmanager
def auto_forward(auto: bool = True):
    """Run ops as they are created (a dynamic, define-by-run graph) inside a ``with`` block.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([1.0, -2.0], dtype=np.float32))
        >>> with sd.auto_forward():
        ...     y = F.relu(x)
        >>> y.d
        array([1., 0.], dtype=float32)
    """
    token = _auto_forward.set(bool(auto))
    try:
        yield
    finally:
        _auto_forward.reset(token)

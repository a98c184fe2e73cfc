"""Static or dynamic: whether ops execute as they are created.

The flag lives in a :class:`contextvars.ContextVar`; the hot path reads it through
:func:`is_auto_forward` (one ``ContextVar.get``).
"""

from __future__ import annotations

import contextlib
import contextvars

__all__ = ["auto_forward", "set_auto_forward", "get_auto_forward", "training", "is_training",
           "set_training", "no_grad", "is_no_grad"]

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


_no_grad: contextvars.ContextVar[bool] = contextvars.ContextVar("stadyn_no_grad", default=False)
_no_grad_now = _no_grad.get      # the hot path's read (graph/_apply.py)


def is_no_grad() -> bool:
    """True inside :func:`no_grad` (what ``get_parameter_or_create`` and dynamic ops read).

    Example:
        >>> from stadyn.graph import is_no_grad, no_grad
        >>> with no_grad():
        ...     is_no_grad()
        True
    """
    return _no_grad.get()


@contextlib.contextmanager
def no_grad(no_grad_: bool = True):
    """No gradients for what is built in the block (NNabla's ``nn.no_grad``): parameters are
    fetched as views that need none (``get_parameter_or_create``, so every PF layer; they stay
    registered as trainable), and in the dynamic mode no op output needs one either.  In a
    static graph, inputs that need a gradient still get one, as in NNabla 1.39.
    ``no_grad(False)`` turns it off inside.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
        >>> with sd.auto_forward(), sd.graph.no_grad():
        ...     F.tanh(x).need_grad
        False
    """
    token = _no_grad.set(bool(no_grad_))
    try:
        yield
    finally:
        _no_grad.reset(token)


_training: contextvars.ContextVar[bool] = contextvars.ContextVar("stadyn_training", default=True)


def is_training() -> bool:
    """True while training (the default); False inside ``training(False)``.

    Example:
        >>> import stadyn as sd
        >>> with sd.training(False):
        ...     sd.is_training()
        False
        >>> sd.is_training()
        True
    """
    return _training.get()


def set_training(flag: bool) -> None:
    """Set the phase for the current context (see :func:`training`)."""
    _training.set(bool(flag))


@contextlib.contextmanager
def training(flag: bool = True):
    """Run graphs in the training phase (``True``) or the inference phase (``False``).

    Phase-aware ops follow it: batch normalisation with ``batch_stat=None`` uses batch statistics
    while training and running statistics otherwise; ``dropout(..., train_only=True)`` is the
    identity outside training (CNTK layers are built this way).  A static graph is lowered once
    per phase.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones((2, 4)))
        >>> y = F.dropout(x, 0.5, train_only=True)
        >>> with sd.training(False):
        ...     y.forward()
        >>> y.d.tolist()
        [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    """
    token = _training.set(bool(flag))
    try:
        yield
    finally:
        _training.reset(token)

"""The recompute flag Variables are created with (NNabla's ``nn.recompute``): a Variable made
inside ``recompute()`` (or a :func:`recompute_fn` function, or anywhere after
``set_global_recompute(True)``) has ``recompute`` set.  NNabla frees such values after the
forward pass and computes them again in backward; Stadyn records the flag and computes the
same values and gradients (it keeps what torch's autograd keeps).

Example:
    >>> import stadyn as sd, stadyn.functions as F
    >>> from stadyn.graph import recompute
    >>> x = sd.Variable((2,))
    >>> with recompute():
    ...     y = F.tanh(x)
    >>> y.recompute, F.tanh(x).recompute
    (True, False)
"""

from __future__ import annotations

import contextlib
import contextvars
import functools

__all__ = ["recompute", "recompute_fn", "set_global_recompute"]

# The innermost ``recompute(flag)`` block's flag, or None outside every block.
_block: contextvars.ContextVar[bool | None] = contextvars.ContextVar("stadyn_recompute_block",
                                                                    default=None)
_global: contextvars.ContextVar[bool] = contextvars.ContextVar("stadyn_recompute_global",
                                                              default=False)
# What a new Variable gets: the block's flag, else the global one (one read on the hot path).
_now: contextvars.ContextVar[bool] = contextvars.ContextVar("stadyn_recompute", default=False)
recompute_now = _now.get


@contextlib.contextmanager
def recompute(recompute_: bool = True):
    """Variables created in the block get ``recompute = recompute_`` (blocks nest; inside a
    block the global setting does not apply).  See the module docstring."""
    block, now = _block.set(bool(recompute_)), _now.set(bool(recompute_))
    try:
        yield
    finally:
        _now.reset(now)
        _block.reset(block)


def recompute_fn(recompute_: bool = True):
    """Decorator: the function runs inside ``recompute(recompute_)``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import recompute_fn
        >>> @recompute_fn()
        ... def block(v):
        ...     return F.exp(v)
        >>> block(sd.Variable((2,))).recompute
        True
    """
    def decorate(fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with recompute(recompute_):
                return fn(*args, **kwargs)
        return wrapped
    return decorate


def set_global_recompute(recompute_: bool) -> None:
    """The flag Variables get outside every ``recompute`` block (default False).

    Example:
        >>> import stadyn as sd
        >>> from stadyn.graph import set_global_recompute
        >>> set_global_recompute(True)
        >>> sd.Variable((1,)).recompute
        True
        >>> set_global_recompute(False)
    """
    _global.set(bool(recompute_))
    if _block.get() is None:
        _now.set(bool(recompute_))

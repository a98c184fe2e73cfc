"""CNTK 2.7's rule that the body of a ``@C.Function`` creates no parameters: its decorator runs
the Python function with the default option ``pure`` set, and ``Parameter`` (so every layer
that makes one: ``Dense``, ``Convolution``, ``LSTM``, ...) refuses it with a TypeError.
(A body Stadyn builds later, when applied -- one applying an op to an untyped argument before
it makes the parameter -- is run without the rule then: its parameters are made.)

Example:
    >>> import stadyn.compat.cntk as C
    >>> @C.Function
    ... def f(a):
    ...     return a * C.parameter((3,), init=1)
    Traceback (most recent call last):
    ...
    TypeError: parameters cannot be created inside a @Function def
"""

from __future__ import annotations

import contextlib

__all__ = ["pure", "refuse_parameters", "PARAMETERS_REFUSED"]

#: CNTK 2.7's message (variables.py's Parameter), which its recurrences read
PARAMETERS_REFUSED = "parameters cannot be created inside a @Function def"

# how many @Function bodies are running (a body may define and apply another)
_PURE = [0]


@contextlib.contextmanager
def pure():
    """Parameters refused inside (``@C.Function`` makes its Function, running its body once,
    inside)."""
    _PURE[0] += 1
    try:
        yield
    finally:
        _PURE[0] -= 1


def refuse_parameters() -> None:
    """CNTK 2.7's TypeError where a parameter is made inside a ``@Function`` body."""
    if _PURE[0]:
        raise TypeError(PARAMETERS_REFUSED)

"""Late binding inside ``stadyn.compat.cntk``: the few places where a lower module needs an
upper one.

CNTK's object model is mutually recursive: a Variable's ``owner`` is a Function, a Function's
``outputs`` are Variables, ``x + y`` on either is an op whose result is a Function, and
``Function.test`` runs an ``Evaluator``, which is a ``Trainer`` over Functions.  The modules
stay in one order (graph objects, Variables, Functions, ops, training) and the lower ones
reach the upper ones by name through this table, which each upper module fills when it is
imported; importing the package imports them all.

Example:
    >>> import stadyn.compat.cntk as C
    >>> from stadyn.compat.cntk._late import late
    >>> late("Function") is C.Function
    True
"""

from __future__ import annotations

from typing import Any

__all__ = ["bind", "late"]

_BOUND: dict[str, Any] = {}


def bind(**objects: Any) -> None:
    """Make ``objects`` (name=object) reachable through :func:`late`."""
    _BOUND.update(objects)


def late(name: str) -> Any:
    """The object an upper module bound under ``name``."""
    try:
        return _BOUND[name]
    except KeyError:
        raise RuntimeError(f"stadyn.compat.cntk: {name!r} is not bound yet; it is bound when "
                           f"the package stadyn.compat.cntk is imported") from None

"""CNTK 2.7's check of a binary element-wise op (``plus``, ``element_times``, ``equal``, ...):
the axes known on both sides must broadcast (aligned on the right, equal or one of them 1), else
the op is refused as it is made with CNTK's RuntimeError (:class:`ElementwiseShapeError`, a
ShapeError too).  Operands of known shapes are refused so as Stadyn's op would refuse them; one
that waits on a placeholder with inferred axes (``C.placeholder((C.InferredDimension, 3))``) is
refused where Stadyn's waiting op would only have failed once the placeholders were bound.  An
inferred axis (``-1``) fits any length; an operand of unknown shape (``(-2,)``) is not checked.

Example:
    >>> import stadyn.compat.cntk as C
    >>> p = C.placeholder((C.InferredDimension, 3))
    >>> C.plus(p, C.transpose(C.placeholder((3, C.InferredDimension)), (1, 0))).shape
    (-1, 3)
    >>> C.plus(p, C.input_variable(2))
    Traceback (most recent call last):
    ...
    stadyn.compat.cntk._elementwise_shapes.ElementwiseShapeError: Plus: the left operand's ...
"""

from __future__ import annotations

import functools
import inspect
import types
from typing import Any

import numpy as np

from ..._errors import ShapeError
from ...graph import format_location, user_location
from ._mixins import GraphObject

__all__ = ["ElementwiseShapeError", "output_shape", "refusing_unbroadcastable"]


class ElementwiseShapeError(RuntimeError, ShapeError):
    """A binary element-wise op whose operands' known axes do not broadcast (CNTK 2.7's
    RuntimeError as the op is made; a ValueError too, as Stadyn's other shape errors)."""


def _waits(value: Any) -> bool:
    """Whether ``value`` is an op (or its output) waiting on placeholders."""
    return type(value).__name__ in ("Deferred", "UnknownOutput")


def _shape(value: Any) -> "tuple | None":
    """The static shape of an operand, ``-1`` for an inferred axis; None where unknown."""
    if _waits(value) or isinstance(value, GraphObject):
        shape = tuple(int(d) for d in value.shape)
    elif isinstance(value, (int, float, np.ndarray, np.number, list)):
        shape = tuple(np.shape(value))
    else:
        return None
    return None if -2 in shape else shape


def _text(shape: tuple) -> str:
    dims = ["?" if d < 0 else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _broadcast(a: tuple, b: tuple) -> bool:
    """Whether the known axes of ``a`` and ``b`` broadcast, aligned on the right."""
    return all(x < 0 or y < 0 or x == y or x == 1 or y == 1
               for x, y in zip(reversed(a), reversed(b)))


def check_operands(left: Any, right: Any, op: str) -> None:
    """Refuse ``left`` and ``right`` for the element-wise ``op`` where their known axes do not
    broadcast (their shapes known, or one waiting on inferred axes)."""
    a, b = _shape(left), _shape(right)
    if a is None or b is None:
        return
    if not _broadcast(a, b):
        line = format_location(user_location())
        raise ElementwiseShapeError(
            f"{op}: the left operand's shape {_text(a)} does not broadcast with the right "
            f"operand's {_text(b)} (aligned on the right, each axis equal or 1"
            + ("; '?' an inferred axis)" if min(a + b, default=0) < 0 else ")")
            + (f" at {line}" if line else ""))


def output_shape(a: tuple, b: tuple) -> tuple:
    """The output shape CNTK 2.7 infers for an element-wise op of operands of shapes ``a`` and
    ``b`` (``-1`` an inferred axis, aligned on the right): an inferred axis takes the other
    operand's length, an axis of 1 the other's (inferred or not).

    Example:
        >>> output_shape((-1, 3), (2, -1)), output_shape((-1, 1), (2, -1))
        ((2, 3), (2, -1))
    """
    out = []
    for k in range(1, max(len(a), len(b)) + 1):
        x = a[-k] if k <= len(a) else None
        y = b[-k] if k <= len(b) else None
        if x is None or y is None:
            out.append(y if x is None else x)
        else:
            out.append(y if x in (-1, 1) else x)
    return tuple(reversed(out))


def refusing_unbroadcastable(fn, op: str):
    """``fn`` (a binary element-wise CNTK op, already :func:`deferrable`) checking its two
    operands first (:func:`check_operands`); an op it makes that waits on placeholders shows
    CNTK's inferred shape (:func:`output_shape`).  The wrapper keeps ``fn``'s globals, name and
    docstring (so its module's doctests still find it)."""
    first, second = list(inspect.signature(fn).parameters)[:2]
    check, shape_of, waits, infer = check_operands, _shape, _waits, output_shape

    def wrapper(*args, **kwargs):
        operands = list(args[:2]) + [kwargs.get(n) for n in (first, second)[len(args[:2]):]]
        check(operands[0], operands[1], op)
        out = fn(*args, **kwargs)
        a, b = shape_of(operands[0]), shape_of(operands[1])
        if waits(out) and a is not None and b is not None:
            out.__dict__["_probed_shape"] = infer(a, b)     # (CNTK's, as it is made)
        return out
    new = types.FunctionType(wrapper.__code__, fn.__globals__, fn.__name__, None,
                             wrapper.__closure__)
    functools.update_wrapper(new, fn)
    return new

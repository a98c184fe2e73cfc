"""CNTK 2.7's check of a binary element-wise op (``plus``, ``element_times``, ``equal``, ...):
the axes known on both sides must broadcast (aligned on the right, equal or one of them 1), else
the op is refused as it is made with CNTK's RuntimeError (:class:`ElementwiseShapeError`, a
ShapeError too).  Operands of known shapes are refused so as Stadyn's op would refuse them; one
that waits on a placeholder with inferred axes (``C.placeholder((C.InferredDimension, 3))``) is
refused where Stadyn's waiting op would only have failed once the placeholders were bound.  An
inferred axis (``-1``) fits any length; an operand of unknown shape (``(-2,)``) is not checked.
The check is the ops' ``as_called`` hook (:func:`broadcast_checked`, see ``_deferrable``).

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

from typing import Any

import numpy as np

from ..._errors import ShapeError
from ...graph import format_location, user_location
from ._adapt import refuse_several_outputs
from ._deferred import Deferred, UnknownOutput
from ._mixins import GraphObject

__all__ = ["ElementwiseShapeError", "output_shape", "broadcast_checked"]


class ElementwiseShapeError(RuntimeError, ShapeError):
    """A binary element-wise op whose operands' known axes do not broadcast (CNTK 2.7's
    RuntimeError as the op is made; a ValueError too, as Stadyn's other shape errors)."""


def _shape(value: Any) -> "tuple | None":
    """The static shape of an operand, ``-1`` for an inferred axis; None where unknown."""
    if isinstance(value, GraphObject) and len(getattr(value, "outputs", ())) > 1:
        refuse_several_outputs(value, None, " (a Function of several outputs as an operand: "
                               "pick one, f.outputs[i]" + _at_user_line() + ")")
    if isinstance(value, (Deferred, UnknownOutput, GraphObject)):
        shape = tuple(int(d) for d in value.shape)
    elif isinstance(value, (int, float, np.ndarray, np.number, list)):
        shape = tuple(np.shape(value))
    else:
        return None
    return None if -2 in shape else shape


def _at_user_line() -> str:
    """``, at FILE:LINE`` of the user's line making the op, or nothing."""
    line = format_location(user_location())
    return f", at {line}" if line else ""


def _text(shape: tuple) -> str:
    dims = ["?" if d < 0 else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _broadcast(a: tuple, b: tuple) -> bool:
    """Whether the known axes of ``a`` and ``b`` broadcast, aligned on the right."""
    return all(x < 0 or y < 0 or x == y or x == 1 or y == 1
               for x, y in zip(reversed(a), reversed(b)))


def check_operands(left: Any, right: Any, op: str) -> "tuple | None":
    """Refuse ``left`` and ``right`` for the element-wise ``op`` where their known axes do not
    broadcast (their shapes known, or one waiting on inferred axes); the output shape CNTK
    infers for them (:func:`output_shape`), None where a shape is unknown."""
    a, b = _shape(left), _shape(right)
    if a is None or b is None:
        return None
    if not _broadcast(a, b):
        line = format_location(user_location())
        raise ElementwiseShapeError(
            f"{op}: the left operand's shape {_text(a)} does not broadcast with the right "
            f"operand's {_text(b)} (aligned on the right, each axis equal or 1"
            + ("; '?' an inferred axis)" if min(a + b, default=0) < 0 else ")")
            + (f" at {line}" if line else ""))
    return output_shape(a, b)


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


def broadcast_checked(op: str):
    """The ``as_called`` hook (see ``_deferrable.deferrable``) of the binary element-wise CNTK
    op ``op`` (``"Plus"``): its two operands (its first two parameters) checked as it is called
    (:func:`check_operands`); the shape it returns is the one the op shows while it waits on
    placeholders (CNTK's inferred shape, as the op is made)."""
    def as_called(arguments: dict) -> "tuple | None":
        operands = iter(arguments.values())
        return check_operands(next(operands), next(operands), op)
    return as_called

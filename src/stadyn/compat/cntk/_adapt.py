"""Between CNTK's objects and Stadyn's: Functions in, Variables out, and back.

Every op adapter unwraps its CNTK operands (:func:`operand`: Functions, NumPy arrays, numbers),
calls the Stadyn function, and wraps the result (:func:`wrap`) under the CNTK op name and the
name the user gave (:func:`named`).  Whether a value has the batch axis in front is
:data:`~stadyn.compat.cntk._graph.BATCH`'s to say (:func:`batched`).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ...layers import cntk_semantics as S
from ...layers.cntk_semantics import reshape_samples
from ...graph import Variable
from ._graph import BATCH, PLACEHOLDERS, SHAPELESS, set_op_name
from ._mixins import GraphObject

__all__ = ["ShapelessPlaceholderError", "wrap", "unwrap", "operand", "const", "batched", "named",
           "adapt", "binary", "sample_axis", "sample_axes", "sample_shape", "lead_axes",
           "reshape_samples"]


def wrap(value: Any) -> Any:
    """Stadyn Variables (also inside tuples and lists) as CNTK objects: inputs and placeholders
    as ``Variable``, parameters as ``Parameter``, constants as ``Constant``, outputs as
    ``Function``."""
    if isinstance(value, Variable):
        from ._variables import of
        return of(value)
    if isinstance(value, tuple):
        return tuple(wrap(v) for v in value)
    return value


def unwrap(value: Any) -> Any:
    """The Stadyn Variable inside a CNTK object (others unchanged; also inside lists, tuples)."""
    if isinstance(value, GraphObject):
        return value.variable
    if isinstance(value, (list, tuple)):
        return type(value)(unwrap(v) for v in value)
    return value


class ShapelessPlaceholderError(ValueError):
    """An op applied to a placeholder whose shape is not known yet."""


def operand(x: Any, dtype=np.float32) -> Any:
    """An op's operand as Stadyn takes it: CNTK objects unwrapped, NumPy arrays and lists as
    constants, numbers as they are."""
    if isinstance(x, GraphObject):
        v = x.variable
        if v in SHAPELESS:
            raise ShapelessPlaceholderError(
                f"placeholder {PLACEHOLDERS.get(v, '')!r} has no shape yet: give "
                "placeholder(shape=...) or replace it before applying ops to it")
        return v
    if isinstance(x, (np.ndarray, list, tuple, np.generic)):
        return const(np.asarray(x, dtype=dtype))
    return x


def const(value) -> Variable:
    """A constant Variable holding ``value`` (named, as CNTK's Constants are, so that a saved
    model keeps it as a constant and not as an input)."""
    from ._variables import Constant
    return Constant(value).variable


def batched(x: Any) -> bool:
    """Whether ``x`` has the batch axis first (an input, or something computed from one)."""
    if isinstance(x, GraphObject):
        return BATCH(x.variable)
    return isinstance(x, Variable) and BATCH(x)


def lead_axes(x: Any) -> int:
    """How many leading axes of ``x`` are not a sample's: the batch axis, and the sequence axis
    of a sequence; 0 for an unbatched operand."""
    if not batched(x):
        return 0
    v = operand(x)
    return 2 if getattr(v, "sequence_lengths", None) is not None else 1


def sample_shape(x: Any) -> tuple[int, ...]:
    """The per-sample shape of ``x`` (its shape without the batch and sequence axes)."""
    v = operand(x)
    shape = tuple(getattr(v, "shape", np.shape(v)))
    return shape[lead_axes(x):]


def sample_axis(x: Any, axis: int) -> int:
    """CNTK's per-sample ``axis`` of ``x`` as a Stadyn axis (row-major, negative from the end)."""
    return S.static_axis(int(axis), len(operand(x).shape), lead_axes(x))


def sample_axes(x: Any) -> list[int]:
    """Every axis of a sample of ``x`` (all axes of an unbatched operand), as Stadyn axes."""
    n = len(operand(x).shape)
    return list(range(lead_axes(x), n))


def named(out: Any, name: str = "", op: str | None = None) -> Any:
    """``out`` (a CNTK Function) made by the CNTK op ``op`` and named ``name``."""
    if isinstance(out, GraphObject) and out.variable.parent is not None:
        if op:
            set_op_name(out.variable, op)
        if name:
            out.variable.name = name
    return out


def adapt(fn: Callable, name: str | None = None, op: str | None = None) -> Callable:
    """A Stadyn function as a CNTK op: CNTK operands in, a CNTK Function out, ``name=`` taken."""
    @functools.wraps(fn)
    def adapted(*args, name: str = "", **kwargs):
        out = wrap(fn(*[operand(a) for a in args],
                      **{k: operand(v) if _is_operand(v) else v for k, v in kwargs.items()}))
        return named(out, name, op or _op_name(adapted.__name__))
    if name:
        adapted.__name__ = adapted.__qualname__ = name
    return adapted


def _is_operand(v: Any) -> bool:
    return isinstance(v, GraphObject)


def _op_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def binary(fn: Callable, left: Any, right: Any, name: str = "", op: str | None = None) -> Any:
    """``fn(left, right)`` with CNTK's broadcasting: sample axes align on the right, the batch
    axis apart."""
    a, b = _tensor(operand(left)), _tensor(operand(right))
    a, b = S.broadcast_pair(a, b, batched(left), batched(right))
    return named(wrap(fn(a, b)), name, op)


def _tensor(x: Any) -> Variable:
    """A number as a constant (CNTK makes a ``Constant`` of it too)."""
    return x if isinstance(x, Variable) else const(np.asarray(x, dtype=np.float32))

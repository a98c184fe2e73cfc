"""The ops CNTK 2.7 refuses to build over operands of different dynamic axes (a sequence and a
value of the batch axis alone), with its RuntimeError.

CNTK's C++ makers of the primitive binary ops (``Plus``, ``Minus``, ``ElementTimes``, the
comparisons, ``LogPlus``, ``Pow``, ``Times``, ``TransposeTimes``, ``CosDistance``) put a
``ReconcileDynamicAxis`` on the operand without a sequence axis when the other has one
(``AutoBroadcastSequence``, Function.cpp), so those compute.  Every other op checks that its
operands' dynamic axes are the same (``PrimitiveFunction::GetOutputDynamicAxes``): ``Select``
and ``Splice`` over the operands themselves, and the ops CNTK makes of others (``ElementDivide``
is ``ElementTimes`` of a ``Reciprocal``; ``ElementMax`` a block of ``Select`` of ``Greater``;
``SquaredError``, ``CrossEntropyWithSoftmax``, ``ClassificationError``,
``BinaryCrossEntropy`` blocks; ``And``/``Or``/``Xor`` of ``Greater`` outputs) over the inner
op they first reach with both kinds of operand.  The error names that inner op and the
operand it sees: the operand itself, the block's placeholder standing for it (named as the
operand is, else ``Placeholder<n>``), or the inner op's output (``Reciprocal<n>_Output_0``).
"""

from __future__ import annotations

from typing import Any

from . import _graph as G
from ._mixins import GraphObject
from ._variable_text import axis_mark, dims_text

__all__ = ["refuse_mixed_axes", "refuse_other_sequence_axes"]


def _variable(x: Any):
    """The Variable an operand stands for (a Function's output), or None for data."""
    if not isinstance(x, GraphObject):
        return None
    return x.output if hasattr(x, "outputs") and hasattr(x, "output") else x


def _axes(v) -> "str | None":
    """``v``'s dynamic axes as CNTK shows them (``#, *``); None without any or unknown."""
    axes = tuple(getattr(v, "dynamic_axes", ()) or ())
    if not axes or any(getattr(a, "name", "") == "UnknownAxes" for a in axes):
        return None
    return ", ".join(axis_mark(a) for a in axes)


def _seen_as(v, axes: str, seen: str) -> str:
    """How the inner op shows the operand ``v``: ``"operand"`` (itself), ``"placeholder"`` (a
    block's placeholder for it), else the name of the op whose output it sees."""
    dims = dims_text(tuple(v.shape))
    if seen == "operand":
        return repr(v)
    if seen == "placeholder":
        return f"Placeholder('{v.name or G.new_uid('Placeholder')}', [{axes}], [{dims}])"
    return f"Output('{G.new_uid(seen)}_Output_0', [{axes}], [{dims}])"


def refuse_mixed_axes(op: str, operands: tuple, blamed: "int | None" = None,
                      seen: str = "operand") -> None:
    """CNTK 2.7's RuntimeError when ``operands`` (those with dynamic axes) do not all have the
    same: ``Operation '<op>': Operand '<...>' has dynamic axes, that do not match the dynamic
    axes '[<the others'>]' of the other operands.``  The operand named is ``operands[blamed]``
    shown as ``seen`` says (:func:`_seen_as`), the others' axes those of the operand it meets;
    with ``blamed`` None, the first whose axes differ from the first operand's with any (as
    ``Select`` and ``Splice`` report).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> s, b = C.sequence.input_variable(2, name="s"), C.input_variable(2, name="b")
        >>> refuse_mixed_axes("Splice", (s, b))
        Traceback (most recent call last):
        RuntimeError: Operation 'Splice': Operand 'Input('b', [#], [2])' has dynamic axes, \
that do not match the dynamic axes '[#, *]' of the other operands.
        >>> refuse_mixed_axes("Splice", (s, s * 2))     # (the same axes: nothing said)
    """
    variables = [_variable(x) for x in operands]
    axes = [_axes(v) if v is not None else None for v in variables]
    known = [a for a in axes if a is not None]
    if len(set(known)) < 2:
        return
    if blamed is None:
        blamed = next(i for i, a in enumerate(axes) if a is not None and a != known[0])
    other = next(a for a in known if a != axes[blamed])
    shown = _seen_as(variables[blamed], axes[blamed], seen)
    raise RuntimeError(f"Operation '{op}': Operand '{shown}' has dynamic axes, that do not "
                       f"match the dynamic axes '[{other}]' of the other operands.")


def refuse_other_sequence_axes(op: str, operands: tuple) -> None:
    """CNTK 2.7's RuntimeError (:func:`refuse_mixed_axes`) for a primitive binary op of two
    sequences of different sequence axes, as it is made: it reconciles a value of the batch
    axis alone with a sequence, not one sequence axis with another.  ``operands`` in the order
    CNTK's C++ op takes them (``Times(right, left)``).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> s = C.sequence.input_variable(2, name="s")
        >>> t = C.sequence.input_variable(2, name="t", sequence_axis=C.Axis("other"))
        >>> refuse_other_sequence_axes("Plus", (s, t))
        Traceback (most recent call last):
        RuntimeError: Operation 'Plus': Operand 'Input('t', [#, other], [2])' has dynamic axes, \
that do not match the dynamic axes '[#, *]' of the other operands.
        >>> refuse_other_sequence_axes("Plus", (s, C.input_variable(2)))   # (reconciled)
    """
    variables = [_variable(x) for x in operands]
    if all(v is not None and len(tuple(getattr(v, "dynamic_axes", ()) or ())) == 2
           for v in variables):
        refuse_mixed_axes(op, operands)

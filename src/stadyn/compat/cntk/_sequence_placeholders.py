"""A placeholder made on a sequence axis (``placeholder((3,), dynamic_axes=<sequence axes>)``)
bound to a value that is no sequence.  Such a placeholder is built at once, as a sequence
(the recurrence ``past_value(p)`` then ``replace_placeholders({p: ...})`` needs its graph
made), so the ops on it are built over a sequence axis.  CNTK 2.7 takes any value for it
whatever its dynamic axes, the ops on it taking those of the value (``reduce_sum(p, 0)`` on
an input without a sequence axis is that input's sum; ``sequence.last(p)`` is refused).  So
each op called on such a placeholder, or on what is computed from one, is noted here as it is
built (:func:`note_call`, from ``_deferrable``'s wrapper): the op and its arguments; binding
the placeholder to a value without a sequence axis calls those ops again on that value
(:func:`rebuilt`), each op making its own checks; so are the layers, the Functions called on
it, the blocks (``as_block``, ``BlockFunction``) and the waiting ones.  What was not noted
(a value Stadyn's own functions computed from the placeholder's) cannot be called again:
:func:`rebuilt` says so.
"""

from __future__ import annotations

import weakref
from typing import Any

from ...graph import Variable, keep_as
from . import _graph as G
from ._late import late
from ._mixins import GraphObject

__all__ = ["mark_sequence_placeholder", "note_call", "non_sequence_bindings", "noted_readers",
           "rebuilt"]

# the placeholders made on a sequence axis, and the ops computed from them: {output: call}
_PLACEHOLDERS: "weakref.WeakSet[Variable]" = weakref.WeakSet()
_CALLS: "weakref.WeakKeyDictionary[Variable, tuple]" = weakref.WeakKeyDictionary()


def _var(v: Any) -> Any:
    """The Stadyn Variable inside a CNTK object (others as they are)."""
    return v.variable if isinstance(v, GraphObject) else v


def mark_sequence_placeholder(var: Variable) -> None:
    """Note ``var`` (a placeholder's) as one made on a sequence axis."""
    _PLACEHOLDERS.add(var)


def _reads_one(value: Any) -> bool:
    if isinstance(value, GraphObject):
        var = value.variable
        return var in _PLACEHOLDERS or var in _CALLS
    if isinstance(value, (list, tuple)):
        return any(_reads_one(v) for v in value)
    return False


def note_call(fn, args: tuple, kwargs: dict, out: Any) -> None:
    """Note that ``out`` is ``fn(*args, **kwargs)`` where an operand is a placeholder made on
    a sequence axis or computed from one (nothing otherwise: a quick test while there is no
    such placeholder)."""
    if not _PLACEHOLDERS or not isinstance(out, GraphObject):
        return
    if any(_reads_one(a) for a in args) or any(_reads_one(v) for v in kwargs.values()):
        _CALLS[out.variable] = (fn, tuple(args), dict(kwargs))


def non_sequence_bindings(substitutions: dict) -> bool:
    """Whether ``substitutions`` (``{placeholder: value}``, keyed by the placeholders' Stadyn
    Variables) binds a placeholder made on a sequence axis to a value without a sequence axis
    (then the graph is :func:`rebuilt`)."""
    return any(ph in _PLACEHOLDERS and isinstance(_var(new), Variable)
               and _var(new).sequence_lengths is None for ph, new in substitutions.items())


def rebuilt(root: Variable, substitutions: dict, what: str, memo: "dict | None" = None,
            in_place: bool = False) -> Any:
    """``root`` (a Stadyn Variable) computed again with ``substitutions`` (``{placeholder:
    value}``, keyed by the placeholders' Stadyn Variables, the values as given) in place of
    those placeholders: each op noted by :func:`note_call` on the way called again on the
    values; a value not computed from a replaced placeholder is kept.  ``in_place``: each
    value built again is computed so in its own place (``replace_placeholders``), else the
    graph built is a new one (calling the Function).  ``what`` (``"replace_placeholders"``)
    names the call in the error for a value computed from such a placeholder by something not
    noted.  ``memo`` (``{id(value): built}``), shared by several calls, builds what they share
    once."""
    memo = {} if memo is None else memo
    Function = late("Function")

    def value(v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return type(v)(value(u) for u in v)
        if not isinstance(v, (GraphObject, Variable)):
            return v
        var = _var(v)
        if var in substitutions:
            return substitutions[var]
        if id(var) in memo:
            return memo[id(var)]
        call = _CALLS.get(var)
        if call is None:
            if _reads_replaced(var, substitutions):
                raise ValueError(
                    f"{what}: a placeholder made on a sequence axis is bound to a value "
                    f"without one, and '{Function(_first_unnoted(var, substitutions))!r}' "
                    "reads it, which cannot be built again on that value (it was not "
                    "made by a CNTK op, layer or block); apply it to the value itself")
            return v
        fn, args, kwargs = call
        out = fn(*[value(a) for a in args], **{k: value(a) for k, a in kwargs.items()})
        if in_place:
            _take_place(var, _var(out))
            out = Function(var)
        memo[id(var)] = out
        return out

    return value(root)


def _take_place(old: Variable, new: Variable) -> None:
    """``old`` computed as ``new`` from now on: the output of ``new``'s op (a block's too,
    its arguments ``new``'s), noted as ``new`` was."""
    block = G.BLOCKS.get(new)
    old.rewire_as(new)
    keep_as(old, new)       # (the views of its op a walk made: those of the new op)
    G.BATCH.forget()        # (whether it has the batch axis: the new op's answer)
    if block is not None:
        G.BLOCKS[old] = block
    else:
        G.BLOCKS.pop(old, None)
    call = _CALLS.pop(new, None)
    if call is not None:
        _CALLS[old] = call
    else:
        _CALLS.pop(old, None)


def noted_readers(substitutions: dict) -> list:
    """The values noted by :func:`note_call` that are computed from a placeholder of
    ``substitutions`` (keyed by the placeholders' Stadyn Variables) through noted ops only:
    those ``replace_placeholders`` builds again in place (CNTK 2.7 replaces the placeholder in
    the whole graph: a value made from it outside the Function it is called on reads the
    substitute too)."""
    reads: dict[int, bool] = {}

    def found(v: Any) -> bool:
        if isinstance(v, (list, tuple)):
            return any(found(u) for u in v)
        if not isinstance(v, GraphObject):
            return False
        var = v.variable
        if var in substitutions:
            return True
        if id(var) not in reads:
            reads[id(var)] = False          # (a value is never its own operand)
            call = _CALLS.get(var)
            reads[id(var)] = call is not None and (any(found(a) for a in call[1]) or any(
                found(a) for a in call[2].values()))
        return reads[id(var)]

    out = []
    for var, (_, args, kwargs) in list(_CALLS.items()):
        if any(found(a) for a in args) or any(found(a) for a in kwargs.values()):
            out.append(var)
    return out


def _first_unnoted(var: Variable, substitutions: dict) -> Variable:
    """The value nearest the replaced placeholders on the way from ``var`` (not noted by
    :func:`note_call`, reading one of them) that reads one through nothing noted."""
    while var.parent is not None:
        below = [i for i in var.parent.inputs if i is not None and i not in substitutions
                 and i not in _CALLS and _reads_replaced(i, substitutions)]
        if not below:
            break
        var = below[0]
    return var


def _reads_replaced(var: Variable, substitutions: dict) -> bool:
    return any(G.reads([var], ph) for ph in substitutions if ph in _PLACEHOLDERS)

"""What a waiting Function (``_deferred.Deferred``: an op on placeholders without a shape,
built once they are bound) reads: its placeholders and arguments, the waiting Functions it is
made of (:class:`DeferredReads`, mixed into ``Deferred``), and the walks over such Functions
that binding and building them ask for -- the parts values are made of (:func:`parts_of`),
whether one reads a placeholder (:func:`reads`, :func:`found`), the data type its operands
fix (:func:`known_dtype`) and values with those given their types replaced by the Functions
they built (:func:`as_built`).  ``Deferred`` is the only class this mixes into, so a value of
this class is a waiting Function.

Example:
    >>> import stadyn.compat.cntk as C
    >>> p = C.placeholder(name="p")
    >>> h = C.relu(p)
    >>> [q.name for q in h.placeholders], reads(C.plus(h, 1), p), [f.name for f in parts_of(h)]
    (['p'], True, [''])
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from . import _graph as G
from ._deferred_loops import loop_of
from ._deferred_operands import UnknownOutput, _arguments_of, _keep, _layer_function, _shapeless
from ._mixins import GraphObject

__all__ = ["DeferredReads", "as_built", "found", "known_dtype", "parts_of", "reads"]


class DeferredReads:
    """A waiting Function's placeholders and arguments, and the waiting Functions it is made
    of, mixed into ``_deferred.Deferred`` (whose ``_fn``, ``_args``, ``_kwargs``, ``_typed``
    and ``_bound`` it reads).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> s = C.plus(C.relu(C.placeholder(name="p")), C.input_variable(2, name="x"))
        >>> [a.name for a in s.placeholders], [a.name for a in s.arguments]
        (['p'], ['p', 'x'])
    """

    def _leaves(self, out: list, seen: set, bound: dict, arguments: bool = False) -> None:
        """The placeholders without a shape it reads and are not ``bound``, into ``out``;
        with ``arguments``, the arguments of the parts built already too, in order."""
        LayerFunction = _layer_function()

        def visit(v):
            if isinstance(v, UnknownOutput):
                v = v.waiting
            if isinstance(v, DeferredReads) and v._typed is not None:
                for a in (v._typed.arguments if arguments else ()):
                    if id(a.variable) not in seen:
                        seen.add(id(a.variable))
                        out.append(a)
            elif isinstance(v, DeferredReads):
                if ("part", id(v)) not in seen:     # (a part read twice adds nothing more:
                    seen.add(("part", id(v)))       # walked again, a diamond was exponential)
                    v._leaves(out, seen, bound, arguments)
            elif isinstance(v, LayerFunction) and v is not self._fn:
                visit(_keep(v))
            elif loop_of(self, v) is not None and id(v.variable) not in bound:
                key = ("loop", id(v.variable), id(loop_of(self, v)[1]))
                if key not in seen:         # (replaced by its loop here: what that reads)
                    seen.add(key)
                    visit(loop_of(self, v)[1])
            elif _shapeless(v) and id(v.variable) not in seen and id(v.variable) not in bound:
                seen.add(id(v.variable))
                out.append(v)
            elif arguments and isinstance(v, GraphObject) and not _shapeless(v):
                for a in _arguments_of(v):      # (an input with a shape, as CNTK lists it)
                    if id(a.variable) not in seen and (a.is_input or a.is_placeholder):
                        seen.add(id(a.variable))
                        out.append(a)
            elif arguments and _shapeless(v) and id(v.variable) in bound:
                # bound by replace_placeholders before the others: what it is bound to reads
                # its arguments in its place (CNTK 2.7 lists them there)
                for a in _arguments_of(bound[id(v.variable)]):
                    if id(a.variable) not in seen:
                        seen.add(id(a.variable))
                        out.append(a)
            elif isinstance(v, (list, tuple)):
                for u in v:
                    visit(u)
        operands = _in_signature_order(self._fn, self._args, self._kwargs)
        if not arguments and getattr(self._fn, "cntk_operands_reversed", False) and \
                len(operands) >= 2:     # (CNTK's op reads its first two operands swapped;
            operands[:2] = operands[1::-1]  # its arguments keep the Python order)
        elif not arguments and hasattr(self._fn, "_file_graph"):    # (an untyped @Function
            walked = [id(p.variable) for p in self._fn.placeholders]    # on its placeholders)
            operands.sort(key=lambda a: (walked + [id(getattr(a, "variable", a))]).index(
                id(getattr(a, "variable", a))))
        for a in operands:
            visit(a)

    @property
    def placeholders(self) -> tuple:
        """The placeholders without a shape it reads (a layer operand's ``keep``)."""
        if self._typed is not None:
            return self._typed.placeholders
        out: list = []
        self._leaves(out, set(), self._bound)
        return tuple(out)

    @property
    def arguments(self) -> tuple:
        """The placeholders without a shape it reads, and the arguments of its parts built
        already (once typed, its graph's arguments)."""
        if self._typed is not None:
            return self._typed.arguments
        out: list = []
        self._leaves(out, set(), self._bound, arguments=True)
        return tuple(out)

    def _parts(self) -> list:
        """The Deferreds it is made of, each after those it reads, itself last."""
        return parts_of(self)

    def _operands(self) -> list:
        """Its operands, as given, lists and tuples opened and an :class:`UnknownOutput` read
        as its Function."""
        out: list = []

        def add(v):
            if isinstance(v, (list, tuple)):
                for u in v:
                    add(u)
            else:
                out.append(v.waiting if isinstance(v, UnknownOutput) else v)
        add(list(self._args) + list(self._kwargs.values()))
        return out

    def _known_dtype(self):
        """The data type its operands fix (its :class:`UnknownOutput`'s ``dtype``)."""
        return known_dtype(self)


def _in_signature_order(fn, args: tuple, kwargs: dict) -> list:
    """A call's operands in the order of ``fn``'s parameters (as CNTK 2.7 makes the op, each
    operand in its place), operands given by keyword out of that order included
    (``times_transpose(right=b, left=a)``); in call order where ``fn`` has no signature to
    bind them to."""
    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return list(args) + list(kwargs.values())
    out: list = []
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            out.extend(value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            out.extend(value.values())
        else:
            out.append(value)
    return out


def known_dtype(deferred: "DeferredReads"):
    """The data type a waiting Function's operands fix: float64 where one is float64, else
    float32 where one has a type (a number, a constant, a layer's parameters), else None."""
    LayerFunction = _layer_function()
    found: set = set()

    def visit(v):
        if isinstance(v, UnknownOutput):
            v = v.waiting
        if isinstance(v, DeferredReads):
            if v._typed is not None:
                found.add(np.dtype(v._typed.dtype))
            else:
                if isinstance(v._fn, LayerFunction):
                    found.add(np.dtype(np.float32))
                for a in v._operands():
                    visit(a)
        elif isinstance(v, LayerFunction) or (isinstance(v, (int, float)) and
                                              not isinstance(v, bool)):
            found.add(np.dtype(np.float32))
        elif isinstance(v, GraphObject) and not _shapeless(v):
            found.add(np.dtype(v.dtype))
        elif isinstance(v, (list, tuple)):
            for u in v:
                visit(u)
    visit(deferred)
    if not found:
        return None
    return np.float64 if np.dtype(np.float64) in found else np.float32


def parts_of(*values) -> list:
    """The Deferreds not built yet that ``values`` (waiting Functions, their outputs, lists of
    them, anything) are made of, each after those it reads, each once.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> h = C.relu(C.placeholder(name="p"))
        >>> for f in parts_of((C.plus(h, 1, name="s"), h.output)):
        ...     print(f)
        ReLU(p: Sequence[tensor]) -> Sequence[tensor]
        s: Composite(p: Sequence[tensor]) -> Sequence[tensor]
    """
    out: list = []
    seen: set = set()       # (the ids of those in out: a test of each in out was quadratic)

    def visit(v):
        if isinstance(v, UnknownOutput):
            v = v.waiting
        if isinstance(v, DeferredReads) and v._typed is None and id(v) not in seen:
            seen.add(id(v))
            for a in v._operands():
                visit(a)
            out.append(v)
        elif isinstance(v, (list, tuple)):
            for u in v:
                visit(u)
    visit(values)
    return out


def reads(value: Any, ph) -> bool:
    """Whether ``value`` (a waiting Function or its output) reads the placeholder ``ph``."""
    if isinstance(value, UnknownOutput):
        value = value.waiting
    if not isinstance(value, DeferredReads) or value._typed is not None:
        return False
    found: list = []
    value._leaves(found, set(), {})
    return any(getattr(p, "variable", None) is getattr(ph, "variable", ph) for p in found)


def found(ph, values: list) -> bool:
    """Whether one of ``values`` (waiting Functions, or Functions with a graph) reads the
    placeholder ``ph`` (CNTK refuses to replace one that none reads)."""
    target = getattr(ph, "variable", None)
    for value in values:
        if isinstance(value, (DeferredReads, UnknownOutput)):
            owner = value.waiting if isinstance(value, UnknownOutput) else value
            if owner._typed is not None or reads(owner, ph):
                return True
    return target is None or G.reads([v.variable for v in values
                                      if isinstance(v, GraphObject)], target)


def as_built(values: tuple) -> tuple:
    """``values`` with each waiting Function or layer given its types (``update_signature``)
    replaced by the Function it built."""
    LayerFunction = _layer_function()

    def built(v):
        if isinstance(v, UnknownOutput) and v.waiting._typed is not None:
            return v.of(v.waiting._typed)
        if isinstance(v, DeferredReads) and v._typed is not None:
            return v._typed
        if isinstance(v, LayerFunction) and v._signature is not None:
            return v._signature
        if isinstance(v, (list, tuple)) and any(
                isinstance(u, (DeferredReads, UnknownOutput, LayerFunction)) for u in v):
            return type(v)(built(u) for u in v)
        return v
    return tuple(built(v) for v in values)

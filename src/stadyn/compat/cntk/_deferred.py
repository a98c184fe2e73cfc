"""Ops on placeholders without a shape, and on layers not applied yet: recorded, built later.

CNTK types a graph lazily: ``C.splice(x, C.sequence.future_value(x))`` on ``x =
C.placeholder()`` is a Function whose shapes are inferred once ``x`` is bound, and an op
applied to a layer (``C.sequence.reduce_sum(C.layers.Recurrence(...))``,
``C.cross_entropy_with_softmax(model, labels)``) applies to the layer's own placeholder.
Stadyn's graphs have shapes from the start, so such a call is recorded as a
:class:`Deferred`: applying it to operands with shapes (as ``Sequential`` does with a step),
replaying the recorded calls on them, builds the graph.  CNTK 202 writes its one-word
look-ahead and its bidirectional recurrence this way.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.placeholder()
    >>> look_ahead = C.splice(x, C.sequence.future_value(x))
    >>> [p.name for p in look_ahead.placeholders], look_ahead.shape
    ([''], (-2,))
    >>> s = C.sequence.input_variable(2)
    >>> look_ahead(s).shape
    (4,)
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import numpy as np

from . import _graph as G
from ._adapt import ShapelessPlaceholderError
from ._axis import Axis
from ._deferred_operands import (LAYER_CLASSES, PROBING, UnknownOutput, _arguments_of, _keep,
                                 _layer_function, _shapeless)
from ._late import late
from ...graph import source_location, user_location
from ._mixins import GraphObject, TensorOpsMixin
from ._deferred_printed import DeferredPrinting
from ._deferred_runs import DeferredRuns
from ._deferred_root import DeferredGraph
from ._deferred_loops import (bind_loop, close_built_loops, has_unknown, loop_of,
                              loop_placeholder, probe_call)
from ._deferred_shapes import probed_dynamic_axes, probed_shape

__all__ = ["Deferred", "UnknownOutput", "pending", "LAYER_CLASSES", "PROBING", "as_built",
           "parts_of"]


def pending(args: tuple, kwargs: dict, layers: bool = True) -> bool:
    """Whether a call on ``args``/``kwargs`` must wait: an operand is a placeholder without a
    shape, a :class:`Deferred`, or (``layers``) a layer not applied to anything.  While
    ``@C.Function`` probes its Python function (:data:`PROBING`), such a call raises
    :class:`ShapelessPlaceholderError`."""
    found = _pending(args, kwargs, layers)
    if found and PROBING[0]:
        raise ShapelessPlaceholderError("an op on a placeholder without a shape")
    return found


def _pending(args: tuple, kwargs: dict, layers: bool) -> bool:
    LayerFunction = _layer_function()

    def check(v) -> bool:
        if isinstance(v, UnknownOutput):
            v = v.owner
        if isinstance(v, Deferred):
            return v._typed is None     # (a typed one is the Function it built)
        if _shapeless(v):
            return True
        if layers and isinstance(v, LayerFunction):
            return True
        if isinstance(v, (list, tuple)):
            return any(check(u) for u in v)
        return False
    return any(check(a) for a in args) or any(check(v) for v in kwargs.values())


_nothing = contextlib.nullcontext


class Deferred(DeferredPrinting, DeferredRuns, DeferredGraph, TensorOpsMixin):
    """A call waiting for the shapes of its placeholders (see the module's text): its
    ``placeholders`` (and ``arguments``) are the placeholders without a shape it reads, first
    seen first, a layer's own placeholder ``keep`` for a layer used as an operand; calling it on
    Functions or Variables (one per placeholder) replays the call on them."""

    def __init__(self, fn, args: tuple, kwargs: dict, name: "str | None" = None,
                 shape: "tuple | None" = None, check=None):
        self._fn, self._args, self._kwargs = fn, tuple(args), dict(kwargs)
        # where the user made it (its op, built later, is placed there: a shape error names
        # this line) and the check its op makes as it is called, made again when it is built
        self._where, self._check = user_location(), check
        if shape is not None:       # (CNTK's, inferred as the op was made: not probed for)
            self._probed_shape = tuple(shape)
        self._bound: dict[int, Any] = {}
        self._loops: dict[int, tuple] = {}     # loops closed through it (_deferred_loops)
        self._typed = None          # the Function update_signature built
        if name is None:        # (a layer applied: the layer's name, as CNTK 2.7 names it)
            name = fn._shown_name_and_op()[0] if isinstance(fn, _layer_function()) else \
                kwargs.get("name", "")
        self.name = name if isinstance(name, str) else ""

    def update_signature(self, *arg_types, **kwarg_types) -> None:
        """Give the placeholders types (``3``, ``(3, 2)``, ``Tensor[3]``, ``Sequence[...]``;
        in order, or by the placeholders' names), in place: the graph is built on inputs of
        those types, named as the placeholders, and this is its Function from now on.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> f = C.relu(C.placeholder(name="p"))
            >>> f.update_signature(3)
            >>> [(a.name, a.shape) for a in f.arguments], f.eval(np.array([[-1, 0, 2]],
            ...                                                     np.float32)).tolist()
            ([('p', (3,))], [[0.0, 0.0, 2.0]])
        """
        if self._typed is not None:
            self._typed.update_signature(*arg_types, **kwarg_types)
            return
        input_of_type = late("input_of_type")
        phs = self.placeholders
        if len(arg_types) + len(kwarg_types) != len(phs):
            raise TypeError(f"update_signature: this Function has {len(phs)} placeholders, "
                            f"{len(arg_types) + len(kwarg_types)} types given")
        by_name = {p.name: k for k, p in enumerate(phs)}
        types_ = list(arg_types) + [None] * (len(phs) - len(arg_types))
        for key, kind in kwarg_types.items():
            if key not in by_name or by_name[key] < len(arg_types):
                raise TypeError(f"update_signature: no placeholder {key!r} left to type")
            types_[by_name[key]] = kind
        self._typed = self(*[input_of_type(t, p.name) for t, p in zip(types_, phs)])

    def declare_args(self, *arg_types) -> None:
        """The 2017 betas' :meth:`update_signature` (deprecated): the placeholders, in order,
        replaced by the given Variables or by inputs of the given shapes."""
        warnings.warn("This will be removed in future versions. Please use "
                      "update_signature(...) instead", DeprecationWarning, stacklevel=2)
        if self._typed is not None:
            self._typed.declare_args(*arg_types)
            return
        phs = self.placeholders
        if len(arg_types) != len(phs):
            raise TypeError(f"CNTK Function.declare_args() expected {len(phs)} arguments, got "
                            f"{len(arg_types)}")
        input_of_type = late("input_of_type")
        self.replace_placeholders({p: t if isinstance(t, GraphObject) else input_of_type(t)
                                   for p, t in zip(phs, arg_types)})

    def argument_map(self, *args, **kwargs) -> dict:
        """``{argument: value}`` from positional values (in the order of ``arguments``) and
        keyword values (by argument name), as a Function's."""
        if self._typed is not None:
            return self._typed.argument_map(*args, **kwargs)
        params = self.arguments
        if len(args) > len(params):
            raise TypeError(f"this Function takes {len(params)} arguments, {len(args)} given")
        mapping = dict(zip(params, args))
        by_name = {p.name: p for p in params}
        for key, value in kwargs.items():
            if key not in by_name:
                raise TypeError(f"this Function has no argument named {key!r}")
            mapping[by_name[key]] = value
        return mapping

    def __getattr__(self, name: str):
        typed = self.__dict__.get("_typed")
        if typed is None or name.startswith("__"):     # (typed: the Function it built, whole)
            prop = getattr(type(self), name, None)
            if isinstance(prop, property):      # (its own reason, not "has no 'output'")
                return prop.fget(self)
            if self.__dict__.get("_made_parameters"):   # (a layer's, made at the call: W)
                return getattr(self._fn, name)
            raise AttributeError(f"{type(self).__name__} has no {name!r}")
        return getattr(typed, name)

    # -- what it reads ----------------------------------------------------------------------
    def _leaves(self, out: list, seen: set, bound: dict, arguments: bool = False) -> None:
        """The placeholders without a shape it reads and are not ``bound``, into ``out``;
        with ``arguments``, the arguments of the parts built already too, in order."""
        LayerFunction = _layer_function()

        def visit(v):
            if isinstance(v, UnknownOutput):
                v = v.owner
            if isinstance(v, Deferred) and v._typed is not None:
                for a in (v._typed.arguments if arguments else ()):
                    if id(a.variable) not in seen:
                        seen.add(id(a.variable))
                        out.append(a)
            elif isinstance(v, Deferred):
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
        for a in self._args:
            visit(a)
        for a in self._kwargs.values():
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

    @property
    def output(self):
        """Its output: until it is built, one of unknown shape (``(-2,)``) and unknown dynamic
        axes, as CNTK 2.7's (:class:`UnknownOutput`), which ops take as they take this
        Function; once built, its graph's."""
        if self._typed is not None:
            return self._typed.output
        return UnknownOutput(self)

    @property
    def outputs(self) -> tuple:
        """``(output,)`` (once built, its graph's outputs)."""
        return self._typed.outputs if self._typed is not None else (self.output,)

    @property
    def shape(self) -> tuple:
        """``(-2,)``: not known until it is applied (CNTK's unknown shape); over placeholders
        with inferred axes, CNTK's shape with ``-1`` for them (``_deferred_shapes``)."""
        return probed_shape(self) if self._typed is None else self._typed.shape

    @property
    def dynamic_axes(self) -> tuple:
        """Its output's dynamic axes: CNTK 2.7's unknown ones (``(Axis('UnknownAxes'),)``)
        until it is built, but where every placeholder it reads has none
        (``dynamic_axes=[]``): then those of the op on operands without dynamic axes (none, or
        those of the other operands: a sequence input's).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> p = C.placeholder(2, dynamic_axes=[])
            >>> C.reduce_sum(p * 2).dynamic_axes, len((C.input_variable(2) + p).dynamic_axes)
            ((), 1)
            >>> C.relu(C.placeholder()).dynamic_axes
            (Axis('UnknownAxes'),)
        """
        if self._typed is not None:
            return self._typed.dynamic_axes
        axes = probed_dynamic_axes(self)
        return Axis.unknown_dynamic_axes() if axes is None else axes

    @property
    def parameters(self) -> tuple:
        """The parameters among its :attr:`inputs` (each once): those of the layers it applies
        and of the values with a shape it reads (``times(p, W)``: ``W``), as CNTK 2.7 lists
        them."""
        if self._typed is not None:
            return self._typed.parameters
        return tuple(a for a in self.inputs if getattr(a, "is_parameter", False))

    # -- building ---------------------------------------------------------------------------
    def _replay(self, bound: dict, memo: dict):
        if id(self) in memo:
            return memo[id(self)]
        LayerFunction = _layer_function()

        def value(v):
            if isinstance(v, UnknownOutput):
                built = value(v.owner)
                return getattr(built, "output", built)
            if isinstance(v, Deferred):     # (one built already is its graph, in place)
                return v._typed if v._typed is not None else v._replay(bound, memo)
            if isinstance(v, LayerFunction) and v is not self._fn:
                keep = _keep(v)
                if id(keep.variable) not in bound:
                    return v
                key = ("layer", id(v))
                if key not in memo:
                    memo[key] = v(bound[id(keep.variable)])
                return memo[key]
            if isinstance(v, GraphObject) and id(v.variable) in bound:
                return bound[id(v.variable)]
            if loop_of(self, v) is not None:
                return loop_placeholder(loop_of(self, v), bound, memo, _build_value)
            if isinstance(v, list):
                return [value(u) for u in v]
            if isinstance(v, tuple):
                return tuple(value(u) for u in v)
            return v
        args = [value(a) for a in self._args]
        kwargs = {k: value(v) for k, v in self._kwargs.items()}
        if not memo.get("probe"):
            with source_location(self._where) if self._where is not None else _nothing():
                if self._check is not None:
                    self._check(args, kwargs)
                out = self._fn(*args, **kwargs)
        elif has_unknown(args, kwargs):     # (a loop's shapes being inferred)
            out = probe_call(self._fn, args, kwargs)
        else:
            out = probe_call(self._fn, args, kwargs, known=True)
        memo[id(self)] = out
        return out

    def _build(self, bound: dict):
        """Its graph with the placeholders ``bound`` (``{id(variable): value}``), the loops it
        meets closed (``_deferred_loops``)."""
        memo: dict = {}
        out = self._replay(bound, memo)
        close_built_loops(bound, memo, _build_value)
        return out

    def __call__(self, *args, **kwargs):
        if self._typed is not None:
            return self._typed(*args, **kwargs)
        phs = self.placeholders
        if len(args) > len(phs):
            raise TypeError(f"this Function has {len(phs)} placeholders to bind, "
                            f"{len(args)} operands given")
        bound = dict(self._bound)
        bound.update((id(p.variable), a) for p, a in zip(phs, args))
        by_name = {p.name: p for p in phs}
        for key, a in kwargs.items():
            if key not in by_name:
                raise TypeError(f"this Function has no placeholder named {key!r}")
            bound[id(by_name[key].variable)] = a
        return self._build(bound)

    def bound_to(self, substitutions: dict):
        """The graph it makes with its placeholders bound as ``substitutions``
        (``{placeholder: value}``) says, itself left as it is (``as_block``'s inner graph)."""
        if self._typed is not None:
            return self._typed
        bound = dict(self._bound)
        bound.update((id(p.variable), a) for p, a in substitutions.items())
        return self._build(bound)

    def clone(self, method, substitutions: "dict | None" = None):
        """A copy: with each placeholder it reads substituted by a value with a shape
        (``{placeholder: value}``), the graph built on those values, its parameters shared,
        cloned or frozen (``method``, a ``CloneMethod``), itself left as it is, as CNTK 2.7's
        clone; a ValueError naming the placeholders left otherwise.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> p, y = C.placeholder(name="p"), C.input_variable(7, name="y")
            >>> h = C.layers.Dense(4, name="hd")(p)
            >>> print(h.clone(C.CloneMethod.share, {p: y}))
            hd: Dense(y: Tensor[7]) -> Tensor[4]
            >>> print(h)
            hd: Dense(p: Sequence[tensor]) -> Sequence[tensor]
        """
        if self._typed is not None:
            return self._typed.clone(method, substitutions)
        subs = dict(substitutions or {})
        given = {id(getattr(k, "variable", k)) for k in subs}
        left = [p.name or p.uid for p in self.placeholders if id(p.variable) not in given]
        if left or pending(tuple(subs.values()), {}):
            raise ValueError(
                f"clone: the placeholders {left} have no shape and no value with one among "
                "the substitutions: Stadyn builds an op on such a placeholder when it is "
                "given one (substitute every placeholder by a value with a shape, or give "
                "them shapes: placeholder(shape=...))")
        built = self.bound_to(subs)
        if getattr(method, "value", method) == "share":
            return built
        return built.clone(method, {v: v for v in subs.values() if isinstance(v, GraphObject)})

    def replace_placeholders(self, substitutions: dict) -> "Deferred":
        """Bind placeholders (``{placeholder: variable}``); returns itself, built (its
        ``output``, ``arguments``, ``eval`` those of its graph, as CNTK 2.7's function once
        its placeholders are replaced) when every placeholder it reads is bound to a value
        with a shape, else waiting for the others.  A placeholder bound to a value computed
        from these placeholders (a loop, through ``past_value``) is replaced in this
        Function's graph (another Function reading it keeps it as a placeholder, as in CNTK
        2.7), its shape inferred when the graph is built (``_deferred_loops``).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> ph = C.placeholder(name="ph")
            >>> head = C.layers.Dense(2)(ph)
            >>> f = head.replace_placeholders({ph: C.input_variable(3, name="x")})
            >>> f is head, [a.name for a in f.arguments], f.output.shape
            (True, ['x'], (2,))
        """
        if self._typed is not None:
            self._typed.replace_placeholders(substitutions)
            return self
        for ph in substitutions:
            if not _found(ph, [self] + list(substitutions.values())):
                raise G.not_found(ph, self)
        shapeless = [ph for ph in substitutions if _shapeless(ph)]
        # the graph CNTK replaces placeholders in: this Function's and, once replaced, that
        # of the values put in (LightRNN's c is read through past_value(h2) alone)
        graph = self._parts() + [part for new in substitutions.values()
                                 for part in parts_of(new)]
        for ph, new in substitutions.items():
            if _shapeless(ph) and any(_reads(new, p) for p in shapeless):
                # a loop: replaced in this Function's graph (not in another one reading the
                # placeholder), its shape inferred when the graph is built (_deferred_loops)
                bind_loop(graph, ph, new)
            else:
                self._bound[id(ph.variable)] = new
        if pending(tuple(self._bound.values()), {}):
            return self
        # as CNTK replaces them in place: each part (this one last) whose placeholders are
        # all bound now is built, and is that graph from now on (``h`` of ``s = h + p2``)
        memo: dict = {}
        for part in self._parts():
            left: list = []
            part._leaves(left, set(), self._bound)
            if part._typed is None and not left:
                part._typed = part._replay(dict(self._bound), memo)
        close_built_loops(dict(self._bound), memo, _build_value)
        return self

    def replace_placeholder(self, substitution) -> "Deferred":
        """Bind the only placeholder (:meth:`replace_placeholders`)."""
        placeholders = self.placeholders
        if len(placeholders) != 1:
            raise ValueError(f"replace_placeholder: the Function has {len(placeholders)} "
                             "placeholders, not one")
        return self.replace_placeholders({placeholders[0]: substitution})

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
                out.append(v.owner if isinstance(v, UnknownOutput) else v)
        add(list(self._args) + list(self._kwargs.values()))
        return out

    def __rshift__(self, other):
        return other(self)

    @property
    def op_name(self) -> str:
        """``CompositeFunctionOpName``, as a composite's (once built, its graph's)."""
        return "CompositeFunctionOpName" if self._typed is None else self._typed.op_name

    @property
    def is_composite(self) -> bool:
        return True if self._typed is None else self._typed.is_composite

    def _known_dtype(self):
        """The data type its operands fix (its :class:`UnknownOutput`'s ``dtype``)."""
        return _known_dtype(self)


def _known_dtype(deferred: Deferred):
    """The data type a waiting Function's operands fix: float64 where one is float64, else
    float32 where one has a type (a number, a constant, a layer's parameters), else None."""
    LayerFunction = _layer_function()
    found: set = set()

    def visit(v):
        if isinstance(v, UnknownOutput):
            v = v.owner
        if isinstance(v, Deferred):
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


def _build_value(value: Any, bound: dict, memo: dict):
    """``value`` (a waiting Function, its output, a value with a shape) built with the
    placeholders ``bound``, sharing ``memo`` with the build under way."""
    if isinstance(value, UnknownOutput):
        built = _build_value(value.owner, bound, memo)
        return getattr(built, "output", built)
    if isinstance(value, Deferred):
        return value._typed if value._typed is not None else value._replay(bound, memo)
    return value


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
            v = v.owner
        if isinstance(v, Deferred) and v._typed is None and id(v) not in seen:
            seen.add(id(v))
            for a in v._operands():
                visit(a)
            out.append(v)
        elif isinstance(v, (list, tuple)):
            for u in v:
                visit(u)
    visit(values)
    return out


def _reads(value: Any, ph) -> bool:
    """Whether ``value`` (a waiting Function or its output) reads the placeholder ``ph``."""
    if isinstance(value, UnknownOutput):
        value = value.owner
    if not isinstance(value, Deferred) or value._typed is not None:
        return False
    found: list = []
    value._leaves(found, set(), {})
    return any(getattr(p, "variable", None) is getattr(ph, "variable", ph) for p in found)


def _found(ph, values: list) -> bool:
    """Whether one of ``values`` (waiting Functions, or Functions with a graph) reads the
    placeholder ``ph`` (CNTK refuses to replace one that none reads)."""
    target = getattr(ph, "variable", None)
    for value in values:
        if isinstance(value, (Deferred, UnknownOutput)):
            owner = value.owner if isinstance(value, UnknownOutput) else value
            if owner._typed is not None or _reads(owner, ph):
                return True
    return target is None or G.reads([v.variable for v in values
                                      if isinstance(v, GraphObject)], target)


def as_built(values: tuple) -> tuple:
    """``values`` with each :class:`Deferred` given its types (``update_signature``) replaced
    by the Function it built."""
    def built(v):
        if isinstance(v, UnknownOutput) and v.owner._typed is not None:
            return v.owner._typed.output
        if isinstance(v, Deferred) and v._typed is not None:
            return v._typed
        if isinstance(v, (list, tuple)) and any(isinstance(u, (Deferred, UnknownOutput))
                                                for u in v):
            return type(v)(built(u) for u in v)
        return v
    return tuple(built(v) for v in values)

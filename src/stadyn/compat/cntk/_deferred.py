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
from typing import Any

from . import _graph as G
from ._adapt import ShapelessPlaceholderError, several_outputs_message
from ._argument_binding import ArgumentBinding
from ._axis import Axis
from ._deferred_operands import (LAYER_CLASSES, PROBING, UnknownOutput, _keep, _layer_function,
                                 _shapeless)
from ...graph import source_location, topological_nodes, user_location
from ._mixins import GraphObject, TensorOpsMixin, waiting_function_eq
from ._deferred_printed import DeferredPrinting
from ._deferred_runs import DeferredRuns
from ._deferred_root import DeferredGraph
from ._deferred_loops import (bind_loop, close_built_loops, has_unknown, loop_of,
                              loop_placeholder, probe_call, STRICT)
from ._deferred_reads import DeferredReads, found, parts_of, reads
from ._deferred_shapes import probed_dynamic_axes, probed_shape
from ._sequence_placeholders import note_call

__all__ = ["Deferred", "UnknownOutput", "pending", "not_a_block", "cloning", "LAYER_CLASSES",
           "PROBING"]

_CLONING = [0]      # how many calls or clones of a waiting Function are building its graph


def cloning() -> bool:
    """Whether the graph being built is that of a call or a clone of a waiting Function (CNTK
    2.7's ``__call__`` clones the Function: each user function in it is made again by its
    ``clone(cloned_inputs)``), not one bound in place (``replace_placeholders``,
    ``as_block``).

    Example:
        >>> cloning()
        False
    """
    return _CLONING[0] > 0


@contextlib.contextmanager
def _cloned():
    _CLONING[0] += 1
    try:
        yield
    finally:
        _CLONING[0] -= 1


def not_a_block(f) -> ValueError:
    """CNTK 2.7's ValueError for ``block_root`` of a Function that is no block: a call
    waiting for its placeholders' shapes (a waiting loss), a layer not applied yet (its
    composite over placeholders; Function.cpp's ``BlockRoot``)."""
    return ValueError(f"Function::BlockRoot() called for a Function '{f!r}' which is not a "
                      "block.")


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
            v = v.waiting
        if isinstance(v, Deferred):
            return v._typed is None     # (a typed one is the Function it built)
        if _shapeless(v):
            return True
        if layers and isinstance(v, LayerFunction):     # (one given a signature: typed,
            return v.__dict__.get("_signature") is None     # the Function it built)
        if isinstance(v, (list, tuple)):
            return any(check(u) for u in v)
        return False
    return any(check(a) for a in args) or any(check(v) for v in kwargs.values())


_nothing = contextlib.nullcontext


def _combined_key(key):
    """A ``replace_placeholders`` key as CNTK 2.7's SWIG takes it: a waiting ``combine`` of one
    output (``C.combine([p])``) as that output, the placeholder; of several, SWIG's
    TypeError; anything else as given."""
    if isinstance(key, Deferred) and key._typed is None and \
            getattr(key._fn, "combines_outputs", False):
        outs = key.outputs
        if len(outs) != 1:
            raise TypeError("cannot convert key of dictionary to N4CNTK8VariableE\n(a combine "
                            "of several outputs: key each of its placeholders)")
        return outs[0]
    return key


class Deferred(DeferredReads, DeferredPrinting, DeferredRuns, DeferredGraph, TensorOpsMixin,
               ArgumentBinding):
    """A call waiting for the shapes of its placeholders (see the module's text): its
    ``placeholders`` (and ``arguments``) are the placeholders without a shape it reads, first
    seen first, a layer's own placeholder ``keep`` for a layer used as an operand; calling it on
    Functions or Variables (one per placeholder) replays the call on them."""

    _cntk_function = True       # (isinstance(f, C.Function): CNTK 2.7's Function over
                                # placeholders)

    # compared with a Variable, its output is (CNTK 2.7: ``x == w`` False, ``w.output == w``
    # True); equal to itself alone otherwise, hashed by identity, as CNTK's Python Function
    compares_as_output = True
    __eq__ = waiting_function_eq
    __hash__ = object.__hash__

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
        typed = self._typed_arguments(arg_types, kwarg_types)
        if all(t is not None for t in (*arg_types, *kwarg_types.values())):
            self._typed = self(*[typed[p] for p in self.signature])
        elif typed:         # (None leaves a placeholder as it is, as CNTK 2.7 leaves it)
            self.replace_placeholders(typed)

    def __getattr__(self, name: str):
        typed = self.__dict__.get("_typed")
        if typed is None or name.startswith("__"):     # (typed: the Function it built, whole)
            prop = getattr(type(self), name, None)
            if isinstance(prop, property):      # (its own reason, not "has no 'output'")
                return prop.fget(self)
            if self.__dict__.get("_made_parameters"):   # (a layer's, made at the call: W)
                return getattr(self._fn, name)
            if name == "block_root":
                raise not_a_block(self)
            raise AttributeError(f"{type(self).__name__} has no {name!r}")
        return getattr(typed, name)

    # -- what it is ---------------------------------------------------------------------------
    @property
    def output(self):
        """Its output: until it is built, one of unknown shape (``(-2,)``) and unknown dynamic
        axes, as CNTK 2.7's (:class:`UnknownOutput`), which ops take as they take this
        Function; once built, its graph's.  A waiting ``combine`` of several outputs has
        none: CNTK 2.7's RuntimeError (so ``x == C.combine([w, p])`` is its TypeError)."""
        if self._typed is not None:
            return self._typed.output
        if getattr(self._fn, "combines_outputs", False) and len(self.outputs) > 1:
            raise RuntimeError(several_outputs_message(self))
        return UnknownOutput(self)

    @property
    def outputs(self) -> tuple:
        """``(output,)`` (once built, its graph's outputs); a ``combine``'s, its operands'
        outputs, as CNTK 2.7's Combine keeps them; a layer's call, one for each output of the
        layer (an LSTM's h and c, as CNTK 2.7's Function of the LSTM over placeholders)."""
        if self._typed is not None:
            return self._typed.outputs
        if getattr(self._fn, "combines_outputs", False):
            return tuple(o for v in self._operands() if not isinstance(v, str)  # (its name)
                         for o in (getattr(v, "outputs", None) or (v,)))
        if isinstance(self._fn, _layer_function()):     # (an LSTM's h and c, as CNTK 2.7's)
            return tuple(UnknownOutput(self, k, picked=True)
                         for k in range(len(self._fn.outputs)))
        return (self.output,)

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
                return v.of(value(v.waiting))
            if isinstance(v, Deferred):     # (one built already is its graph, in place)
                return v._typed if v._typed is not None else v._replay(bound, memo)
            if isinstance(v, LayerFunction) and v is not self._fn:
                keep = _keep(v)
                if id(keep.variable) not in bound:
                    return v
                key = ("layer", id(v))
                if key not in memo:
                    memo[key] = v(_built(bound[id(keep.variable)]))
                return memo[key]
            if isinstance(v, GraphObject) and id(v.variable) in bound:
                return _built(bound[id(v.variable)])
            if _CLONING[0] and isinstance(v, GraphObject) and holds_user_functions(v.variable):
                # (a call clones the whole graph in CNTK 2.7: a part built already, a typed
                # @C.Function applied in the body, has its user functions cloned too)
                key = ("cloned", id(v.variable))
                if key not in memo:
                    memo[key] = _cloned_part(v)
                return memo[key]
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
            self.show_waiting_constants(out)
        elif has_unknown(args, kwargs):     # (a loop's shapes being inferred)
            out = probe_call(self._fn, args, kwargs, strict=memo.get(STRICT, False))
        else:
            out = probe_call(self._fn, args, kwargs, known=True,
                             strict=memo.get(STRICT, False))
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
        mapping = self.argument_map(*args, **kwargs)
        if any(isinstance(v, GraphObject) for v in mapping.values()):
            self._check_types(mapping)
        waiting = {id(p.variable) for p in self.placeholders}
        bound = dict(self._bound)
        bound.update((id(p.variable), a) for p, a in mapping.items() if id(p.variable) in waiting)
        with _cloned():             # (CNTK 2.7's call is a clone: its user functions' clone)
            built = self._build(bound)
        # the arguments of its parts built already (inputs bound before): replaced as a
        # Function's are, its parameters shared
        others = {p: a for p, a in mapping.items()
                  if id(p.variable) not in waiting and a is not p}
        out = built.clone("share", others) if others else built
        note_call(self, args, kwargs, out)  # (on a placeholder made on a sequence axis: built
        return out                          # again on what binds it)

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
        if getattr(method, "value", method) == "share":
            with _cloned():         # (the clone of what is built: its user functions' clone)
                return self.bound_to(subs)
        built = self.bound_to(subs)     # (Function.clone below makes them again)
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
        substitutions = {_combined_key(ph): new for ph, new in substitutions.items()}
        if self._typed is not None:
            self._typed.replace_placeholders(substitutions)
            return self
        for ph in reversed(list(substitutions)):         # (CNTK 2.7: the last given first)
            if not found(ph, [self] + list(substitutions.values())):
                raise G.not_found(ph, self)
        shapeless = [ph for ph in substitutions if _shapeless(ph)]
        # the graph CNTK replaces placeholders in: this Function's and, once replaced, that
        # of the values put in (LightRNN's c is read through past_value(h2) alone)
        graph = self._parts() + [part for new in substitutions.values()
                                 for part in parts_of(new)]
        for ph, new in substitutions.items():
            if _shapeless(ph) and any(reads(new, p) for p in shapeless):
                # a loop: replaced in this Function's graph (not in another one reading the
                # placeholder), its shape inferred when the graph is built (_deferred_loops)
                bind_loop(graph, ph, new)
            else:
                self._bound[id(ph.variable)] = new
        for part in self._parts():      # (CNTK 2.7 infers again what the values bound tell)
            part.__dict__["_bound_for_shape"] = dict(self._bound)
            if part.__dict__.get("_probed_shape") == (-2,):
                del part.__dict__["_probed_shape"]
                part.__dict__.pop("_over_known", None)
                if part.__dict__.get("_probed_axes", False) is None:
                    del part.__dict__["_probed_axes"]
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

    def __rshift__(self, other):
        return other(self)

    @property
    def op_name(self) -> str:
        """``CompositeFunctionOpName``, as a composite's (once built, its graph's)."""
        return "CompositeFunctionOpName" if self._typed is None else self._typed.op_name

    @property
    def is_composite(self) -> bool:
        return True if self._typed is None else self._typed.is_composite



def holds_user_functions(v) -> bool:
    """Whether the graph computing the Variable ``v`` holds a user function (an op whose
    ``function`` its clone makes again, ``ops.functions``' call)."""
    return v.parent is not None and any(
        hasattr(node.kwargs.get("function"), "cloned") for node in topological_nodes([v]))


def _cloned_part(v):
    """The clone (parameters and inputs shared, user functions cloned) of the Function ``v``
    is, or whose output it is."""
    function = v if hasattr(v, "clone") else v.owner
    copy = function.clone("share", {a: a for a in function.arguments})
    if function is v:
        return copy
    return copy.outputs[list(function.outputs).index(v)]


def _built(value: Any) -> Any:
    """``value`` put in for a placeholder, as its graph where it is a waiting Function built
    already (one whose own placeholders were replaced before: CNTK 2.7 reads its graph)."""
    if isinstance(value, Deferred) and value._typed is not None:
        return value._typed
    return value


def _build_value(value: Any, bound: dict, memo: dict):
    """``value`` (a waiting Function, its output, a value with a shape) built with the
    placeholders ``bound``, sharing ``memo`` with the build under way."""
    if isinstance(value, UnknownOutput):
        return value.of(_build_value(value.waiting, bound, memo))
    if isinstance(value, Deferred):
        return value._typed if value._typed is not None else value._replay(bound, memo)
    return value

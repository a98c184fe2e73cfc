"""Rebuilding a CNTK Function (:class:`FunctionRebuilding`, mixed into
:class:`~stadyn.compat.cntk.Function`): ``clone`` (:class:`CloneMethod`), calling it on other
Functions, ``>>``/``<<``, ``replace_placeholders`` and typing its placeholders
(``update_signature``).  The copy itself is replayed by :mod:`._loops` and :mod:`._clone`; the
Function made is reached through :mod:`._late`, the class being the one this mixes into.
What a waiting Function (``_deferred.Deferred``) does as a Function does, over its own
``arguments``, ``placeholders`` and ``replace_placeholders`` -- ``argument_map``,
``replace_placeholder``, ``declare_args`` -- is :mod:`._argument_binding`'s, mixed into both.
"""

from __future__ import annotations

import enum
from typing import Any

from ...graph import Variable, topological_nodes
from . import _graph as G
from ._adapt import ShapelessPlaceholderError, unwrap
from ._argument_binding import ArgumentBinding
from ._block_inside import outside_keys
from ._late import late
from ._loops import clone_graph, close_loops, split_loops
from ._mixins import GraphObject
from ._sequence_placeholders import non_sequence_bindings, note_call, noted_readers, rebuilt
from ._shown_constants import shown_constants
from ._body_results import argument_leaves
from ._deferred import pending

__all__ = ["CloneMethod", "FunctionRebuilding"]


class CloneMethod(enum.Enum):
    """How ``Function.clone`` treats parameters: ``share`` them, ``clone`` them (new parameters
    with the same values) or ``freeze`` them (constants with their values)."""

    clone = "clone"
    share = "share"
    freeze = "freeze"


def _as_method(method: Any) -> str:
    if isinstance(method, CloneMethod):
        return method.value
    if isinstance(method, str) and method in ("clone", "share", "freeze"):
        return method
    raise ValueError(f"clone: method must be a CloneMethod, got {method!r}")


def _carry_parameter_order(old_roots: list, new_roots: list) -> None:
    """A clone's new parameters keep the order recorded for a loaded file's
    (``G.record_parameter_order``): CNTK 2.7's clone of a loaded Function lists them as the
    loaded one does.  The two graphs are walked alike, so their parameters pair by place."""
    def parameters(roots):
        return [v for v in G.walk_leaves(roots, stored=True) if G.kind_of(v) == "parameter"]
    old = parameters(old_roots)
    if G.has_parameter_order(old):
        new = parameters(new_roots)
        if len(old) == len(new):
            G.carry_parameter_order(old, new, [v for node in topological_nodes(new_roots)
                                               for v in node.outputs if v is not None])


class FunctionRebuilding(ArgumentBinding):
    """A Function's rebuilding methods (mixed into :class:`~stadyn.compat.cntk.Function`).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x, y = C.input_variable(2, name="x"), C.input_variable(2, name="y")
        >>> f = C.plus(x, 1.0)
        >>> [a.name for a in f.clone(C.CloneMethod.share, {x: y}).arguments]
        ['y']
    """

    __slots__ = ()

    def update_signature(self, *arg_types, **kwarg_types) -> None:
        """Give the arguments types, in place: each placeholder is replaced by an input of the
        given per-sample shape or type (``3``, ``(3, 2)``, ``Tensor[3]``,
        ``Sequence[Tensor[3]]``; None leaves it), named as it was.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> f = C.plus(C.placeholder(2, name="p"), 1.0)
            >>> f.update_signature(2)
            >>> [(a.name, a.shape, a.is_input) for a in f.arguments]
            [('p', (2,), True)]
        """
        self.replace_placeholders(self._typed_arguments(arg_types, kwarg_types))

    # -- rebuilding: the graph copied, applied, its placeholders replaced -----------------
    def clone(self, method, substitutions: dict | None = None) -> "FunctionRebuilding":
        """A copy of the graph: parameters shared, cloned or frozen (:class:`CloneMethod`);
        ``substitutions`` (``{variable: new}``) replaces variables on the way (a placeholder
        without a shape takes the shape of what it replaces).  Inputs are cloned unless
        substituted.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> x, y = C.input_variable(2), C.input_variable(2)
            >>> f = C.layers.Dense(2)(x)
            >>> g = f.clone(C.CloneMethod.freeze, {x: y})
            >>> g.arguments == (y,), len(g.parameters), len(g.constants)
            (True, 0, 2)
        """
        return self._copy(method, substitutions, "clone")

    def _copy(self, method, substitutions: "dict | None", what: str) -> "FunctionRebuilding":
        """:meth:`clone`, ``what`` (``"clone"``) naming the call in its errors."""
        method = _as_method(method)
        if substitutions is not None and not isinstance(substitutions, dict):
            raise TypeError("clone: the substitutions must be a dict")
        substitutions = outside_keys(substitutions)     # (keys inside a block: ignored)
        subs, walk = {}, _GraphWalk(self._roots())
        for old, new in (substitutions or {}).items():
            if old is None or new is None:
                raise AttributeError(f"clone: cannot replace {old!r} with {new!r}")
            key = _substituted(unwrap(old), old, walk)
            subs[key] = _bound_placeholder(unwrap(new), key)
        keyed = _keyed(substitutions or {})
        if method == "share" and non_sequence_bindings(keyed):
            roots = self._rebuilt_on(keyed, what)
        else:
            _refuse_waiting(subs, what)
            roots = clone_graph(self._roots(), subs, method)
            if method == "clone":
                _carry_parameter_order(self._roots(), roots)
        combined = self._combine()
        if combined is not None:        # a combine's copy is a combine of the same name
            return late("combine_outputs")(roots, combined.name)
        Function = late("Function")
        if len(roots) == 1:
            name = G.COMPOSITE_NAMES.get(self.variable)
            if name is not None and roots[0] is not self.variable:
                G.COMPOSITE_NAMES[roots[0]] = name      # (a renamed composite's copy: named)
            return Function(roots[0])
        return Function(roots[0], roots)

    def __call__(self, *args, **kwargs):
        """Apply this Function to other Functions (its arguments replaced; parameters shared),
        or evaluate it on data (one array, or a tuple for several outputs)."""
        mapping = self.argument_map(*args, **kwargs)
        symbolic = any(isinstance(v, GraphObject) for v in mapping.values())
        if symbolic:
            for a in self.arguments:
                mapping.setdefault(a, a)
            self._check_types(mapping)
            applied = self._copy(CloneMethod.share, mapping, "calling the Function")
            if self.variable in G.ARGUMENT_ORDER:       # the signature's order, substituted
                G.record_argument_order(applied.variable, argument_leaves(
                    [mapping[a] for a in self.arguments]))
            # (applied to a placeholder made on a sequence axis: applied again to what binds
            # it, as CNTK 2.7 infers the Function anew)
            note_call(self, args, kwargs, applied)
            return applied
        if any(getattr(type(v), "_cntk_function", False) for v in mapping.values()):
            # (an op over a placeholder, a layer not applied: of unknown shape, refused by a
            # typed argument as CNTK 2.7 refuses it, not run as data)
            self._check_types(mapping)
        values = self.eval(mapping, self.outputs)
        if isinstance(values, dict):
            return tuple(values[o] for o in self.outputs)
        return values

    def replace_placeholders(self, substitutions: dict) -> "FunctionRebuilding":
        """Replace placeholders in place (``{placeholder: variable}``); returns this Function."""
        if not isinstance(substitutions, dict):
            raise TypeError("replace_placeholders: the substitutions must be a dict")
        subs = {unwrap(ph): unwrap(new) for ph, new in substitutions.items()}
        self._check_found(substitutions, subs)
        plain, loops = split_loops(subs)
        keyed = _keyed(substitutions)
        if not loops and non_sequence_bindings(keyed):
            self._rebuild_in_place(keyed)
            return self
        for ph, new in plain.items():
            G.replace_placeholder(ph, new)
        if loops:           # a cycle through past_value / future_value: a recurrence
            for ph in loops:
                if ph not in G.PLACEHOLDERS:
                    raise ValueError("replace_placeholders: only placeholders can be replaced")
            close_loops(loops)
        return self

    def _rebuild_in_place(self, subs: dict) -> None:
        """``replace_placeholders`` where a placeholder made on a sequence axis is bound to a
        value without one (``subs``: :func:`_keyed`'s): its roots, and every value noted as
        computed from it, built again on the substitutes, each in its own place
        (:mod:`._sequence_placeholders`)."""
        memo: dict = {}
        for old in list(self._roots()) + noted_readers(subs):
            rebuilt(old, subs, "replace_placeholders", memo, in_place=True)
        G.BATCH.forget()

    def _rebuilt_on(self, subs: dict, what: str) -> list:
        """Its roots built again with ``subs`` (:func:`_keyed`'s ``{placeholder: value}``),
        where a placeholder made on a sequence axis is bound to a value without one: its ops
        called again on that value (:mod:`._sequence_placeholders`), as CNTK 2.7 infers them
        anew."""
        return [unwrap(rebuilt(root, subs, what)) for root in self._roots()]

    def _check_found(self, given: dict, subs: dict) -> None:
        """CNTK's ``ValueError`` for a placeholder that neither this Function's graph nor a
        value put in reads, and for a key that is no placeholder (an input given a type
        again)."""
        graph = list(self._roots()) + list(subs.values())
        # (CNTK 2.7 looks at them in its map's order, the last given first)
        for key, ph in reversed(list(zip(given, subs))):
            if ph not in G.PLACEHOLDERS and G.kind_of(ph) == "input" or (
                    ph in G.PLACEHOLDERS and not G.reads(graph, ph)):
                raise G.not_found(key, self)

    def __rshift__(self, other):
        if isinstance(other, tuple):
            outs = self.outputs
            return late("combine_outputs")([g(outs[i] if len(outs) > 1 else self)
                                    for i, g in enumerate(other)])
        if self.members and len(self.members) > 1:
            return other(*self.outputs)
        return other(self)

    def __lshift__(self, other):
        return self(other)


def _substituted(old: Variable, given: Any, walk: "_GraphWalk") -> Variable:
    """The Variable a clone of ``walk.roots`` substitutes for the key ``old`` (``given`` by the
    user).  The step output a recurrence's root (or an op over the recurrence) shows, a view
    no run computes, is the recurrence's output, as CNTK 2.7's is; read by a block over the
    recurrence (``sequence.last``'s ``Sequence::Slice``) it is one of that block's inputs,
    which CNTK 2.7 refuses to substitute (a RuntimeError as it validates the block again)."""
    out = G.step_output_of(old)
    if out is None:
        _refuse_view(old, given, walk)
        return old
    for node in walk.nodes():
        block = G.BLOCKS.get(node.outputs[0]) if node.outputs[0] is not None else None
        if block is not None and any(a is out for a in block.arguments):
            raise RuntimeError(
                f"clone: cannot substitute {given!r}: it is the step's output inside a "
                f"recurrence's loop, an input of the {block.op_name} block over the "
                "recurrence (CNTK 2.7 refuses it too); substitute the recurrence's output or "
                "its inputs")
    return out


def _refuse_view(old: Variable, given: Any, walk: "_GraphWalk") -> None:
    """Refuse the key ``old`` where it is a node the walks show inside a recurrence that
    Stadyn runs as one op (a ``PastValue`` of an ``LSTM``'s state, an op of a Python step):
    no run computes it, so nothing could be substituted for it.  CNTK 2.7 substitutes it
    (its loop then reads the substitute: tests/compat case
    ``clone__substitution_inside_a_recurrence_step``); Stadyn raises rather than ignore it.
    A constant a block shows (``sequence.last``'s Slice scalars) CNTK 2.7 refuses to
    substitute (RuntimeError), as Stadyn does.  ``walk`` reads the graph once per clone."""
    if old.parent is None:
        kind = walk.block_constants().get(id(old))
        if kind is not None:
            raise RuntimeError(
                f"clone: cannot substitute {given!r}: it is a constant inside the {kind} "
                "block (CNTK 2.7 refuses it too: the block's inputs of the clone do not "
                "match the cloned ones)")
        return
    if id(old) in walk.outputs():
        return
    shown = walk.shown()
    if id(old) in shown:
        where = ("a node of a recurrence's step, which Stadyn runs as one op (CNTK 2.7 "
                 "substitutes it inside the loop); substitute the recurrence's output or its "
                 "inputs, or write the step with the substitute in it") if shown[id(old)] else (
                 "a node the graph shows inside a block that Stadyn computes as one op; "
                 "substitute the block's output or its inputs")
        raise NotImplementedError(f"clone: cannot substitute {given!r}: it is {where}")


class _GraphWalk:
    """What :func:`_refuse_view` reads of the graph of ``roots``, each part walked once per
    clone (not once per key: a clone of every parameter of a deep stack)."""

    def __init__(self, roots) -> None:
        self.roots = list(roots)
        self._nodes = self._outputs = self._constants = self._shown = None

    def nodes(self) -> list:
        if self._nodes is None:
            self._nodes = topological_nodes(self.roots)
        return self._nodes

    def outputs(self) -> set:
        """The ids of every output the graph computes."""
        if self._outputs is None:
            self._outputs = {id(o) for node in self.nodes() for o in node.outputs}
        return self._outputs

    def block_constants(self) -> dict:
        """The id of each constant a block shows -> the block's op name."""
        if self._constants is None:
            self._constants = {}
            for node in self.nodes():       # (the block first in the walk names a constant)
                v = node.outputs[0]
                if v is not None and v in G.BLOCKS:
                    for c in shown_constants(v):
                        self._constants.setdefault(id(c), G.BLOCKS[v].op_name)
        return self._constants

    def shown(self) -> dict:
        """The id of each node the walks show that no run computes -> whether it is inside
        a recurrence's step (a node of a step's view)."""
        if self._shown is None:
            computed, steps = self.outputs(), set()
            for node in self.nodes():       # (the nodes of each recurrence's step view)
                v = node.outputs[0]
                if v is not None and v.parent is not None and G.has_step_view(v):
                    steps |= {id(u) for _, u in G.search(G.classify(v), lambda n: True, -1,
                                                         stop=list(v.parent.inputs))}
            self._shown = {id(v): id(v) in steps or G.is_view(v) for root in self.roots
                           for _, v in G.search(G.classify(root), lambda n: True, -1)
                           if id(v) not in computed}
        return self._shown


def _keyed(substitutions: dict) -> dict:
    """``substitutions`` keyed by the Stadyn Variables they replace (the substitutes as given):
    what :mod:`._sequence_placeholders` reads."""
    return {unwrap(old): new for old, new in substitutions.items()}


def _refuse_waiting(subs: dict, what: str) -> None:
    """:class:`ShapelessPlaceholderError` where a substitute is an op waiting for the shape of
    a placeholder (a waiting Function, or its output), on which the graph cannot be cloned
    until it is built: a ``@C.Function`` body applying a loaded model to ``Delay()(labels)``
    of its untyped ``labels`` is built when it is applied, on operands with shapes (CNTK 2.7's
    clone takes an output of unknown shape; Stadyn's graph needs the shape)."""
    for new in subs.values():
        if not isinstance(new, Variable) and pending((new,), {}, layers=False):
            raise ShapelessPlaceholderError(
                f"{what}: {new!r} waits for the shape of a placeholder: apply it to Variables "
                "of known shape")


def _bound_placeholder(new: Variable, old: Variable) -> Variable:
    """A placeholder without a shape given as a substitute takes ``old``'s shape (and batch
    axis)."""
    if new in G.SHAPELESS:
        G.bind_placeholder(new, old.shape, G.BATCH(old))
    return new

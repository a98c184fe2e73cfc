"""What a waiting Function (``_deferred.Deferred``: an op on placeholders without a shape)
exposes of its graph before it is built, as CNTK 2.7's Function does then: its ``inputs``
(the leaves it reads, depth first, a layer's parameters before its argument), ``constants``,
and its ``root_function``, the op of the call itself (:class:`DeferredRoot`: ``Plus`` whose
inputs are the outputs of the calls it reads and its other operands), mixed into ``Deferred``.

A number given as an operand of a binary op (``plus(p, 1)``) is a Constant of CNTK's graph
from the call on, here too (``_ops_math``), so ``inputs`` and ``constants`` list it at once;
so are the constants CNTK's op itself holds (an op's ``shown_constants`` rule, of the call's
arguments: ``classification_error``'s 1 first, its ``topN`` last), made once and shown by the
op once built (:meth:`DeferredGraph.waiting_constants`).

Example:
    >>> import stadyn.compat.cntk as C
    >>> p, q = C.placeholder(name="p"), C.placeholder(name="q")
    >>> f = C.plus(C.relu(p), q, name="f")
    >>> [a.name for a in f.inputs]
    ['p', 'q']
    >>> f.root_function
    Plus: Output('...', [???], [???]), Placeholder('q', [???], [???]) -> Output('f', [???], [???])
    >>> f.root_function.op_name, f.root_function.inputs[0].owner.root_function.op_name
    ('Plus', 'ReLU')
"""

from __future__ import annotations

from typing import Any

from ._adapt import wrap
from ._deferred_operands import UnknownOutput, _keep, _layer_function, waiting_of
from ._late import late
from ._mixins import GraphObject
from ._printed import function_repr, makes_block
from ._shown_constants import show_constants

__all__ = ["DeferredGraph", "DeferredRoot"]


class DeferredGraph:
    """``inputs``, ``constants``, ``root_function`` and the flags of a waiting Function
    (``_fn``, ``_operands``, ``_typed``, ``_bound``, ``name``, ``outputs`` are ``Deferred``'s);
    once built, its graph's."""

    @property
    def inputs(self) -> tuple:
        """The leaves it reads, each once, depth first in the order of the operands (CNTK
        2.7's ``Function.inputs``): placeholders, and the inputs, parameters and constants of
        the values with a shape it reads; a layer applied, its parameters, then what it is
        applied to."""
        if self._typed is not None:
            return tuple(self._typed.inputs)
        out: list = []
        seen: set[int] = set()

        def add(leaf) -> None:
            key = id(getattr(leaf, "variable", leaf))
            if key not in seen:
                seen.add(key)
                out.append(leaf)

        def visit(v) -> None:
            if isinstance(v, UnknownOutput):
                v = v.waiting
            if isinstance(v, DeferredGraph):
                if v._typed is not None:
                    for a in v._typed.inputs:
                        add(a)
                    return
                after = ()
                if isinstance(v._fn, _layer_function()):
                    # (a recurrence lists its step's and its own leaves around its argument)
                    around = getattr(v._fn, "_inputs_around_argument", None)
                    before, after = around(v) if around else (v._fn.parameters, ())
                    for p in before:
                        add(p)
                first, last = v.waiting_constants()
                for c in first:
                    add(c)
                for a in v._operands():
                    visit(a)
                for c in tuple(after) + last:
                    add(c)
            elif isinstance(v, _layer_function()):
                for p in v.parameters:
                    add(p)
                add(_keep(v))
            elif isinstance(v, GraphObject):
                bound = self._bound.get(id(v.variable))
                if bound is not None and bound is not v:
                    visit(bound)
                elif getattr(v, "root_function", None) is not None:     # (a Function)
                    for a in v.inputs:
                        add(a)
                elif getattr(v, "is_output", False):
                    for a in waiting_of(v).inputs:
                        add(a)
                else:
                    add(v)
        visit(self)
        return tuple(out)

    def waiting_constants(self) -> tuple:
        """The constants CNTK 2.7's op holds among its inputs (first, last), made once from
        the call's arguments by the op's ``shown_constants`` rule (``((), ())`` where it has
        none): the same Constants once built (:meth:`show_waiting_constants`), as CNTK's."""
        made = self.__dict__.get("_waiting_constants")
        if made is None:
            rule = getattr(self._fn, "shown_constants", None)
            made = ((), ()) if rule is None else tuple(
                tuple(wrap(c) for c in part) for part in rule(self._args, self._kwargs))
            self.__dict__["_waiting_constants"] = made
        return made

    def show_waiting_constants(self, out: Any) -> None:
        """``out`` (the op built) showing the constants it showed while waiting."""
        made = self.__dict__.get("_waiting_constants")
        v = getattr(out, "variable", None)
        if made is None or v is None or v.parent is None:
            return
        for part, last in zip(made, (False, True)):
            if part:
                show_constants(v, tuple(c.variable for c in part), last)

    @property
    def constants(self) -> tuple:
        """The constants among its :attr:`inputs`."""
        if self._typed is not None:
            return tuple(self._typed.constants)
        return tuple(a for a in self.inputs if getattr(a, "is_constant", False))

    @property
    def root_function(self) -> "DeferredRoot":
        """The op of this call (CNTK's primitive root: ``Plus``; a layer's block)."""
        if self._typed is not None:
            return self._typed.root_function
        if getattr(self._fn, "_file_graph", lambda: None)() is not None:
            return self._fn.root_function       # (a loaded untyped file's call: the file's)
        return DeferredRoot(self)

    @property
    def owner(self) -> "DeferredRoot":
        """Its root function, as CNTK's composite gives it."""
        return self.root_function

    @property
    def signature(self) -> tuple:
        """Its arguments (CNTK 2.7's ``signature`` of a Function over placeholders)."""
        return tuple(self._typed.signature) if self._typed is not None else self.arguments

    @property
    def is_primitive(self) -> bool:
        return False if self._typed is None else self._typed.is_primitive

    @property
    def is_block(self) -> bool:
        return False if self._typed is None else self._typed.is_block

    @property
    def attributes(self) -> dict:
        return {} if self._typed is None else self._typed.attributes


class DeferredRoot:
    """The op of a waiting Function's call (its ``root_function``): its ``inputs`` are the
    call's operands -- the output of a call it reads (:class:`UnknownOutput`, whose ``owner``
    is that call's Function; a layer's, for a layer given as an operand), a placeholder, a
    value with a shape -- or, for a layer applied, the layer's parameters and its argument;
    its outputs are the Function's.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> root = C.layers.Dense(2, name="d")(C.placeholder(name="p")).root_function
        >>> root.op_name, root.is_block, [a.name for a in root.inputs]
        ('Dense', True, ['W', 'b', 'p'])
    """

    is_primitive = True
    is_composite = False
    _operand_is_output = True     # (an op's operand: its output, _adapt.root_as_output)

    @property
    def __class__(self):
        """``C.Function``, as CNTK 2.7's root function of the call is one
        (``isinstance(n, C.Function)`` in a visitor of a walk holds for it)."""
        return late("Function")

    def __init__(self, function: Any):
        self._function = function

    @property
    def name(self) -> str:
        return self._function.name

    @property
    def op_name(self) -> str:
        """CNTK's op of the call (``Plus``; a layer's kind, ``Dense``)."""
        return self._function._root_op()

    @property
    def is_block(self) -> bool:
        """Whether CNTK 2.7 makes a block of the call: a layer applied (not the ``NoOp`` of
        a named ``Sequential`` nor a recurrence's ``Combine``), a reduction."""
        fn = self._function._fn
        if isinstance(fn, _layer_function()):
            return self.op_name not in ("NoOp", "Combine")
        return makes_block(fn, self._function._args, self._function._kwargs)

    @property
    def root_function(self) -> "DeferredRoot":
        return self

    @property
    def uid(self) -> str:
        """Its output's uid less ``_Output_0`` (``Plus12``, ``Block12``), as CNTK 2.7's."""
        return self._function._output_uid().rpartition("_Output_")[0]

    @property
    def inputs(self) -> tuple:
        """The call's operands as CNTK's op lists them (see the class's text)."""
        fn = self._function._fn
        out: list = []
        if isinstance(fn, _layer_function()) and fn.kind in ("Recurrence", "RecurrenceFrom",
                                                             "Fold"):
            return (fn._shown_step_output(),)     # (its Combine's: the step's output)
        if isinstance(fn, _layer_function()):
            made = self._function.__dict__.get("_sequential_root_inputs")
            if made is None and len(self._function._operands()) == 1:
                # (a Sequential's root: a NoOp, or its last layer's block, over the output of
                # its steps applied, made once so that it keeps its uid)
                made = fn._sequential_root_inputs(self._function._operands()[0])
                self._function.__dict__["_sequential_root_inputs"] = made
            if made is not None:
                return made
            out += list(fn.parameters)
        first, last = self._function.waiting_constants()
        out += list(first)
        for v in self._function._operands():
            if isinstance(v, DeferredGraph):
                out.append(v.output)
            elif isinstance(v, _layer_function()):     # (the layer applied to its own
                out.append(v.output)                    # placeholder: CNTK's block's output)
            elif isinstance(v, GraphObject):
                out.append(getattr(v, "output", v) if getattr(v, "root_function", None)
                           is not None else v)
        return tuple(out) + last

    def _inputs_once(self, keep) -> tuple:
        """Its inputs ``keep`` takes, each once (``element_times(p, p)``'s root reads ``p``
        twice; CNTK 2.7 lists it once among its arguments)."""
        out: list = []
        seen: set[int] = set()
        for a in self.inputs:
            key = id(getattr(a, "variable", a))
            if keep(a) and key not in seen:
                seen.add(key)
                out.append(a)
        return tuple(out)

    @property
    def arguments(self) -> tuple:
        """Its inputs but the parameters and constants, each once."""
        return self._inputs_once(lambda a: not (getattr(a, "is_parameter", False)
                                                or getattr(a, "is_constant", False)))

    @property
    def placeholders(self) -> tuple:
        return self._inputs_once(lambda a: getattr(a, "is_placeholder", False))

    @property
    def parameters(self) -> tuple:
        return self._inputs_once(lambda a: getattr(a, "is_parameter", False))

    @property
    def constants(self) -> tuple:
        return self._inputs_once(lambda a: getattr(a, "is_constant", False))

    @property
    def outputs(self) -> tuple:
        return self._function.outputs

    @property
    def output(self):
        return self._function.output

    @property
    def attributes(self) -> dict:
        return {}

    def __repr__(self) -> str:
        """As CNTK 2.7's: ``Plus: Placeholder('p', [???], [???]) -> Output('f', [???],
        [???])`` (its arguments and outputs)."""
        return function_repr(self.op_name, False, self.arguments, self.outputs)

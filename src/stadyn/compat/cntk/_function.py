"""CNTK's ``Function``: a graph output (or several, made by ``combine``) over Stadyn Variables.

A :class:`Function` wraps the Stadyn :class:`~stadyn.graph.Variable` its root computes.  It
shows the graph as CNTK does (``arguments``, ``parameters``, ``constants``, ``inputs``, blocks
for applied layers, names reached as attributes: ``z.W``, ``model.conv1.b``), evaluates it
(``eval``, ``forward``/``backward``, ``grad``), rebuilds it (``clone``, calling it on other
Functions, ``replace_placeholders``) and saves it.  The runs (and what a Function keeps from one
to the next) are :mod:`._function_runs`, the rebuilding :mod:`._function_rebuild`,
its files :mod:`._function_files`; behaviour lives in Stadyn's static graph, this module
only maps CNTK's view onto it.
"""

from __future__ import annotations

from typing import Any

from ...graph import Variable, is_lengths
from . import _graph as G
from ._adapt import root_as_output, several_outputs_message, unwrap, wrap
from ._block_inside import inside_output as inside
from ._cntk_attributes import (CNTK_ATTRIBUTES, CNTK_ROOT_ATTRIBUTES, file_attribute,
                               random_op_attributes, with_rng_state)
from ._function_rebuild import CloneMethod, FunctionRebuilding
from ._function_pure import pure
from ._function_runs import FunctionRuns, RunState
from ._late import bind
from ._function_files import FunctionFiles, load_model
from ._model_file import ModelFormat
from ._model_load import passed_on_block
from ._mixins import GraphObject, TensorOpsMixin, not_a_variable, second_handle
from ._printed import function_repr, function_text
from ._renaming import refuse_renaming
from ._signature import _function_of_callable as function_of_callable
from ._step_values import step_value

__all__ = ["Function", "CloneMethod", "ModelFormat", "load_model", "combine_outputs"]


_CUSTOM: "dict[int, dict]" = {}


class _FunctionType(type):
    """``Function``'s type: ``isinstance(f, C.Function)`` holds, as in CNTK 2.7, for what
    CNTK makes a Function of and Stadyn holds apart until it is applied: a layer not applied
    yet (``Dense(3)``; not ``ResNetBlock``, a Python function in CNTK 2.7), a call waiting
    for its placeholders' shapes, an untyped ``@C.Function`` (each says so by a true
    ``_cntk_function``).  Stadyn's own code asks ``issubclass(type(f), Function)`` where it
    needs a built graph."""

    def __instancecheck__(cls, obj) -> bool:
        if super().__instancecheck__(obj):
            return True
        return cls.__name__ == "Function" and cls.__module__ == __name__ and \
            bool(getattr(obj, "_cntk_function", False))


class Function(GraphObject, TensorOpsMixin, FunctionRuns, FunctionRebuilding, FunctionFiles,
               metaclass=_FunctionType):
    """A CNTK Function.

    A layer or op applied to inputs gives the *composite* Function of the graph up to its
    output; its ``root_function`` is the op (or, for a layer, the *block*) that made the output.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(3, name="x")
        >>> z = C.layers.Dense(2, name="d")(x)
        >>> z.name, z.W.shape, z.b.shape, [p.name for p in z.parameters]
        ('d', (3, 2), (2,), ['W', 'b'])
        >>> z.W.value = np.ones((3, 2), np.float32)
        >>> z.eval({x: np.ones((1, 3), np.float32)}).tolist()
        [[3.0, 3.0]]
    """

    __slots__ = ("members", "_view", "_runs", "_combined", "_own_name")

    # as CNTK 2.7's Python Function: equal to itself alone and hashed by identity (each
    # ``root_function``, ``block_root``, ``clone`` is a new one); compared with a Variable,
    # its output is (the Variable's ``__eq__``)
    __hash__ = object.__hash__

    def __eq__(self, other) -> bool:
        if isinstance(other, Function):
            return self is other
        return isinstance(other, GraphObject) and other.__eq__(self)

    def _compared(self):
        """What a Variable compared with this Function compares: its one output (of several,
        CNTK 2.7's TypeError of ``Variable_eq``)."""
        if self.members and len(self.members) > 1:
            raise not_a_variable()
        return self.output._compared()

    def __copy__(self):
        """``copy.copy``: a second handle on the same graph, as CNTK 2.7's (its ``uid``,
        parameters and runs are this Function's; the handle is another object, equal to
        itself alone, as CNTK's Python wrappers compare)."""
        return second_handle(self, distinct=True)

    def __new__(cls, variable=None, *args, **kwargs):
        if callable(variable) and not isinstance(variable, (Variable, GraphObject)):
            with pure():        # @C.Function on a Python function (no parameters made in it)
                return function_of_callable(variable)
        return super().__new__(cls)

    def __init__(self, variable: Variable, members: "list[Variable] | None" = None,
                 view: str = "composite", runs: RunState | None = None,
                 combined: "G.Combine | None" = None):
        if not isinstance(variable, Variable):          # made by __new__ from a Python function
            return
        super().__init__(variable)
        self.members = members
        self._view = view
        self._runs = runs       # a combine's own run state (else the outputs' shared one)
        self._combined = combined   # the Combine function a combine made
        self._own_name: str | None = None   # a composite named apart from its root

    @staticmethod
    def with_signature(*types, **named_types):
        """A decorator making a Python function a Function whose arguments have ``types``
        (``Tensor[3]``...: inputs named after the Python arguments)."""
        def decorate(f):
            with pure():
                return function_of_callable(f, types, named_types)
        return decorate

    # -- the graph seen from here ------------------------------------------------------------
    def _roots(self) -> list[Variable]:
        return list(self.members) if self.members else [self.variable]

    def _node(self) -> tuple[str, Variable]:
        if self._view == "op":
            return ("op", self.variable)
        return G.classify(self.variable)

    def _recurrence_root(self) -> bool:
        """Whether this is the root function of a recurrence (``Recurrence``, ``Fold``,
        ``RecurrenceFrom``): no block in CNTK 2.7, whose root there is a Combine (a ``NoOp``
        when the layer is named) of the step's output, with no parameters of its own."""
        block = G.BLOCKS.get(self.variable) if self._view == "block" else None
        return block is not None and block.op_name in G.RECURRENCE_BLOCKS

    def _combine(self) -> "G.Combine | None":
        """The Combine function this Function is (or is the composite of), if any."""
        return self._combined if self._view in ("composite", "combine") else None

    def _walk_start(self) -> "list[tuple[str, Variable]]":
        """Where CNTK's walk starts: the root function, or each output of a ``combine``."""
        if self._view in ("composite", "combine") and self.members and len(self.members) > 1:
            return [G.classify(v) for v in self.members]
        return [self._node()]

    def _leaves(self) -> list[Variable]:
        return list(G.walk_leaves(self._roots()))

    @property
    def name(self) -> str:
        """The name of the root function (a layer's ``name``, an op's ``name=``; a function of
        several outputs, ``top_k``'s, is named by its first; a ``combine``, as it was named;
        ``as_composite(root_function, name)``, ``name``)."""
        if self._own_name is not None:
            return self._own_name
        combine = self._combine()
        if combine is not None:
            return combine.name
        if self._view == "composite" and not self.members and \
                self.variable in G.COMPOSITE_NAMES:
            return G.COMPOSITE_NAMES[self.variable]
        if self.members and len(self.members) > 1 and G.function_outputs(self.members) is None:
            return ""                   # (outputs of several functions, combined)
        kind, v = self._node()
        if kind == "op":
            v = G.outputs_of(v)[0]
            if self._view == "composite" and v in G.FUNCTION_NAMES:
                return ""               # (a user function's composite: CNTK 2.7's as_composite)
        return G.node_name((kind, v)) if kind != "leaf" else G.name_of(v)

    @name.setter
    def name(self, value: str) -> None:
        refuse_renaming(self)
        if self._own_name is not None:
            self._own_name = value
            return
        combine = self._combine()
        if combine is not None:
            combine.name = value        # (the outputs keep theirs)
            return
        if self._view == "composite" and not self.members:
            # (CNTK 2.7 names the composite: its root function and output keep their names)
            G.COMPOSITE_NAMES[self.variable] = value
            return
        block = G.BLOCKS.get(self.variable)
        if block is not None and self._view != "op":
            block.name = value
        elif self.variable in G.FUNCTION_NAMES:
            G.FUNCTION_NAMES[self.variable] = value
        else:
            self.variable.name = value or None

    @property
    def output(self):
        """The only output, as a Variable (CNTK's RuntimeError when there are several)."""
        if self.members and len(self.members) > 1:
            raise RuntimeError(several_outputs_message(self))
        return wrap_variable(self.variable) if self._inside() is None else inside(self.variable)

    @property
    def outputs(self) -> tuple:
        """Every output, as Variables (a tuple, as CNTK 2.7 gives it); a function's (a walk's
        node: a block of several outputs, ``top_k``) all of its own."""
        inside = G.combined_inside(self.variable) if self._view == "op" else None
        if inside is not None:          # (the Combine inside a block of several: what it combines)
            return tuple(wrap_variable(v) for v in inside)
        if self._view in ("op", "block") and not self.members:
            return tuple(wrap_variable(v) for v in G.outputs_of(self.variable))
        return tuple(wrap_variable(v) for v in self._roots())

    @property
    def root_function(self) -> "Function":
        """The op (or block) that made the output; that of all the outputs of a function of
        several (``top_k``, ``sequence.unpack``), with them all; a ``combine``'s Combine
        function."""
        outs = G.outputs_of(self.variable)
        if self._combine() is not None:
            return Function(self.variable, self.members, view="combine", runs=self._runs,
                            combined=self._combined)
        if self.members and len(self.members) > 1 and G.function_outputs(self.members) is None:
            return self                 # (outputs of several functions, combined)
        view = "op" if self._view == "op" else ("block" if outs[0] in G.BLOCKS else "op")
        if len(outs) > 1:
            return Function(outs[0], list(outs), view=view)
        return Function(self.variable, view=view)

    def _output_owner(self) -> "Function":
        """The function CNTK 2.7 shows as the owner of this Function's output: its root; for
        the root of an unnamed recurrence (a ``Combine`` of the step's output, which CNTK
        passes on as its own), the function making the step's output (the ``LSTM`` block,
        ``Plus``)."""
        root = self.root_function
        if root._recurrence_root() and root.op_name == "Combine":
            return root.inputs[0].owner
        return root

    @property
    def is_composite(self) -> bool:
        return self._view == "composite"

    @property
    def is_block(self) -> bool:
        """Whether this is a block (a layer applied; not a recurrence's root, a Combine in
        CNTK 2.7)."""
        return self._view == "block" and not self._recurrence_root()

    @property
    def is_primitive(self) -> bool:
        """A root function: an op, a block (which is one op of its graph), a Combine."""
        return self._view in ("op", "block", "combine")

    @property
    def block_root(self) -> "Function":
        """Inside a block: the op that makes its output."""
        if not self.is_block:       # (CNTK 2.7's ValueError)
            raise ValueError(f"block_root: the Function {self.op_name} is not a block")
        inner = passed_on_block(self.variable)      # (a loaded ReduceL1's ReduceElements)
        return Function(self.variable, view="op") if inner is None else \
            Function(inner, view="block")

    @property
    def block_arguments_mapping(self) -> tuple:
        """A block's arguments, each as ``(the placeholder its inside shows, actual
        argument)``, the placeholder named and shaped as the argument (CNTK 2.7's)."""
        if not self.is_block:       # (CNTK 2.7's ValueError)
            raise ValueError(f"block_arguments_mapping: the Function {self.op_name} is not a "
                             "block")
        pairs = tuple((wrap_variable(p), wrap_variable(a)) for p, a in zip(
            G.inner_placeholders(self.variable), G.BLOCKS[self.variable].arguments))
        # (a GatherOp block's arguments are kept in the order its inputs show, CNTK 2.7's
        # by the block's op name, the map's two swapped: the map itself keeps its order)
        return G.shown_block_order(G.BLOCKS[self.variable].op_name, pairs)

    @property
    def op_name(self) -> str:
        """``CompositeFunctionOpName`` for a composite; the op's (``Plus``) or the layer's
        (``Dense``) name for a root function; ``Combine`` for a ``combine``'s."""
        if self._view == "composite":
            return "CompositeFunctionOpName"
        if self._view == "combine":
            return "Combine"
        if self._recurrence_root():
            return "NoOp" if G.BLOCKS[self.variable].name else "Combine"
        if self._view == "op":
            return G.primitive_op_name(self.variable)
        return G.op_name_of(self.variable)

    @property
    def uid(self) -> str:
        """A unique id (``CompositeFunction10``, ``Plus9``, ``Combine11``)."""
        if self._view == "op" and self.variable in G.BLOCKS:
            return G.root_uid_of(self.variable)         # the op inside the block
        if self._recurrence_root():         # (CNTK 2.7's Combine<n>, NoOp<n> when named)
            return G.recurrence_root_uid(self.variable, self.op_name)
        combine = self._combine()
        base = combine.uid if combine is not None else G.uid_of(self.variable)
        if self._view == "composite":       # (its root's number + 1, as in CNTK 2.7)
            return f"CompositeFunction{int(''.join(c for c in base if c.isdigit()) or 0) + 1}"
        return base

    @property
    def inputs(self) -> tuple:
        """A composite's leaves (arguments, parameters, constants); a root function's own
        inputs (a block's: its parameters, then its arguments; a Combine's: the outputs it
        combines).  A tuple, as CNTK 2.7 gives it."""
        if self._view == "combine":
            return self.outputs
        if self._view == "composite":
            return tuple(wrap_variable(v) for v in self._leaves())
        if self._recurrence_root():     # one: the step's output (inside CNTK's loop)
            return (wrap_variable(G.shown_step_output(
                self.variable, G.BLOCKS[self.variable].op_name == "Fold")),)
        inside = self._inside()     # (a block's root reads the block's placeholders)
        return tuple(wrap_variable(G.passed_on_value(v) if inside is None
                                   else G.seen_inside(inside, v))
                     for v in G.node_inputs(self._node() if self._view == "block"
                                            else ("op", self.variable)))

    @property
    def arguments(self) -> tuple:
        """The inputs and placeholders the outputs depend on, in CNTK's order (a tuple, as
        CNTK 2.7 gives it).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> a, b = C.input_variable(2, name="a"), C.input_variable(2, name="b")
            >>> C.plus(a, b).arguments
            (Input('a', [#], [2]), Input('b', [#], [2]))

        A root function's (an op, a block) are its own inputs but parameters and constants,
        as CNTK 2.7's: the outputs of the functions before it among them.
        """
        if self._view in ("op", "block"):
            return tuple(v for v in self.inputs if not (v.is_parameter or v.is_constant))
        found = [v for v in G.walk_operands(self._roots(), self._leaves())
                 if G.kind_of(v) in ("input", "placeholder")
                 and not is_lengths(v)]     # a sequence input's lengths come with its data
        return tuple(wrap_variable(v) for v in G.in_argument_order(self.variable, found))

    @property
    def signature(self) -> tuple:
        """The arguments, as a tuple: those a call takes, in order."""
        return tuple(self.arguments)

    def _own_leaves(self) -> list[Variable]:
        """A composite's leaves; a root function's own inputs (CNTK 2.7 lists a primitive
        op's or a block's parameters and constants among its inputs only: a Dense block's
        ``W`` and ``b``, not those of the layers before it; a Combine's, none); each op's
        inputs in the order CNTK holds them (``G.stored_inputs``: a Gather's indices before
        its reference), as CNTK's ``parameters`` and ``constants`` walk them."""
        if self._view == "composite":
            return list(G.walk_leaves(self._roots(), stored=True))
        if self._view == "combine" or self._recurrence_root():
            return []
        return G.stored_inputs(self._node() if self._view == "block" else ("op", self.variable))

    @property
    def parameters(self) -> tuple:
        """The learnable parameters the outputs depend on (the last layer's first); a root
        function's among its inputs."""
        with G.one_walk():      # (the second walk asks for the first's nodes' inputs again)
            found = [v for v in self._own_leaves() if G.kind_of(v) == "parameter"]
            if self._view == "composite" and G.has_parameter_order(found):
                # (a loaded CNTK file's: in its walk's order where the walk enters its graph)
                found = G.in_parameter_order(found, G.parameters_met_first(self._roots()))
        return tuple(wrap(v) for v in found)

    @property
    def constants(self) -> tuple:
        """The constants (batch normalisation's statistics among them); a root function's
        among its inputs."""
        return tuple(wrap(v) for v in self._own_leaves() if G.kind_of(v) == "constant")

    @property
    def placeholders(self) -> tuple:
        """The placeholders not yet replaced; a root function's among its inputs."""
        return tuple(wrap_variable(v) for v in self._own_leaves()
                     if G.kind_of(v) == "placeholder")

    @property
    def attributes(self) -> dict:
        """A root op's attributes (CNTK 2.7's where an op records them: ``gather``'s ``axis``,
        a random op's or dropout's ``rngSeed`` and ``rngOffset`` -- where its stream stood at
        the Function's last save, as CNTK shows it --; Stadyn's names otherwise); a
        composite's and a block's (but those) empty."""
        if self._view == "op" and self.variable in G.BLOCKS:   # (a block's root)
            root = CNTK_ROOT_ATTRIBUTES.get(self.variable)
            if root is not None:
                return dict(root)
        shown = CNTK_ATTRIBUTES.get(self.variable)      # (a block's, or a primitive op's)
        if shown is not None and self._view == ("block" if self.variable in G.BLOCKS else "op"):
            return with_rng_state(self.variable, dict(shown))
        if self._view == "block" and self.variable in G.BLOCKS:     # (a loaded file's block)
            return {k: file_attribute(v) for k, v in G.BLOCKS[self.variable].attributes.items()}
        if self._view != "op" or self.variable.parent is None:
            return {}
        return random_op_attributes(self.variable) or dict(self.variable.parent.attrs)

    def set_attribute(self, name: str, value: Any) -> None:
        """Change one attribute of the root op (CNTK's ``dropoutRate`` is dropout's ``p``)."""
        given = name
        name = {"dropoutRate": "p", "rngSeed": "seed"}.get(name, name)
        parent = self.variable.parent
        if parent is None or name not in parent.spec.attrs:
            raise ValueError(f"set_attribute: the root function has no attribute {name!r}")
        parent.set_attribute(name, value)
        shown = CNTK_ATTRIBUTES.get(self.variable)
        if shown is not None and given in shown:
            shown[given] = value

    @property
    def custom_attributes(self) -> dict:
        """A dict of the user's own attributes (kept, not used)."""
        return _CUSTOM.setdefault(id(self.variable), {})

    @custom_attributes.setter
    def custom_attributes(self, values: dict) -> None:
        _CUSTOM[id(self.variable)] = dict(values)

    # -- names inside the graph ---------------------------------------------------------------
    def _inside(self) -> Variable | None:
        """The block this Function is the inside of (a block's ``block_root``), if any."""
        return self.variable if self._view == "op" and self.variable in G.BLOCKS else None

    def find_all_with_name(self, name: str, depth: int = 0) -> list:
        """Every function and variable named ``name`` (``depth`` levels into blocks; -1 all; a
        ``combine``'s Combine function first); inside a recurrence's step, the step's
        functions over its past values (``Recurrence(LSTM(4, name='lstm'))``: the LSTM block
        of two outputs), as CNTK 2.7 gives them out, which no run gives values."""
        return self._named(name, depth, views=True)

    def _named(self, name: str, depth: int, views: bool) -> list:
        """:meth:`find_all_with_name`; without the nodes of a step's view where not ``views``
        (an attribute lookup: the step's own values, ``_step_values``)."""
        combine = self._combine()
        first = [self.root_function] if combine is not None and combine.name == name else []
        named = lambda n: G.node_name(n) == name and (views or not G.is_view(n[1]))  # noqa: E731
        return first + [_wrap_node(n) for n in G.search(self._walk_start(), named, depth,
                                                         self._inside())]

    def find_by_name(self, name: str, depth: int = 0):
        """The function or variable named ``name``; None when there is none, a ValueError when
        there are several.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> x = C.input_variable(3, name="x")
            >>> f = C.tanh(C.plus(x, 1.0, name="p"))
            >>> f.find_by_name("p").op_name, f.find_by_name("x").is_input
            ('Plus', True)
        """
        if not isinstance(name, str):
            raise ValueError(f"node name has to be a string, got a {type(name).__name__}")
        return _one(self.find_all_with_name(name, depth), name)

    def __getattr__(self, name: str):
        if name.startswith("_") or name in ("members", "variable"):
            raise AttributeError(name)
        from ._mixins import VariableMixin
        # as CNTK: a member name of Function or Variable ('shape', 'name') is never looked up in
        # the graph, so a node named so does not hide it (and the graph is not walked for it)
        member = hasattr(VariableMixin, name) or hasattr(type(self), name)
        if not member and name not in ("outputs", "output", "this"):
            start = Function(self.variable, view="op") if self._view == "block" else self
            found = _one(start._named(name, 1, views=False), name)  # else inside a
            # recurrence's step:
            if found is not None or (found := step_value(self._roots(), name)) is not None:
                return found
        if self.members and len(self.members) > 1:
            raise AttributeError(f"Function has no '{name}' and it cannot be looked up in its "
                                 "outputs because it has more than one")
        if member:
            return getattr(self.output, name)
        raise AttributeError(f"neither the Function nor its output has '{name}'")

    def print_node_timing(self) -> None:
        """Accepted for compatibility: Stadyn keeps no per-node timings."""

    def __str__(self) -> str:
        """As CNTK 2.7's ``str``: ``r: ReLU(x: Tensor[3]) -> Tensor[3]``."""
        return function_text(self)

    def __repr__(self) -> str:
        """As CNTK 2.7's ``repr``:
        ``Composite(ReLU): Input('x', [#], [3]) -> Output('r', [#], [3])``."""
        root = self.root_function if self.is_composite else self
        return function_repr(root.op_name, self.is_composite, self.arguments, self.outputs)


def wrap_variable(v: Variable):
    """``v`` as a CNTK Variable (an output shown as a Variable, not as a Function)."""
    from ._variables import of
    return of(v, as_variable=True)


def _one(found: list, name: str):
    """The one node of ``found`` (named ``name``); None without any; CNTK 2.7's ValueError
    where there are several."""
    if len(found) > 1:
        raise ValueError(f'found multiple functions matching "{name}". If that was '
                         "expected call find_all_with_name")
    return found[0] if found else None


def _wrap_node(node: tuple[str, Variable]):
    kind, v = node
    if kind == "leaf":
        return wrap(v)
    return Function(v, view=kind)


def combine_outputs(functions: list, name: str = "") -> Function:
    """Functions' outputs as one Function whose root is a Combine function named ``name`` (one
    output too, as CNTK's): a Function of its own, whose runs keep their state apart from
    those of the Functions combined (CNTK 2.7: ``C.combine([z])`` has no previous run to go on
    from after ``z``'s)."""
    flat: list[Variable] = []
    for f in map(root_as_output, functions):
        if issubclass(type(f), Function):
            flat.extend(f._roots())
        else:
            flat.append(unwrap(f))
    return Function(flat[0], flat, runs=RunState(), combined=G.Combine(name))


bind(Function=Function,      # Variable.owner and the wrapping of outputs (_mixins, _variables)
     combine_outputs=combine_outputs)   # a Sequential ending in a tuple (_layers)


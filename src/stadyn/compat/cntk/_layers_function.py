"""The CNTK layer as a Function of its future input (:class:`LayerFunction`), and the
``Sequential`` and ``>>`` of layers (``_layers`` holds the layers themselves).

A :class:`LayerFunction` holds a Stadyn layer: applied to CNTK Functions it applies the layer
and records the application as a *block* (``Dense``, ``Convolution``, ...) named by the layer's
``name``, so ``z.W``, ``model.conv1.b`` and ``find_by_name`` reach its parameters (the
application: ``_layer_application``; the composite of a ``Sequential``'s steps:
``_layers_composite``).
"""

from __future__ import annotations

import types
import weakref
from typing import Any

import numpy as np

from ... import layers as _L
from ...graph import Variable
from . import _graph as G
from ._adapt import refuse_name, several_outputs_message, unwrap, wrap
from ._deferred import LAYER_CLASSES, Deferred, not_a_block
from ._function_pure import refuse_parameters
from ._layers_composite import Composite, CompositeLayer, flatten_steps
from ._layer_application import apply_layer
from ._layer_clones import clone_unapplied
from ._layers_declared import _declared_parameter, declared_parameters, makes_parameters
from ._layer_shown import shown_layer, shown_name
from ._layers_identity import identity
from ._mixins import TensorOpsMixin, waiting_function_eq
from ._sequential_steps import SequentialSteps, named_sequential
from ._renaming import refuse_renaming
from ._unapplied_layers import UnappliedLayerView, UnappliedRoot

__all__ = ["LayerFunction", "identity"]


def _native_fn(f: Any) -> Any:
    """A callable on CNTK Functions as one on Stadyn Variables (for a layer's activation)."""
    if f is None or f is identity or f is _L.identity:
        return _L.identity
    if isinstance(f, LayerFunction):
        return f.layer
    if not callable(f):
        return f

    def native(*values):
        return unwrap(f(*[wrap(v) for v in values]))
    return native


def _native(value: Any) -> Any:
    """A layer option as Stadyn's layers take it."""
    if isinstance(value, (list, tuple)):
        return type(value)(_native(v) for v in value)
    if isinstance(value, type) and issubclass(value, np.generic):
        return value            # a dtype (default_options(dtype=np.float64)), not a function
    return _native_fn(value) if callable(value) and not _is_initializer(value) else value


def _is_initializer(value: Any) -> bool:
    return isinstance(value, _L.CNTKInitializer)


class LayerFunction(UnappliedLayerView, SequentialSteps, TensorOpsMixin):
    """A CNTK layer: applied to CNTK Functions it applies its Stadyn layer; its parameters
    (after the first application) are attributes by their CNTK names (``d.W``); CNTK's
    operators on it (``Dense(3) + 2``) wait for it to be applied, as the ops do.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> d = C.layers.Dense(3, name="d")
        >>> z = d(C.input_variable(4))
        >>> d.W.shape, z.root_function.op_name, z.name
        ((4, 3), 'Dense', 'd')
    """

    # compared with a Variable, its output is (CNTK 2.7: ``d == d.output`` True, ``x == d``
    # False; an LSTM's, of two outputs, a TypeError); itself alone otherwise, by identity
    compares_as_output = True
    __eq__ = waiting_function_eq
    __hash__ = object.__hash__

    _named_by_alias = False     # (a composite layer of CNTK's, named by alias: a subclass's)

    def __init__(self, layer: Any, op_name: str, name: str = ""):
        # (CNTK 2.7 names a block layer by as_block, which takes no None; a composite one,
        # Sequential, For, Recurrence, by alias where a name is given)
        block = bool(op_name) and not self._named_by_alias
        if name is not None or block:
            refuse_name(name, "as_block" if block else "alias")
        if makes_parameters(layer):
            refuse_parameters()     # (inside a @Function body, as CNTK 2.7's layers)
        self.layer = layer
        self.kind = op_name         # the op its block shows once applied (Dense; "" for none)
        self.own_name = name     # (its ``name``: this, or as CNTK 2.7 shows it, ``shown_name``)
        self._signature: Any = None
        # the last application's outputs, weakly (a CNTK layer is a graph of its own over
        # placeholders: it keeps none of the graphs it is applied into), which ``parameters``
        # walks for CNTK's order
        self._applied: list[weakref.ref] = []
        self._order: list[Variable] = []

    def __copy__(self):
        """``copy.copy``: another handle on this layer, whose ``uid`` (and output) are this
        layer's, as CNTK 2.7's copy of a layer, made with its uid (Stadyn makes the output
        carrying the uid when first asked: here, before the two part)."""
        if self._signature is None and self._cntk_function:
            self._first_output()        # (an error making it is the user's to see)
        return super().__copy__()

    @property
    def _cntk_function(self) -> bool:
        """Whether CNTK 2.7 makes a Function of this layer (``isinstance(layer, C.Function)``:
        all but ``ResNetBlock`` and ``SequentialClique``, Python functions there)."""
        return shown_layer(self) is not None

    @property
    def name(self) -> str:
        """Its name as CNTK 2.7 shows it: the one it was given (``own_name``); an unnamed
        ``Sequential``'s is its last step's (that layer's output is the Sequential's).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> s = C.layers.Sequential([C.layers.Dense(3), C.layers.Dense(2, name="last")])
            >>> s.name, s.own_name
            ('last', '')
        """
        return shown_name(self)

    @name.setter
    def name(self, value: str) -> None:
        refuse_renaming(self)
        self.own_name = value

    def __call__(self, *args):
        if getattr(self.layer, "enabled", True) is False and len(args) == 1:
            return identity(*args)      # (a Stabilizer made the identity: CNTK 2.7's is it)
        return apply_layer(self, args)

    @property
    def parameters(self) -> tuple:
        """The layer's parameters, in CNTK 2.7's order: that of its walk from the layer's
        output (``Function.parameters``), the last step's first; a batch normalisation's
        running statistics are constants, not listed.  (Once that graph is gone, the order of
        a walk of the layer's own block.)

        Before its first application, as CNTK 2.7 lists them then, the parameters it declares,
        ``-1`` in their shapes for each axis the input decides (``W`` of ``Dense(3)``:
        ``(-1, 3)``), for ``Dense``, ``Embedding``, the layers without parameters and
        ``Sequential`` layers of those; they stand for the parameters its application creates (those
        are new objects, with the inferred shapes).  Other layers list theirs once applied.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> model = C.layers.Sequential([C.layers.Dense(4), C.layers.Dense(2)])
            >>> [(p.name, p.shape) for p in model.parameters]
            [('W', (-1, 2)), ('b', (2,)), ('W', (-1, 4)), ('b', (4,))]
        """
        known = self._known_parameters()
        if known is None:
            return self._applied_parameters()
        return tuple(p for p in known if p.is_parameter)

    def _ever_applied(self) -> bool:
        return bool(self._signature is not None or self._applied or self._order or
                    self.layer.parameters)

    def _known_parameters(self) -> "tuple | None":
        """Its parameters once applied; before, those it declares (see ``parameters``; an
        Embedding's given weights, a constant, too), or None where Stadyn does not model
        them."""
        if self._ever_applied():
            return self._applied_parameters()
        if "_declared" not in self.__dict__:
            found: "list | None" = []
            if isinstance(self.layer, CompositeLayer):
                for step in reversed(self.layer.composite.steps):
                    for member in (step if isinstance(step, tuple) else (step,)):
                        part = member._known_parameters() if isinstance(
                            member, LayerFunction) else ()   # (an op: none)
                        if part is None:
                            found = None
                            break
                        found.extend(part)
                    if found is None:
                        break
            else:
                found = declared_parameters(self.layer)
                if found is None:
                    found = _recurrence_declared(self.layer)
            self.__dict__["_declared"] = None if found is None else tuple(found)
        return self.__dict__["_declared"]

    def _applied_parameters(self) -> tuple:
        """Its parameters after its first application, in CNTK 2.7's order (``parameters``)."""
        if self._signature is not None:
            # (given a signature, the layer is the Function it built, as in CNTK 2.7, whose
            # walk also reaches the layers its steps make as they are called: For(range(2),
            # lambda i: lambda v: plus(v, Dense(5)(v))))
            return tuple(self._signature.parameters)
        own = [p for p in self.layer.parameters if G.kind_of(p) == "parameter"]
        applied = [ref() for ref in self._applied]
        mine = {id(p) for p in own}
        walked = [v for v in (G.walk_leaves(applied) if applied and all(
            v is not None for v in applied) else self._order) if id(v) in mine]
        taken = {id(v) for v in walked}
        # (a step applied by a recurrence, not through its own LayerFunction: in CNTK 2.7's
        # order of a recurrent cell's parameters)
        own = walked + G.cntk_cell_order([p for p in own if id(p) not in taken])
        return tuple(wrap(p) for p in own)

    def update_signature(self, *arg_types, **kwarg_types) -> None:
        """Apply the layer to new inputs of the given per-sample shapes or types
        (``Sequence[SparseTensor[943]]``, as CNTK's ATIS example gives), so that it can be
        evaluated on data (``layer(array)``) and its parameters exist."""
        from ._signature import _input_of_type
        names = list(self._shown_signature()[0]) + [""] * len(arg_types)   # (as CNTK's)
        self._signature = self(*[_input_of_type(t, n) for t, n in zip(arg_types, names)])

    def clone(self, method, substitutions: "dict | None" = None):
        """A copy, as CNTK 2.7 clones the layer's Function: given a signature, that Function's
        ``clone``; not applied yet, the layer's parameters shared, new or (refused: their
        shapes unknown) frozen, a substituted placeholder applying it
        (:mod:`._layer_clones`).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> d = C.layers.Dense(3)
            >>> [p is q for p, q in zip(d.clone(C.CloneMethod.clone).parameters, d.parameters)]
            [False, False]
        """
        if self._signature is not None:
            return self._signature.clone(method, substitutions)
        if self._ever_applied():
            raise ValueError(f"clone of {self.kind or 'a layer'} applied already: clone the "
                             "Function its application returns (or give the layer a "
                             "signature: update_signature)")
        return clone_unapplied(self, method, substitutions)

    def save(self, filename, *args, **kwargs) -> None:
        """Save the layer once given a signature (``update_signature``): its Function's
        ``save``.  Before, a layer whose parameters wait for its input's shape is refused,
        as CNTK 2.7 refuses it (a ValueError: no value for a parameter of unknown shape).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> C.layers.Dense(3).save("never.model")  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            ValueError: Dense.save: parameter W has the unknown shape (?, 3) ...
        """
        if self._signature is not None:
            return self._signature.save(filename, *args, **kwargs)
        unknown = [p for p in (self._known_parameters() or ()) if -1 in tuple(p.shape)]
        if unknown:
            shape = "(" + ", ".join("?" if d < 0 else str(d) for d in unknown[0].shape) + ")"
            raise ValueError(
                f"{self.kind or 'layer'}.save: parameter {unknown[0].name} has the unknown "
                f"shape {shape} until the layer is applied (give it a signature: "
                "update_signature, or save the Function its application returns)")
        raise ValueError(f"{self.kind or 'layer'}.save: Stadyn saves a layer given a "
                         "signature (update_signature), or the Function its application "
                         "returns; CNTK 2.7 also saves a layer over its own placeholders")

    def __getattr__(self, name: str):
        if name.startswith("_") or name in ("layer", "kind", "name", "own_name"):
            raise AttributeError(name)
        view = getattr(type(self), name, None)
        if isinstance(view, property):          # (its own reason: CNTK's, several outputs)
            return view.fget(self)
        for p in self.layer.parameters:
            if G.name_of(p) == name:
                return wrap(p)
        if self._signature is not None:
            return getattr(self._signature, name)
        found = _sublayer(self.layer, name)
        if found is not None:
            return found
        for p in self._known_parameters() or ():       # (the same ones each time)
            if p.name == name:
                return p
        declared = _declared_parameter(self.layer, name)
        if declared is not None:
            return declared
        if name == "block_root":
            raise not_a_block(self)
        if name == self.own_name:       # (CNTK 2.7: the layer's own block, by its name:
            return self                 # ``Convolution(..., name='foo').foo.W``)
        raise AttributeError(f"{self.kind or 'layer'} has no {name!r} (parameters exist once "
                             "the layer is applied)")

    def __rshift__(self, other):
        refuse_typed_steps([other])     # (self's output: of unknown shape until applied)
        return _chained(_sequential([self, other], ""), self)

    def __rrshift__(self, other):
        if isinstance(other, (types.FunctionType, types.BuiltinFunctionType)):
            return NotImplemented       # (CNTK 2.7: TypeError, unsupported operand type)
        return _chained(_sequential([other, self], ""), other)

    @property
    def output(self):
        """Its output: once given a signature, that Function's; else, as CNTK 2.7's layer over
        its own placeholder, one of unknown shape (``(-2,)``).  A layer of several outputs
        (``LSTM``: h and c) has none, as in CNTK 2.7: a RuntimeError (pick one of its
        ``outputs``).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> C.layers.Dense(3).output.shape
            (-2,)
            >>> C.layers.LSTM(3).output
            Traceback (most recent call last):
              ...
            RuntimeError: A Function instance 'Composite(LSTM): ...' with more than one output ...
        """
        if self._signature is not None:
            return self._signature.output
        if self._shown_signature()[1] > 1:
            raise RuntimeError(several_outputs_message(self))
        return self._first_output()

    def _first_output(self):
        """Its (first) output, for the compat's own use: :attr:`output`, a layer of several
        outputs giving its first (an ``LSTM``'s h) where :attr:`output` refuses."""
        if self._signature is not None:
            return self._signature.outputs[0]
        waiting = self.__dict__.get("_waiting")     # (the same output, uid, each time)
        if waiting is None:
            waiting = self.__dict__["_waiting"] = Deferred(self, (self._own_placeholder(),), {})
            waiting.name = shown_name(self)    # (a named layer's output is named so)
        return waiting.output

    @property
    def root_function(self):
        """Its root, as CNTK 2.7's layer not applied yet shows it (:class:`UnappliedRoot`):
        the block of its kind (``Dense``; ``NoOp`` for a named ``Sequential`` or a ``Label``)
        over its declared parameters and its placeholder (a ``Sequential``: its last step's
        block, over the previous steps' output); once given a signature, that Function's.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> root = C.layers.Dense(3, name="fc").root_function
            >>> root.op_name, root.name, [(i.name, i.shape) for i in root.inputs]
            ('Dense', 'fc', [('W', (-1, 3)), ('b', (3,)), ('x', (-2,))])
        """
        if self._signature is not None:
            return self._signature.root_function
        known = self._known_parameters()
        steps = self._shown_steps()
        if self._root_is_last_op():
            return self._last_step_root()
        if self.kind in G.RECURRENCE_BLOCKS:       # (CNTK 2.7's Combine of the step's output)
            return UnappliedRoot(self._root_op_name(), self.own_name,
                                 (self._shown_step_output(),), self._first_output())
        if known is None or steps == []:
            raise AttributeError(f"{self.kind or 'layer'}: its root_function before it is "
                                 "applied is not modelled for this layer (apply it, or give "
                                 "it a signature: update_signature)")
        keep = self._own_placeholder()
        if steps is None:
            op = shown_layer(self)[1]
            root = UnappliedRoot(op, self.own_name, tuple(known) + tuple(self.arguments),
                                 self._first_output())
            root.outputs = tuple(self.outputs)      # (an LSTM's two: its block's)
            return root
        inputs = self.__dict__.get("_root_inputs")   # (made once: they keep their uids)
        if inputs is None:
            inputs = self.__dict__["_root_inputs"] = self._sequential_root_inputs(keep,
                                                                                  known=True)
        last = steps[-1]
        if self.own_name or named_sequential(last):   # (CNTK 2.7's NoOp naming the output)
            return UnappliedRoot("NoOp", self.own_name or last.own_name, inputs,
                                 self._first_output())
        return UnappliedRoot(shown_layer(last)[1], last.own_name, inputs,
                             self._first_output())

    def _shown_step_output(self):
        """For a recurrence (``StatesLayer``): its step's output, its root's input."""
        return self._first_output()

    def _composite_steps(self) -> "list | None":
        """A ``Sequential``'s steps as written (None for another layer: ``SequentialSteps``)."""
        return self.layer.composite.steps if isinstance(self.layer, CompositeLayer) else None

    def _makes_block(self) -> bool:
        """Whether its root (applied or not) is a block, as CNTK 2.7 numbers its output
        (``Block12_Output_0``; ``ReLU12_Output_0`` where the root is a last step's op,
        ``NoOp12_Output_0`` where it is a named ``Sequential``'s alias)."""
        if isinstance(self.layer, CompositeLayer) and self._root_op_name() == "NoOp":
            return False
        return not self._root_is_last_op() or self._last_step_root().is_block

    def _last_step_root(self) -> UnappliedRoot:
        """The root of an unnamed ``Sequential`` not applied yet whose last step is no layer
        (an op, a Python function): as CNTK 2.7's, that step's op (``ReLU``) over the output
        of the steps before (over its placeholder, ``keep``, for one step); made once, so
        that its inputs keep their uids."""
        made = self.__dict__.get("_last_root")
        if made is None:
            steps = self._shown_steps()
            keep = self._own_placeholder()
            if len(steps) > 1 and isinstance(steps[-2], tuple):    # (its values, one each)
                root = Composite(list(steps))(keep).root_function
            else:
                before = keep if len(steps) == 1 else Deferred(
                    _sequential(list(steps[:-1]), ""), (keep,), {})
                root = steps[-1](before).root_function
            made = self.__dict__["_last_root"] = UnappliedRoot(
                root.op_name, root.name, tuple(root.inputs), self._first_output(), root.is_block)
        return made

    def _sequential_root_inputs(self, applied_to: Any, known: bool = False) -> "tuple | None":
        """The inputs of the root CNTK 2.7 makes of this ``Sequential`` applied to
        ``applied_to``: named, the output of its steps applied (its ``NoOp``'s one input);
        else its last layer's parameters (``known``: as declared before it is applied), then
        the output of the steps before (or ``applied_to``); its last step an op, what that op
        reads.  None for another layer, or a ``Sequential`` whose last step is a tuple."""
        steps = self._shown_steps()
        if not steps:
            return None
        last = steps[-1]
        if self.own_name or named_sequential(last):    # (its NoOp's: the steps' output)
            inner = steps if self.own_name else steps[:-1] + list(last.layer.composite.steps)
            return (Deferred(_sequential(inner, ""), (applied_to,), {}).output,)
        before = applied_to if len(steps) == 1 else Deferred(
            _sequential(list(steps[:-1]), ""), (applied_to,), {}).output
        if not isinstance(last, LayerFunction):     # (an op's: what it reads, the output of
            return None if isinstance(last, tuple) or not callable(last) else \
                tuple(last(before).root_function.inputs)        # the steps before among it)
        parameters = last._known_parameters() if known else last.parameters
        return tuple(parameters) + (before,)

    @property
    def outputs(self) -> tuple:
        """Its outputs of unknown shape (an LSTM's two), or its signature's Function's."""
        return self._signature.outputs if self._signature is not None else \
            self._unapplied_outputs()

    def _own_placeholder(self):
        """The placeholder (without a shape) the layer stands for when an op is applied to
        the layer itself (``C.sequence.reduce_sum(C.layers.Recurrence(...))``): CNTK names it
        ``keep``."""
        keep = self.__dict__.get("_keep")
        if keep is None:
            from ._variables import placeholder
            names = self._shown_signature()[0]  # (a layer of one argument: named as it)
            keep = self.__dict__["_keep"] = placeholder(
                name=names[0] if len(names) == 1 else "keep")
        return keep

    def _shown(self):
        return shown_layer(self)

    def _root_op_name(self) -> str:
        """The op of the root CNTK 2.7's layer has before it is applied (``Dense``; a
        ``Sequential``'s last layer's, ``NoOp`` when named; ``Combine`` for a
        ``Recurrence`` or a ``Fold``, ``NoOp`` when named)."""
        shown = shown_layer(self)
        if self.kind in G.RECURRENCE_BLOCKS:
            return "NoOp" if self.own_name else "Combine"
        if isinstance(self.layer, CompositeLayer):
            steps = self._shown_steps()
            if self.own_name:
                return "NoOp"
            if self._root_is_last_op():
                return self._last_step_root().op_name
            if steps and isinstance(steps[-1], LayerFunction) and \
                    shown_layer(steps[-1]) is not None:
                return steps[-1]._root_op_name()
        return shown[1]

    def __repr__(self) -> str:
        """As CNTK 2.7's ``repr`` of a layer not applied yet (its Function over its
        placeholders); once given a signature, that Function's.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> repr(C.layers.Dense(3, name="fc"))
            "Composite(Dense): Placeholder('x', [???], [???]) -> Output('fc', [???], [???])"
        """
        if self._signature is not None:
            return repr(self._signature)
        if shown_layer(self) is None:      # (not a Function in CNTK 2.7)
            return f"<cntk layer {self.kind} {self.own_name!r}>"
        return self._unapplied_repr()

    def __str__(self) -> str:
        """As CNTK 2.7 prints a layer not applied yet: its name, the op its graph shows
        (``Composite`` for several), its arguments (untyped: ``Sequence[tensor]``) and
        outputs; once given a signature, that Function's.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> print(C.layers.Dense(3, name="fc"))
            fc: Dense(x: Sequence[tensor]) -> Sequence[tensor]
            >>> print(C.layers.GRU(4))
            GRU(dh: Sequence[tensor], x: Sequence[tensor]) -> Sequence[tensor]
        """
        if self._signature is not None:
            return str(self._signature)
        shown = shown_layer(self)
        if shown is None:           # (CNTK 2.7's ResNetBlock, SequentialClique: not Functions)
            return repr(self)
        name, op, args, outputs = shown
        untyped = "Sequence[tensor]"
        out = untyped if outputs == 1 else "Tuple[" + ", ".join([untyped] * outputs) + "]"
        return (f"{name}: " if name else "") + f"{op}(" + \
            ", ".join(f"{a}: {untyped}" for a in args) + f") -> {out}"


def _recurrence_declared(layer: Any) -> "list | None":
    """What CNTK 2.7's ``Recurrence`` of an ``LSTM``, ``GRU`` or ``RNNStep`` lists among its
    inputs before it is applied: the step's declared parameters (and constants), then its
    initial state's constant (one for every state); None for other recurrences."""
    if type(layer) is not _L.Recurrence or not isinstance(layer.step, (_L.LSTM, _L.GRU,
                                                                         _L.RNNStep)):
        return None
    step = declared_parameters(layer.step)
    if step is None or not isinstance(layer.initial_state, Variable):
        return None
    return step + [wrap(layer.initial_state)]


LAYER_CLASSES.append(LayerFunction)      # an operand _deferred waits for


def _sublayer(layer: Any, name: str) -> "LayerFunction | None":
    """The layer named ``name`` inside a ``Sequential`` (CNTK's ``model.classify``)."""
    steps = getattr(getattr(layer, "composite", None), "steps", ())
    for step in steps:
        for member in (step if isinstance(step, tuple) else (step,)):
            if isinstance(member, LayerFunction):
                if member.own_name == name:
                    return member
                inner = _sublayer(member.layer, name)
                if inner is not None:
                    return inner
    return None


# -- composition -------------------------------------------------------------------------------


def _chained(composite: LayerFunction, first: Any) -> LayerFunction:
    """``composite`` (``f >> g``) printed with ``first``'s arguments, as CNTK 2.7 composes
    the two Functions (a Sequential's argument is ``keep``)."""
    shown = shown_layer(first) if isinstance(first, LayerFunction) else None
    if shown is not None:
        composite._argument_names = shown[2]
    return composite


def _named_composite(composite: Composite, name: str) -> LayerFunction:
    return LayerFunction(CompositeLayer(composite), "", name)


def _sequential(layers: list, name: str) -> LayerFunction:
    """``Sequential(layers, name)``: the steps (nested lists flattened) as one layer."""
    return _named_composite(Composite(flatten_steps(layers)), name)


def refuse_typed_steps(steps: list) -> None:
    """CNTK 2.7's TypeError for a typed Function (an argument of known shape that is no
    placeholder) as a step: its Sequential composes ``identity >> f >> g ...``
    (higher_order_layers.py:90), ``identity`` a Function over a placeholder of unknown shape,
    so every step is first called on a value of unknown shape, which a typed argument refuses
    (``Function._replace_args_type_check``, functions.py:333).  Apply the typed Function to the
    Sequential's output instead.  (``layer >> f`` composes the same way: refused too; and
    so do ``Recurrence``, ``RecurrenceFrom``, ``Fold`` and ``UnfoldFrom``, which call their
    step on placeholders as they are made: sequence.py's ``@Function``s.)

    Example:
        >>> import stadyn.compat.cntk as C
        >>> @C.Function
        ... @C.layers.Signature(C.layers.Tensor[4])
        ... def gate(v):
        ...     return v * C.sigmoid(v)
        >>> C.layers.Sequential([C.layers.Dense(4), gate])
        Traceback (most recent call last):
        TypeError: argument v has a known shape, and cannot be passed a Variable of unknown shape
    """
    for step in steps:
        for member in (step if isinstance(step, tuple) else (step,)):
            if (isinstance(member, LayerFunction) and member._signature is None) or \
                    not hasattr(type(member), "root_function"):     # (a layer given types
                continue                                            # by update_signature: in)
            for i, a in enumerate(member.arguments):
                if not a.is_placeholder and tuple(a.shape) != (-2,):
                    what = f"argument {a.name}" if a.name else f"positional argument {i}"
                    raise TypeError(f"{what} has a known shape, and cannot be passed a "
                                    "Variable of unknown shape")

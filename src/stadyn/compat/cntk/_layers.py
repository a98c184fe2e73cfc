"""``cntk.layers`` (and the 2017 betas' ``cntk.models``) on Stadyn's layers.

A CNTK layer is a Function of its future input.  Here it is a :class:`LayerFunction` holding a
Stadyn layer: applied to CNTK Functions it applies the layer and records the application as a
*block* (``Dense``, ``Convolution``, ...) named by the layer's ``name``, so ``z.W``,
``model.conv1.b`` and ``find_by_name`` reach its parameters.  ``Sequential`` composes any
callables on CNTK Functions (layers, ops, lambdas, tuples of them for parallel branches).
"""

from __future__ import annotations

import contextlib
import inspect
import types
import weakref
from typing import Any, Callable

import numpy as np

from ... import functions as F
from ... import layers as _L
from ...graph import Variable, joint_inference
from . import _graph as G
from ._adapt import operand, operands_dtype, unwrap, wrap
from ._deferred import LAYER_CLASSES, Deferred, as_built, pending
from ._late import late
from ._mixins import GraphObject
from ._parameters import cntk_parameters
from ._shown_constants import note_steepness
from ._sparse_operands import refuse_sparse_run
from ._unapplied_layers import UnappliedLayerView
from ._seeds import SentinelValueForAutoSelectRandomSeed, resolved_seed
from ._seq_axes import free_steps

__all__ = ["LayerFunction", "Sequential", "For", "LayerStack", "SequentialClique", "ResNetBlock",
           "default_options", "default_options_for", "Dense", "Convolution", "Convolution1D",
           "Convolution2D", "Convolution3D", "ConvolutionTranspose", "ConvolutionTranspose1D",
           "ConvolutionTranspose2D", "ConvolutionTranspose3D", "MaxPooling", "AveragePooling",
           "GlobalMaxPooling", "GlobalAveragePooling", "MaxUnpooling", "Dropout",
           "BatchNormalization", "LayerNormalization", "Stabilizer", "Embedding", "Activation",
           "Label", "Identity", "identity"]


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


# The layers CNTK 2.7 builds on a sparse input but refuses to run ('TensorOp: Tensor
# operations are currently not supported for sparse matrices'); Activation refuses through its
# op, and Dense, Embedding, BatchNormalization, Dropout, Label run
_REFUSING_SPARSE = ("LayerNormalization", "Stabilizer")


class LayerFunction(UnappliedLayerView):
    """A CNTK layer: applied to CNTK Functions it applies its Stadyn layer; its parameters
    (after the first application) are attributes by their CNTK names (``d.W``).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> d = C.layers.Dense(3, name="d")
        >>> z = d(C.input_variable(4))
        >>> d.W.shape, z.root_function.op_name, z.name
        ((4, 3), 'Dense', 'd')
    """

    def __init__(self, layer: Any, op_name: str, name: str = ""):
        self.layer = layer
        self.op_name = op_name
        self.name = name
        self._signature: Any = None
        # the last application's outputs, weakly (a CNTK layer is a graph of its own over
        # placeholders: it keeps none of the graphs it is applied into), which ``parameters``
        # walks for CNTK's order
        self._applied: list[weakref.ref] = []
        self._order: list[Variable] = []

    def __call__(self, *args):
        if pending(args, {}):       # a placeholder without a shape, a layer: wait for it
            return Deferred(self, args, {})
        args = as_built(args)                    # a waiting op given its types: its Function
        if args and not any(isinstance(a, GraphObject) for a in args):
            if self._signature is None:
                raise TypeError(f"{self.op_name}: call it on CNTK Functions, or give it a "
                                "signature first (update_signature)")
            return self._signature(*args)
        values = [operand(a) for a in args]
        _refuse_weights_over_steps(self.layer, values)
        with joint_inference(), cntk_parameters():  # CNTK infers the layer's graph with
            out = self.layer(*values)                  # its operands
        # CNTK's layers compute in their parameters' data type (float64 under
        # default_options(dtype=np.float64)), which their inputs must have
        operands_dtype(*values, *self.layer.parameters, op=self.op_name or "layer")
        if isinstance(out, Variable) and (any(out is v for v in values) or (
                out in G.BLOCKS and (self.op_name or self.name))):
            out = F.identity(out)
            if not self.op_name:        # (a Label, a named Sequential: CNTK 2.7's NoOp)
                G.set_op_name(out, "NoOp")
        if isinstance(out, Variable) and self.op_name:
            G.BLOCKS[out] = G.Block(self.op_name, self.name, tuple(values))
        elif isinstance(out, Variable) and self.name:
            out.name = self.name
        steepness = getattr(self.layer, "steepness", None)   # a Stabilizer's
        for p in self.layer.parameters if steepness is not None else ():
            note_steepness(p, steepness)
        outs = out if isinstance(out, tuple) else (out,)
        if self.op_name in _REFUSING_SPARSE and isinstance(out, Variable):
            refuse_sparse_run(self.op_name, list(args), out)     # (when run, as CNTK 2.7)
        self._applied = [weakref.ref(o) for o in outs if isinstance(o, Variable)]
        # the order of its own parameters in a walk of the layer's graph alone (its operands'
        # graphs not entered), for once the graph is gone
        self._order = list(G.walk_leaves([o for o in outs if isinstance(o, Variable)],
                                         stop=[v for v in values if isinstance(v, Variable)]))
        if isinstance(out, tuple):          # several outputs: one Function with an output each
            return late("combine_outputs")([wrap(o) for o in out])
        return wrap(out)

    @property
    def parameters(self) -> tuple:
        """The layer's parameters (after its first application), in CNTK 2.7's order: that of
        its walk from the layer's output (``Function.parameters``), the last step's first; a
        batch normalisation's running statistics are constants, not listed.  (Once that
        graph is gone, the order of a walk of the layer's own block.)"""
        own = [p for p in self.layer.parameters if G.kind_of(p) == "parameter"]
        applied = [ref() for ref in self._applied]
        mine = {id(p) for p in own}
        walked = [v for v in (G.walk_leaves(applied) if applied and all(
            v is not None for v in applied) else self._order) if id(v) in mine]
        taken = {id(v) for v in walked}
        own = walked + [p for p in own if id(p) not in taken]
        return tuple(wrap(p) for p in own)

    def update_signature(self, *arg_types, **kwarg_types) -> None:
        """Apply the layer to new inputs of the given per-sample shapes or types
        (``Sequence[SparseTensor[943]]``, as CNTK's ATIS example gives), so that it can be
        evaluated on data (``layer(array)``) and its parameters exist."""
        from ._signature import _input_of_type
        names = list(self._shown_signature()[0]) + [""] * len(arg_types)   # (as CNTK's)
        self._signature = self(*[_input_of_type(t, n) for t, n in zip(arg_types, names)])

    def __getattr__(self, name: str):
        if name.startswith("_") or name in ("layer", "op_name", "name"):
            raise AttributeError(name)
        view = getattr(UnappliedLayerView, name, None)
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
        declared = _declared_parameter(self.layer, name)
        if declared is not None:
            return declared
        raise AttributeError(f"{self.op_name or 'layer'} has no {name!r} (parameters exist once "
                             "the layer is applied)")

    def __rshift__(self, other):
        return _chained(Sequential([self, other]), self)

    def __rrshift__(self, other):
        if isinstance(other, (types.FunctionType, types.BuiltinFunctionType)):
            return NotImplemented       # (CNTK 2.7: TypeError, unsupported operand type)
        return _chained(Sequential([other, self]), other)

    @property
    def output(self):
        """Its output: once given a signature, that Function's; else, as CNTK 2.7's layer over
        its own placeholder, one of unknown shape (``(-2,)``)."""
        if self._signature is not None:
            return self._signature.output
        return Deferred(self, (self._own_placeholder(),), {}).output

    @property
    def outputs(self) -> tuple:
        """``(output,)``, or its signature's Function's outputs."""
        return self._signature.outputs if self._signature is not None else (self.output,)

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
        return _shown_layer(self)

    def __repr__(self) -> str:
        return f"<cntk layer {self.op_name} {self.name!r}>"

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
        shown = _shown_layer(self)
        if shown is None:           # (CNTK 2.7's ResNetBlock, SequentialClique: not Functions)
            return repr(self)
        name, op, args, outputs = shown
        untyped = "Sequence[tensor]"
        out = untyped if outputs == 1 else "Tuple[" + ", ".join([untyped] * outputs) + "]"
        return (f"{name}: " if name else "") + f"{op}(" + \
            ", ".join(f"{a}: {untyped}" for a in args) + f") -> {out}"


# The arguments CNTK 2.7 names a layer's placeholders (``x`` where not listed), and the op its
# graph shows where that is not the layer's kind
_LAYER_ARGUMENTS = {"LSTM": ("dh", "dc", "x"), "GRU": ("dh", "x"), "RNNStep": ("dh", "x"),
                    "MaxUnpooling": ("x", "y"),
                    "AttentionModel": ("encoder_hidden_state", "decoder_hidden_state")}
_SHOWN_AS_COMPOSITE = ("Recurrence", "RecurrenceFrom", "Fold", "AttentionModel")


def _shown_layer(layer: LayerFunction):
    """``(name, op, argument names, number of outputs)`` as CNTK 2.7 prints ``layer`` before
    it is applied; None for a layer CNTK makes no Function of."""
    op, args, outputs = layer.op_name, _LAYER_ARGUMENTS.get(layer.op_name, ("x",)), 1
    name = layer.name
    if op == "LSTM":
        outputs = 2
    if op == "RecurrenceFrom":
        args = ("h", "c", "x") if isinstance(layer.layer.step, _L.LSTM) else ("h", "x")
    if op in _SHOWN_AS_COMPOSITE:
        op = "Composite"
    elif isinstance(layer.layer, _L.Label):
        op = "NoOp"
    elif isinstance(layer.layer, _CompositeLayer):
        steps = layer.layer.composite.steps
        args = layer.__dict__.get("_argument_names", ("keep",))
        if steps and isinstance(steps[-1], tuple):
            outputs = len(steps[-1])
        if not steps:
            op = "Combine"
        elif len(steps) == 1 and isinstance(steps[0], LayerFunction) and not name:
            # (a name makes CNTK's Sequential a composite over the layer)
            inner = _shown_layer(steps[0])
            if inner is None:
                return None
            name = name or inner[0]
            op, outputs = inner[1], inner[3]
        else:
            op = "Composite"
    elif not op:
        return None
    return name, op, tuple(args), outputs


LAYER_CLASSES.append(LayerFunction)      # an operand _deferred waits for


def _refuse_weights_over_steps(layer: Any, values: list) -> None:
    """CNTK 2.7 refuses a ``Dense`` whose weight would take its input dimensions from
    ``sequence.unpack``'s padded steps (a free dimension, -3): their number is the run's, so
    the weight would have none (a ValueError when applied); ``input_rank``/``map_rank`` that
    leave the steps out apply it to each step."""
    if not isinstance(layer, _L.Dense) or layer.parameters or len(values) != 1:
        return
    x = values[0]
    if not isinstance(x, Variable) or x.sequence_lengths is not None:
        return
    free = free_steps(x)
    if layer.input_rank is not None:
        base = x.ndim - int(layer.input_rank)
    else:
        base = 1 + int(layer.map_rank or 0)
    if any(a >= base for a in free):
        raise ValueError(f"Dense: its weight W cannot take its input dimensions from the "
                         f"steps of sequence.unpack (a free dimension, -3) of its input of "
                         f"shape {wrap(x).shape} (CNTK 2.7 refuses it too); apply it to each "
                         "step with input_rank=1 or map_rank=1")


def _sublayer(layer: Any, name: str) -> "LayerFunction | None":
    """The layer named ``name`` inside a ``Sequential`` (CNTK's ``model.classify``)."""
    steps = getattr(getattr(layer, "composite", None), "steps", ())
    for step in steps:
        for member in (step if isinstance(step, tuple) else (step,)):
            if isinstance(member, LayerFunction):
                if member.name == name:
                    return member
                inner = _sublayer(member.layer, name)
                if inner is not None:
                    return inner
    return None


class _DeclaredParameter:
    """A parameter of a layer not applied yet, as CNTK shows it: ``shape`` with ``-1`` for each
    axis the input decides (CNTK's inferred dimension), ``value`` once the shape is known and
    the initial value is not drawn at random.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> d = C.layers.Dense(3)
        >>> d.W.shape, d.b.shape, d.b.value.tolist()
        ((-1, 3), (3,), [0.0, 0.0, 0.0])
    """

    def __init__(self, name: str, shape: tuple, init: Any):
        self.name, self.shape, self._init = name, tuple(int(s) for s in shape), init

    @property
    def value(self) -> np.ndarray:
        """The initial value (CNTK refuses it while an axis is not inferred yet)."""
        if -1 in self.shape:
            raise ValueError(f"parameter {self.name!r} of shape {self.shape}: its axes of -1 "
                             "come from the input, so it has no value until the layer is "
                             "applied (CNTK: 'unknown dimensions')")
        if isinstance(self._init, (int, float, np.ndarray)):
            return _L.initial_value(self._init, self.shape, 1, 1)
        raise ValueError(f"parameter {self.name!r}: its random initial value is drawn when the "
                         "layer is first applied")

    def __repr__(self) -> str:
        return f"Parameter('{self.name}', {list(self.shape)}) (not created yet)"


def _declared_parameter(layer: Any, name: str) -> "_DeclaredParameter | None":
    """``layer``'s parameter ``name`` before its first application (Dense, Embedding)."""
    if layer.parameters:
        return None
    if isinstance(layer, _L.Dense):
        if name == "W":
            inferred = (-1,) * int(layer.input_rank or 1)
            return _DeclaredParameter(name, inferred + layer.shape, layer.init)
        if name == "b" and layer.bias:
            return _DeclaredParameter(name, layer.shape, layer.init_bias)
    if isinstance(layer, _L.Embedding) and name == "E":
        if layer.weights is not None:
            return _DeclaredParameter(name, layer.weights.shape, layer.weights)
        return _DeclaredParameter(name, (-1,) + tuple(layer.shape or ()), layer.init)
    return None


def _layer(cls, op_name: str):
    def make(*args, name: str = "", **kwargs):
        layer = cls(*_native(args), **{k: _native(v) for k, v in kwargs.items()})
        return LayerFunction(layer, op_name, name)
    make.__name__ = make.__qualname__ = getattr(cls, "__name__", op_name)
    make.__doc__ = cls.__doc__
    return make


Dense = _layer(_L.Dense, "Dense")
Convolution = _layer(_L.Convolution, "Convolution")
Convolution1D = _layer(_L.Convolution1D, "Convolution")
Convolution2D = _layer(_L.Convolution2D, "Convolution")
Convolution3D = _layer(_L.Convolution3D, "Convolution")
ConvolutionTranspose = _layer(_L.ConvolutionTranspose, "ConvolutionTranspose")
ConvolutionTranspose1D = _layer(_L.ConvolutionTranspose1D, "ConvolutionTranspose")
ConvolutionTranspose2D = _layer(_L.ConvolutionTranspose2D, "ConvolutionTranspose")
ConvolutionTranspose3D = _layer(_L.ConvolutionTranspose3D, "ConvolutionTranspose")
class _MaxPoolingAsCntk(_L.MaxPooling):
    __doc__ = _L.MaxPooling.__doc__
    nan_rule = "cntk"        # CNTK 2.7's: NaN passed by (docs/cntk-names.md)


_MaxPoolingAsCntk.__name__ = _MaxPoolingAsCntk.__qualname__ = "MaxPooling"
MaxPooling = _layer(_MaxPoolingAsCntk, "MaxPooling")
AveragePooling = _layer(_L.AveragePooling, "AveragePooling")
class _GlobalMaxPoolingAsCntk(_L.GlobalMaxPooling):
    __doc__ = _L.GlobalMaxPooling.__doc__
    nan_rule = "cntk"        # CNTK 2.7 pools the plane: NaN passed by (docs/cntk-names.md)


_GlobalMaxPoolingAsCntk.__name__ = _GlobalMaxPoolingAsCntk.__qualname__ = "GlobalMaxPooling"
GlobalMaxPooling = _layer(_GlobalMaxPoolingAsCntk, "GlobalMaxPooling")
GlobalAveragePooling = _layer(_L.GlobalAveragePooling, "GlobalAveragePooling")
BatchNormalization = _layer(_L.BatchNormalization, "BatchNormalization")
LayerNormalization = _layer(_L.LayerNormalization, "LayerNormalization")
Stabilizer = _layer(_L.Stabilizer, "Stabilizer")
Embedding = _layer(_L.Embedding, "Embedding")
Activation = _layer(_L.Activation, "Activation")


def Dropout(dropout_rate=None, keep_prob=None, seed=SentinelValueForAutoSelectRandomSeed,
            name: str = ""):
    """CNTK's Dropout layer: :class:`stadyn.layers.Dropout` with CNTK's seed rules (the
    default ``auto_select`` takes the next of a fixed sequence of seeds, so a run repeats from
    one process to the next, as in CNTK 2.7)."""
    layer = _L.Dropout(dropout_rate, keep_prob, seed=resolved_seed(seed))
    return LayerFunction(layer, "Dropout", name)


def identity(keep):
    """The identity (CNTK's default activation): ``keep`` as a Function."""
    from ._function import Function
    return keep if isinstance(keep, Function) else Function(unwrap(keep))


def Label(name: str) -> LayerFunction:
    """An identity that names its output, to reach an intermediate value (``model.hidden``)."""
    return LayerFunction(_L.Label(name), "", name)


def Identity(name: str = "") -> LayerFunction:
    """The 2017 betas' identity layer."""
    return LayerFunction(_L.Identity(name=name), "", name)


class _Unpool:
    """MaxUnpooling as a layer (no parameters)."""

    parameters: list = []

    def __init__(self, filter_shape, strides, pad):
        self.filter_shape, self.strides, self.pad = filter_shape, strides, pad

    def __call__(self, x, pooling_input):
        from ._ops_nn import MAX_UNPOOLING, unpooling
        return unwrap(unpooling(wrap(x), wrap(pooling_input), MAX_UNPOOLING, self.filter_shape,
                                self.strides, self.pad))


def MaxUnpooling(filter_shape, strides=1, pad=False, name: str = "") -> LayerFunction:
    """``MaxUnpooling(window)(x, pooling_input)``: the values of ``x`` put back where the maxima
    of ``pooling_input``'s windows were."""
    shape = tuple(filter_shape) if isinstance(filter_shape, (list, tuple)) else (filter_shape,)
    strides = tuple(strides) if isinstance(strides, (list, tuple)) else (strides,) * len(shape)
    return LayerFunction(_Unpool(shape, strides, pad), "MaxUnpooling", name)


# -- composition -------------------------------------------------------------------------------


class _Composite:
    """Functions applied one after another on CNTK values (the native layers are reached through
    their LayerFunctions); a tuple applies its members to the same values."""

    def __init__(self, steps: list):
        self.steps = steps

    def __call__(self, *args):
        values = args
        for step in self.steps:
            if isinstance(step, tuple):
                outputs = getattr(values[0], "outputs", ()) if len(values) == 1 else ()
                if len(outputs) == len(step) > 1:       # one member per output
                    values = tuple(member(v) for member, v in zip(step, outputs))
                else:
                    values = tuple(_apply(member, values) for member in step)
            else:
                out = _apply(step, values)
                values = out if isinstance(out, tuple) else (out,)
        return values[0] if len(values) == 1 else values

    @property
    def parameters(self) -> list:
        """The steps' learnable parameters in CNTK 2.7's order (its walk from the output): the
        last step's first; a batch normalisation's running statistics are constants."""
        out = []
        for step in reversed(self.steps):
            for member in (step if isinstance(step, tuple) else (step,)):
                for p in getattr(member, "parameters", []) or []:
                    if G.kind_of(unwrap(p)) == "parameter":
                        out.append(unwrap(p))
        return out


def _chained(composite: LayerFunction, first: Any) -> LayerFunction:
    """``composite`` (``f >> g``) printed with ``first``'s arguments, as CNTK 2.7 composes
    the two Functions (a Sequential's argument is ``keep``)."""
    shown = _shown_layer(first) if isinstance(first, LayerFunction) else None
    if shown is not None:
        composite._argument_names = shown[2]
    return composite


def _apply(fn: Callable, values: tuple):
    return fn(*values)


def _flatten(items) -> list:
    out = []
    for item in items:
        if isinstance(item, list):
            out.extend(_flatten(item))
        else:
            out.append(item)
    return out


def _named_composite(composite: _Composite, name: str) -> LayerFunction:
    return LayerFunction(_CompositeLayer(composite), "", name)


class _CompositeLayer:
    """A composite on CNTK values seen from a LayerFunction (which works on Stadyn values)."""

    def __init__(self, composite: _Composite):
        self.composite = composite

    def __call__(self, *values):
        out = self.composite(*[wrap(v) for v in values])
        return unwrap(out)

    @property
    def parameters(self) -> list:
        return self.composite.parameters


def Sequential(layers, name: str = "") -> LayerFunction:
    """The layers (or any functions of CNTK values) one after another; nested lists flatten, a
    tuple applies its members to the same input and passes their outputs on together.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> model = C.layers.Sequential([C.layers.Dense(4, activation=C.relu),
        ...                              (C.layers.Dense(2), C.layers.identity), C.splice])
        >>> model(C.input_variable(3)).shape
        (6,)
    """
    if not isinstance(layers, list):
        layers = [layers]
    return _named_composite(_Composite(_flatten(layers)), name)


def For(what_range, constructor, name: str = "") -> LayerFunction:
    """``Sequential`` of ``constructor(i)`` (or ``constructor()``) for ``i`` in ``what_range``."""
    return Sequential([_call_constructor(constructor, i) for i in what_range], name)


def LayerStack(n: int, constructor) -> LayerFunction:
    """The 2017 betas' ``cntk.models.LayerStack(n, lambda [i]: ...)``."""
    return For(range(n), constructor)


def _call_constructor(constructor, i):
    try:
        takes_index = len(inspect.signature(constructor).parameters) > 0
    except (TypeError, ValueError):
        takes_index = True
    return constructor(i) if takes_index else constructor()


def ResNetBlock(f, name: str = "") -> LayerFunction:
    """``f(x) + x``."""
    return LayerFunction(_L.ResNetBlock(_native_fn(f)), "", name)


def SequentialClique(functions, name: str = "") -> LayerFunction:
    """Each function on the sum of the input and every earlier function's output."""
    return LayerFunction(_L.SequentialClique([_native_fn(f) for f in functions]), "", name)


@contextlib.contextmanager
def default_options(**kwargs):
    """``cntk.layers.default_options``: override the layers' defaults inside a ``with``."""
    with _L.default_options(**{k: _native(v) for k, v in kwargs.items()}):
        yield


@contextlib.contextmanager
def default_options_for(functions, **kwargs):
    """The 2017 betas' ``default_options_for(layer, ...)``: options for one kind of layer."""
    natives = [getattr(_L, getattr(f, "__name__", ""), f) for f in (
        functions if isinstance(functions, (list, tuple)) else [functions])]
    with _L.default_options_for(natives, **{k: _native(v) for k, v in kwargs.items()}):
        yield

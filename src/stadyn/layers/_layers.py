"""CNTK-style layers: callable objects that create their parameters on first use.

A layer object is a function: ``Dense(10)(x)`` returns a Variable.  On its first call it infers
its parameters' shapes from the input and creates them in the parameter registry under a unique
scope (``dense``, ``dense_1``, ...; or its ``name``); calling the same object again reuses them
(shared parameters).  Layers use only ``F`` ops, so they work in static and dynamic mode alike.
Dropout and batch normalisation follow the phase (:func:`stadyn.training`).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .. import cntk_semantics as S
from .. import functions as F
from .._errors import ParameterError, ShapeError, StadynError
from ..graph import Variable, current_scope, first_pass_shape, name_scope
from ..ops import RandomStream
from ..parametric import current_registry, get_parameter_or_create
from .._random import initializer_seed
from ._init import CNTKInitializer, glorot_uniform, initial_value
from ._options import default_override_or, is_default_override, resolve

__all__ = ["Layer", "Sequential", "For", "LayerStack", "ResNetBlock", "SequentialClique", "Dense",
           "MaxPooling", "AveragePooling", "GlobalMaxPooling", "GlobalAveragePooling", "Dropout",
           "Embedding", "Activation", "Label", "Identity", "identity"]


def identity(x):
    """The identity function (CNTK's default activation)."""
    return x


def _tuple(value: Any, n: int) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1 and n > 1:
        return value * n
    return value


class Layer:
    """Base class: a callable with parameters in the registry (see the module docstring)."""

    def __init__(self, name: str = ""):
        self.name = name
        self._scope: str | None = None
        self._params: dict[str, Variable] = {}
        self._seeds: dict[str, int] = {}
        # the parameters' element type: float32 unless default_options(dtype=np.float64) is
        # in force where the layer is made (CNTK's double-precision layers)
        self.dtype = np.dtype(resolve(type(self).__name__, "dtype",
                                      default_override_or(np.float32)))

    def _take_seeds(self, init: Any, names: Sequence[str]) -> None:
        """Give the parameters ``names`` (made later from ``init``, on the first call) the next
        seeds of CNTK's count now, in CNTK's order, as CNTK seeds them when a layer is made;
        an initialiser with its own seed, or a constant, takes none."""
        if isinstance(init, CNTKInitializer) and init.seed is None:
            self._seeds.update((n, initializer_seed()) for n in names)

    @property
    def kind(self) -> str:
        return type(self).__name__.lower()

    def __call__(self, *args):
        if self._scope is None:
            base = self.name or self.kind
            prefix = current_scope()
            self._scope = current_registry().claim(f"{prefix}/{base}" if prefix else base)
        with name_scope(self._scope, absolute=True):
            return self.apply(*args)

    def apply(self, *args):  # pragma: no cover - abstract
        raise NotImplementedError

    def parameter(self, name: str, shape: Sequence[int], init: Any, fan_in: int = 1,
                  fan_out: int = 1, need_grad: bool = True) -> Variable:
        """This layer's parameter ``name`` (created on first use, in the layer's scope)."""
        shape = tuple(int(s) for s in shape)
        var = self._params.get(name)
        if var is not None:
            if var.shape != shape:
                raise ShapeError(f"{type(self).__name__} '{self._scope}': parameter '{name}' has "
                                 f"shape {var.shape} but this input needs {shape} (a layer "
                                 "object applied twice shares its parameters)")
            return var
        seed = self._seeds.get(name)
        if seed is not None and isinstance(init, CNTKInitializer) and init.seed is None:
            init = init.with_seed(seed)
        dtype = getattr(self, "dtype", None)
        var = get_parameter_or_create(name, shape,
                                      initial_value(init, shape, fan_in, fan_out, dtype),
                                      need_grad, dtype=dtype)
        self._params[name] = var
        return var

    @property
    def parameters(self) -> list[Variable]:
        """The layer's parameters (created by its first call)."""
        return list(self._params.values())

    def __rshift__(self, other):
        return Sequential([self, other])

    def __rrshift__(self, other):
        return Sequential([other, self])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._scope or self.name or '(not applied yet)'}>"


# ---------------------------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------------------------
def _flatten(layers: Iterable) -> list:
    out = []
    for layer in layers:
        if isinstance(layer, list):
            out.extend(_flatten(layer))
        else:
            out.append(layer)
    return out


class Sequential(Layer):
    """Apply layers one after another.  Nested lists are flattened; a tuple applies its members
    to the same input as parallel branches and passes on their outputs together.

    Example:
        >>> import stadyn as sd, stadyn.layers as L
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     model = L.Sequential([L.Dense(8, activation=L.relu), [L.Dense(4)], L.Dense(2)])
        ...     model(sd.Variable((5, 3))).shape
        (5, 2)
    """

    def __init__(self, layers: Sequence, name: str = ""):
        super().__init__(name)
        self.layers = _flatten(list(layers))

    @property
    def kind(self) -> str:
        return "sequential"

    def __call__(self, *args):
        # A Sequential without a name adds no scope: its layers name themselves.
        if not self.name:
            return self.apply(*args)
        return super().__call__(*args)

    def apply(self, *args):
        values = args
        for layer in self.layers:
            if isinstance(layer, tuple):
                values = tuple(branch(*values) for branch in layer)
            else:
                values = layer(*values)
                values = values if isinstance(values, tuple) else (values,)
        return values[0] if len(values) == 1 else values

    @property
    def parameters(self) -> list[Variable]:
        params: list[Variable] = []
        for layer in self.layers:
            for member in (layer if isinstance(layer, tuple) else (layer,)):
                params.extend(getattr(member, "parameters", []) or [])
        return params

    def __rshift__(self, other):
        return Sequential(self.layers + [other])


def For(what_range: Iterable, constructor: Callable, name: str = "") -> Sequential:
    """``Sequential`` of ``constructor(i)`` (or ``constructor()``) for ``i`` in ``what_range``.

    Example:
        >>> import stadyn.layers as L
        >>> len(L.For(range(3), lambda i: L.Dense([8, 4, 2][i])).layers)
        3
    """
    try:
        takes_index = len(inspect.signature(constructor).parameters) > 0
    except (TypeError, ValueError):
        takes_index = True
    layers = [constructor(i) if takes_index else constructor() for i in what_range]
    return Sequential(layers, name=name)


def LayerStack(n: int, constructor: Callable) -> Sequential:
    """The 2017 CNTK betas' name for ``For(range(n), constructor)``."""
    return For(range(n), constructor)


class ResNetBlock(Layer):
    """``f(x) + x``: a skip connection around ``f``.

    Example:
        >>> import stadyn as sd, stadyn.layers as L
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     L.ResNetBlock(L.Dense(3))(sd.Variable((2, 3))).shape
        (2, 3)
    """

    def __init__(self, f: Callable, name: str = ""):
        super().__init__(name)
        self.f = f

    def __call__(self, *args):
        return self.apply(*args) if not self.name else super().__call__(*args)

    def apply(self, x):
        return F.add2(self.f(x), x)

    @property
    def parameters(self) -> list[Variable]:
        return list(getattr(self.f, "parameters", []) or [])


class SequentialClique(Layer):
    """The functions one after another, each on the sum of the input and every earlier
    function's output; the last one's output.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F, stadyn.layers as L
        >>> with sd.auto_forward():
        ...     y = L.SequentialClique([F.abs, F.sqrt, lambda v: F.mul2(v, v)])(
        ...         sd.Variable.from_numpy_array(np.array([[2.0, 8.0]])))
        >>> y.d.tolist()
        [[36.0, 400.0]]
    """

    def __init__(self, functions: Sequence[Callable], name: str = ""):
        super().__init__(name)
        self.functions = list(functions)

    def __call__(self, *args):
        return self.apply(*args) if not self.name else super().__call__(*args)

    def apply(self, x):
        out = x
        for f in self.functions:
            out = f(x)
            x = F.add2(x, out)
        return out

    @property
    def parameters(self) -> list[Variable]:
        return [p for f in self.functions for p in (getattr(f, "parameters", []) or [])]


# ---------------------------------------------------------------------------------------------
# Layers
# ---------------------------------------------------------------------------------------------
class Dense(Layer):
    """Fully connected: ``activation(times(x, W) + b)``.  ``W`` has the input's axes after the
    batch (and sequence) axis (or its last ``input_rank`` axes, or all but the first
    ``map_rank`` of them) followed by ``shape``, as CNTK's.

    Example:
        >>> import stadyn as sd, stadyn.layers as L
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     d = L.Dense(4)
        ...     y = d(sd.Variable((2, 3, 5)))
        ...     y.shape, [p.shape for p in d.parameters]
        ((2, 4), [(3, 5, 4), (4,)])
    """

    def __init__(self, shape, activation=default_override_or(identity),
                 init=default_override_or(glorot_uniform()), input_rank=None, map_rank=None,
                 bias=default_override_or(True), init_bias=default_override_or(0.0),
                 name: str = ""):
        super().__init__(name)
        if input_rank is not None and map_rank is not None:
            raise ParameterError("Dense: give input_rank or map_rank, not both")
        self.shape = _tuple(shape, 1)
        self.activation = resolve("Dense", "activation", activation) or identity
        self.init = resolve("Dense", "init", init)
        self.bias = resolve("Dense", "bias", bias)
        self.init_bias = resolve("Dense", "init_bias", init_bias)
        self.input_rank = input_rank
        self.map_rank = map_rank
        self._take_seeds(self.init, ["W"])

    def apply(self, x):
        if self.input_rank is not None:
            base_axis = x.ndim - int(self.input_rank)
        elif self.map_rank is not None:     # (its first map_rank axes after the dynamic ones)
            base_axis = (1 if x.sequence_lengths is None else 2) + int(self.map_rank)
        else:       # per step of a sequence (after the batch and sequence axes)
            base_axis = 1 if x.sequence_lengths is None else 2
            # CNTK fixes W on its first inference pass: after a loop whose state gained
            # leading axes (Sequence2Sequence.py's attention decoder), without them (they are
            # mapped, as CNTK's times maps them)
            made = self._params.get("W")        # W fixed by an earlier application
            first = first_pass_shape(x)[base_axis:] if made is None else \
                tuple(made.shape[:made.ndim - len(self.shape)])
            if len(first) < x.ndim - base_axis and tuple(x.shape[x.ndim - len(first):]) == first:
                base_axis = x.ndim - len(first)
        in_shape = tuple(x.shape[base_axis:])
        fan_in = int(np.prod(in_shape))
        fan_out = int(np.prod(self.shape))
        w = self.parameter("W", in_shape + self.shape, self.init, fan_in, fan_out)
        b = self.parameter("b", self.shape, self.init_bias) if self.bias else None
        # (input_rank of all the data's axes: one sample, no batch axis)
        return self.activation(S.times(x, w, len(self.shape), batched=base_axis > 0, bias=b))


class _Pooling(Layer):
    _average = False
    #: a max pooling's NaN rule (``cntk_semantics.pooling``'s ``nan_rule``): torch's here (a
    #: NaN wins its window; ATen's kernel, kept by a compiled step); CNTK's in compat.cntk
    nan_rule = "torch"

    def __init__(self, filter_shape, strides=1, pad=default_override_or(False), name: str = ""):
        super().__init__(name)
        self.filter_shape = _tuple(filter_shape, 1)
        self.strides = _tuple(strides, len(self.filter_shape))
        self.pad = resolve(type(self).__name__, "pad", pad)

    def apply(self, x):
        return S.pooling(x, self.filter_shape, self.strides, self.pad, self._average,
                         nan_rule=self.nan_rule)


class MaxPooling(_Pooling):
    """Max over ``filter_shape`` windows every ``strides``; ``pad=True`` gives
    ``ceil(size/stride)`` outputs (CNTK auto-padding; padding never wins).

    Example:
        >>> import stadyn as sd, stadyn.layers as L
        >>> L.MaxPooling((3, 3), (2, 2), pad=True)(sd.Variable((1, 4, 32, 32))).shape
        (1, 4, 16, 16)
    """


class AveragePooling(_Pooling):
    """Mean over windows (padding excluded from the count, as CNTK)."""

    _average = True


class GlobalMaxPooling(Layer):
    """Max over all spatial axes, keeping them with size 1."""

    #: the NaN rule: torch's here (a NaN is the maximum); CNTK's in compat.cntk (a max pooling
    #: over the whole plane: NaN passed by, a plane of NaN -inf, the first tie's gradient)
    nan_rule = "torch"

    def apply(self, x):
        rule = "cntk_pooling" if self.nan_rule == "cntk" else "torch"
        return F.max(x, axis=tuple(range(2, x.ndim)), keepdims=True, rule=rule)


class GlobalAveragePooling(Layer):
    """Mean over all spatial axes, keeping them with size 1."""

    def apply(self, x):
        return F.global_average_pooling(x)


class Dropout(Layer):
    """Zero inputs with probability ``dropout_rate`` (scaling the rest by ``1/(1-p)``) while
    training; the identity in the inference phase.

    ``seed=None`` draws the masks from torch's generator (:func:`stadyn.seed`); with a seed the
    layer draws them from a stream of its own (:class:`stadyn.ops.RandomStream`): the same
    masks in every process, the stream's next mask at every step.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.layers as L
        >>> x = sd.Variable.from_numpy_array(np.ones((2, 8), np.float32))
        >>> with sd.auto_forward(), sd.training():
        ...     a = L.Dropout(0.5, seed=3)(x).d
        ...     b = L.Dropout(0.5, seed=3)(x).d
        >>> bool((a == b).all()), sorted(set(a.ravel().tolist())) == [0.0, 2.0]
        (True, True)
    """

    def __init__(self, dropout_rate=None, keep_prob=None, seed=None, name: str = ""):
        super().__init__(name)
        if (dropout_rate is None) == (keep_prob is None):
            raise ParameterError("Dropout: give exactly one of dropout_rate and keep_prob")
        self.rate = float(dropout_rate if dropout_rate is not None else 1.0 - keep_prob)
        if not 0.0 <= self.rate < 1.0:
            raise ParameterError(f"Dropout: the rate must be in [0, 1), got {self.rate}")
        self.seed = -1 if seed is None else (
            seed if isinstance(seed, RandomStream) else RandomStream(seed))

    def apply(self, x):
        return F.dropout(x, self.rate, seed=self.seed, train_only=True)


class Embedding(Layer):
    """A learned embedding: ``x E`` for one-hot (or any dense) inputs ``x`` of width ``vocab``,
    ``E`` of shape ``(vocab, *shape)``; ``weights`` fixes ``E`` to a given array."""

    def __init__(self, shape=None, init=default_override_or(glorot_uniform()), weights=None,
                 name: str = ""):
        super().__init__(name)
        # refused as CNTK 2.7's Embedding refuses them (ValueErrors, when it is made)
        if weights is not None and not is_default_override(init):
            raise ParameterError("Embedding: init and weights options are mutually exclusive")
        if weights is None and shape is None:
            raise ParameterError("Embedding: output shape must be specified")
        if weights is not None and shape is not None:
            raise ParameterError("Embedding: output shape must not be specified when weights "
                                 "are given")
        self.shape = None if shape is None else _tuple(shape, 1)
        self.init = resolve("Embedding", "init", init)
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float32)
        if self.weights is None:
            self._take_seeds(self.init, ["E"])

    def apply(self, x):
        vocab = x.shape[-1]
        if self.weights is not None:
            e = self.parameter("E", self.weights.shape, self.weights, need_grad=False)
        else:
            if self.shape is None:
                raise StadynError("Embedding: give shape= or weights=")
            e = self.parameter("E", (vocab,) + self.shape, self.init, vocab,
                               int(np.prod(self.shape)))
        return F.affine(x, e, None, x.ndim - 1)


class Activation(Layer):
    """Apply ``activation`` as a layer."""

    def __init__(self, activation=default_override_or(identity), name: str = ""):
        super().__init__(name)
        self.activation = resolve("Activation", "activation", activation) or identity

    def apply(self, x):
        return self.activation(x)


class Label(Layer):
    """The identity, naming its output (CNTK's ``Label``)."""

    def __init__(self, name: str):
        super().__init__(name)

    def apply(self, x):
        return x


def Identity(name: str = "") -> Activation:
    return Activation(identity, name=name)

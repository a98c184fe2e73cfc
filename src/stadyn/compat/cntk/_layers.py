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

import numpy as np

from ... import functions as F
from ... import layers as _L
from ._adapt import unwrap, wrap
from ._ops_nn import _refuse_unshared
from ._layer_signatures import bound, cntk_signature
from ._init_arguments import CONVOLUTION, RANKED, check_init_arguments, uncalled
from ._layers_composite import flatten_steps
from ._shown_constants import scalar_constant, show_constants
from ._layers_function import (LayerFunction, _native, _native_fn, _sequential, identity,
                              refuse_typed_steps)
from ._seeds import SentinelValueForAutoSelectRandomSeed, resolved_seed

__all__ = ["LayerFunction", "Sequential", "For", "LayerStack", "SequentialClique", "ResNetBlock",
           "default_options", "default_options_for", "Dense", "Convolution", "Convolution1D",
           "Convolution2D", "Convolution3D", "ConvolutionTranspose", "ConvolutionTranspose1D",
           "ConvolutionTranspose2D", "ConvolutionTranspose3D", "MaxPooling", "AveragePooling",
           "GlobalMaxPooling", "GlobalAveragePooling", "MaxUnpooling", "Dropout",
           "BatchNormalization", "LayerNormalization", "Stabilizer", "Embedding", "Activation",
           "Label", "Identity", "identity"]


def _layer(cls, op_name: str, *natives, numbers: tuple = (), weights: str | None = None):
    """The CNTK factory of the native layer ``cls``: CNTK's positional order (see
    :mod:`._layer_signatures`; ``natives``: the layers whose defaults it shows too), its
    initial values checked as CNTK 2.7 checks them (:mod:`._init_arguments`: ``numbers``, the
    arguments it makes parameters of; ``weights``, how its weights take ``init``)."""
    title = getattr(cls, "__name__", op_name)
    signature = cntk_signature(title, cls, *natives)

    def make(*args, **kwargs):
        kwargs = bound(title, signature, args, kwargs)
        # (a default_options value stands for an initial value not given, checked as well)
        given = {k: _L.resolve(cls.__name__, k, _L.default_override_or(None))
                 for k in numbers if k not in kwargs}
        check_init_arguments(title, {**{k: v for k, v in given.items() if v is not None},
                                     **kwargs}, numbers, weights)
        name = kwargs.pop("name", "")
        if title.startswith("ConvolutionTranspose"):
            kwargs.pop("max_temp_mem_size_in_samples", None)        # (a memory hint)
        layer = cls(**{k: _native(v) for k, v in kwargs.items()})
        return LayerFunction(layer, op_name, name)
    make.__name__ = make.__qualname__ = title
    make.__doc__ = cls.__doc__
    make.__signature__ = signature
    return make


_WEIGHTS = ("init", "init_bias")     # (made into the parameters W and b)


Dense = _layer(_L.Dense, "Dense", numbers=_WEIGHTS, weights=RANKED)


class _TakesSharing:
    """Mixed into a native convolution layer: CNTK's ``sharing``, which where it is False on
    some axis builds the layer as shared and refuses to run it, as CNTK 2.7 does
    (``_ops_nn._refuse_unshared``)."""

    def __init__(self, *args, sharing=True, **kwargs):
        super().__init__(*args, **kwargs)
        self.cntk_sharing = sharing

    def apply(self, x):
        y = super().apply(x)
        w = next((p for p in self.parameters if p.name.rsplit("/", 1)[-1] == "W"), None)
        _refuse_unshared(y, self.cntk_sharing, None if w is None else wrap(w))
        return y


class _Convolution(_TakesSharing, _L.Convolution):
    __doc__ = _L.Convolution.__doc__


class _ConvolutionTranspose(_TakesSharing, _L.ConvolutionTranspose):
    __doc__ = _L.ConvolutionTranspose.__doc__


# (their kind, and so their scopes' names, are the native layers'; pickled by their own names)
_Convolution.__name__ = "Convolution"
_ConvolutionTranspose.__name__ = "ConvolutionTranspose"
_NATIVE_BASES = {c: (_L.Convolution,) for c in (_L.Convolution1D, _L.Convolution2D,
                                                 _L.Convolution3D)}
_NATIVE_BASES.update({c: (_L.ConvolutionTranspose,) for c in (
    _L.ConvolutionTranspose1D, _L.ConvolutionTranspose2D, _L.ConvolutionTranspose3D)})
_TAKING_SHARING = {_L.Convolution: _Convolution, _L.ConvolutionTranspose: _ConvolutionTranspose}


def _convolution_layer(cls, op_name: str, takes_sharing: bool = True,
                       takes_groups: bool = False, weights: str = CONVOLUTION,
                       groups_keyword: bool = True):
    """A CNTK convolution layer: ``sharing`` checked as CNTK 2.7 checks it (a list of the
    filter's rank or one value; ``Convolution1D``/``2D``/``3D`` take none) and
    ``groups`` other than 1 refused (CNTK's layer does not do grouped convolutions:
    ``C.convolution`` does; ``Convolution2D``/``3D`` hand their ``groups`` to it,
    ``Convolution1D`` takes none)."""
    made = _layer(_TAKING_SHARING.get(cls, cls), op_name, cls, *_NATIVE_BASES.get(cls, ()),
                  numbers=_WEIGHTS, weights=weights)
    title = cls.__name__

    def make(*args, **kwargs):
        for keyword, taken in (("sharing", takes_sharing), ("groups", groups_keyword)):
            if keyword in kwargs and not taken:
                raise TypeError(f"{title}() got an unexpected keyword argument '{keyword}'")
        if takes_groups and int(kwargs.get("groups", 1)) <= 0:
            raise ValueError("Convolution: groups must be strictly positive, i.e. groups > 0.")
        if takes_groups and int(kwargs.get("groups", 1)) > 1:
            raise ValueError("Convolution: groups > 1, is not currently supported by "
                             "Convolution layer. For group convolution with groups > 1, use "
                             "CNTK's low-level convolution node (cntk.convolution).")
        kwargs = bound(title, made.__signature__, args, kwargs)
        sharing = kwargs.get("sharing", True)
        shape = kwargs.get("filter_shape", ())
        shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
        if isinstance(sharing, (list, tuple)) and len(sharing) not in (1, len(shape)):
            raise ValueError(f"sharing parameter ({tuple(sharing)}) must be a scalar or have "
                             f"same number of elements as the filter_shape parameter "
                             f"({shape})")
        return made(**kwargs)
    make.__name__ = make.__qualname__ = title
    make.__doc__ = cls.__doc__
    make.__signature__ = made.__signature__
    return make


Convolution = _convolution_layer(_L.Convolution, "Convolution", takes_groups=True)
Convolution1D = _convolution_layer(_L.Convolution1D, "Convolution", takes_sharing=False,
                                   groups_keyword=False)
Convolution2D = _convolution_layer(_L.Convolution2D, "Convolution", takes_sharing=False,
                                   takes_groups=True)
Convolution3D = _convolution_layer(_L.Convolution3D, "Convolution", takes_sharing=False,
                                   takes_groups=True)
ConvolutionTranspose = _convolution_layer(_L.ConvolutionTranspose, "ConvolutionTranspose",
                                          weights=RANKED)
ConvolutionTranspose1D = _layer(_L.ConvolutionTranspose1D, "ConvolutionTranspose",
                                _L.ConvolutionTranspose, numbers=_WEIGHTS, weights=RANKED)
ConvolutionTranspose2D = _layer(_L.ConvolutionTranspose2D, "ConvolutionTranspose",
                                _L.ConvolutionTranspose, numbers=_WEIGHTS, weights=RANKED)
ConvolutionTranspose3D = _layer(_L.ConvolutionTranspose3D, "ConvolutionTranspose",
                                _L.ConvolutionTranspose, numbers=_WEIGHTS, weights=RANKED)
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
BatchNormalization = _layer(_L.BatchNormalization, "BatchNormalization",
                            numbers=("init_scale",))
class _LayerNormalizationAsCntk(_L.LayerNormalization):
    __doc__ = _L.LayerNormalization.__doc__

    def deviation(self, x0, axes: list):
        """The native layer's ``std + epsilon``, showing the constant epsilon among its
        inputs, as CNTK 2.7's block holds it (layers.py's ``std += epsilon``: a Constant that
        ``Function.constants`` lists, unnamed, of shape ``()``)."""
        std = super().deviation(x0, axes)
        if self.epsilon:
            epsilon = scalar_constant(self.epsilon, np.dtype(std.dtype))
            show_constants(std, (epsilon,), last=True)     # (Plus(std, epsilon): its second)
        return std


_LayerNormalizationAsCntk.__name__ = _LayerNormalizationAsCntk.__qualname__ = \
    "LayerNormalization"
LayerNormalization = _layer(_LayerNormalizationAsCntk, "LayerNormalization",
                            numbers=("initial_scale", "initial_bias"))
Stabilizer = _layer(_L.Stabilizer, "Stabilizer")
Embedding = _layer(_L.Embedding, "Embedding", numbers=("init",))
Activation = _layer(_L.Activation, "Activation")


class _DropoutAsCntk(_L.Dropout):
    """Each application's dropout draws a stream of its own from the layer's seed, as CNTK
    2.7's layer (its Function cloned for each call, the clone's random state the one the
    Function shows) does, where :class:`stadyn.layers.Dropout` draws one stream through all
    its applications."""

    def apply(self, x):
        return F.dropout(x, self.rate, seed=self.seed.restarted().for_operand(x),
                         train_only=True)


def Dropout(dropout_rate=None, keep_prob=None, seed=SentinelValueForAutoSelectRandomSeed,
            name: str = ""):
    """CNTK's Dropout layer: :class:`stadyn.layers.Dropout` with CNTK's seed rules (the
    default ``auto_select`` takes the next of a fixed sequence of seeds, so a run repeats from
    one process to the next, as in CNTK 2.7) and streams (each application of the layer draws
    its masks from a stream of its own, from the seed's start, as CNTK 2.7's does).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(8)
        >>> d = C.layers.Dropout(0.5, seed=3)
        >>> first = d(x)
        >>> run = lambda f: f.forward({x: np.ones((2, 8), np.float32)},
        ...                           keep_for_backward=set(f.outputs))[1][f.output]
        >>> a, b = run(first), run(first)
        >>> bool((run(d(x)) == a).all()), bool((b == a).all())    # a new call starts again
        (True, False)
    """
    layer = _DropoutAsCntk(dropout_rate, keep_prob, seed=resolved_seed(seed))
    return LayerFunction(layer, "Dropout", name)



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
    _refuse_other_arities(flatten_steps(layers))
    refuse_typed_steps(flatten_steps(layers))
    return _sequential(layers, name)



def _refuse_other_arities(steps: list) -> None:
    """CNTK 2.7's TypeError where a step that is a CNTK Function (a ``@C.Function``, typed or
    not; a layer: ``LSTM(3)`` takes 3) takes another number of arguments than the values the
    steps before give it: one after a single value (CNTK composes ``identity >> f >> g``,
    calling each on the last), one per member of a tuple, one per output of a tuple step
    before.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> @C.Function
        ... def f(a, b):
        ...     return a * b
        >>> C.layers.Sequential([C.relu, f])
        Traceback (most recent call last):
        TypeError: CNTK Function expected 2 arguments, got 1
    """
    given = 1
    for step in steps:
        if given is None:       # (unknown until it is built: CNTK's check, at the call)
            return
        for member in (step if isinstance(step, tuple) else (step,)):
            wanted = _arguments_of(member)
            got = 1 if isinstance(step, tuple) else given
            if wanted is not None and wanted != got:
                raise TypeError(f"CNTK Function expected {wanted} arguments, got {got}")
        given = len(step) if isinstance(step, tuple) else _outputs_of(step)


def _arguments_of(step) -> "int | None":
    """How many arguments a step that is a CNTK Function or a layer takes (an ``LSTM``'s 3:
    ``dh``, ``dc``, ``x``; a ``GRU``'s 2); None for a Python function (called as it is)."""
    if isinstance(step, LayerFunction):
        return len(step.arguments)
    if getattr(type(step), "_cntk_function", False) or hasattr(type(step), "root_function"):
        return len(step.signature)
    return None


def _outputs_of(step) -> "int | None":
    """How many values a step gives the next: a layer's or a typed Function's outputs, one
    for an op or a Python function; None where it is not known before it is built."""
    if isinstance(step, LayerFunction):
        layer = step.layer              # (a recurrence's full state: its step's states)
        if getattr(layer, "return_full_state", False):
            return getattr(getattr(layer, "step", None), "n_states", None)
        return len(step.outputs)        # (known before it is applied: an LSTM's 2)
    if getattr(type(step), "_cntk_function", False):
        return None
    if hasattr(type(step), "root_function"):
        return len(step.outputs)
    return 1


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
    with _L.default_options(**{k: _option(k, v) for k, v in kwargs.items()}):
        yield


def _option(key: str, value):
    """A ``default_options`` value as Stadyn's layers keep it; an initial value (``init``,
    ``init_bias``, ...) that CNTK 2.7 refuses kept as given, for a layer made inside to refuse
    it as CNTK's does (``Dense``: random_initializer_with_rank's TypeError)."""
    return value if key.startswith("init") and uncalled(value) else _native(value)


@contextlib.contextmanager
def default_options_for(functions, **kwargs):
    """The 2017 betas' ``default_options_for(layer, ...)``: options for one kind of layer,
    each taken as :func:`default_options` takes it (an initializer not called, ``init=
    C.uniform``, kept for the layer to refuse as CNTK 2.7's ``default_options`` does)."""
    natives = [getattr(_L, getattr(f, "__name__", ""), f) for f in (
        functions if isinstance(functions, (list, tuple)) else [functions])]
    with _L.default_options_for(natives, **{k: _option(k, v) for k, v in kwargs.items()}):
        yield

"""Stadyn's BrainScript library: CNTK's core-library names mapped onto Stadyn's layers and ops.

:class:`StadynLibrary` is the engine side of the evaluator's :class:`~._library.Library`
protocol.  Layer constructors (``DenseLayer``, ``ConvolutionalLayer``, ...) return Stadyn layer
objects (:mod:`stadyn.layers`), so a BrainScript network and the same network written in Python
create the same parameters (names, shapes, initial values) and the same ops.  Node functions
(``Input``, ``Times``, ``CrossEntropyWithSoftmax``, ...) return :class:`~stadyn.graph.Variable`
nodes.  Every function keeps the parameter names, order and defaults of CNTK's ``CNTK.core.bs``
(see ``tests/fixtures/brainscript/library_facts.md``), so the evaluator reports a call CNTK
would reject with its location.

Shapes are CNTK's, column-major (``32:32:3`` is W:H:C); Stadyn's per-sample shapes are the same
dimensions reversed (:func:`~._library.cntk_shape`): an ``Input{32:32:3}`` is a Variable of shape
``(1, 3, 32, 32)`` whose batch axis the trainer resizes to each minibatch.

Example:
    >>> import stadyn as sd
    >>> from stadyn.brainscript import build_network
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     net = build_network('''{ x = Input{4:3} ; h = DenseLayer{8, activation = ReLU}(x)
    ...                          z = LinearLayer{2}(h) ; outputNodes = (z) }''', StadynLibrary())
    ...     net.nodes["x"].shape, net.output_nodes[0].shape, sorted(sd.get_parameters())
    ((1, 3, 4), (1, 2), ['dense/W', 'dense/b', 'dense_1/W', 'dense_1/b'])
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import cntk_semantics as cntk
from .. import functions as F
from .. import layers as L
from .._errors import ConfigError, ShapeError
from ..graph import Variable
from ..inspect import trace
from ..layers import CNTKInitializer, initial_value
from ..parametric import current_registry, get_parameter_or_create
from ._library import Library, cntk_filter_shape, cntk_shape
from ._loops import PendingState
from ._reduce_library import ReduceFunctions
from ._sequence_library import SequenceFunctions

__all__ = ["StadynLibrary", "cntk_initializer"]

# CNTK's node tags that put a node into one of the network's special lists.
_TAGS = ("feature", "label", "criterion", "evaluation", "output")


def _identity(x):
    return x


def cntk_initializer(init: str, scale: float = 1.0) -> Any:
    """A Stadyn initialiser for a CNTK ``init`` name, scaled by ``initValueScale``.

    CNTK's distributions (``LearnableParameter``'s random initialisation): ``glorotUniform``
    U(±sqrt(6/(fanIn+fanOut))), ``glorotNormal`` N(0, 2/(fanIn+fanOut)), ``heUniform``
    U(±sqrt(6/fanIn)), ``heNormal`` N(0, 2/fanIn), ``xavier`` U(±sqrt(3/fanIn)), ``gaussian``
    N(0, (0.2/sqrt(fanIn))²), ``uniform`` U(±1), ``uniformBS`` U(±0.05), ``normal`` N(0, 1),
    ``truncNormal``; ``zero`` is 0.  The range (or standard deviation) is multiplied by
    ``scale``.

    >>> cntk_initializer('glorotUniform')
    CNTKInitializer(uniform, scale=1.0, mode=avg)
    >>> cntk_initializer('zero')
    0.0
    """
    s = float(scale)
    kinds = {
        "glorotuniform": lambda: L.glorot_uniform(s),
        "glorotnormal": lambda: L.glorot_normal(s),
        "heuniform": lambda: L.he_uniform(s),
        "henormal": lambda: L.he_normal(s),
        "xavier": lambda: CNTKInitializer("uniform", s, "in", 1.0),
        "gaussian": lambda: CNTKInitializer("normal", 0.2 * s, "in", 1.0),
        "uniform": lambda: L.uniform(s),
        "uniformbs": lambda: L.uniform(0.05 * s),
        "normal": lambda: L.normal(s),
        "truncnormal": lambda: L.truncated_normal(s),
        "zero": lambda: 0.0,
    }
    make = kinds.get(str(init).lower())
    if make is None:
        raise ConfigError(f"unknown init '{init}'; use glorotUniform, glorotNormal, heUniform, "
                          "heNormal, xavier, gaussian, uniform, uniformBS, normal, truncNormal or "
                          "zero")
    return make()


def _bool(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ConfigError(f"{what} must be true or false, got {value!r}")


def _positive_ints(value: Any, what: str) -> int | tuple[int, ...]:
    items = value if isinstance(value, tuple) else (value,)
    for v in items:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"{what} must be a positive integer or an array of them, got "
                              f"{value!r}")
    return value


def _zero_pads(lower: Any, upper: Any, layer: str) -> None:
    for name, v in (("lowerPad", lower), ("upperPad", upper)):
        items = v if isinstance(v, tuple) else (v,)
        if any(x != 0 for x in items):
            raise ConfigError(f"{layer}: explicit {name} is not supported yet (use pad = true "
                              "for CNTK's automatic padding)")


def _spatial_pad(pad: Any, rank: int, layer: str) -> bool | tuple[bool, ...]:
    """CNTK's ``pad``: a boolean, or one per axis of the kernel (W:H[:C], column-major)."""
    if isinstance(pad, bool):
        return pad
    if isinstance(pad, tuple) and all(isinstance(p, bool) for p in pad) and len(pad) >= rank:
        spatial = tuple(reversed(pad[:rank]))  # (W, H) -> (H, W); a channel entry is dropped
        return spatial if len(set(spatial)) > 1 else spatial[0]
    raise ConfigError(f"{layer}: pad must be true, false or one boolean per filter axis, got "
                      f"{pad!r}")


class StadynLibrary(SequenceFunctions, ReduceFunctions, Library):
    """CNTK's BrainScript core library on Stadyn's layers and ops.

    ``dropout_rate`` is the rate ``Dropout`` nodes are built with (the SGD block's
    ``dropoutRate`` of the first epoch); :meth:`set_dropout_rate` changes it later for every
    ``Dropout`` node built by this library, as CNTK's trainer does at the start of each epoch.

    After a network is built, the library knows its ``inputs`` (the ``Input`` nodes, in order),
    each node's CNTK operation (:meth:`operation_of`) and the nodes given a ``tag``
    (:attr:`tagged`).
    """

    def __init__(self, dropout_rate: float = 0.0, sequences: bool | None = None) -> None:
        self.dropout_rate = float(dropout_rate)
        self.inputs: list[Variable] = []
        self.tagged: dict[str, list[Variable]] = {t: [] for t in _TAGS}
        self._dropout_nodes: list[Any] = []
        self._batch_norms: list[tuple[Any, bool]] = []     # (layer, disableRegularization)
        self._operations: dict[int, tuple[Variable, str]] = {}
        self._batched = cntk.BatchAxes()
        self._constants: dict[int, tuple[Variable, float]] = {}
        functions: dict[str, Callable[..., Any]] = {
            # layers
            "LinearLayer": self.LinearLayer, "DenseLayer": self.DenseLayer,
            "ConvolutionalLayer": self.ConvolutionalLayer,
            "MaxPoolingLayer": self.MaxPoolingLayer,
            "AveragePoolingLayer": self.AveragePoolingLayer,
            "BatchNormalizationLayer": self.BatchNormalizationLayer,
            # inputs and parameters
            "Input": self.Input, "Parameter": self.Parameter,
            "ParameterTensor": self.ParameterTensor, "Constant": self.Constant,
            # nodes
            "Times": self.Times, "Plus": self.Plus, "Minus": self.Minus,
            "ElementTimes": self.ElementTimes, "Negate": self.Negate,
            "Reciprocal": self.Reciprocal, "Reshape": self.Reshape, "Pass": self.Pass,
            "Trace": self.Trace,
            "ReLU": self.ReLU, "Sigmoid": self.Sigmoid, "Tanh": self.Tanh,
            "Softmax": self.Softmax, "LogSoftmax": self.LogSoftmax, "Exp": self.Exp,
            "Log": self.Log, "Abs": self.Abs, "Sqrt": self.Sqrt, "Dropout": self.Dropout,
            "CrossEntropyWithSoftmax": self.CrossEntropyWithSoftmax,
            "ClassificationError": self.ClassificationError,
            "ErrorPrediction": self.ClassificationError,
        }
        functions.update(self._init_sequences(sequences))
        functions.update(self._init_reductions())
        super().__init__(functions)

    # ---- bookkeeping ---------------------------------------------------------------------
    def is_node(self, value: Any) -> bool:
        return isinstance(value, (Variable, _PendingParameter, PendingState))

    def type_name(self, value: Any) -> str:
        if isinstance(value, Variable):
            return f"node of shape {value.shape}"
        return super().type_name(value)

    def _node(self, v: Variable, operation: str, tag: str = "") -> Variable:
        self._operations[id(v)] = (v, operation)
        if tag:
            if tag not in self.tagged:
                raise ConfigError(f"unknown tag '{tag}' (use {', '.join(_TAGS)})")
            self.tagged[tag].append(v)
        return v

    def _initializer(self, init: str, scale: float) -> Any:
        return cntk_initializer(init, scale)

    def operation_of(self, node: Any) -> str | None:
        """The CNTK operation that made ``node`` (``CrossEntropyWithSoftmax``, ...), if known."""
        entry = self._operations.get(id(node))
        return entry[1] if entry is not None and entry[0] is node else None

    def has_batch_axis(self, v: Variable) -> bool:
        """Whether ``v`` depends on an ``Input`` (its first axis is then the batch axis)."""
        return self._batched(v)

    def _value(self, v: Any, what: str) -> Variable:
        if isinstance(v, _PendingParameter):
            raise ConfigError(f"{what}: the parameter's inferred dimension is not known yet "
                              "(use it in a Times first, or give its input dimension)")
        if isinstance(v, PendingState):
            raise ConfigError(f"{what}: the dimensions of the delay at {v.where} are not known "
                              "yet (give them as its first argument: PastValue (dims, x))")
        if not isinstance(v, Variable):
            raise ConfigError(f"{what} needs a node, got {type(v).__name__} {v!r}")
        return v

    def _scalar(self, v: Any) -> float | None:
        """A Python number, or the value of a one-element ``Constant``."""
        if isinstance(v, numbers.Real) and not isinstance(v, bool):
            return float(v)
        entry = self._constants.get(id(v))
        if entry is not None and entry[0] is v:
            return entry[1]
        return None

    # ---- operator hooks ------------------------------------------------------------------
    # The evaluator locates a StadynError raised by a hook at the operator (a ConfigError it
    # passes on as it is), so the hooks raise their complaints as ShapeErrors.
    def times(self, a: Any, b: Any) -> Variable:
        return _hook(self.Times, a, b)

    def element_times(self, a: Any, b: Any) -> Variable:
        return _hook(self.ElementTimes, a, b)

    def reciprocal(self, x: Any) -> Variable:
        return _hook(self.Reciprocal, x)

    def plus(self, a: Any, b: Any) -> Variable:
        return _hook(self.Plus, a, b)

    def minus(self, a: Any, b: Any) -> Variable:
        return _hook(self.Minus, a, b)

    def negate(self, x: Any) -> Variable:
        return _hook(self.Negate, x)

    # ---- dropout rate --------------------------------------------------------------------
    def set_dropout_rate(self, rate: float) -> int:
        """Give every ``Dropout`` node built so far the rate ``rate``; returns how many there are.

        The rate is an attribute of each dropout op, so cached static plans are invalidated.
        """
        rate = float(rate)
        if not 0.0 <= rate < 1.0:
            raise ConfigError(f"dropoutRate must lie in [0, 1), got {rate}")
        self.dropout_rate = rate
        for node in self._dropout_nodes:
            if node.attrs["p"] != rate:
                node.set_attribute("p", rate)
        return len(self._dropout_nodes)

    # ---- layers --------------------------------------------------------------------------
    def LinearLayer(self, outDim, bias=True, init="glorotUniform", initValueScale=1,
                    inputRank=None, mapRank=None, initBias=0):
        """``W x + b``, ``W`` of shape ``outDim : Inferred`` (a :class:`stadyn.layers.Dense`)."""
        return self.DenseLayer(outDim, bias=bias, activation=None, init=init,
                               initValueScale=initValueScale, inputRank=inputRank,
                               mapRank=mapRank, initBias=initBias)

    def DenseLayer(self, outDim, bias=True, activation=None, init="glorotUniform",
                   initValueScale=1, inputRank=None, mapRank=None, initBias=0):
        """``activation(W x + b)`` (a :class:`stadyn.layers.Dense`)."""
        shape = cntk_shape(_positive_ints(outDim, "DenseLayer: outDim"))
        if activation is not None and not callable(activation):
            raise ConfigError(f"DenseLayer: activation must be a function, got {activation!r}")
        return L.Dense(shape if len(shape) > 1 else shape[0], activation=activation or _identity,
                       init=cntk_initializer(init, initValueScale),
                       bias=_bool(bias, "DenseLayer: bias"), init_bias=float(initBias),
                       input_rank=inputRank, map_rank=mapRank)

    def ConvolutionalLayer(self, numOutputChannels, filterShape, bias=True, activation=None,
                           init="glorotUniform", initValueScale=1, initBias=0, stride=1,
                           pad=False, lowerPad=0, upperPad=0, dilation=1,
                           maxTempMemSizeInSamples=0):
        """A :class:`stadyn.layers.Convolution`; ``filterShape``, ``stride`` and ``dilation`` are
        column-major (``(3:5)`` is 3 wide, 5 high), ``pad = true`` is CNTK's auto-padding."""
        _positive_ints(numOutputChannels, "ConvolutionalLayer: numOutputChannels")
        _positive_ints(filterShape, "ConvolutionalLayer: filterShape")
        _positive_ints(stride, "ConvolutionalLayer: stride")
        _positive_ints(dilation, "ConvolutionalLayer: dilation")
        _zero_pads(lowerPad, upperPad, "ConvolutionalLayer")
        if activation is not None and not callable(activation):
            raise ConfigError(f"ConvolutionalLayer: activation must be a function, got "
                              f"{activation!r}")
        kernel = cntk_filter_shape(filterShape)
        rank = len(kernel) if isinstance(kernel, tuple) else 1
        return L.Convolution(kernel, int(numOutputChannels), activation=activation or _identity,
                             init=cntk_initializer(init, initValueScale),
                             pad=_spatial_pad(pad, rank, "ConvolutionalLayer"),
                             strides=_strides(stride, rank),
                             bias=_bool(bias, "ConvolutionalLayer: bias"),
                             init_bias=float(initBias), dilation=_strides(dilation, rank))

    def MaxPoolingLayer(self, filterShape, stride=1, pad=False, lowerPad=0, upperPad=0,
                        ceilOutDim=False):
        """A :class:`stadyn.layers.MaxPooling` (``pad = false`` by default, as in CNTK)."""
        return self._pooling(L.MaxPooling, "MaxPoolingLayer", filterShape, stride, pad, lowerPad,
                             upperPad, ceilOutDim)

    def AveragePoolingLayer(self, filterShape, stride=1, pad=False, lowerPad=0, upperPad=0,
                            ceilOutDim=False, includePad=False):
        """A :class:`stadyn.layers.AveragePooling` (padding not counted: ``includePad = false``)."""
        if _bool(includePad, "AveragePoolingLayer: includePad"):
            raise ConfigError("AveragePoolingLayer: includePad = true is not supported yet")
        return self._pooling(L.AveragePooling, "AveragePoolingLayer", filterShape, stride, pad,
                             lowerPad, upperPad, ceilOutDim)

    def _pooling(self, cls, name, filterShape, stride, pad, lowerPad, upperPad, ceilOutDim):
        _positive_ints(filterShape, f"{name}: filterShape")
        _positive_ints(stride, f"{name}: stride")
        _zero_pads(lowerPad, upperPad, name)
        if _bool(ceilOutDim, f"{name}: ceilOutDim"):
            raise ConfigError(f"{name}: ceilOutDim = true is not supported yet")
        window = cntk_filter_shape(filterShape)
        rank = len(window) if isinstance(window, tuple) else 1
        padding = _spatial_pad(pad, rank, name)
        if isinstance(padding, tuple):
            raise ConfigError(f"{name}: padding some axes and not others is not supported yet")
        return cls(window, _strides(stride, rank), pad=padding)

    def BatchNormalizationLayer(self, spatialRank=0, initialScale=1,
                                normalizationTimeConstant=5000, blendTimeConstant=0,
                                epsilon=0.00001, useCntkEngine=False, disableRegularization=False):
        """A :class:`stadyn.layers.BatchNormalization`: per channel when ``spatialRank > 0``
        (images), per element otherwise."""
        if blendTimeConstant not in (0, 0.0):
            raise ConfigError("BatchNormalizationLayer: blendTimeConstant is not supported yet")
        layer = L.BatchNormalization(map_rank=1 if int(spatialRank) > 0 else None,
                                     init_scale=float(initialScale),
                                     normalization_time_constant=float(normalizationTimeConstant),
                                     epsilon=float(epsilon))
        self._batch_norms.append((layer, bool(disableRegularization)))
        return layer

    def unregularized(self, every_batch_norm: bool) -> set[int]:
        """The ids of the scale and bias parameters CNTK exempted from L1/L2 regularisation:
        those of each ``BatchNormalizationLayer`` built with ``disableRegularization = true``,
        or of all of them (the SGD block's ``disableRegInBatchNormalization = true``)."""
        return {id(p) for layer, disabled in self._batch_norms if disabled or every_batch_norm
                for p in getattr(layer, "parameters", ()) if p.need_grad}

    # ---- inputs, parameters, constants ---------------------------------------------------
    def Input(self, dims, dynamicAxis="", sparse=False, tag="feature"):
        """A graph input of per-sample shape ``dims`` (column-major), with a batch axis of 1 that
        the trainer resizes to each minibatch."""
        shape = cntk_shape(_positive_ints(dims, "Input: dims"))
        v = self._make_input(shape, dynamicAxis)
        self.inputs.append(v)
        self._batched.add(v)
        return self._node(v, "InputValue", tag or "")

    def Parameter(self, outputDim, inputDim, learningRateMultiplier=1.0, init="",
                  initValueScale=1, value=0, initValue="", initFromFilePath="",
                  initFromLiteral="", initOnCPUOnly=True, randomSeed=-1, tag=""):
        """A learnable ``[outputDim x inputDim]`` matrix (Stadyn shape ``(inputDim, outputDim)``);
        ``inputDim = 0`` is inferred by the first ``Times`` that uses it."""
        return self._parameter((outputDim, inputDim), learningRateMultiplier, init,
                               initValueScale, value, initValue, initFromFilePath,
                               initFromLiteral, tag, "Parameter")

    def ParameterTensor(self, dims, learningRateMultiplier=1.0, init="", initValueScale=1,
                        value=0, initValue="", initFromFilePath="", initFromLiteral="",
                        initOnCPUOnly=True, randomSeed=-1, tag=""):
        """A learnable tensor of shape ``dims`` (column-major)."""
        dims = dims if isinstance(dims, tuple) else (dims,)
        return self._parameter(dims, learningRateMultiplier, init, initValueScale, value,
                               initValue, initFromFilePath, initFromLiteral, tag,
                               "ParameterTensor")

    def _parameter(self, cntk_dims, lr_multiplier, init, scale, value, init_value, from_file,
                   from_literal, tag, what):
        if from_file or from_literal:
            raise ConfigError(f"{what}: initFromFilePath and initFromLiteral are not supported "
                              "yet")
        for d in cntk_dims:
            if isinstance(d, bool) or not isinstance(d, int) or d < 0:
                raise ConfigError(f"{what}: dimensions must be non-negative integers, got "
                                  f"{cntk_dims!r}")
        if isinstance(init_value, numbers.Real) and not isinstance(init_value, bool):
            initializer: Any = float(init_value)
        elif init_value not in ("", None):
            raise ConfigError(f"{what}: initValue must be a number")
        elif str(init).lower() == "fixedvalue":
            initializer = float(value)
        else:
            initializer = cntk_initializer(init or "uniform", scale)
        need_grad = float(lr_multiplier) != 0.0
        shape = cntk_shape(cntk_dims)
        if 0 in shape:
            return _PendingParameter(self, shape, initializer, need_grad, tag)
        return self._make_parameter(shape, initializer, need_grad, tag)

    def _make_parameter(self, shape, initializer, need_grad, tag):
        registry_name = _claim("parameter") + "/W"
        fan_out = shape[-1] if shape else 1
        fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        value = initial_value(initializer, shape, fan_in, fan_out)
        v = get_parameter_or_create(registry_name, shape, value, need_grad)
        return self._node(v, "LearnableParameter", tag or "")

    def Constant(self, val, rows=1, cols=1, tag=""):
        """A non-learnable ``[rows x cols]`` matrix filled with ``val``."""
        if isinstance(val, bool) or not isinstance(val, numbers.Real):
            raise ConfigError(f"Constant: val must be a number, got {val!r}")
        shape = cntk_shape((_positive_ints(rows, "Constant: rows"),
                            _positive_ints(cols, "Constant: cols")))
        v = Variable.from_numpy_array(np.full(shape, float(val), dtype=np.float32))
        if rows == 1 and cols == 1:
            self._constants[id(v)] = (v, float(val))
        return self._node(v, "LearnableParameter", tag or "")

    # ---- nodes ---------------------------------------------------------------------------
    def Times(self, x, y, outputRank=1, inferInputRankToMap=-1, tag=""):
        """Matrix product: ``Times(W, x)`` with ``W`` ``[out x in]`` and ``x`` ``[in x *]``
        gives ``[out x *]`` (in Stadyn: ``x (N, in) @ W (in, out)``)."""
        rank = int(outputRank)
        if isinstance(y, PendingState) and isinstance(x, Variable):
            in_rank = x.ndim - rank
            y = self._loops.materialize(y, tuple(x.shape[:in_rank]))
        if isinstance(x, _PendingParameter):
            x = x.materialize(self._value(y, "Times"), rank)
        a, b = self._value(x, "Times"), self._value(y, "Times")
        if self.has_batch_axis(a):
            raise ConfigError("Times: the data must be the right operand (Times(W, x), W * x)")
        if not 1 <= rank < a.ndim + (0 if a.ndim > 1 else 1):
            raise ConfigError(f"Times: outputRank {rank} does not fit a left operand of shape "
                              f"{tuple(reversed(a.shape))} (column-major)")
        try:
            y = cntk.times(b, a, rank if a.ndim > 1 else 0, self.has_batch_axis(b))
        except ShapeError as err:
            raise ConfigError(f"Times: {str(err).partition(': ')[2]}") from None
        return self._node(y, "Times", tag)

    def Plus(self, _, y, tag=""):
        """Element-wise sum (with broadcasting)."""
        return self._node(self._binary(_, y, "Plus"), "Plus", tag)

    def Minus(self, _, y, tag=""):
        """Element-wise difference (with broadcasting)."""
        return self._node(self._binary(_, y, "Minus"), "Minus", tag)

    def ElementTimes(self, _, y, tag=""):
        """Element-wise product (with broadcasting); a number or a 1-element ``Constant`` scales."""
        return self._node(self._binary(_, y, "ElementTimes"), "ElementTimes", tag)

    def _binary(self, a: Any, b: Any, op: str) -> Variable:
        if isinstance(a, PendingState) or isinstance(b, PendingState):
            a = self._materialized(a, b, isinstance(b, Variable) and self.has_batch_axis(b))
            b = self._materialized(b, a, isinstance(a, Variable) and self.has_batch_axis(a))
            values = [a, b]
            self._loops.prepare(values)
            a, b = values
        sa, sb = self._scalar(a), self._scalar(b)
        if op == "ElementTimes":
            if sa is not None and sb is None:
                return F.mul_scalar(self._value(b, op), sa)
            if sb is not None and sa is None:
                return F.mul_scalar(self._value(a, op), sb)
            return F.mul2(self._value(a, op), self._value(b, op))
        if op == "Plus":
            if sa is not None and isinstance(a, numbers.Real):
                return F.add_scalar(self._value(b, op), sa)
            if sb is not None and isinstance(b, numbers.Real):
                return F.add_scalar(self._value(a, op), sb)
            return F.add2(self._value(a, op), self._value(b, op))
        if sb is not None and isinstance(b, numbers.Real):
            return F.add_scalar(self._value(a, op), -sb)
        if sa is not None and isinstance(a, numbers.Real):
            return F.r_sub_scalar(self._value(b, op), sa)
        return F.sub2(self._value(a, op), self._value(b, op))

    def Negate(self, _, tag=""):
        return self._node(F.mul_scalar(self._value(_, "Negate"), -1.0), "Negate", tag)

    def Reciprocal(self, _, tag=""):
        return self._node(F.r_div_scalar(self._value(_, "Reciprocal"), 1.0), "Reciprocal", tag)

    def Reshape(self, _, shape, beginAxis=0, endAxis=0, tag=""):
        """The sample reshaped to ``shape`` (column-major); the batch axis is kept."""
        x = self._value(_, "Reshape")
        if beginAxis != 0 or endAxis != 0:
            raise ConfigError("Reshape: beginAxis/endAxis are not supported yet")
        new = cntk_shape(_positive_ints(shape, "Reshape: shape"))
        batched = self.has_batch_axis(x)
        old = x.shape[1:] if batched else x.shape
        if int(np.prod(old)) != int(np.prod(new)):
            raise ConfigError(f"Reshape: cannot reshape a sample of shape "
                              f"{tuple(reversed(old))} to {tuple(reversed(new))} (column-major)")
        return self._node(cntk.reshape_sample(x, new, batched), "Reshape", tag)

    def Pass(self, _, tag=""):
        return self._node(F.identity(self._value(_, "Pass")), "Pass", tag)

    def Trace(self, _, say="", logFrequency=100, logFirst=10, logGradientToo=False,
              onlyUpToRow=100000000, onlyUpToT=100000000, format=(), tag=""):
        """The node unchanged, with :func:`stadyn.trace`'s probe on it: a line of statistics
        (not CNTK's value dump: ``onlyUpToRow``, ``onlyUpToT`` and ``format`` are accepted and
        not used) on the first ``logFirst`` minibatches and every ``logFrequency``-th, its
        gradient too with ``logGradientToo``; labelled ``say`` or the config's line."""
        return self._node(trace(self._value(_, "Trace"), every=int(logFrequency),
                                say=str(say) or None, first=int(logFirst),
                                gradient=bool(logGradientToo)), "Trace", tag)

    def ReLU(self, _, tag=""):
        return self._node(F.relu(self._value(_, "ReLU")), "RectifiedLinear", tag)

    def Sigmoid(self, _, tag=""):
        return self._node(F.sigmoid(self._value(_, "Sigmoid")), "Sigmoid", tag)

    def Tanh(self, _, tag=""):
        return self._node(F.tanh(self._value(_, "Tanh")), "Tanh", tag)

    def Exp(self, _, tag=""):
        return self._node(F.exp(self._value(_, "Exp")), "Exp", tag)

    def Log(self, _, tag=""):
        return self._node(F.log(self._value(_, "Log")), "Log", tag)

    def Abs(self, _, tag=""):
        return self._node(F.abs(self._value(_, "Abs")), "Abs", tag)

    def Sqrt(self, _, tag=""):
        return self._node(F.sqrt(self._value(_, "Sqrt")), "Sqrt", tag)

    def Softmax(self, _, tag=""):
        """Softmax over all elements of each sample (CNTK's column)."""
        return self._node(self._over_sample(F.softmax, self._value(_, "Softmax")), "Softmax", tag)

    def LogSoftmax(self, _, tag=""):
        return self._node(self._over_sample(F.log_softmax, self._value(_, "LogSoftmax")),
                          "LogSoftmax", tag)

    def _over_sample(self, fn, x: Variable) -> Variable:
        return cntk.over_sample(fn, x, self.has_batch_axis(x))

    def Dropout(self, _, tag=""):
        """Dropout with the SGD block's ``dropoutRate`` while training; the identity otherwise."""
        y = F.dropout(self._value(_, "Dropout"), p=self.dropout_rate, train_only=True)
        self._dropout_nodes.append(y.parent)
        return self._node(y, "Dropout", tag)

    def CrossEntropyWithSoftmax(self, labelSequence, outProbVectorSequence, axis=0, tag=""):
        """``-sum(labels * log softmax(z))`` per sample (the trainer sums over the minibatch)."""
        labels = self._value(labelSequence, "CrossEntropyWithSoftmax")
        z = self._value(outProbVectorSequence, "CrossEntropyWithSoftmax")
        return self._node(F.cross_entropy_with_softmax(z, labels, axis=_axis(axis, z)),
                          "CrossEntropyWithSoftmax", tag)

    def ClassificationError(self, labelSequence, outVectorSequence, topN=1, axis=0, tag=""):
        """1 per sample whose label is not among the ``topN`` highest outputs, else 0."""
        labels = self._value(labelSequence, "ClassificationError")
        z = self._value(outVectorSequence, "ClassificationError")
        if isinstance(topN, bool) or not isinstance(topN, int) or topN < 1:
            raise ConfigError(f"ClassificationError: topN must be a positive integer, got {topN!r}")
        return self._node(F.classification_error(z, labels, axis=_axis(axis, z), topN=topN),
                          "ClassificationError", tag)


def _hook(fn: Callable[..., Variable], *args: Any) -> Variable:
    try:
        return fn(*args)
    except ConfigError as err:
        if err.line is not None:
            raise
        raise ShapeError(err.reason) from None


def _axis(axis: Any, z: Variable) -> int:
    """CNTK's static axis ``axis`` (0 = the first, column-major) as a Stadyn axis."""
    if isinstance(axis, bool) or not isinstance(axis, int) or not 0 <= axis < z.ndim - 1:
        raise ConfigError(f"axis must be a static axis 0..{z.ndim - 2}, got {axis!r}")
    return cntk.static_axis(axis, z.ndim, batched=True, column_major=True)


def _strides(value: Any, rank: int) -> int | tuple[int, ...]:
    mapped = cntk_filter_shape(value)
    if isinstance(mapped, tuple) and len(mapped) > rank:
        mapped = mapped[len(mapped) - rank:]  # a trailing (column-major) channel stride is dropped
    return mapped


def _claim(base: str) -> str:
    return current_registry().claim(base)


class _PendingParameter:
    """A ``Parameter`` whose input dimension (0, CNTK's ``Inferred``) the first ``Times`` sets."""

    def __init__(self, library: StadynLibrary, shape: tuple[int, ...], initializer: Any,
                 need_grad: bool, tag: str):
        self.library, self.shape, self.initializer = library, shape, initializer
        self.need_grad, self.tag = need_grad, tag
        self.variable: Variable | None = None

    def materialize(self, data: Variable, output_rank: int) -> Variable:
        if self.variable is not None:
            return self.variable
        lib = self.library
        batched = lib.has_batch_axis(data)
        sample = data.shape[1:] if batched else data.shape
        out = self.shape[len(self.shape) - output_rank:]
        if 0 in out:
            raise ConfigError("Parameter: only the input dimension can be inferred (0)")
        in_rank = len(self.shape) - output_rank
        inferred = tuple(sample[len(sample) - in_rank:]) if in_rank > 1 else \
            (int(np.prod(sample)),)
        known = self.shape[:in_rank]
        shape = tuple(k or i for k, i in zip(known, inferred)) + tuple(out)
        self.variable = lib._make_parameter(shape, self.initializer, self.need_grad, self.tag)
        return self.variable

    def __repr__(self) -> str:
        return f"Parameter(shape {self.shape}, input dimension inferred later)"

"""CNTK's layer functions for :class:`~._stadyn_library.StadynLibrary` (a mixin), and the CNTK
``init`` names as Stadyn initialisers.

``LinearLayer``, ``DenseLayer``, ``ConvolutionalLayer``, ``ConvolutionTransposeLayer``,
``MaxPoolingLayer``, ``AveragePoolingLayer`` and ``BatchNormalizationLayer`` return Stadyn layer
objects (:mod:`stadyn.layers`), so a BrainScript network and the same network written in Python
create the same parameters (shapes, initial values; BrainScript names them after their nodes,
as cntk.exe) and the same ops.  Filter shapes,
strides and pads are CNTK's, column-major (``(3:5)`` is 3 wide, 5 high).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import layers as L
from .._errors import ConfigError
from .._random import initializer_seed
from ..graph import Variable
from ..layers import CNTKInitializer
from ._library import cntk_filter_shape, cntk_shape
from ._ndl_functions import _bilinear
from ._sequence_library import NONE

__all__ = ["LayerFunctions", "cntk_initializer", "cntk_fans"]

def _identity(x):
    return x


def cntk_initializer(init: str, scale: float = 1.0) -> Any:
    """A Stadyn initialiser for a CNTK ``init`` name, scaled by ``initValueScale``.

    CNTK's distributions (``LearnableParameter``'s random initialisation): ``glorotUniform``
    U(±sqrt(6/(fanIn+fanOut))), ``glorotNormal`` N(0, 2/(fanIn+fanOut)), ``heUniform``
    U(±sqrt(6/fanIn)), ``heNormal`` N(0, 2/fanIn), ``xavier`` U(±sqrt(3/fanIn)), ``gaussian``
    N(0, (0.2/sqrt(fanIn))²), ``uniform`` U(±0.05) (BrainScript's legacy meaning, CNTK's
    ``UniformBSInitializerTypeName``), ``uniform1`` U(±1), ``normal`` N(0, 1), ``truncNormal``;
    ``zero`` is 0.  The range (or standard deviation) is multiplied by ``scale``.

    As in cntk.exe, the range is the distribution's own one rounded to float32, times the
    scale in float32 (so ``uniform`` with ``initValueScale = 0.1`` is U(±0.05f * 0.1f)).

    >>> cntk_initializer('glorotUniform')
    CNTKInitializer(uniform, scale=1.0, mode=avg)
    >>> cntk_initializer('zero')
    0.0
    """
    s = float(scale)
    # (kind, mode, variance gain); built directly, not through stadyn.layers' factories, which
    # refuse a scale <= 0 as the Python API's CreateInitializer does: cntk.exe multiplies the
    # range by initValueScale (LearnableParameter::InitRandom,
    # Source/ComputationNetworkLib/InputAndParamNodes.cpp:273-290) and refuses it only when it
    # draws, a normal's sigma <= 0 in SetGaussianRandomValue's words (CPUMatrixImpl.h:1082,
    # 1103), a uniform range <= 0 never returning (CNTKInitializer refuses it then)
    kinds = {
        "glorotuniform": ("uniform", "avg", 1.0),
        "glorotnormal": ("normal", "avg", 1.0),
        "heuniform": ("uniform", "in", 2.0),
        "henormal": ("normal", "in", 2.0),
        "xavier": ("uniform", "in", 1.0),
        # N(0, 0.2/sqrt(fanIn)): a variance of 0.04 / fanIn
        "gaussian": ("normal", "in", 0.04),
        # U(±0.05f): the variance gain whose uniform range is 0.05f (sqrt(3 * gain))
        "uniform": ("uniform", "none", _UNIFORM_BS_GAIN),
        "uniform1": ("uniform", "none", 1.0 / 3.0),
        "normal": ("normal", "none", 1.0),
        "truncnormal": ("truncated", "none", 1.0),
    }
    if str(init).lower() == "zero":
        return 0.0
    kind = kinds.get(str(init).lower())
    if kind is None:
        raise ConfigError(f"unknown init '{init}'; use glorotUniform, glorotNormal, heUniform, "
                          "heNormal, xavier, gaussian, uniform, uniform1, normal, truncNormal or "
                          "zero")
    return CNTKInitializer(kind[0], s, kind[1], kind[2])


# BrainScript's 'uniform' (cntk.exe's UniformBSInitializerTypeName): U(±0.05f) before the scale
_UNIFORM_BS_GAIN = float(np.float32(0.05)) ** 2 / 3


def cntk_fans(dims: tuple[int, ...], filter_rank: int = 0, output_rank: int = 1
              ) -> tuple[int, int]:
    """CNTK's fan-in and fan-out of a parameter of (column-major) ``dims`` for its random
    initialisation (LearnableParameter's ``initFilterRank``, ``initOutputRank``; a negative
    output rank counts from the right, as a convolution kernel's).

    >>> cntk_fans((5, 5, 1, 1)), cntk_fans((3, 3, 16, 32), 2, -1)
    ((5, 5), (144, 288))
    """
    if filter_rank + abs(output_rank) > len(dims):
        raise ConfigError(f"initFilterRank {filter_rank} and initOutputRank {output_rank} "
                          f"exceed the rank of {dims}")
    filter_size = math.prod(dims[:filter_rank])
    begin = filter_rank + max(output_rank, 0)
    end = len(dims) if output_rank >= 0 else len(dims) + output_rank
    fan_in = filter_size * math.prod(dims[begin:end])
    return fan_in, math.prod(dims) * filter_size // fan_in


class _FixedFans(CNTKInitializer):
    """A CNTK initialiser that draws with the fans CNTK computes for the parameter, whatever
    the layer that makes it passes."""

    def __init__(self, init: CNTKInitializer, fan_in: int, fan_out: int) -> None:
        super().__init__(init.kind, init.scale, init.mode, init.gain, init.seed,
                         init.output_rank, init.filter_rank)
        self.fans = (fan_in, fan_out)

    def with_seed(self, seed: int) -> CNTKInitializer:
        return _FixedFans(super().with_seed(seed), *self.fans)

    def __call__(self, shape, fan_in: int, fan_out: int, dtype=np.float32):
        return super().__call__(shape, *self.fans, dtype)


_UNCLAIMED = object()    # the seed of a _SeedOnApply not taken yet


class _SeedOnApply(CNTKInitializer):
    """A layer's random initialiser that takes its seed, the next of cntk.exe's count, when
    :meth:`claim` is called: when the evaluator applies the layer (``before_apply``), before
    the layer's input is evaluated.  cntk.exe's layer records (CNTK.core.bs) make their weight
    when ``apply`` first names it (``Times (W, x)``: ``W`` before ``x``), so in ``Sequential (A
    : B)`` the weight of ``B`` takes the earlier seed.  A layer applied only from Python takes
    it when its weight is drawn."""

    def __init__(self, init: CNTKInitializer) -> None:
        super().__init__(init.kind, init.scale, init.mode, init.gain,
                         _UNCLAIMED,  # type: ignore[arg-type]
                         init.output_rank, init.filter_rank)
        self.inner = init

    def claim(self) -> None:
        if self.seed is _UNCLAIMED:
            self.seed = initializer_seed()

    def with_seed(self, seed: int) -> CNTKInitializer:
        return self.inner.with_seed(seed)

    def __call__(self, shape, fan_in: int, fan_out: int, dtype=np.float32):
        self.claim()
        return self.inner.with_seed(self.seed)(shape, fan_in, fan_out,  # type: ignore[arg-type]
                                               dtype)


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


def _strides(value: Any, rank: int) -> int | tuple[int, ...]:
    mapped = cntk_filter_shape(value)
    if isinstance(mapped, tuple) and len(mapped) > rank:
        mapped = mapped[len(mapped) - rank:]  # a trailing (column-major) channel stride is dropped
    return mapped


class LayerFunctions:
    """The layer constructors of CNTK's core library; the library keeps the batch
    normalisations it built (:meth:`unregularized`)."""

    def _init_layers(self) -> dict[str, Any]:
        self._batch_norms: list[tuple[Any, bool]] = []     # (layer, disableRegularization)
        self._unclaimed: dict[int, tuple[Any, _SeedOnApply]] = {}   # id(layer) -> its init
        # (layer, cntk.exe's path of its record, CNTK.core.bs's member names: _named)
        self.named_layers: list[tuple[Any, str, dict[str, str]]] = []
        return {"LinearLayer": self.LinearLayer, "DenseLayer": self.DenseLayer,
                "ConvolutionalLayer": self.ConvolutionalLayer,
                "ConvolutionTransposeLayer": self.ConvolutionTransposeLayer,
                "BilinearUpsamplingLayer": self.BilinearUpsamplingLayer,
                "MaxPoolingLayer": self.MaxPoolingLayer,
                "AveragePoolingLayer": self.AveragePoolingLayer,
                "MaxUnpoolingLayer": self.MaxUnpoolingLayer,
                "BatchNormalizationLayer": self.BatchNormalizationLayer}

    # ---- seeds, in cntk.exe's order -----------------------------------------------------------
    def _seed_on_apply(self, init: Any) -> Any:
        """``init`` as an initialiser whose seed :meth:`before_apply` takes (a random one
        without a seed; anything else as it is); give it to :meth:`_claims_on_apply` with the
        layer made from it."""
        if isinstance(init, CNTKInitializer) and init.seed is None:
            return _SeedOnApply(init)
        return init

    def _claims_on_apply(self, layer: Any, init: Any) -> Any:
        """``layer``, made with ``init`` (:meth:`_seed_on_apply`), takes its seed when the
        evaluator first applies it."""
        if isinstance(init, _SeedOnApply):
            self._unclaimed[id(layer)] = (layer, init)
        return layer

    def _named(self, layer: Any, inner: str = "", members: dict[str, str] | None = None) -> Any:
        """``layer``, whose parameters take cntk.exe's node names (:meth:`name_parameters`):
        the expression path the layer is made at, then ``inner`` (the path of the record
        holding them in CNTK.core.bs's definition: ``arrayOfFunctions[0]`` for a
        ``DenseLayer``, which is ``Sequential (LinearLayer{...} : activation)``), then their
        member names there (``W``, ``b``, ``E``), as ``model.arrayOfFunctions[1].W``;
        ``members`` maps the end of a Stadyn parameter name to CNTK.core.bs's member where
        they differ (``gamma``: ``scale``; ``dh_stabilizer/alpha``: ``Sdh.param``)."""
        if self.path:
            self.named_layers.append((layer, f"{self.path}.{inner}" if inner else self.path,
                                      members or {}))
        return layer

    def before_apply(self, fn: Any) -> None:
        """The seed of the layer ``fn`` when the evaluator first applies it, before its input
        is evaluated (as cntk.exe's layers make their weight first: :class:`_SeedOnApply`)."""
        entry = self._unclaimed.get(id(fn))
        if entry is not None and entry[0] is fn:
            del self._unclaimed[id(fn)]
            entry[1].claim()

    # ---- layers ---------------------------------------------------------------------------------
    def LinearLayer(self, outDim, bias=True, init="glorotUniform", initValueScale=1,
                    inputRank=None, mapRank=None, initBias=0):
        """``W x + b``, ``W`` of shape ``outDim : Inferred`` (a :class:`stadyn.layers.Dense`)."""
        return self._dense(outDim, bias, None, init, initValueScale, inputRank, mapRank,
                           initBias, "")

    def DenseLayer(self, outDim, bias=True, activation=None, init="glorotUniform",
                   initValueScale=1, inputRank=None, mapRank=None, initBias=0):
        """``activation(W x + b)`` (a :class:`stadyn.layers.Dense`)."""
        return self._dense(outDim, bias, activation, init, initValueScale, inputRank, mapRank,
                           initBias, "arrayOfFunctions[0]")

    def _dense(self, outDim, bias, activation, init, initValueScale, inputRank, mapRank,
               initBias, inner: str):
        shape = cntk_shape(_positive_ints(outDim, "DenseLayer: outDim"))
        if activation is not None and not callable(activation):
            raise ConfigError(f"DenseLayer: activation must be a function, got {activation!r}")
        initializer = self._seed_on_apply(cntk_initializer(init, initValueScale))
        layer = L.Dense(shape if len(shape) > 1 else shape[0],
                        activation=activation or _identity, init=initializer,
                        bias=_bool(bias, "DenseLayer: bias"), init_bias=float(initBias),
                        input_rank=inputRank, map_rank=mapRank)
        return self._named(self._claims_on_apply(layer, initializer), inner)

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
        initializer = self._seed_on_apply(cntk_initializer(init, initValueScale))
        layer = L.Convolution(kernel, int(numOutputChannels),
                              activation=activation or _identity, init=initializer,
                              pad=_spatial_pad(pad, rank, "ConvolutionalLayer"),
                              strides=_strides(stride, rank),
                              bias=_bool(bias, "ConvolutionalLayer: bias"),
                              init_bias=float(initBias), dilation=_strides(dilation, rank))
        return self._named(self._claims_on_apply(layer, initializer))

    def ConvolutionTransposeLayer(self, numOutputChannels, filterShape, numInputChannels,
                                  bias=True, activation=None, init="glorotUniform",
                                  initValueScale=0.001, initBias=0, stride=1, pad=False,
                                  lowerPad=0, upperPad=0, outputShape=None, dilation=1,
                                  maxTempMemSizeInSamples=0):
        """A :class:`stadyn.layers.ConvolutionTranspose` (deconvolution) from
        ``numInputChannels`` to ``numOutputChannels`` channels; ``W`` is CNTK's
        ``filterShape : numOutputChannels : numInputChannels`` tensor, ``b`` its
        ``1 : 1 : numOutputChannels``; ``outputShape`` (column-major, spatial axes first) fixes
        the output's size where the stride leaves it open."""
        what = "ConvolutionTransposeLayer"
        _positive_ints(numOutputChannels, f"{what}: numOutputChannels")
        _positive_ints(numInputChannels, f"{what}: numInputChannels")
        _positive_ints(filterShape, f"{what}: filterShape")
        _positive_ints(stride, f"{what}: stride")
        _positive_ints(dilation, f"{what}: dilation")
        _zero_pads(lowerPad, upperPad, what)
        if activation is not None and not callable(activation):
            raise ConfigError(f"{what}: activation must be a function, got {activation!r}")
        kernel = cntk_filter_shape(filterShape)
        rank = len(kernel) if isinstance(kernel, tuple) else 1
        shape = None
        if outputShape is not None and outputShape is not NONE:
            dims = outputShape if isinstance(outputShape, tuple) else (outputShape,)
            _positive_ints(dims, f"{what}: outputShape")
            shape = tuple(reversed(dims[:rank]))
        # W is a ParameterTensor [filterShape : numOutputChannels : numInputChannels] with
        # ParameterTensor's fans (initOutputRank = 1: the first axis is the output's)
        dims = _as_dims(filterShape) + (int(numOutputChannels), int(numInputChannels))
        initializer = cntk_initializer(init, initValueScale)
        if isinstance(initializer, CNTKInitializer):
            initializer = self._seed_on_apply(_FixedFans(initializer, *cntk_fans(dims)))
        layer = L.ConvolutionTranspose(kernel, int(numOutputChannels),
                                       activation=activation or _identity,
                                       init=initializer,
                                       pad=_spatial_pad(pad, rank, what),
                                       strides=_strides(stride, rank),
                                       bias=_bool(bias, f"{what}: bias"),
                                       init_bias=float(initBias), output_shape=shape,
                                       dilation=_strides(dilation, rank))
        return self._claims_on_apply(_InputChannels(layer, int(numInputChannels), what),
                                     initializer)

    def BilinearUpsamplingLayer(self, numChannels, kernelSize, stride):
        """CNTK.core.bs's ``BilinearUpsamplingLayer``: a ``ConvolutionTransposeLayer`` of
        ``numChannels`` to ``numChannels`` channels, ``kernelSize x kernelSize`` every
        ``stride``, weights ``init = 'bilinear'``, no bias, not learned
        (``learningRateMultiplier = 0``)."""
        what = "BilinearUpsamplingLayer"
        _positive_ints(kernelSize, f"{what}: kernelSize")
        layer = self.ConvolutionTransposeLayer(numChannels, (kernelSize, kernelSize),
                                               numChannels, bias=False, init="zero",
                                               initValueScale=1, stride=stride)
        k, c = int(kernelSize), int(numChannels)
        return _Frozen(layer, _bilinear({"kernelwidth": k, "kernelheight": k}, (k, k, c, c)))

    def MaxPoolingLayer(self, filterShape, stride=1, pad=False, lowerPad=0, upperPad=0,
                        ceilOutDim=False):
        """A :class:`stadyn.layers.MaxPooling` (``pad = false`` by default, as in CNTK); with
        explicit ``lowerPad``/``upperPad``, ``ceilOutDim = true`` or ``pad`` on some axes only,
        a function applying CNTK's ``Pooling`` node."""
        return self._pooling(L.MaxPooling, "max", filterShape, stride, pad, lowerPad,
                             upperPad, ceilOutDim, False)

    def AveragePoolingLayer(self, filterShape, stride=1, pad=False, lowerPad=0, upperPad=0,
                            ceilOutDim=False, includePad=False):
        """A :class:`stadyn.layers.AveragePooling` (padding not counted: ``includePad = false``);
        as ``MaxPoolingLayer`` a function applying CNTK's ``Pooling`` node where the layer
        cannot say it (and for ``includePad = true``: the padding counted, as zeros)."""
        return self._pooling(L.AveragePooling, "average", filterShape, stride, pad,
                             lowerPad, upperPad, ceilOutDim, includePad)

    def MaxUnpoolingLayer(self, filterShape, stride=1, pad=False, lowerPad=0, upperPad=0):
        """A function ``(unpoolInput, poolInput)``: CNTK's ``MaxUnpooling`` node with this
        window, stride and padding."""
        _positive_ints(filterShape, "MaxUnpoolingLayer: filterShape")
        _positive_ints(stride, "MaxUnpoolingLayer: stride")

        def apply(unpoolInput, poolInput):
            return self.MaxUnpooling(unpoolInput, poolInput, filterShape, stride=stride,
                                     autoPadding=pad, lowerPad=lowerPad, upperPad=upperPad)
        return apply

    def _pooling(self, cls, kind, filterShape, stride, pad, lowerPad, upperPad, ceilOutDim,
                 includePad):
        name = "MaxPoolingLayer" if kind == "max" else "AveragePoolingLayer"
        _positive_ints(filterShape, f"{name}: filterShape")
        _positive_ints(stride, f"{name}: stride")
        ceil = _bool(ceilOutDim, f"{name}: ceilOutDim")
        include = _bool(includePad, f"{name}: includePad")
        window = cntk_filter_shape(filterShape)
        rank = len(window) if isinstance(window, tuple) else 1
        padding = _spatial_pad(pad, rank, name)
        explicit = any(v != 0 for v in _as_dims(lowerPad) + _as_dims(upperPad))
        if not (ceil or include or explicit or isinstance(padding, tuple)):
            return cls(window, _strides(stride, rank), pad=padding)

        def apply(x):       # CNTK.core.bs's _PoolingLayer: the Pooling node itself
            return self.Pooling(x, kind, filterShape, stride=stride, autoPadding=pad,
                                lowerPad=lowerPad, upperPad=upperPad, ceilOutDim=ceil,
                                includePad=include)
        return apply

    def BatchNormalizationLayer(self, spatialRank=0, initialScale=1,
                                normalizationTimeConstant=5000, blendTimeConstant=0,
                                epsilon=0.00001, useCntkEngine=False, disableRegularization=False):
        """A :class:`stadyn.layers.BatchNormalization`: per channel when ``spatialRank > 0``
        (images), per element otherwise; ``blendTimeConstant`` mixes the running statistics
        into the training minibatches' normalisation as CNTK's node does."""
        layer = L.BatchNormalization(map_rank=1 if int(spatialRank) > 0 else None,
                                     init_scale=float(initialScale),
                                     normalization_time_constant=float(normalizationTimeConstant),
                                     blend_time_constant=float(blendTimeConstant),
                                     epsilon=float(epsilon))
        self._batch_norms.append((layer, bool(disableRegularization)))
        return self._named(layer, "", _BATCH_NORM_MEMBERS)

    def batch_norm_parameters(self, parameters: Sequence[Variable],
                              disable_regularization: bool) -> None:
        """Count ``parameters`` (a batch normalization's scale and bias, made elsewhere: an
        NDL or BrainScript raw ``BatchNormalization`` node's) with the batch normalizations of
        :meth:`unregularized`."""
        self._batch_norms.append((_Made(tuple(parameters)), disable_regularization))

    def unregularized(self, every_batch_norm: bool) -> set[int]:
        """The ids of the scale and bias parameters CNTK exempted from L1/L2 regularisation:
        those of each ``BatchNormalizationLayer`` built with ``disableRegularization = true``,
        or of all of them (the SGD block's ``disableRegInBatchNormalization = true``)."""
        return {id(p) for layer, disabled in self._batch_norms if disabled or every_batch_norm
                for p in getattr(layer, "parameters", ()) if p.need_grad}


@dataclass(frozen=True)
class _Made:
    """Parameters a batch normalization of another front end made (read as a layer's)."""
    parameters: tuple[Variable, ...]


# CNTK.core.bs's BatchNormalizationLayer record: scale, bias, runMean, runVariance, runCount
_BATCH_NORM_MEMBERS = {"gamma": "scale", "beta": "bias", "mean": "runMean", "var": "runVariance",
                       "count": "runCount"}


def member_name(name: str, members: dict[str, str]) -> str:
    """CNTK.core.bs's member for the Stadyn parameter ``name`` (``recurrence/lstm/b``) of a
    layer: the entry of ``members`` its name ends with (the longest), else its last part.

    >>> member_name("recurrence/lstm/dh_stabilizer/alpha",
    ...             {"alpha": "x", "dh_stabilizer/alpha": "Sdh.param"})
    'Sdh.param'
    >>> member_name("dense/W", {})
    'W'
    """
    for key in sorted(members, key=len, reverse=True):
        if name == key or name.endswith("/" + key):
            return members[key]
    return name.rsplit("/", 1)[-1]


def _as_dims(value: Any) -> tuple:
    """A BrainScript array as a tuple, a lone value as a 1-tuple (also used by
    ``_tensor_library``)."""
    return tuple(value) if isinstance(value, tuple) else (value,)


class _Frozen:
    """A layer whose parameters are not learned (CNTK's ``learningRateMultiplier = 0``), its
    weight ``value`` (NDL's ``init = bilinear``: each channel upsampled from itself)."""

    def __init__(self, layer: Any, value: np.ndarray) -> None:
        self.layer, self.value = layer, value

    def __call__(self, x: Any) -> Any:
        y = self.layer(x)
        for p in self.parameters:
            p.need_grad = False
            if tuple(p.shape) == self.value.shape:
                p.d = self.value
        return y

    @property
    def parameters(self) -> Any:
        return getattr(self.layer, "parameters", ())


class _InputChannels:
    """A ``ConvolutionTransposeLayer``: checks its input's channel count (CNTK's
    ``numInputChannels``, the last dimension of ``W``), and, where no ``outputShape`` is
    given, sizes an auto-padded axis as CNTK does (ConvolveGeometry::ComputeInputShape: the
    smallest input a strided convolution maps to the given size, ``(size - 1) * stride + 1``)."""

    def __init__(self, layer: Any, channels: int, what: str) -> None:
        self.layer, self.channels, self.what = layer, channels, what
        self.fixed = layer.output_shape is not None

    def __call__(self, x: Any) -> Any:
        got = x.shape[1] if getattr(x, "ndim", 0) > 1 else None
        if got != self.channels:
            raise ConfigError(f"{self.what}: numInputChannels is {self.channels}, but the input "
                              f"has {got} channels (input shape {tuple(x.shape)})")
        layer = self.layer
        if not self.fixed:
            n = len(layer.filter_shape)
            pads = layer.pad if isinstance(layer.pad, tuple) else (layer.pad,) * n
            spans = [d * (k - 1) + 1 for k, d in zip(layer.filter_shape, layer.dilation)]
            layer.output_shape = tuple(
                (i - 1) * s + (1 if p else span)
                for i, s, p, span in zip(x.shape[-n:], layer.strides, pads, spans))
        return layer(x)

    @property
    def parameters(self) -> Any:
        return getattr(self.layer, "parameters", ())

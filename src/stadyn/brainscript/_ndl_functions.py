"""The built-in functions of cntk.exe's NDL (NetworkDescriptionLanguage.cpp's names and
aliases, case-insensitive) as calls of :class:`~._stadyn_library.StadynLibrary`: each takes the
builder (``b.library``), the NDL node (its ``function`` and pre-assigned ``seed``), its
positional arguments (nodes built, numbers, shapes) and its optional ones (lower-case keys).
Used by :mod:`._ndl`."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from .._errors import ConfigError
from ..graph import Variable
from ..layers import bilinear
from ..parametric import current_registry, get_parameter_or_create
from ._library import cntk_shape, learning_rate_multiplier
from ._ndl_parser import Call, where


__all__ = ["FUNCTIONS", "function_name"]


def _dims(args: list, what: str) -> tuple:
    dims = []
    for a in args:
        if isinstance(a, bool) or not isinstance(a, (int, float)) or a != int(a) or a < 0:
            raise ConfigError(f"{what}: dimensions must be non-negative integers, got {a!r}")
        dims.append(int(a))
    if not dims:
        raise ConfigError(f"{what} needs its dimensions (rows, or rows and columns)")
    return tuple(dims)


def _input(b, node, args, kw, sparse=False):
    dims = _dims(args, node.function)
    return b.library.Input(dims if len(dims) > 1 else dims[0],
                           dynamicAxis=kw.get("dynamicaxis", ""), sparse=sparse, tag="")


def _parameter(b, node, args, kw):
    dims = _dims(args, "LearnableParameter")
    grad = all(str(kw.get(k, "true")).lower() not in ("false", "0")
               for k in ("needgradient", "needsgradient", "computegradient"))
    lr = learning_rate_multiplier(kw.get("learningratemultiplier", 1), "LearnableParameter") \
        if grad else 0.0
    init = str(kw.get("init", "uniform"))
    lib = b.library
    if init.lower() == "fromfile":
        return lib._make_parameter(cntk_shape(dims), _from_file(kw, dims), lr, "",
                                   path=lib.path)
    if init.lower() == "bilinear":
        return lib._make_parameter(cntk_shape(dims), _bilinear(kw, dims), lr, "",
                                   path=lib.path)
    if init.lower() not in ("uniform", "gaussian", "henormal", "fixedvalue"):
        raise ConfigError("'init' must be one of the values of [ uniform | gaussian | "
                          f"fixedValue | fromFile | heNormal | bilinear], got '{init}'")
    return lib._parameter(dims, lr, "fixedValue" if init.lower() == "fixedvalue" else
                          {"henormal": "heNormal"}.get(init.lower(), init.lower()),
                          float(kw.get("initvaluescale", 1)), float(kw.get("value", 0)), "",
                          "", "", "", "LearnableParameter",
                          random_seed=-1 if node.seed is None else node.seed)


def _from_file(kw: dict, dims: tuple) -> np.ndarray:
    """``init = fromFile``: a text matrix, one row a line (LearnableParameter::InitFromFile),
    of the parameter's ``[rows x cols]``; Stadyn holds it transposed (column-major dims)."""
    name = str(kw.get("initfromfilepath", "")).strip().strip('"')
    if not name:
        raise ConfigError("initFromFilePath must be set when using \"fromFile\" initialization")
    if not os.path.isfile(name):
        raise ConfigError(f"the file of initFromFilePath does not exist: {name}")
    try:
        rows = np.loadtxt(name, dtype=np.float32, ndmin=2)
    except ValueError as exc:
        raise ConfigError(f"initFromFilePath '{name}' is not a matrix of numbers: {exc}") \
            from None
    if len(dims) != 2 or rows.shape != dims:
        raise ConfigError(f"initFromFilePath '{name}' holds a [{rows.shape[0]} x "
                          f"{rows.shape[1]}] matrix; the parameter is "
                          f"[{' x '.join(map(str, dims))}]")
    return np.ascontiguousarray(rows.T)


def _bilinear(kw: dict, dims: tuple) -> np.ndarray:
    """``init = bilinear, kernelWidth = k, kernelHeight = k`` (LearnableParameter::InitBilinear):
    a ``[k x k x C x C]`` kernel that upsamples each channel from itself, the weight of ``(w,
    h)`` ``(1 - |w - c|/f) (1 - |h - c|/f)`` with ``f = (k + 1) / 2``, ``c = (k - 1) / 2``
    (held here with the dimensions reversed: ``[C, C, k, k]``)."""
    kw_, kh = (int(kw.get(k, 0)) for k in ("kernelwidth", "kernelheight"))
    if kw_ <= 0 or kh <= 0:
        raise ConfigError("init = bilinear needs kernelWidth and kernelHeight")
    if kw_ != kh:
        raise ConfigError("Filter for bilinear interpolation must be square.")
    if len(dims) != 4 or dims[:2] != (kw_, kh):
        raise ConfigError(f"init = bilinear: the parameter must be [kernelWidth x kernelHeight "
                          f"x C x C], got [{' x '.join(map(str, dims))}]")
    if dims[2] != dims[3]:
        raise ConfigError("Number of input and output channels of filter for bilinear "
                          "interpolation must be equal.")
    kernel = bilinear(kw_, kh)((kh, kw_))        # the same weights, for each channel alone
    value = np.zeros((dims[3], dims[2], kh, kw_), np.float32)
    for c in range(dims[2]):
        value[c, c] = kernel
    return value


def _image_dims(dims: tuple, layout: str, what: str) -> tuple:
    """The last 3 of ``dims`` (width, height, channels) in the tensor order of ``layout``
    (ImageDimensions::AsTensorShape: ``CHW``/``cudnn`` W x H x C, ``HWC``/``legacy`` C x W x
    H)."""
    if len(dims) < 3:
        raise ConfigError(f"{what} needs [width, height, channels] (3 or more dimensions)")
    w, h, c = dims[-3:]
    low = layout.lower()
    if low not in ("chw", "cudnn", "hwc", "legacy"):
        raise ConfigError(f"{what}: imageLayout must be cudnn (CHW) or HWC (legacy), got "
                          f"'{layout}'")
    return dims[:-3] + ((w, h, c) if low in ("chw", "cudnn") else (c, w, h))


def _image_parameter(b, node, args, kw):
    dims = _image_dims(_dims(args, "ImageParameter"), str(kw.get("imagelayout", "HWC")),
                       "ImageParameter")
    return _parameter(b, node, list(dims), kw)


def _image_input(b, node, args, kw):
    if len(args) not in (3, 4):     # a 4th (numImages) was allowed and ignored
        raise ConfigError("ImageInput(width, height, channels) takes 3 arguments")
    w, h, c = _dims(args[:3], "ImageInput")
    return b.library.ImageInput(w, h, c, imageLayout=str(kw.get("imagelayout", "HWC")),
                                dynamicAxis=kw.get("dynamicaxis", ""), tag="")


def _flags(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_flags(v) for v in value)
    return str(value).lower() in ("true", "1") if isinstance(value, str) else bool(value)


def _shape(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(int(v) for v in value)
    return int(value)


def _convolution(b, node, args, kw):
    """NDL's two forms (NDLNetworkBuilder.cpp): ``Convolution(W, x, kW, kH, outMaps, hStride,
    vStride, zeroPadding = false, imageLayout = "HWC")``, a 2-D kernel over all input channels,
    and ``Convolution(W, x, kernelShape, mapCount =, stride =, sharing =, autoPadding =,
    lowerPad =, upperPad =, imageLayout = "CHW")``."""
    lib = b.library
    temp = int(kw.get("maxtempmemsizeinsamples", 0))
    if len(args) == 7:
        kw_, kh, maps, hs, vs = _dims(args[2:], "Convolution")
        pad = _flags(kw.get("zeropadding", "false"))
        return lib.Convolution(args[0], args[1], (kw_, kh), mapDims=maps, stride=(hs, vs),
                               autoPadding=(pad, pad), imageLayout=str(kw.get("imagelayout",
                                                                             "HWC")),
                               maxTempMemSizeInSamples=temp)
    if len(args) != 3:
        raise ConfigError("Convolution takes 7 arguments (W, x, kernelWidth, kernelHeight, "
                          "outputChannels, horizontalSubsample, verticalSubsample) or 3 (W, x, "
                          "kernelShape)")
    if _flags(kw.get("transpose", "false")) is True:
        raise ConfigError("Convolution: transpose = true is not supported")
    return lib.Convolution(args[0], args[1], _shape(args[2]),
                           mapDims=_shape(kw.get("mapcount", 0)),
                           stride=_shape(kw.get("stride", 1)),
                           sharing=_flags(kw.get("sharing", "true")),
                           autoPadding=_flags(kw.get("autopadding", "true")),
                           lowerPad=_shape(kw.get("lowerpad", 0)),
                           upperPad=_shape(kw.get("upperpad", 0)),
                           imageLayout=str(kw.get("imagelayout", "CHW")),
                           maxTempMemSizeInSamples=temp)


def _pooling(b, node, args, kw):
    if len(args) != 5:
        raise ConfigError(f"{node.function}(x, windowWidth, windowHeight, horizontalSubsample, "
                          "verticalSubsample) takes 5 arguments")
    fn = b.library.MaxPooling if node.function == "MaxPooling" else b.library.AveragePooling
    return fn(args[0], *_dims(args[1:], node.function),
              imageLayout=str(kw.get("imagelayout", "HWC")))


def _nd_pooling(b, node, args, kw):
    """``Pooling(x, "max"|"average", kernelShape, stride = 1, autoPadding = true, lowerPad = 0,
    upperPad = 0, imageLayout = "CHW")`` (NDL's ND pooling): the library's ``Pooling`` node,
    per-axis settings as arrays (``{3, 3, 1}``)."""
    if len(args) != 3:
        raise ConfigError("Pooling(x, poolKind, kernelShape) takes 3 arguments")
    return b.library.Pooling(args[0], str(args[1]), _shape(args[2]),
                             stride=_shape(kw.get("stride", 1)),
                             autoPadding=_flags(kw.get("autopadding", "true")),
                             lowerPad=_shape(kw.get("lowerpad", 0)),
                             upperPad=_shape(kw.get("upperpad", 0)),
                             imageLayout=str(kw.get("imagelayout", "CHW")))


def _batch_normalization(b, node, args, kw):
    """``BatchNormalization(x, scale, bias, runMean, runVariance, spatial = false,
    normalizationTimeConstant = 0, blendTimeConstant = 0, epsilon = 0.00001, imageLayout =
    "CHW")`` with the network's own parameters (NDLNetworkBuilder.cpp); the sample count of
    the running statistics is the parameter ``<node>.run_sample_count`` cntk.exe adds."""
    if len(args) not in (5, 6):
        raise ConfigError("BatchNormalization(x, scale, bias, runMean, runVariance) takes 5 "
                          "arguments")
    lib = b.library
    x = lib._value(args[0], "BatchNormalization")
    spatial = bool(_flags(kw.get("spatial", "false")))
    if spatial and str(kw.get("imagelayout", "CHW")).lower() not in ("chw", "cudnn"):
        raise ConfigError("BatchNormalization: spatial = true needs imageLayout = \"cudnn\"")
    values = [lib._value(v, "BatchNormalization") for v in args[1:5]]
    if len(args) == 6:
        count = lib._value(args[5], "BatchNormalization")
    else:
        count = get_parameter_or_create(f"{node.name or 'BatchNormalization'}.run_sample_count",
                                        (), 0.0, need_grad=False)
    # the library's node (as BrainScript's BatchNormalization): its scale and bias exempt from
    # L1/L2 where it says disableRegularization = true or the SGD block
    # disableRegInBatchNormalization = true (the library's unregularized())
    y = lib.batch_normalization(x, values, count, spatial,
                                kw.get("normalizationtimeconstant", 0),
                                kw.get("blendtimeconstant", 0), kw.get("epsilon", 0.00001),
                                bool(_flags(kw.get("disableregularization", "false"))),
                                "BatchNormalization")
    return lib._node(y, "BatchNormalization")


def _constant(b, node, args, kw):
    if len(args) != 1:
        raise ConfigError("Constant has one value (and optional rows, cols)")
    return b.library.Constant(args[0], int(kw.get("rows", 1)), int(kw.get("cols", 1)))


def _delay(b, node, args, kw):
    if len(args) not in (2, 3):
        raise ConfigError("PastValue/FutureValue(rows, [cols,] input, delayTime=1, "
                          "defaultHiddenActivity=0.1) has 2 or 3 arguments")
    dims = _dims(args[:1], node.function)     # a legacy middle 'cols' is ignored, as cntk.exe
    fn = b.library.PastValue if node.function == "PastValue" else b.library.FutureValue
    return fn(dims if len(dims) > 1 else dims[0], args[-1],
              timeStep=int(kw.get("delaytime", kw.get("timestep", 1))),
              defaultHiddenActivation=float(kw.get("defaulthiddenactivity", 0.1)))


def _literal_inputs(node, args: list, start: int = 0) -> None:
    """Refuse a number or string written where cntk.exe's NDL wants a node (the arguments
    from ``start`` on).  cntk.exe leaves such an input unconnected: EvaluateParameter takes a
    literal as it is (NDLNetworkBuilder.h:206-208), it has no node to attach
    (NDLNetworkBuilder.cpp:632-651), and the network is refused ("Input 1 of ... operation is
    not connected, network is malformed", ComputationNetworkEvaluation.cpp:562-566); NDL
    writes a constant input as ``Const(1)``."""
    for k, a in enumerate(args[start:], start):
        if isinstance(a, (bool, int, float, str)):
            raise ConfigError(f"{node.function}: input {k + 1} is the literal {a!r}, not a node "
                              f"(cntk.exe's NDL leaves it unconnected and refuses the network); "
                              f"write Const({a!r}) for a constant input")


def _plain(name: str, count: int | None = None, nodes_from: int = 0, **fixed):
    def call(b, node, args, kw):
        if count is not None and len(args) != count:
            raise ConfigError(f"{node.function} takes {count} argument(s), got {len(args)}")
        _literal_inputs(node, args, nodes_from)
        return b.library.functions[name](*args, **fixed)
    return call


def _classification_error(b, node, args, kw):
    if len(args) not in (2, 3):
        raise ConfigError("ClassificationError(labels, z[, topN]) takes 2 or 3 arguments")
    _literal_inputs(node, args)         # (topN too: a standard node's inputs are all nodes)
    if len(args) == 3:
        top = b.library._scalar(args[2])
        if top is None:
            raise ConfigError("ClassificationError: topN must be a Constant")
        # (the Constant node is the node's own third input, as cntk.exe's)
        return b.library.ClassificationError(args[0], args[1], topN=args[2])
    return b.library.ClassificationError(args[0], args[1])


def _times(b, node, args, kw):
    """``Times(W, x)``, and cntk.exe's legacy patch (TimesNodeBase::Validate): a ``[m x n]``
    parameter ``W`` whose ``n`` is not ``x``'s first dimension but the product of its first
    few (``[128 x 1568]`` times a ``[7 x 7 x 32]`` input) takes those dimensions, ``[128 x 7 x
    7 x 32]``, the same values (cntk.exe's model file and logs show the new shape).  A patched
    weight has that shape for every ``Times`` it is in: one whose input does not start with
    those dimensions is a ConfigError at its line, as cntk.exe's validation rejects it."""
    if len(args) != 2:
        raise ConfigError(f"{node.function} takes 2 argument(s), got {len(args)}")
    _literal_inputs(node, args)
    w, x = args
    if isinstance(w, Variable) and isinstance(x, Variable) and w.ndim >= 2 and \
            b.library.has_batch_axis(x) and \
            any(v is w for _, v in current_registry().items()):
        lead = 1 if x.sequence_lengths is None else 2
        dims = tuple(reversed(x.shape[lead:]))           # x's sample dims, cntk.exe's order
        n = w.shape[0]                                   # W is [m x n]: (n, m) here
        if w.ndim == 2 and dims and dims[0] != n:
            for k in range(len(dims)):
                if math.prod(dims[:k + 1]) == n:
                    b.patched_weights[id(w)] = (node, _cntk_dims(w.shape))
                    values = w.d.copy()
                    shape = tuple(reversed(dims[:k + 1])) + (w.shape[1],)
                    w.reset_shape(shape, force=True)
                    w.d = values.reshape(shape)
                    break
        users = b.times_inputs.setdefault(id(w), [])
        users.append((node, dims))
        if id(w) in b.patched_weights:
            _check_patched(b.patched_weights[id(w)], w, users)
    return b.library.Times(w, x)


def _cntk_dims(shape: tuple) -> str:
    return " x ".join(str(d) for d in reversed(shape))


def _check_patched(patch: tuple, w: Variable, users: list) -> None:
    """A ConfigError at the first ``Times`` whose input does not fit the shape the legacy patch
    gave its weight ``w`` (cntk.exe: "Left [..] and right [..] operands' shapes are not
    compatible", or "right argument shape [..] has too few dimensions")."""
    patcher, before = patch
    reduction = tuple(reversed(w.shape[:-1]))
    for user, dims in users:
        if dims[:len(reduction)] != reduction:
            arg = user.args[0]
            weight = getattr(getattr(arg, "ref", None), "name", None) or \
                getattr(arg, "name", None) or "its weight"
            shown = " x ".join(map(str, dims))
            raise ConfigError(
                f"NDL: Times '{user.name or 'Times'}': its input [{shown}] does not fit "
                f"'{weight}' [{_cntk_dims(w.shape)}]: Times '{patcher.name or 'Times'}' "
                f"({_line(patcher)}) patched that weight to [{_cntk_dims(w.shape)}] (from "
                f"[{before}]) for its own input, as cntk.exe's legacy rule does "
                "(TimesNodeBase::Validate), and a weight has one shape in all its Times (give "
                "each Times its own weight, or their inputs the same dimensions)",
                *where(user.loc))


def _line(node) -> str:
    loc = node.loc
    return f"{os.path.basename(loc.path) if loc.path else '<config>'}:{loc.line}"


def _lookup_table(b, node, args, kw):
    """``LookupTable(E, x)`` (LookupTableNode): ``E`` ``[d x V]``, ``x`` ``[V*k x *]`` (k words
    stacked in each sample) give ``[d*k x *]``, each word's column of ``E`` in turn."""
    if len(args) != 2:
        raise ConfigError(f"LookupTable takes 2 argument(s), got {len(args)}")
    _literal_inputs(node, args)
    lib = b.library
    e, x = (lib._value(a, "LookupTable") for a in args)
    if not lib.has_batch_axis(x):
        raise ConfigError("LookupTable operation can only operate on minibatches.")
    if e.ndim != 2:
        raise ConfigError("LookupTable: the dictionary must be a [dim x vocabulary] matrix")
    vocab, dim = e.shape
    rows = math.prod(x.shape[1 if x.sequence_lengths is None else 2:])
    if rows % vocab:
        raise ConfigError("Mismatched dimension. Rows in input1 must be multiples of cols in "
                          "input0.")
    words = lib.Reshape(x, (vocab, rows // vocab))
    y = lib.Reshape(lib.Times(e, words), (dim * (rows // vocab),))
    return lib._node(lib._value(y, "LookupTable"), "LookupTable")


FUNCTIONS = {
    "SquareError": _plain("SquareError", 2),
    "ImageInput": _image_input, "ImageParameter": _image_parameter,
    "Convolution": _convolution, "MaxPooling": _pooling, "AveragePooling": _pooling,
    "Pooling": _nd_pooling, "BatchNormalization": _batch_normalization,
    "InputValue": _input,
    "SparseInputValue": lambda b, n, a, k: _input(b, n, a, k, sparse=True),
    "LearnableParameter": _parameter,
    "Constant": _constant,
    "PastValue": _delay, "FutureValue": _delay,
    "Times": _times, "LookupTable": _lookup_table, "Plus": _plain("Plus", 2),
    "Minus": _plain("Minus", 2),
    "ElementTimes": _plain("ElementTimes", 2), "DiagTimes": _plain("DiagTimes", 2),
    "Scale": _plain("Scale", 2), "TransposeTimes": _plain("TransposeTimes", 2),
    "Sigmoid": _plain("Sigmoid", 1), "Tanh": _plain("Tanh", 1),
    "RectifiedLinear": _plain("RectifiedLinear", 1), "Exp": _plain("Exp", 1),
    "Log": _plain("Log", 1), "Softmax": _plain("Softmax", 1),
    "LogSoftmax": _plain("LogSoftmax", 1), "Abs": _plain("Abs", 1), "Sqrt": _plain("Sqrt", 1),
    "Negate": _plain("Negate", 1), "Reciprocal": _plain("Reciprocal", 1),
    "Dropout": _plain("Dropout", 1), "Hardmax": _plain("Hardmax", 1),
    "Pass": _plain("Pass", 1), "SumElements": _plain("SumElements", 1),
    "Transpose": _plain("Transpose", 1),
    "CrossEntropyWithSoftmax": _plain("CrossEntropyWithSoftmax", 2),
    "ClassificationError": _classification_error,
    "Mean": _plain("Mean", 1), "InvStdDev": _plain("InvStdDev", 1),
    "PerDimMeanVarNormalization": _plain("PerDimMeanVarNormalization", 3),
    "PerDimMeanVarDeNormalization": _plain("PerDimMeanVarDeNormalization", 3),
    "RowSlice": _plain("RowSlice", 3, nodes_from=2),
    "RowStack": lambda b, n, a, k: _literal_inputs(n, a) or b.library.RowStack(tuple(a)),
}

# NDL's names and aliases (NetworkDescriptionLanguage.cpp: CheckFunction), lower case
_ALIASES = {name.lower(): name for name in FUNCTIONS}
_ALIASES.update({
    "se": "SquareError", "image": "ImageInput", "convolve": "Convolution",
    "input": "InputValue", "sparseinput": "SparseInputValue", "parameter": "LearnableParameter",
    "const": "Constant", "delay": "PastValue", "relu": "RectifiedLinear",
    "cewithsm": "CrossEntropyWithSoftmax", "errorprediction": "ClassificationError",
    "perdimmvnorm": "PerDimMeanVarNormalization", "perdimmvdenorm": "PerDimMeanVarDeNormalization",
})


def function_name(call: Call) -> str:
    name = _ALIASES.get(call.function.lower())
    if name is None:
        raise ConfigError(f"NDL function '{call.function}' is not supported by Stadyn's "
                          f"NDLNetworkBuilder (it builds: {', '.join(sorted(FUNCTIONS))})",
                          *where(call.loc))
    return name

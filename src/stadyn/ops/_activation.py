"""Activation functions."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as TF

from . import _kernels as kernels
from ._registry import op
from ._util import import_unary, norm_axis, onnx_axis, onnx_unary

_C = "activation"


# -- ONNX mappings (see OpSpec.onnx / OpSpec.onnx_import) -------------------------------------
def _leaky_relu_onnx(g, inputs, attrs):
    """LeakyRelu"""
    return g.op("LeakyRelu", [inputs[0]], alpha=float(attrs["alpha"]))


def _elu_onnx(g, inputs, attrs):
    """Elu"""
    return g.op("Elu", [inputs[0]], alpha=float(attrs["alpha"]))


def _selu_onnx(g, inputs, attrs):
    """Selu"""
    return g.op("Selu", [inputs[0]], alpha=float(attrs["alpha"]), gamma=float(attrs["scale"]))


def _relu6_onnx(g, inputs, attrs):
    """Clip"""
    x = inputs[0]
    return g.op("Clip", [x, g.scalar(0.0, x), g.scalar(6.0, x)])


def _gelu_onnx(g, inputs, attrs):
    """Gelu (opset 20+) or its tanh formula"""
    x = inputs[0]
    if g.opset >= 20:
        return g.op("Gelu", [x], approximate="tanh")
    cube = g.op("Mul", [g.op("Mul", [x, x]), x])
    inner = g.op("Add", [x, g.op("Mul", [cube, g.scalar(0.044715, x)])])
    t = g.op("Tanh", [g.op("Mul", [inner, g.scalar(math.sqrt(2.0 / math.pi), x)])])
    half = g.op("Mul", [x, g.scalar(0.5, x)])
    return g.op("Mul", [half, g.op("Add", [t, g.scalar(1.0, x)])])


def _swish_onnx(g, inputs, attrs):
    """Mul, Sigmoid"""
    x = inputs[0]
    return g.op("Mul", [x, g.op("Sigmoid", [x])])


def _softplus_onnx(g, inputs, attrs):
    """Softplus"""
    x, beta = inputs[0], float(attrs["beta"])
    if beta == 1.0:
        return g.op("Softplus", [x])
    scaled = g.op("Softplus", [g.op("Mul", [x, g.scalar(beta, x)])])
    return g.op("Div", [scaled, g.scalar(beta, x)])


def _softmax_like_onnx(op_type):
    def export(g, inputs, attrs):
        x = inputs[0]
        n = g.ndim(x)
        return g.op(op_type, [x], axis=norm_axis(n - 1 if attrs["axis"] is None else
                                                  attrs["axis"], n))
    export.__doc__ = op_type
    return export


def _import_elu(node):
    return elu(node.var(0), float(node.attr("alpha", 1.0)))


def _import_leaky_relu(node):
    return leaky_relu(node.var(0), float(node.attr("alpha", 0.01)))


def _import_selu(node):
    return selu(node.var(0), float(node.attr("gamma", 1.05070102214813232421875)),
                float(node.attr("alpha", 1.67326319217681884765625)))


def _import_gelu(node):
    if node.attr("approximate", "none") != "tanh":
        node.unsupported("approximate='none' (Stadyn's gelu is the tanh approximation)")
    return gelu(node.var(0))


def _import_swish(node):
    if float(node.attr("alpha", 1.0)) != 1.0:
        node.unsupported("alpha != 1")
    return swish(node.var(0))


def _import_softmax_like(op_name):
    def build(node):
        from ._shape import reshape
        f = softmax if op_name == "softmax" else log_softmax
        x = node.var(0)
        n = x.ndim
        if node.opset >= 13:
            return f(x, onnx_axis(node.attr("axis", -1), n))
        # Before opset 13 the input is read as a matrix (axes before ``axis`` x the rest).
        axis = onnx_axis(node.attr("axis", 1), n) if n else 0
        if axis == n - 1:
            return f(x, axis)
        rows = math.prod(x.shape[:axis])
        y = f(reshape(x, (rows, -1)), 1)
        return reshape(y, x.shape)
    return build


@op(1, category=_C, onnx=onnx_unary("Relu"), onnx_import={"Relu": import_unary("relu")})
def relu(x, inplace=False):
    """``max(x, 0)``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.relu(sd.Variable.from_numpy_array([-1.0, 2.0]))
        >>> y.d
        array([0., 2.], dtype=float32)
    """
    return torch.relu(x)


@op(1, category=_C, onnx=_leaky_relu_onnx, onnx_import={"LeakyRelu": _import_leaky_relu})
def leaky_relu(x, alpha=0.1, inplace=False):
    """``x`` where positive, ``alpha * x`` elsewhere.  Example: ``F.leaky_relu(x, 0.2)``."""
    return TF.leaky_relu(x, alpha)


@op(1, category=_C, onnx=_relu6_onnx)
def relu6(x):
    """``min(max(x, 0), 6)``.  Example: ``F.relu6(x)``."""
    return TF.hardtanh(x, 0.0, 6.0)


@op(1, category=_C, onnx=_elu_onnx, onnx_import={"Elu": _import_elu})
def elu(x, alpha=1.0):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere.  Example: ``F.elu(x)``."""
    return TF.elu(x, alpha)


@op(1, category=_C, onnx=_selu_onnx, onnx_import={"Selu": _import_selu})
def selu(x, scale=1.05070098735548, alpha=1.673263242354377):
    """``scale * elu(x, alpha)`` with the self-normalising constants.  Example: ``F.selu(x)``."""
    return scale * TF.elu(x, alpha)


@op(1, category=_C, onnx=_gelu_onnx, onnx_import={"Gelu": _import_gelu})
def gelu(x):
    """GELU with NNabla's tanh approximation:
    ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``.  Example: ``F.gelu(x)``."""
    return TF.gelu(x, approximate="tanh")


@op(1, category=_C, onnx=onnx_unary("Sigmoid"),
    onnx_import={"Sigmoid": import_unary("sigmoid")})
def sigmoid(x):
    """``1 / (1 + exp(-x))``.  Example: ``F.sigmoid(x)``."""
    return torch.sigmoid(x)


@op(1, category=_C, onnx=onnx_unary("Tanh"), onnx_import={"Tanh": import_unary("tanh")})
def tanh(x):
    """Hyperbolic tangent.  Example: ``F.tanh(x)``."""
    return kernels.tanh(x)


@op(1, category=_C, onnx=_swish_onnx, onnx_import={"Swish": _import_swish})
def swish(x):
    """``x * sigmoid(x)``.  Example: ``F.swish(x)``."""
    return TF.silu(x)


@op(1, category=_C, onnx=_softplus_onnx, onnx_import={"Softplus": import_unary("softplus")})
def softplus(x, beta=1.0):
    """``log(1 + exp(beta x)) / beta``.  Example: ``F.softplus(x)``."""
    return TF.softplus(x, beta)


@op(1, category=_C, onnx=_softmax_like_onnx("Softmax"),
    onnx_import={"Softmax": _import_softmax_like("softmax")}, precision="float")
def softmax(x, axis=None):
    """Softmax along ``axis`` (default: the last axis).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.softmax(sd.Variable.from_numpy_array([[0.0, math.log(3.0)]]))
        >>> np.round(y.d, 4)
        array([[0.25, 0.75]], dtype=float32)
    """
    return torch.softmax(x, norm_axis(x.ndim - 1 if axis is None else axis, x.ndim))


@op(1, category=_C, onnx=_softmax_like_onnx("LogSoftmax"),
    onnx_import={"LogSoftmax": _import_softmax_like("log_softmax")}, precision="float")
def log_softmax(x, axis=None):
    """Log of the softmax along ``axis`` (default: last), computed stably.
    Example: ``F.log_softmax(x, axis=1)``."""
    return torch.log_softmax(x, norm_axis(x.ndim - 1 if axis is None else axis, x.ndim))



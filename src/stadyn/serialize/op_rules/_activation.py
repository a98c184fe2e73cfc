"""Rules of the activation ops (``stadyn/ops/_activation.py``)."""

from __future__ import annotations

import math

from ... import functions as F
from ...ops import norm_axis
from ._common import import_unary, onnx_axis, onnx_unary
from ._cntk_rules import cntk_same, log_plus_cntk, softmax_cntk
from ._nnabla import last_axis_export, nnabla
from ._table import Unmapped, register_rules

def _relu_nnp(node, values):
    """NNabla's ReLU is ``x > 0 ? x : 0`` (0 for NaN): F.relu's ``rule="nnabla"``."""
    return {**values, "rule": "nnabla"}


def _relu_cntk(node):
    """CNTK's ReLU (NaN for NaN and -inf): F.relu's ``rule="cntk"``, as compat.cntk builds it."""
    return F.relu(node.var(0), rule="cntk")


register_rules(F.relu, onnx_export=onnx_unary("Relu"), onnx_import={"Relu": import_unary(F.relu)},
               nnp_import=nnabla(F.relu, "ReLU", convert=_relu_nnp, inplace=bool),
               cntk_import={"ReLU": _relu_cntk},
               cntk_v1_import={"RectifiedLinear": _relu_cntk})


def _leaky_relu_onnx(g, inputs, attrs):
    """LeakyRelu"""
    return g.op("LeakyRelu", [inputs[0]], alpha=float(attrs["alpha"]))


def _import_leaky_relu(node):
    return F.leaky_relu(node.var(0), float(node.attr("alpha", 0.01)))


def _leaky_relu_nnp(node, values):
    """NNabla's LeakyReLU backward takes its mask from the output (``alpha >= 0``):
    F.leaky_relu's ``rule="nnabla"``."""
    return {**values, "rule": "nnabla"}


register_rules(F.leaky_relu, onnx_export=_leaky_relu_onnx,
               onnx_import={"LeakyRelu": _import_leaky_relu},
               nnp_import=nnabla(F.leaky_relu, "LeakyReLU", convert=_leaky_relu_nnp,
                                 alpha=float, inplace=bool))


def _relu6_onnx(g, inputs, attrs):
    """Clip"""
    x = inputs[0]
    return g.op("Clip", [x, g.scalar(0.0, x), g.scalar(6.0, x)])


register_rules(F.relu6, onnx_export=_relu6_onnx,
               onnx_import=Unmapped("ONNX has no ReLU6: the export (Clip) imports as "
                                    "clip_by_value_scalar"),
               nnp_import=nnabla(F.relu6, "ReLU6"))


def _elu_onnx(g, inputs, attrs):
    """Elu"""
    return g.op("Elu", [inputs[0]], alpha=float(attrs["alpha"]))


def _import_elu(node):
    return F.elu(node.var(0), float(node.attr("alpha", 1.0)))


register_rules(F.elu, onnx_export=_elu_onnx, onnx_import={"Elu": _import_elu},
               nnp_import=nnabla(F.elu, "ELU", alpha=float),
               cntk_import={"ELU": cntk_same(F.elu)})


def _selu_onnx(g, inputs, attrs):
    """Selu"""
    return g.op("Selu", [inputs[0]], alpha=float(attrs["alpha"]), gamma=float(attrs["scale"]))


def _import_selu(node):
    return F.selu(node.var(0), float(node.attr("gamma", 1.05070102214813232421875)),
                  float(node.attr("alpha", 1.67326319217681884765625)))


register_rules(F.selu, onnx_export=_selu_onnx, onnx_import={"Selu": _import_selu},
               nnp_import=nnabla(F.selu, "SELU", scale=float, alpha=float),
               cntk_import={"SELU": cntk_same(F.selu)})


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


def _import_gelu(node):
    if node.attr("approximate", "none") != "tanh":
        node.unsupported("approximate='none' (Stadyn's gelu is the tanh approximation)")
    return F.gelu(node.var(0))


register_rules(F.gelu, onnx_export=_gelu_onnx, onnx_import={"Gelu": _import_gelu},
               nnp_import=nnabla(F.gelu, "GELU"))

register_rules(F.sigmoid, onnx_export=onnx_unary("Sigmoid"),
               onnx_import={"Sigmoid": import_unary(F.sigmoid)},
               nnp_import=nnabla(F.sigmoid, "Sigmoid"),
               cntk_import={"Sigmoid": cntk_same(F.sigmoid),
                            "StableSigmoid": cntk_same(F.sigmoid)},
               cntk_v1_import={"Sigmoid": cntk_same(F.sigmoid),
                               "StableSigmoid": cntk_same(F.sigmoid)})

register_rules(F.tanh, onnx_export=onnx_unary("Tanh"), onnx_import={"Tanh": import_unary(F.tanh)},
               nnp_import=nnabla(F.tanh, "Tanh"), cntk_import={"Tanh": cntk_same(F.tanh)},
               cntk_v1_import={"Tanh": cntk_same(F.tanh)})


def _swish_onnx(g, inputs, attrs):
    """Mul, Sigmoid"""
    x = inputs[0]
    return g.op("Mul", [x, g.op("Sigmoid", [x])])


def _import_swish(node):
    if float(node.attr("alpha", 1.0)) != 1.0:
        node.unsupported("alpha != 1")
    return F.swish(node.var(0))


def _swish_nnp(node, values):
    """NNabla's Swish backward reads the output: F.swish's ``rule="nnabla"``."""
    return {**values, "rule": "nnabla"}


register_rules(F.swish, onnx_export=_swish_onnx, onnx_import={"Swish": _import_swish},
               nnp_import=nnabla(F.swish, "Swish", convert=_swish_nnp))


def _softplus_onnx(g, inputs, attrs):
    """Softplus"""
    x, beta = inputs[0], float(attrs["beta"])
    if beta == 1.0:
        return g.op("Softplus", [x])
    scaled = g.op("Softplus", [g.op("Mul", [x, g.scalar(beta, x)])])
    return g.op("Div", [scaled, g.scalar(beta, x)])


register_rules(F.softplus, onnx_export=_softplus_onnx,
               onnx_import={"Softplus": import_unary(F.softplus)},
               nnp_import=nnabla(F.softplus, "SoftPlus", beta=float),
               cntk_import={"Softplus": cntk_same(F.softplus), "LogPlus": log_plus_cntk})


def _softmax_like_onnx(op_type):
    def export(g, inputs, attrs):
        x = inputs[0]
        n = g.ndim(x)
        return g.op(op_type, [x], axis=norm_axis(n - 1 if attrs["axis"] is None else
                                                  attrs["axis"], n))
    export.__doc__ = op_type
    return export


def _import_softmax_like(f):
    def build(node):
        x = node.var(0)
        n = x.ndim
        if node.opset >= 13:
            return f(x, onnx_axis(node.attr("axis", -1), n))
        # Before opset 13 the input is read as a matrix (axes before ``axis`` x the rest).
        axis = onnx_axis(node.attr("axis", 1), n) if n else 0
        if axis == n - 1:
            return f(x, axis)
        rows = math.prod(x.shape[:axis])
        y = f(F.reshape(x, (rows, -1)), 1)
        return F.reshape(y, x.shape)
    return build


register_rules(F.softmax, onnx_export=_softmax_like_onnx("Softmax"),
               onnx_import={"Softmax": _import_softmax_like(F.softmax)},
               nnp_import=nnabla(F.softmax, "Softmax", export=last_axis_export, axis=int),
               cntk_import={"Softmax": softmax_cntk}, cntk_v1_import={"Softmax": softmax_cntk})
register_rules(F.log_softmax, onnx_export=_softmax_like_onnx("LogSoftmax"),
               onnx_import={"LogSoftmax": _import_softmax_like(F.log_softmax)},
               nnp_import=nnabla(F.log_softmax, "LogSoftmax", export=last_axis_export,
                                 axis=int))


def _prelu_onnx(g, inputs, attrs):
    """Greater, Mul, Where (NNabla's per-channel slope; ONNX's PRelu broadcasts from the end)"""
    x, slope = inputs[0], inputs[1]
    n, shape = g.ndim(x), g.shape(slope)
    if len(shape) == 1 and shape[0] > 1:
        axis = norm_axis(int(attrs["base_axis"]), n)
        slope = g.reshape(slope, [-1] + [1] * (n - axis - 1))
    elif len(shape) > 0:
        slope = g.reshape(slope, [])
    positive = g.op("Greater", [x, g.scalar(0.0, x)])
    return g.op("Where", [positive, x, g.op("Mul", [slope, x])])


register_rules(F.prelu, onnx_export=_prelu_onnx, onnx_import=Unmapped(
    "ONNX's PRelu broadcasts its slope from the last axis, NNabla's prelu per channel: the "
    "export imports as greater, mul2 and where"),
               nnp_import=nnabla(F.prelu, "PReLU", base_axis=int))


def _binary_onnx(low):
    def export(g, inputs, attrs):
        x = inputs[0]
        positive = g.op("Greater", [x, g.scalar(0.0, x)])
        return g.op("Where", [positive, g.scalar(1.0, x), g.scalar(low, x)])
    export.__doc__ = "Greater, Where"
    return export


_BINARY = ("ONNX has no straight-through binariser (inference needs none): the export imports "
           "as greater and where")
register_rules(F.binary_tanh, onnx_export=_binary_onnx(-1.0), onnx_import=Unmapped(_BINARY),
               nnp_import=nnabla(F.binary_tanh, "BinaryTanh"))
register_rules(F.binary_sigmoid, onnx_export=_binary_onnx(0.0), onnx_import=Unmapped(_BINARY),
               nnp_import=nnabla(F.binary_sigmoid, "BinarySigmoid"))

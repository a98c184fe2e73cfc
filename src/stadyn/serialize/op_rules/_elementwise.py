"""Rules of the further element-wise functions (``stadyn/ops/_elementwise.py``): ``Floor``,
``Ceil`` and ``Erf`` both ways (``Floor`` also from CNTK, whose ``round`` and ``ceil`` are
made of it); the rest export as ops that import one by one (their
straight-through gradients do not matter in an inference graph).  Each is one NNabla function."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ...ops import norm_axis
from ._cntk_rules import cntk_same
from ._common import COMPOSITE, import_unary, onnx_unary
from ._nnabla import nnabla
from ._table import Unmapped, register_rules

register_rules(F.floor, onnx_export=onnx_unary("Floor"),
               onnx_import={"Floor": import_unary(F.floor)}, nnp_import=nnabla(F.floor, "Floor"),
               cntk_import={"Floor": cntk_same(F.floor)})
register_rules(F.ceil, onnx_export=onnx_unary("Ceil"), onnx_import={"Ceil": import_unary(F.ceil)},
               nnp_import=nnabla(F.ceil, "Ceil"))
register_rules(F.erf, onnx_export=onnx_unary("Erf"), onnx_import={"Erf": import_unary(F.erf)},
               nnp_import=nnabla(F.erf, "Erf"))


def _composite(build, doc):
    def export(g, inputs, attrs):
        return build(g, inputs[0], attrs)
    export.__doc__ = doc
    return export


def _c(g, value, like):
    return g.scalar(value, like)


def _sign(g, x, attrs):
    positive = g.op("Where", [g.op("Greater", [x, _c(g, 0.0, x)]), _c(g, 1.0, x),
                              _c(g, float(attrs["alpha"]), x)])
    return g.op("Where", [g.op("Less", [x, _c(g, 0.0, x)]), _c(g, -1.0, x), positive])


def _round(g, x, attrs):
    up = g.op("Floor", [g.op("Add", [g.op("Abs", [x]), _c(g, 0.5, x)])])
    return g.op("Where", [g.op("Less", [x, _c(g, 0.0, x)]), g.op("Neg", [up]), up])


def _hard_sigmoid(g, x, attrs):
    y = g.op("Add", [g.op("Mul", [x, _c(g, 0.2, x)]), _c(g, 0.5, x)])
    return g.op("Clip", [y, _c(g, 0.0, x), _c(g, 1.0, x)])


def _softsign(g, x, attrs):
    return g.op("Div", [x, g.op("Add", [g.op("Abs", [x]), _c(g, 1.0, x)])])


def _mish(g, x, attrs):
    return g.op("Mul", [x, g.op("Tanh", [g.op("Softplus", [x])])])


def _sinc(g, x, attrs):
    zero = g.op("Equal", [x, _c(g, 0.0, x)])
    safe = g.op("Where", [zero, _c(g, 1.0, x), x])
    return g.op("Where", [zero, _c(g, 1.0, x), g.op("Div", [g.op("Sin", [safe]), safe])])


def _is_nan(g, x):
    return g.op("Not", [g.op("Equal", [x, x])])


def _is_inf(g, x):
    return g.op("Equal", [g.op("Abs", [x]), _c(g, np.inf, x)])


def _concatenated(op_type):
    def build(g, x, attrs):
        a = norm_axis(int(attrs["axis"]), g.ndim(x))
        extra = {"alpha": float(attrs["alpha"])} if "alpha" in attrs else {}
        return g.op("Concat", [g.op(op_type, [x], **extra),
                               g.op(op_type, [g.op("Neg", [x])], **extra)], axis=a)
    return build


# NNabla 1.39's function of each (the same parameters under the same names)
_NNABLA = {
    F.sign: nnabla(F.sign, "Sign", alpha=float), F.round: nnabla(F.round, "Round"),
    F.hard_sigmoid: nnabla(F.hard_sigmoid, "HardSigmoid"),
    F.hard_tanh: nnabla(F.hard_tanh, "HardTanh"), F.softsign: nnabla(F.softsign, "SoftSign"),
    F.log_sigmoid: nnabla(F.log_sigmoid, "LogSigmoid"), F.mish: nnabla(F.mish, "Mish"),
    F.tanh_shrink: nnabla(F.tanh_shrink, "TanhShrink"), F.sinc: nnabla(F.sinc, "Sinc"),
    F.crelu: nnabla(F.crelu, "CReLU", axis=int),
    F.celu: nnabla(F.celu, "CELU", alpha=float, axis=int),
    F.isnan: nnabla(F.isnan, "IsNaN"), F.isinf: nnabla(F.isinf, "IsInf"),
    F.reset_nan: nnabla(F.reset_nan, "ResetNaN", val=float),
    F.reset_inf: nnabla(F.reset_inf, "ResetInf", val=float),
}

for _f, _build, _doc in (
        (F.sign, _sign, "Greater, Less, Where"),
        (F.round, _round, "Abs, Add, Floor, Neg, Less, Where (halves away from zero)"),
        (F.hard_sigmoid, _hard_sigmoid, "Mul, Add, Clip"),
        (F.hard_tanh, lambda g, x, a: g.op("Clip", [x, _c(g, -1.0, x), _c(g, 1.0, x)]),
         "Clip"),
        (F.softsign, _softsign, "Abs, Add, Div"),
        (F.log_sigmoid, lambda g, x, a: g.op("Neg", [g.op("Softplus", [g.op("Neg", [x])])]),
         "Neg, Softplus, Neg"),
        (F.mish, _mish, "Softplus, Tanh, Mul"),
        (F.tanh_shrink, lambda g, x, a: g.op("Sub", [x, g.op("Tanh", [x])]), "Tanh, Sub"),
        (F.sinc, _sinc, "Equal, Where, Sin, Div"),
        (F.crelu, _concatenated("Relu"), "Relu, Neg, Concat"),
        (F.celu, _concatenated("Elu"), "Elu, Neg, Concat"),
        (F.isnan, lambda g, x, a: g.cast(_is_nan(g, x), g.dtype(x)), "Equal, Not, Cast"),
        (F.isinf, lambda g, x, a: g.cast(_is_inf(g, x), g.dtype(x)), "Abs, Equal, Cast"),
        (F.reset_nan, lambda g, x, a: g.op("Where", [_is_nan(g, x), _c(g, float(a["val"]), x),
                                                     x]), "Equal, Not, Where"),
        (F.reset_inf, lambda g, x, a: g.op("Where", [_is_inf(g, x), _c(g, float(a["val"]), x),
                                                     x]), "Abs, Equal, Where")):
    register_rules(_f, onnx_export=_composite(_build, _doc), onnx_import=Unmapped(COMPOSITE),
                   nnp_import=_NNABLA[_f])

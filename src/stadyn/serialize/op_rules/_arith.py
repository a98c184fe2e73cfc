"""Rules of the element-wise arithmetic and maths ops (``stadyn/ops/_arith.py``)."""

from __future__ import annotations

import numpy as np
import torch

from ... import cntk_semantics as S
from ... import functions as F
from ._common import SCALAR_FORM, import_unary, onnx_unary
from ._cntk_read_more import clip_cntk, clip_cntk_v1, straight_through_cntk
from ._cntk_rules import cntk_elementwise, cntk_same
from ._nnabla import nnabla
from . import _nnabla_composed as composed
from ._table import Unmapped, register_rules


def _torch_of(dtype) -> torch.dtype:
    return torch.from_numpy(np.empty(0, dtype=dtype)).dtype


def _numpy_of(dtype: torch.dtype) -> np.dtype:
    return torch.empty(0, dtype=dtype).numpy().dtype


def _binary_onnx(op_type):
    def export(g, inputs, attrs):
        a, b = inputs[0], inputs[1]
        da, db = g.dtype(a), g.dtype(b)
        if da != db:  # torch promotes mixed dtypes; ONNX wants them equal (Pow: the base's)
            target = _numpy_of(torch.promote_types(_torch_of(da), _torch_of(db)))
            a = a if da == target else g.cast(a, target)
            if op_type != "Pow":
                b = b if db == target else g.cast(b, target)
        return g.op(op_type, [a, b])
    export.__doc__ = op_type
    return export


def _import_binary(f):
    def build(node):
        a, b = node.dtype(0), node.dtype(1)
        if f is F.div2 and a.kind != "f":
            node.unsupported(f"integer division ({a}): div2 is true division")
        if f is F.pow2:
            if a.kind != "f" and b.kind == "f":
                node.unsupported(f"{a} base with a {b} exponent (torch gives floats)")
            if a != b and (a.kind == b.kind or a.kind != "f"):
                node.unsupported(f"{a} base with a {b} exponent (torch promotes the result)")
        return f(node.var(0), node.var(1))
    return build


def _import_fold(f):
    """Variadic ONNX ops (Max, Min, Sum, Mean): a chain of binary catalog ops."""
    def build(node):
        args = [node.var(i) for i in range(node.n_inputs) if node.has(i)]
        if node.op_type == "Mean" and node.dtype(0).kind != "f":
            node.unsupported(f"{node.dtype(0)} inputs")
        if len(args) == 1:
            y = F.identity(args[0])
        else:
            y = args[0]
            for other in args[1:]:
                y = f(y, other)
        if node.op_type == "Mean" and len(args) > 1:
            y = F.mul_scalar(y, 1.0 / len(args))
        return y
    return build


register_rules(F.add2, onnx_export=_binary_onnx("Add"),
               onnx_import={"Add": _import_binary(F.add2), "Sum": _import_fold(F.add2),
                            "Mean": _import_fold(F.add2)},
               nnp_import=nnabla(F.add2, "Add2", broadcast=True, inplace=bool),
               cntk_import={"Plus": cntk_elementwise(F.add2)},
               cntk_v1_import={"Plus": cntk_elementwise(F.add2)})
register_rules(F.sub2, onnx_export=_binary_onnx("Sub"), onnx_import={"Sub": _import_binary(F.sub2)},
               nnp_import=nnabla(F.sub2, "Sub2", broadcast=True, inplace=bool),
               cntk_import={"Minus": cntk_elementwise(F.sub2)},
               cntk_v1_import={"Minus": cntk_elementwise(F.sub2)})
register_rules(F.mul2, onnx_export=_binary_onnx("Mul"), onnx_import={"Mul": _import_binary(F.mul2)},
               nnp_import=nnabla(F.mul2, "Mul2", broadcast=True, inplace=bool),
               cntk_import={"ElementTimes": cntk_elementwise(F.mul2)},
               cntk_v1_import={"ElementTimes": cntk_elementwise(F.mul2)})
register_rules(F.div2, onnx_export=_binary_onnx("Div"), onnx_import={"Div": _import_binary(F.div2)},
               nnp_import=nnabla(F.div2, "Div2", broadcast=True, inplace=bool),
               cntk_import={"ElementDivide": cntk_elementwise(S.divide)})
register_rules(F.pow2, onnx_export=_binary_onnx("Pow"), onnx_import={"Pow": _import_binary(F.pow2)},
               nnp_import=nnabla(F.pow2, "Pow2", broadcast=True, inplace=bool),
               cntk_import={"Pow": cntk_elementwise(F.pow2)})
register_rules(F.maximum2, onnx_export=_binary_onnx("Max"),
               onnx_import={"Max": _import_fold(F.maximum2)},
               nnp_import=nnabla(F.maximum2, "Maximum2", broadcast=True))
register_rules(F.minimum2, onnx_export=_binary_onnx("Min"),
               onnx_import={"Min": _import_fold(F.minimum2)},
               nnp_import=nnabla(F.minimum2, "Minimum2", broadcast=True))


def _scalar_onnx(op_type, reflected=False):
    def export(g, inputs, attrs):
        x = inputs[0]
        dtype = g.dtype(x)
        if dtype.kind != "f":  # torch: an integer tensor with a float scalar gives float32
            x, dtype = g.cast(x, np.float32), np.dtype(np.float32)
        c = g.const(np.asarray(attrs["val"], dtype=dtype))
        return g.op(op_type, [c, x] if reflected else [x, c])
    export.__doc__ = op_type
    return export


register_rules(F.add_scalar, onnx_export=_scalar_onnx("Add"), onnx_import=Unmapped(SCALAR_FORM),
               nnp_import=nnabla(F.add_scalar, "AddScalar", val=float, inplace=bool))
register_rules(F.mul_scalar, onnx_export=_scalar_onnx("Mul"),
               onnx_import={"Neg": import_unary(F.mul_scalar, -1.0)},
               nnp_import=nnabla(F.mul_scalar, "MulScalar", val=float, inplace=bool),
               cntk_import={"Negate": cntk_same(F.mul_scalar, -1.0)})
register_rules(F.pow_scalar, onnx_export=_scalar_onnx("Pow"), onnx_import=Unmapped(SCALAR_FORM),
               nnp_import=nnabla(F.pow_scalar, "PowScalar", val=float, inplace=bool))
register_rules(F.r_sub_scalar, onnx_export=_scalar_onnx("Sub", reflected=True),
               onnx_import=Unmapped(SCALAR_FORM),
               nnp_import=nnabla(F.r_sub_scalar, "RSubScalar", val=float))
register_rules(F.r_div_scalar, onnx_export=_scalar_onnx("Div", reflected=True),
               onnx_import={"Reciprocal": import_unary(F.r_div_scalar, 1.0)},
               nnp_import=nnabla(F.r_div_scalar, "RDivScalar", val=float),
               cntk_import={"Reciprocal": cntk_same(lambda v: S.divide(None, v))},
               cntk_v1_import={"Reciprocal": cntk_same(lambda v: S.divide(None, v))})
register_rules(F.r_pow_scalar, onnx_export=_scalar_onnx("Pow", reflected=True),
               onnx_import=Unmapped(SCALAR_FORM),
               nnp_import=nnabla(F.r_pow_scalar, "RPowScalar", val=float))
register_rules(F.maximum_scalar, onnx_export=_scalar_onnx("Max"),
               onnx_import=Unmapped(SCALAR_FORM),
               nnp_import={**nnabla(F.maximum_scalar, "MaximumScalar", val=float),
                           **composed.EPSILON_INSENSITIVE_LOSS})
register_rules(F.minimum_scalar, onnx_export=_scalar_onnx("Min"),
               onnx_import=Unmapped(SCALAR_FORM),
               nnp_import=nnabla(F.minimum_scalar, "MinimumScalar", val=float))


def _clip_onnx(g, inputs, attrs):
    """Clip"""
    x = inputs[0]
    dtype = g.dtype(x)
    if dtype.kind != "f":
        x, dtype = g.cast(x, np.float32), np.dtype(np.float32)
    return g.op("Clip", [x, g.const(np.asarray(attrs["min"], dtype=dtype)),
                         g.const(np.asarray(attrs["max"], dtype=dtype))])


def _import_clip(node):
    x = node.var(0)
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} input (the catalog's clip returns floats)")
    if node.opset < 11:
        lo, hi = node.attr("min"), node.attr("max")
    else:
        lo = node.const(1) if node.has(1) else None
        hi = node.const(2) if node.has(2) else None
    lo = None if lo is None else float(np.asarray(lo))
    hi = None if hi is None else float(np.asarray(hi))
    if lo is not None and hi is not None:
        return F.clip_by_value_scalar(x, lo, hi)
    if lo is not None:
        return F.maximum_scalar(x, lo)
    if hi is not None:
        return F.minimum_scalar(x, hi)
    return F.identity(x)


def _clip_nnp(maximum, minimum):
    """NNabla has no clip function: its ``F.clip_by_value`` writes the lower bound's
    ``maximum`` then the upper bound's ``minimum``."""
    def export(e, inputs, attrs):
        if maximum.endswith("Scalar"):
            low = e.variable("clip_low", e.shape(inputs[0]))
            e.function(maximum, inputs[:1], {"val": float(attrs["min"])}, [low])
            e.function(minimum, [low], {"val": float(attrs["max"])})
            return
        # a bound given as a number is NNabla's MaximumScalar / MinimumScalar, as its
        # F.clip_by_value writes a scalar bound
        x, lo, hi = inputs[0], inputs[1], inputs[2]
        if 1 in e.numbers:
            low = e.variable("clip_low", e.shape(x))
            e.function("MaximumScalar", [x], {"val": e.numbers[1]}, [low])
        else:
            x, lo = e.same_rank([x, lo])
            low = e.variable("clip_low", np.broadcast_shapes(e.shape(x), e.shape(lo)))
            e.function(maximum, [x, lo], {}, [low])
        if 2 in e.numbers:
            e.function("MinimumScalar", [low], {"val": e.numbers[2]})
        else:
            low, hi = e.same_rank([low, hi])
            e.function(minimum, [low, hi])
    export.takes_numbers = not maximum.endswith("Scalar")
    return export


_NNABLA_CLIP = Unmapped("NNabla has no clip function: the export's maximum and minimum import "
                        "one by one")
register_rules(F.clip_by_value_scalar, onnx_export=_clip_onnx, onnx_import={"Clip": _import_clip},
               cntk_import={"Clip": clip_cntk, "StraightThrough": straight_through_cntk},
               cntk_v1_import={"Clip": clip_cntk_v1},
               nnp_export=_clip_nnp("MaximumScalar", "MinimumScalar"), nnp_import=_NNABLA_CLIP)


def _clip_by_value_onnx(g, inputs, attrs):
    """Min, Max"""
    x, lo, hi = inputs[0], inputs[1], inputs[2]
    dtype = np.result_type(g.dtype(x), g.dtype(lo), g.dtype(hi))
    x, lo, hi = [n if g.dtype(n) == dtype else g.cast(n, dtype) for n in (x, lo, hi)]
    return g.op("Max", [g.op("Min", [x, hi]), lo])


register_rules(F.clip_by_value, onnx_export=_clip_by_value_onnx,
               onnx_import=Unmapped("ONNX's Clip takes constant bounds and imports as "
                                    "clip_by_value_scalar; the export (Min, Max) as "
                                    "minimum2 and maximum2"),
               nnp_export=_clip_nnp("Maximum2", "Minimum2"), nnp_import=_NNABLA_CLIP)


def _batch_matmul_onnx(g, inputs, attrs):
    """MatMul (and Transpose)"""
    a, b = inputs[0], inputs[1]

    def swap_last(x, flag):
        n = g.ndim(x)
        if not flag or n < 2:
            return x
        return g.op("Transpose", [x], perm=list(range(n - 2)) + [n - 1, n - 2])
    return g.op("MatMul", [swap_last(a, attrs["transpose_a"]), swap_last(b, attrs["transpose_b"])])


def _import_matmul(node):
    return F.batch_matmul(node.var(0), node.var(1))


register_rules(F.batch_matmul, onnx_export=_batch_matmul_onnx,
               onnx_import={"MatMul": _import_matmul},
               nnp_import=nnabla(F.batch_matmul, "BatchMatmul", transpose_a=bool,
                                  transpose_b=bool))


def _nnabla_rule(node, values):
    """NNabla's ``Abs``: F.abs's ``rule="nnabla"`` (gradient ``x < 0 ? -1 : 1``)."""
    return {**values, "rule": "nnabla"}


register_rules(F.abs, onnx_export=onnx_unary("Abs"),
               onnx_import={"Abs": import_unary(F.abs, floats_only=False)},
               nnp_import=nnabla(F.abs, "Abs", convert=_nnabla_rule),   # gradient 1 at 0
               cntk_import={"Abs": cntk_same(F.abs, "cntk")},   # CNTK's gradient Sgn(x)
               cntk_v1_import={"Abs": cntk_same(F.abs, "cntk")})
register_rules(F.exp, onnx_export=onnx_unary("Exp"), onnx_import={"Exp": import_unary(F.exp)},
               nnp_import=nnabla(F.exp, "Exp"), cntk_import={"Exp": cntk_same(F.exp)})
register_rules(F.log, onnx_export=onnx_unary("Log"), onnx_import={"Log": import_unary(F.log)},
               nnp_import=nnabla(F.log, "Log"))
# a CNTK model file's Log is CNTK's, floored at -85.1 below 1e-37 (CNTK 2.7 loads it so)
register_rules(F.cntk_log, onnx_export=onnx_unary("Log"),
               cntk_import={"Log": cntk_same(F.cntk_log)},
               onnx_import=Unmapped("ONNX's Log imports as log (ONNX has no floor at 1e-37)"),
               nnp_import=Unmapped("NNabla's Log imports as log (NNabla has no floor at 1e-37)"),
               nnp_export=Unmapped("NNabla's Log has no floor at 1e-37"))


def _sqrt_nnp(e, inputs, attrs):
    """NNabla 1.39 has no Sqrt function (no ``F.sqrt``; its loaders refuse the type): the
    square root is ``PowScalar`` with ``val=0.5``, as an NNabla user writes it."""
    e.function("PowScalar", inputs[:1], {"val": 0.5})


register_rules(F.sqrt, onnx_export=onnx_unary("Sqrt"), onnx_import={"Sqrt": import_unary(F.sqrt)},
               nnp_import=nnabla(F.sqrt, "Sqrt"), nnp_export=_sqrt_nnp,
               cntk_import={"Sqrt": cntk_same(F.sqrt, "cntk")})       # sqrt(x > 0 ? x : 0)


def _add_n_onnx(g, inputs, attrs):
    """Sum"""
    return g.op("Sum", list(inputs))


def _mul_n_onnx(g, inputs, attrs):
    """Mul (a chain; Identity for one input)"""
    y = inputs[0] if len(inputs) > 1 else g.op("Identity", [inputs[0]])
    for v in inputs[1:]:
        y = g.op("Mul", [y, v])
    return y


def _mul_n_nnp(node, values):
    """NNabla's MulN backward, ``dy * y / x_i``, reads the output: F.mul_n's
    ``rule="nnabla"``."""
    return {**values, "rule": "nnabla"}


register_rules(F.add_n, onnx_export=_add_n_onnx,
               onnx_import=Unmapped("ONNX's Sum imports as a chain of add2"),
               nnp_import=nnabla(F.add_n, "AddN"))
register_rules(F.mul_n, onnx_export=_mul_n_onnx,
               onnx_import=Unmapped("ONNX has no variadic product: the Mul chain imports as mul2"),
               nnp_import=nnabla(F.mul_n, "MulN", convert=_mul_n_nnp))

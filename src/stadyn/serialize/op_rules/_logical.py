"""Rules of the comparisons and selection ops (``stadyn/ops/_logical.py``).

The import rules also carry ONNX's boolean comparisons back into the catalog:
``Greater(a, b)`` imports as ``cast(greater(a, b), "bool")``.
"""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ._cntk_rules import cntk_elementwise
from ._nnabla import nnabla
from ._table import Unmapped, register_rules


def _same_dtype(g, names):
    """``names`` cast to the type torch computes them in (ONNX wants equal input types)."""
    dtypes = [g.dtype(n) for n in names]
    target = dtypes[0]
    for d in dtypes[1:]:
        target = np.promote_types(target, d)
    return [n if g.dtype(n) == target else g.cast(n, target) for n in names], target


def _comparison_onnx(op_type):
    def export(g, inputs, attrs):
        (a, b), dtype = _same_dtype(g, list(inputs[:2]))
        return g.cast(g.op(op_type, [a, b]), dtype)
    export.__doc__ = f"{op_type}, Cast"
    return export


def _import_comparison(f):
    def build(node):
        return F.cast(f(node.var(0), node.var(1)), "bool")
    return build


def _equal(x0, x1):
    return F.mul2(F.greater_equal(x0, x1), F.greater_equal(x1, x0))


def _not_equal(x0, x1):
    return F.r_sub_scalar(_equal(x0, x1), 1.0)


register_rules(F.greater, onnx_export=_comparison_onnx("Greater"),
               onnx_import={"Greater": _import_comparison(F.greater)},
               nnp_import=nnabla(F.greater, "Greater", broadcast=True),
               cntk_import={"Greater": cntk_elementwise(F.greater)})
register_rules(F.greater_equal, onnx_export=_comparison_onnx("GreaterOrEqual"),
               onnx_import={"GreaterOrEqual": _import_comparison(F.greater_equal)},
               nnp_import=nnabla(F.greater_equal, "GreaterEqual", broadcast=True),
               cntk_import={"GreaterEqual": cntk_elementwise(F.greater_equal),
                            "Equal": cntk_elementwise(_equal),
                            "NotEqual": cntk_elementwise(_not_equal)})
register_rules(F.less, onnx_export=_comparison_onnx("Less"),
               onnx_import={"Less": _import_comparison(F.less)},
               nnp_import=nnabla(F.less, "Less", broadcast=True),
               cntk_import={"Less": cntk_elementwise(F.less)})


def _where_onnx(g, inputs, attrs):
    """Where (a non-boolean condition compared with 0 by Cast)"""
    cond, (a, b), _ = inputs[0], *_same_dtype(g, list(inputs[1:3]))
    shape, target = g.shape(cond), g.shape(inputs[1])
    if g.dtype(cond) != np.bool_:
        cond = g.cast(cond, np.bool_)
    if len(shape) < len(target) and tuple(target[:len(shape)]) == tuple(shape):
        cond = g.reshape(cond, list(shape) + [1] * (len(target) - len(shape)))   # NNabla's rule
    return g.op("Where", [cond, a, b])


def _import_where(node):
    cond = node.var(0)
    rank = max(len(node.shape(i)) for i in range(3))
    if len(node.shape(0)) < rank:   # ONNX broadcasts from the last axis (NumPy's rule)
        cond = F.reshape(cond, (1,) * (rank - len(node.shape(0))) + tuple(node.shape(0)))
    return F.where(cond, node.var(1), node.var(2))


register_rules(F.where, onnx_export=_where_onnx, onnx_import={"Where": _import_where},
               cntk_import={"Select": cntk_elementwise(F.where)},
               nnp_import=nnabla(F.where, "Where"))


def _take_along_axis_onnx(g, inputs, attrs):
    """GatherElements"""
    x, ids = inputs[0], inputs[1]
    if g.dtype(ids) not in (np.int64, np.int32):
        ids = g.cast(ids, np.int64)
    return g.op("GatherElements", [x, ids], axis=int(attrs["axis"]) % max(g.ndim(x), 1))


def _import_gather_elements(node):
    if node.dtype(1).kind not in "iu":
        node.unsupported(f"{node.dtype(1)} indices")
    return F.take_along_axis(node.var(0), node.var(1), int(node.attr("axis", 0)))


_NO_TAKE = Unmapped("NNabla 1.39 has no function for it (its gather takes whole slices, "
                    "gather_nd index tuples)")
register_rules(F.take_along_axis, onnx_export=_take_along_axis_onnx,
               onnx_import={"GatherElements": _import_gather_elements},
               nnp_export=_NO_TAKE, nnp_import=_NO_TAKE)

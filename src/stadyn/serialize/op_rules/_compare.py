"""Rules of the further comparisons and the logical functions (``stadyn/ops/_compare.py``):
ONNX compares into booleans, so each export casts back to the inputs' type; ``Equal``,
``LessOrEqual``, ``And``, ``Or``, ``Xor`` and ``Not`` import back as ``cast(op, "bool")``.
The scalar comparisons are NNabla's ``GreaterScalar`` ... ``NotEqualScalar`` in ``.nnp`` files."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ._cntk_rules import cntk_elementwise
from ._common import SCALAR_FORM, COMPOSITE
from ._logical import _comparison_onnx, _import_comparison, _same_dtype
from ._nnabla import nnabla
from . import _nnabla_composed as composed
from ._table import Unmapped, register_rules

register_rules(F.equal, onnx_export=_comparison_onnx("Equal"),
               onnx_import={"Equal": _import_comparison(F.equal)},
               nnp_import=nnabla(F.equal, "Equal", broadcast=True))
register_rules(F.less_equal, onnx_export=_comparison_onnx("LessOrEqual"),
               onnx_import={"LessOrEqual": _import_comparison(F.less_equal)},
               nnp_import=nnabla(F.less_equal, "LessEqual", broadcast=True),
               # (CNTK's LessEqual(x0, x1) is x0 <= x1, over its inputs in that order)
               cntk_import={"LessEqual": cntk_elementwise(F.less_equal)})


def _not_equal_onnx(g, inputs, attrs):
    """Equal, Not, Cast"""
    (a, b), dtype = _same_dtype(g, list(inputs[:2]))
    return g.cast(g.op("Not", [g.op("Equal", [a, b])]), dtype)


register_rules(F.not_equal, onnx_export=_not_equal_onnx, onnx_import=Unmapped(COMPOSITE),
               nnp_import={**nnabla(F.not_equal, "NotEqual", broadcast=True),
                           **composed.BINARY_ERROR})


def _scalar_comparison_onnx(op_type, negate=False):
    def export(g, inputs, attrs):
        x = inputs[0]
        out = g.op(op_type, [x, g.const(np.asarray(attrs["val"], dtype=g.dtype(x)))])
        return g.cast(g.op("Not", [out]) if negate else out, g.dtype(x))
    export.__doc__ = f"{op_type}{', Not' if negate else ''}, Cast"
    return export


for _f, _type, _negate, _nnabla in (
        (F.greater_scalar, "Greater", False, "GreaterScalar"),
        (F.greater_equal_scalar, "GreaterOrEqual", False, "GreaterEqualScalar"),
        (F.less_scalar, "Less", False, "LessScalar"),
        (F.less_equal_scalar, "LessOrEqual", False, "LessEqualScalar"),
        (F.equal_scalar, "Equal", False, "EqualScalar"),
        (F.not_equal_scalar, "Equal", True, "NotEqualScalar")):
    register_rules(_f, onnx_export=_scalar_comparison_onnx(_type, _negate),
                   onnx_import=Unmapped(SCALAR_FORM),
                   nnp_import={**nnabla(_f, _nnabla, val=float),
                               **(composed.LOGICAL_SCALAR if _f is F.not_equal_scalar else {})})


def _logical_onnx(op_type):
    def export(g, inputs, attrs):
        names = list(inputs[:2]) if op_type != "Not" else [inputs[0]]
        dtype = np.result_type(*[g.dtype(n) for n in names])
        bools = [n if g.dtype(n) == np.bool_ else g.cast(n, np.bool_) for n in names]
        return g.cast(g.op(op_type, bools), dtype)
    export.__doc__ = f"Cast, {op_type}, Cast"
    return export


def _import_logical(f):
    def build(node):
        return F.cast(f(*[node.var(i) for i in range(node.n_inputs)]), "bool")
    return build


for _f, _type, _nnabla in ((F.logical_and, "And", "LogicalAnd"), (F.logical_or, "Or", "LogicalOr"),
                           (F.logical_xor, "Xor", "LogicalXor"),
                           (F.logical_not, "Not", "LogicalNot")):
    register_rules(_f, onnx_export=_logical_onnx(_type), onnx_import={_type: _import_logical(_f)},
                   nnp_import=nnabla(_f, _nnabla, broadcast=_f is not F.logical_not))

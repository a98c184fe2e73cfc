"""Rules of the trigonometric family (``stadyn/ops/_trig.py``): one ONNX op and one NNabla
function each, both ways; ONNX has no ``atan2``."""

from __future__ import annotations

from ... import functions as F
from ._cntk_rules import cntk_same
from ._common import import_unary, onnx_unary
from ._nnabla import nnabla
from ._table import Unmapped, register_rules

for _f, _type, _nnabla in (
        (F.sin, "Sin", "Sin"), (F.cos, "Cos", "Cos"), (F.tan, "Tan", "Tan"),
        (F.asin, "Asin", "ASin"), (F.acos, "Acos", "ACos"), (F.atan, "Atan", "ATan"),
        (F.sinh, "Sinh", "Sinh"), (F.cosh, "Cosh", "Cosh"), (F.asinh, "Asinh", "ASinh"),
        (F.acosh, "Acosh", "ACosh"), (F.atanh, "Atanh", "ATanh")):
    register_rules(_f, onnx_export=onnx_unary(_type), onnx_import={_type: import_unary(_f)},
                   nnp_import=nnabla(_f, _nnabla),
                   # (CNTK's Sin, Cos, Tan, ...: the same values, CNTK 2.7's model files
                   # read back, tests/fixtures/cntk_read_more; CNTK has no Acosh)
                   **({"cntk_import": {_type: cntk_same(_f)}} if _type != "Acosh" else {}))

register_rules(F.atan2, onnx_export=Unmapped("ONNX has no atan2 (its quadrant rule needs Where "
                                             "over signs, not yet written)"),
               onnx_import=Unmapped("ONNX has no atan2"), nnp_import=nnabla(F.atan2, "ATan2"))

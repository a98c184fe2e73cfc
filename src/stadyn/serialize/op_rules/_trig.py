"""Rules of the trigonometric family (``stadyn/ops/_trig.py``): one ONNX op each, both ways;
ONNX has no ``atan2``."""

from __future__ import annotations

from ... import functions as F
from ._common import import_unary, onnx_unary
from ._table import Unmapped, register_rules

for _f, _type in ((F.sin, "Sin"), (F.cos, "Cos"), (F.tan, "Tan"), (F.asin, "Asin"),
                  (F.acos, "Acos"), (F.atan, "Atan"), (F.sinh, "Sinh"), (F.cosh, "Cosh"),
                  (F.asinh, "Asinh"), (F.acosh, "Acosh"), (F.atanh, "Atanh")):
    register_rules(_f, onnx_export=onnx_unary(_type), onnx_import={_type: import_unary(_f)})

register_rules(F.atan2, onnx_export=Unmapped("ONNX has no atan2 (its quadrant rule needs Where "
                                             "over signs, not yet written)"),
               onnx_import=Unmapped("ONNX has no atan2"))

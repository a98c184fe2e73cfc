"""Rules of the gradient op (``stadyn/ops/_gradient.py``): no file format holds it."""

from __future__ import annotations

from ... import functions as F
from ._table import Unmapped, register_rules

register_rules(F.grad, onnx_export=Unmapped(F.grad.spec.unstorable),
               onnx_import=Unmapped("ONNX has no gradient op"),
               nnp_export=Unmapped(F.grad.spec.unstorable),
               nnp_import=Unmapped("NNabla's files hold no gradient function"))

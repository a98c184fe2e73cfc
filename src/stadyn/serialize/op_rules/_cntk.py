"""Rules of the losses and metrics with CNTK's semantics (``stadyn/ops/_cntk.py``)."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ...ops import norm_axis
from ._common import COMPOSITE
from ._table import Unmapped, register_rules


def _cross_entropy_with_softmax_onnx(g, inputs, attrs):
    """LogSoftmax, Mul, ReduceSum, Neg"""
    z, t = inputs
    a = norm_axis(attrs["axis"], g.ndim(z))
    if g.dtype(t) != g.dtype(z):
        t = g.cast(t, g.dtype(z))
    logp = g.op("LogSoftmax", [z], axis=a)
    return g.op("Neg", [g.reduce("ReduceSum", g.op("Mul", [t, logp]), [a], True)])


register_rules(F.cross_entropy_with_softmax, onnx_export=_cross_entropy_with_softmax_onnx,
               onnx_import=Unmapped(COMPOSITE))


def _classification_error_onnx(g, inputs, attrs):
    """ArgMax, GatherElements, GreaterOrEqual, ReduceSum, Sub, GreaterOrEqual

    The outputs above the target's are counted as all minus those not above (``score >= z``),
    so a NaN counts."""
    z, t = inputs
    a = norm_axis(attrs["axis"], g.ndim(z))
    score = g.op("GatherElements", [z, g.op("ArgMax", [t], axis=a, keepdims=1)], axis=a)
    not_better = g.reduce("ReduceSum", g.cast(g.op("GreaterOrEqual", [score, z]), np.int64),
                          [a], True)
    better = g.op("Sub", [g.const(np.asarray(g.shape(z)[a], dtype=np.int64)), not_better])
    wrong = g.op("GreaterOrEqual", [better, g.const(np.asarray(int(attrs["topN"]), np.int64))])
    return g.cast(wrong, g.dtype(z) if g.dtype(z).kind == "f" else np.float32)


register_rules(F.classification_error, onnx_export=_classification_error_onnx,
               onnx_import=Unmapped(COMPOSITE))

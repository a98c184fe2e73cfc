"""Rules of simulated quantisation (``stadyn/ops/_quantize.py``): ``fixed_point_quantize`` is
Abs, Div, Add, Floor, Mul, Where and Clip in ONNX (its QuantizeLinear stores integers, not the
quantised floats), which import back one by one."""

from __future__ import annotations

from ... import functions as F
from ._common import COMPOSITE
from ._table import Unmapped, register_rules


def _fixed_point_quantize_onnx(g, inputs, attrs):
    """Abs, Div, Add, Floor, Mul, Neg, Less, Where, Clip"""
    x = inputs[0]
    if not attrs["quantize"]:
        return g.op("Identity", [x])
    n, delta = int(attrs["n"]), float(attrs["delta"])
    high = (2 ** (n - 1) - 1) * delta if attrs["sign"] else (2 ** n - 1) * delta
    low = -high if attrs["sign"] else 0.0
    steps = g.op("Floor", [g.op("Add", [g.op("Div", [g.op("Abs", [x]), g.scalar(delta, x)]),
                                        g.scalar(0.5, x)])])
    magnitude = g.op("Mul", [steps, g.scalar(delta, x)])
    signed = g.op("Where", [g.op("Less", [x, g.scalar(0.0, x)]), g.op("Neg", [magnitude]),
                            magnitude])
    return g.op("Clip", [signed, g.scalar(low, x), g.scalar(high, x)])


register_rules(F.fixed_point_quantize, onnx_export=_fixed_point_quantize_onnx,
               onnx_import=Unmapped(COMPOSITE))

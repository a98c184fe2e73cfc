"""Rules of simulated quantisation (``stadyn/ops/_quantize.py``): ``fixed_point_quantize`` is
Abs, Div, Add, Floor, Mul, Where and Clip in ONNX, ``pow2_quantize`` adds Log and Pow (ONNX's
QuantizeLinear stores integers, not the quantised floats); the ops import back one by one."""

from __future__ import annotations

import math

from ... import functions as F
from ._common import COMPOSITE
from ._nnabla import nnabla
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


def _quantize_nnp(type_name, *fields):
    """NNabla's quantiser, or with ``quantize=False`` (NNabla's ``F`` then returns ``x``
    itself) an ``Identity``."""
    def export(e, inputs, attrs):
        if not attrs["quantize"]:
            e.function("Identity", inputs[:1])
            return
        e.function(type_name, [i for i in inputs if i is not None], {f: attrs[f] for f in fields})
    return export


register_rules(F.fixed_point_quantize, onnx_export=_fixed_point_quantize_onnx,
               onnx_import=Unmapped(COMPOSITE),
               nnp_export=_quantize_nnp("FixedPointQuantize", "sign", "n", "delta",
                                        "ste_fine_grained"),
               nnp_import=nnabla(F.fixed_point_quantize, "FixedPointQuantize", sign=bool, n=int,
                                 delta=float, ste_fine_grained=bool))


def _pow2_quantize_onnx(g, inputs, attrs):
    """Abs (Max with 0 unsigned), Max, Log, Div, Add, Floor, Pow, Clip, Less, Where, Neg"""
    x = inputs[0]
    if not attrs["quantize"]:
        return g.op("Identity", [x])
    sign, with_zero = bool(attrs["sign"]), bool(attrs["with_zero"])
    bits = int(attrs["n"]) - int(sign) - int(with_zero)
    high = 2.0 ** int(attrs["m"])
    low = 2.0 ** (int(attrs["m"]) - (2 ** bits - 1))
    magnitude = g.op("Abs", [x]) if sign else g.op("Max", [x, g.scalar(0.0, x)])
    above = g.op("Max", [magnitude, g.scalar(low, x)])      # the clip's floor; no log(0)
    log2 = g.op("Div", [g.op("Log", [above]), g.scalar(math.log(2.0), x)])
    exponent = g.op("Floor", [g.op("Add", [log2, g.scalar(0.5, x)])])
    q = g.op("Clip", [g.op("Pow", [g.scalar(2.0, x), exponent]), g.scalar(low, x),
                      g.scalar(high, x)])
    if with_zero:
        small = g.op("Less", [magnitude, g.scalar(low * 2.0 ** -0.5, x)])
        q = g.op("Where", [small, g.scalar(0.0, x), q])
    if sign:
        q = g.op("Where", [g.op("Less", [x, g.scalar(0.0, x)]), g.op("Neg", [q]), q])
    return q


register_rules(F.pow2_quantize, onnx_export=_pow2_quantize_onnx, onnx_import=Unmapped(COMPOSITE),
               nnp_export=_quantize_nnp("Pow2Quantize", "sign", "with_zero", "n", "m",
                                        "ste_fine_grained"),
               nnp_import=nnabla(F.pow2_quantize, "Pow2Quantize", sign=bool, with_zero=bool,
                                 n=int, m=int, ste_fine_grained=bool))


def _store_onnx(g, inputs, attrs):
    """Identity of x (the write into the buffer has no ONNX form)"""
    return g.op("Identity", [inputs[0]])


register_rules(F.store, onnx_export=_store_onnx,
               onnx_import=Unmapped("ONNX's Identity imports as identity; ONNX has no write into "
                                    "a parameter"))


register_rules(F.min_max_quantize,
               onnx_export=Unmapped("min_max_quantize updates its range in place as it runs "
                                    "(x_min_max, ema, eps); ONNX's QuantizeLinear stores "
                                    "integers, not the quantised floats"),
               onnx_import=Unmapped("ONNX has no op that quantises to floats"),
               nnp_export=_quantize_nnp("MinMaxQuantize", "decay", "x_min_max", "ema",
                                        "ste_fine_grained", "eps"),
               nnp_import=nnabla(F.min_max_quantize, "MinMaxQuantize", decay=float,
                                 x_min_max=bool, ema=bool, ste_fine_grained=bool, eps=float))

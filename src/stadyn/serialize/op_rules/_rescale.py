"""Rules of the norm rescalings (``stadyn/ops/_rescale.py``): ONNX spells each as reductions
and arithmetic (ReduceSum, Sqrt, Max, Div, Pow, ...), which import back one by one;
``weight_standardization`` with ``output_stat=True`` is refused (an inference graph needs
none)."""

from __future__ import annotations

from ... import functions as F
from ...ops import norm_axes
from ._common import COMPOSITE
from ._normalization import _normalized, _refuse_stats
from ._nnabla import all_axes, nnabla
from ._table import Unmapped, register_rules


def _axes(axis, ndim):
    if axis is None:
        return list(range(ndim))
    return norm_axes(list(axis) if isinstance(axis, (list, tuple, range)) else [axis], ndim)


def _clip_by_norm_onnx(g, inputs, attrs):
    """Mul, ReduceSum, Sqrt, Max, Div"""
    x = inputs[0]
    n = g.scalar(float(attrs["clip_norm"]), x)
    norm = g.op("Sqrt", [g.reduce("ReduceSum", g.op("Mul", [x, x]),
                                  _axes(attrs["axis"], g.ndim(x)), True)])
    return g.op("Div", [g.op("Mul", [x, n]), g.op("Max", [norm, n])])


def _norm_normalization_onnx(g, inputs, attrs):
    """Abs, Pow, ReduceSum, Add, Div"""
    x = inputs[0]
    p = 2.0 if attrs["p"] is None else float(attrs["p"])
    total = g.reduce("ReduceSum", g.op("Pow", [g.op("Abs", [x]), g.scalar(p, x)]),
                     _axes(attrs["axes"], g.ndim(x)), True)
    norm = g.op("Pow", [g.op("Add", [total, g.scalar(float(attrs["eps"]), x)]),
                        g.scalar(1.0 / p, x)])
    return g.op("Div", [x, norm])


def _weight_standardization_onnx(g, inputs, attrs):
    """ReduceMean, Sub, Mul, Add, Sqrt, Div"""
    _refuse_stats(g, attrs)
    w = inputs[0]
    c = norm_axes([attrs["channel_axis"]], g.ndim(w))[0]
    return _normalized(g, w, [a for a in range(g.ndim(w)) if a != c], attrs["eps"], "", "")


def _weight_normalization_onnx(g, inputs, attrs):
    """Mul, ReduceSum, Add, Sqrt, Reshape, Div"""
    w, gain = inputs
    n = g.ndim(w)
    d = norm_axes([attrs["dim"]], n)[0]
    squares = g.reduce("ReduceSum", g.op("Mul", [w, w]), [a for a in range(n) if a != d], True)
    norm = g.op("Sqrt", [g.op("Add", [squares, g.scalar(float(attrs["eps"]), w)])])
    shape = [1] * n
    shape[d] = -1
    return g.op("Div", [g.op("Mul", [w, g.reshape(gain, shape)]), norm])


def _weight_standardization_fields(e, inputs, attrs) -> dict:
    if attrs["output_stat"]:
        e.unsupported("output_stat=True (the statistics are not written)")
    return {"channel_axis": attrs["channel_axis"], "eps": attrs["eps"]}


_NNABLA = {
    F.norm_normalization: nnabla(F.norm_normalization, "NormNormalization",
                                 defaults={"p": 2.0, "axes": all_axes}, p=float, axes=list,
                                 eps=float),
    F.weight_standardization: nnabla(F.weight_standardization, "WeightStandardization",
                                     export=_weight_standardization_fields, channel_axis=int,
                                     eps=float, convert=lambda node, v: dict(v, rule="nnabla")),
    F.weight_normalization: nnabla(F.weight_normalization, "WeightNormalization", dim=int,
                                   eps=float),
    F.clip_by_norm: Unmapped("NNabla has no clip_by_norm function (its F.clip_by_norm is "
                             "a composition): the export's functions import one by one"),
}


def _clip_by_norm_nnp(e, inputs, attrs):
    """NNabla's ``F.clip_by_norm`` composition, function by function: ``x * clip_norm /
    maximum_scalar(sum(x ** 2, axis, keepdims) ** 0.5, clip_norm)``."""
    x = inputs[0]
    shape = e.shape(x)
    axes = list(range(len(shape))) if attrs["axis"] is None else _axes(attrs["axis"],
                                                                       len(shape))
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    clip = float(attrs["clip_norm"])
    scaled = e.variable("clip_scaled", shape)
    e.function("MulScalar", [x], {"val": clip}, [scaled])
    squares = e.variable("clip_squares", shape)
    e.function("PowScalar", [x], {"val": 2.0}, [squares])
    batch = e.keeps_batch and 0 not in axes      # a norm over the batch axis has none
    total = e.variable("clip_sum", kept, batch)
    e.function("Sum", [squares], {"axes": axes, "keep_dims": True}, [total])
    norm = e.variable("clip_norm", kept, batch)
    e.function("PowScalar", [total], {"val": 0.5}, [norm])
    floor = e.variable("clip_floor", kept, batch)
    e.function("MaximumScalar", [norm], {"val": clip}, [floor])
    e.function("Div2", [scaled, floor])


for _f, _rule in ((F.clip_by_norm, _clip_by_norm_onnx),
                  (F.norm_normalization, _norm_normalization_onnx),
                  (F.weight_standardization, _weight_standardization_onnx),
                  (F.weight_normalization, _weight_normalization_onnx)):
    register_rules(_f, onnx_export=_rule, onnx_import=Unmapped(COMPOSITE),
                   nnp_import=_NNABLA[_f],
                   nnp_export=_clip_by_norm_nnp if _f is F.clip_by_norm else None)

"""Rules of the normalisations and ``norm`` (``stadyn/ops/_normalization.py``): ONNX spells
each as reductions and arithmetic (ReduceMean, Sub, Mul, Add, Sqrt, Div; ReduceSum, Abs, Pow),
which import back one by one.  ``output_stat=True`` is refused (an inference graph needs none)."""

from __future__ import annotations

from ... import functions as F
from ...ops import norm_axes
from ._common import COMPOSITE
from ._nnabla import all_axes, nnabla
from ._table import Unmapped, register_rules


def _normalized(g, x, reduce, eps, beta, gamma, like=None):
    """``like``: a graph tensor of ``x``'s type (``x`` itself unless it is an intermediate)."""
    mean = g.reduce("ReduceMean", x, reduce, True)
    centred = g.op("Sub", [x, mean])
    var = g.reduce("ReduceMean", g.op("Mul", [centred, centred]), reduce, True)
    y = g.op("Div", [centred, g.op("Sqrt", [g.op("Add", [var, g.scalar(float(eps), like or x)])])])
    if gamma:
        y = g.op("Mul", [y, gamma])
    if beta:
        y = g.op("Add", [y, beta])
    return y


def _kept(value, ndim):
    return norm_axes(value if isinstance(value, (list, tuple)) else [value], ndim)


def _refuse_stats(g, attrs):
    if attrs["output_stat"]:
        g.unsupported("output_stat=True (the statistics are not exported)")


def _layer_normalization_onnx(g, inputs, attrs):
    """ReduceMean, Sub, Mul, Add, Sqrt, Div"""
    _refuse_stats(g, attrs)
    x, beta, gamma = inputs
    n = g.ndim(x)
    keep = _kept(attrs["batch_axis"], n)
    return _normalized(g, x, [a for a in range(n) if a not in keep], attrs["eps"], beta, gamma)


def _instance_normalization_onnx(g, inputs, attrs):
    """ReduceMean, Sub, Mul, Add, Sqrt, Div"""
    _refuse_stats(g, attrs)
    x, beta, gamma = inputs
    n = g.ndim(x)
    keep = _kept(attrs["batch_axis"], n) + _kept(attrs["channel_axis"], n)
    return _normalized(g, x, [a for a in range(n) if a not in keep], attrs["eps"], beta, gamma)


def _group_normalization_onnx(g, inputs, attrs):
    """Reshape, ReduceMean, Sub, Mul, Add, Sqrt, Div"""
    _refuse_stats(g, attrs)
    x, beta, gamma = inputs
    shape = list(g.shape(x))
    c = _kept(attrs["channel_axis"], len(shape))[0]
    groups = int(attrs["num_groups"])
    grouped = g.reshape(x, [0] * c + [groups, shape[c] // groups] + shape[c + 1:])
    keep = [a if a < c else a + 1 for a in _kept(attrs["batch_axis"], len(shape))] + [c]
    reduce = [a for a in range(len(shape) + 1) if a not in keep]
    normalized = _normalized(g, grouped, reduce, attrs["eps"], "", "", like=x)
    y = g.reshape(normalized, [0] * c + shape[c:])
    if gamma:
        y = g.op("Mul", [y, gamma])
    if beta:
        y = g.op("Add", [y, beta])
    return y


def _axes_list(value) -> list:
    return [int(a) for a in value] if isinstance(value, (list, tuple)) else [int(value)]


def _normalization_nnp(type_name, *fields):
    """NNabla's ``LayerNormalization``, ``InstanceNormalization``, ``GroupNormalization``:
    ``batch_axis`` a repeated field, an absent ``beta``/``gamma`` left out of the inputs and
    marked ``no_bias``/``no_scale``."""
    def export(e, inputs, attrs):
        if attrs["output_stat"]:
            e.unsupported("output_stat=True (the statistics are not written)")
        x, beta, gamma = inputs[:3]
        params = {f: int(attrs[f]) for f in fields}
        params.update(batch_axis=_axes_list(attrs["batch_axis"]), eps=float(attrs["eps"]),
                      no_scale=gamma is None, no_bias=beta is None)
        e.function(type_name, [v for v in (x, beta, gamma) if v is not None], params)
    return export


def _normalization_build(f, *fields):
    def build(node):
        values = {k: node.field(k, int) for k in fields}
        axes = node.field("batch_axis", list)
        no_bias, no_scale = node.field("no_bias", bool), node.field("no_scale", bool)
        rest = [node.var(i) for i in range(1, node.n_inputs)]
        beta = None if no_bias else rest.pop(0)
        gamma = None if no_scale else rest.pop(0)
        return f(node.var(0), beta, gamma, batch_axis=axes[0] if len(axes) == 1 else axes,
                 eps=node.field("eps", float), rule="nnabla", **values)  # one-pass variance
    return build


for _f, _rule, _type, _fields in (
        (F.layer_normalization, _layer_normalization_onnx, "LayerNormalization", ()),
        (F.instance_normalization, _instance_normalization_onnx, "InstanceNormalization",
         ("channel_axis",)),
        (F.group_normalization, _group_normalization_onnx, "GroupNormalization",
         ("num_groups", "channel_axis"))):
    register_rules(_f, onnx_export=_rule, onnx_import=Unmapped(COMPOSITE),
                   nnp_export=_normalization_nnp(_type, *_fields),
                   nnp_import={_type: _normalization_build(_f, *_fields)})


def _norm_onnx(g, inputs, attrs):
    """Abs, Pow, ReduceSum, Pow"""
    x = inputs[0]
    p = 2.0 if attrs["p"] is None else float(attrs["p"])
    powered = g.op("Pow", [g.op("Abs", [x]), g.scalar(p, x)])
    total = g.reduce("ReduceSum", powered, norm_axes(attrs["axis"], g.ndim(x)),
                     bool(attrs["keepdims"]))
    return g.op("Pow", [total, g.scalar(1.0 / p, x)])


register_rules(F.norm, onnx_export=_norm_onnx,
               onnx_import=Unmapped("ONNX's ReduceL1/ReduceL2 are not imported; the export "
                                    "imports as abs, pow2 and sum"),
               nnp_import=nnabla(F.norm, "Norm", names={"axes": "axis", "keep_dims": "keepdims"},
                                 defaults={"p": 2.0, "axes": all_axes}, p=float, axes=list,
                                 keep_dims=bool))

register_rules(F.spectral_norm,
               onnx_export=Unmapped("its power iteration updates u in place, which an ONNX graph "
                                    "cannot hold: export after replacing the weight by its "
                                    "normalised value"),
               onnx_import=Unmapped("ONNX has no spectral normalisation"),
               nnp_import=nnabla(F.spectral_norm, "SpectralNorm", dim=int, itr=int, eps=float,
                                 test=bool, output_u=bool))

"""Rules of the reductions (``stadyn/ops/_reduce.py``)."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ...ops import norm_axes
from ._common import onnx_axis
from ._cntk_read_more import cos_distance_cntk, cos_negative_samples_cntk
from ._cntk_reduce_rules import reduce_cntk, reduce_cntk_v1
from ._cntk_rules import hardmax_cntk
from ._nnabla import nnabla
from . import _nnabla_composed as composed
from ._table import register_rules


def _reduce_onnx(op_type, index_type=None):
    def export(g, inputs, attrs):
        x = inputs[0]
        nd = g.ndim(x)
        if op_type == "ReduceMean" and g.dtype(x).kind not in "fc":
            # the catalog's mean of integers (or booleans) is a float32 mean, as NNabla's;
            # ONNX's ReduceMean keeps an integer input's type (and refuses booleans)
            x = g.cast(x, np.float32)
        axes = norm_axes(attrs["axis"], nd)
        keep = bool(attrs["keepdims"])
        if index_type and (attrs.get("with_index") or attrs.get("only_index")):
            axes = list(range(nd)) if axes is None else axes
            if len(axes) != 1:
                g.unsupported("an index over several axes")
            index = g.op(index_type, [x], axis=axes[0], keepdims=int(keep))
            if attrs.get("only_index"):
                return index
            return [g.reduce(op_type, x, axes, keep), index]
        return g.reduce(op_type, x, axes, keep)
    export.__doc__ = op_type if index_type is None else f"{op_type} ({index_type})"
    return export


def _reduce_axes(node, ndim):
    """Reduced axes of an ONNX Reduce* node: a list, None for every axis, [] for none."""
    if "axes" in node.attrs:
        axes = node.attr("axes")
    elif node.n_inputs > 1 and node.has(1):
        axes = np.asarray(node.const(1)).reshape(-1).tolist()
    else:
        axes = []
    if not axes:
        return [] if node.attr("noop_with_empty_axes", 0) else None
    return sorted({int(a) % ndim for a in axes})


def _import_reduce(f):
    def build(node):
        x = node.var(0)
        xs, dtype = node.shape(0), node.dtype(0)
        if dtype.kind != "f" and (f is F.mean or (f in (F.sum, F.prod) and dtype != np.int64)):
            node.unsupported(f"{dtype} input (torch changes the result type)")
        axes = _reduce_axes(node, len(xs))
        if axes == []:
            return F.identity(x)
        reduced = range(len(xs)) if axes is None else axes
        if f in (F.max, F.min) and any(xs[a] == 0 for a in reduced):
            node.unsupported("an empty reduction (the catalog's max/min need elements)")
        return f(x, axis=axes, keepdims=bool(node.attr("keepdims", 1)))
    return build


def _import_arg(f):
    def build(node):
        if node.attr("select_last_index", 0):
            node.unsupported("select_last_index=1")
        return f(node.var(0), axis=onnx_axis(node.attr("axis", 0), len(node.shape(0))),
                 keepdims=bool(node.attr("keepdims", 1)), only_index=True)
    return build


def _import_global_max_pool(node):
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} input")
    return F.max(node.var(0), axis=tuple(range(2, len(node.shape(0)))), keepdims=True)


def _axes_export(e, inputs, attrs):
    """The catalog's ``axis`` (None: all axes) and ``keepdims`` as NNabla's ``axes`` and
    ``keep_dims``."""
    ndim = len(e.shape(inputs[0]))
    axis = attrs["axis"]
    axes = range(ndim) if axis is None else (axis if isinstance(axis, (tuple, list)) else (axis,))
    out = {k: v for k, v in attrs.items() if k not in ("axis", "keepdims")}
    return dict(out, axes=sorted(int(a) % ndim for a in axes), keep_dims=bool(attrs["keepdims"]))


def _axes_nnp(node, fields):
    """NNabla's ``axes`` list and ``keep_dims`` as the catalog's ``axis`` and ``keepdims``."""
    rest = {k: v for k, v in fields.items() if k not in ("axes", "keep_dims")}
    return dict(rest, axis=tuple(fields["axes"]) or None, keepdims=fields["keep_dims"])


def _scan_nnp(node, fields):
    """NNabla's ``Max``/``Min``: the axes as :func:`_axes_nnp`, and the catalog op's
    ``rule="nnabla"`` (NNabla's CPU kernel scans from -1e8 / 1e8 and passes NaN by)."""
    return dict(_axes_nnp(node, fields), rule="nnabla")


def _prod_nnp(node, fields):
    """NNabla's ``Prod``: the axes as :func:`_axes_nnp`, and the catalog op's ``rule="nnabla"``
    (its backward ``dy * y / x``, 0 where ``x`` is 0, reads the output)."""
    return dict(_axes_nnp(node, fields), rule="nnabla")


register_rules(F.sum, onnx_export=_reduce_onnx("ReduceSum"),
               onnx_import={"ReduceSum": _import_reduce(F.sum)},
               nnp_import={**nnabla(F.sum, "Sum", convert=_axes_nnp, export=_axes_export,
                                    axes=list, keep_dims=bool), **composed.REDUCE_SUM},
               cntk_import={"ReduceElements": reduce_cntk, "CosDistance": cos_distance_cntk,
                            "CosDistanceWithNegativeSamples": cos_negative_samples_cntk},
               cntk_v1_import={"ReduceElements": reduce_cntk_v1})
register_rules(F.mean, onnx_export=_reduce_onnx("ReduceMean"),
               onnx_import={"ReduceMean": _import_reduce(F.mean)},
               nnp_import={**nnabla(F.mean, "Mean", convert=_axes_nnp, export=_axes_export,
                                    axes=list, keep_dims=bool), **composed.REDUCE_MEAN})
register_rules(F.prod, onnx_export=_reduce_onnx("ReduceProd"),
               onnx_import={"ReduceProd": _import_reduce(F.prod)},
               nnp_import=nnabla(F.prod, "Prod", convert=_prod_nnp,
                                 export=_axes_export, axes=list, keep_dims=bool))
register_rules(F.max, onnx_export=_reduce_onnx("ReduceMax", "ArgMax"),
               onnx_import={"ReduceMax": _import_reduce(F.max), "ArgMax": _import_arg(F.max),
                            "GlobalMaxPool": _import_global_max_pool},
               nnp_import=nnabla(F.max, "Max", convert=_scan_nnp,
                                 export=_axes_export, axes=list, keep_dims=bool,
                                 with_index=bool, only_index=bool),
               cntk_import={"Hardmax": hardmax_cntk}, cntk_v1_import={"Hardmax": hardmax_cntk})
register_rules(F.min, onnx_export=_reduce_onnx("ReduceMin", "ArgMin"),
               onnx_import={"ReduceMin": _import_reduce(F.min), "ArgMin": _import_arg(F.min)},
               nnp_import=nnabla(F.min, "Min", convert=_scan_nnp,
                                 export=_axes_export, axes=list, keep_dims=bool,
                                 with_index=bool, only_index=bool))

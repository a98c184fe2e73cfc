"""Rules of indexing, ordering and scans (``stadyn/ops/_index.py``)."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ...ops import norm_axis
from ._cntk_shape_rules import top_k_cntk
from ._nnabla import nnabla
from ._table import Unmapped, register_rules


def _int64(g, ids):
    return ids if g.dtype(ids) == np.int64 else g.cast(ids, np.int64)


def _gather_onnx(g, inputs, attrs):
    """Gather"""
    x, ids = inputs
    if attrs["batch_dims"]:
        g.unsupported("batch_dims > 0 (ONNX's Gather has no batch axes)")
    return g.op("Gather", [x, _int64(g, ids)], axis=norm_axis(int(attrs["axis"] or 0), g.ndim(x)))


register_rules(F.gather, onnx_export=_gather_onnx,
               onnx_import=Unmapped("ONNX's Gather is read by embed's rule: rows of a table "
                                    "import as embed, any other Gather as gather"),
               nnp_import=nnabla(F.gather, "Gather", defaults={"axis": 0, "batch_dims": 0},
                                 axis=int, batch_dims=int))


register_rules(F.gather_nd, onnx_export=Unmapped("ONNX's GatherND is not imported yet, so an "
                                                 "export could not be read back"),
               onnx_import=Unmapped("ONNX's GatherND is not imported yet"),
               nnp_import=nnabla(F.gather_nd, "GatherNd"))


def _scatter_nd_export(e, inputs, attrs) -> None:
    """``scatter_nd``: NNabla's ScatterNd; with ``out``, that array is its third input and
    ``shape`` its shape, as NNabla's ``F.scatter_nd(..., out=)`` writes it."""
    out = attrs.get("out")
    if out is None:
        if attrs.get("shape") is None:
            e.unsupported("shape=None has no NNabla value")
        e.function("ScatterNd", inputs, {"shape": [int(s) for s in attrs["shape"]],
                                         "add": bool(attrs["add"])})
        return
    e.function("ScatterNd", list(inputs) + [e.name_of(out)],
               {"shape": [int(s) for s in out.shape], "add": bool(attrs["add"])})


_SCATTER = nnabla(F.scatter_nd, "ScatterNd", shape=list, add=bool)


def _scatter_nd_nnp(node):
    """NNabla's ScatterNd: a third input is its ``out=``, the array written over (its
    ``shape`` field then repeats that array's shape)."""
    if node.n_inputs > 2:
        return F.scatter_nd(node.var(0), node.var(1), add=node.field("add", bool),
                            out=node.var(2))
    return _SCATTER["ScatterNd"](node)


register_rules(F.scatter_nd, onnx_export=Unmapped("ONNX's ScatterND is not imported yet, so an "
                                                  "export could not be read back"),
               onnx_import=Unmapped("ONNX's ScatterND is not imported yet"),
               nnp_import={"ScatterNd": _scatter_nd_nnp}, nnp_export=_scatter_nd_export)

_ORDERING = Unmapped("ONNX's TopK is not mapped yet")
register_rules(F.sort, onnx_export=_ORDERING, onnx_import=_ORDERING,
               nnp_import=nnabla(F.sort, "Sort", axis=int, reverse=bool, with_index=bool,
                                 only_index=bool,    # NNabla's backward gathers by the index
                                 convert=lambda node, fields: dict(fields, rule="nnabla")))
register_rules(F.top_k_data, onnx_export=_ORDERING, onnx_import=_ORDERING,
               nnp_import=nnabla(F.top_k_data, "TopKData", k=int, abs=bool, reduce=bool,
                                 base_axis=int, largest=bool, with_index=bool),
               cntk_import={"TopK": top_k_cntk})


def _cumsum_onnx(g, inputs, attrs):
    """CumSum"""
    x = inputs[0]
    axis = norm_axis(0 if attrs["axis"] is None else int(attrs["axis"]), g.ndim(x))
    return g.op("CumSum", [x, g.const(np.asarray(axis, dtype=np.int64))],
                exclusive=int(bool(attrs["exclusive"])), reverse=int(bool(attrs["reverse"])))


def _import_cumsum(node):
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} input (the catalog's cumsum widens integers to int64)")
    return F.cumsum(node.var(0), int(np.asarray(node.const(1))),
                    bool(node.attr("exclusive", 0)), bool(node.attr("reverse", 0)))


register_rules(F.cumsum, onnx_export=_cumsum_onnx, onnx_import={"CumSum": _import_cumsum},
               nnp_import=nnabla(F.cumsum, "CumSum", defaults={"axis": 0}, axis=int,
                                 exclusive=bool, reverse=bool))
register_rules(F.cumprod, onnx_export=Unmapped("ONNX has no cumulative product"),
               onnx_import=Unmapped("ONNX has no cumulative product"),
               nnp_import=nnabla(F.cumprod, "CumProd", defaults={"axis": 0}, axis=int,
                                 exclusive=bool, reverse=bool))


def _searchsorted_onnx(g, inputs, attrs):
    """Unsqueeze, Less (LessOrEqual with right), Cast, ReduceSum: the count of sorted values
    before each value"""
    s, v = inputs
    n = g.ndim(v)
    before = g.op("LessOrEqual" if attrs["right"] else "Less",
                  [g.unsqueeze(s, [n - 1]), g.unsqueeze(v, [n])])
    return g.reduce("ReduceSum", g.cast(before, g.dtype(v)), [n], False)


register_rules(F.searchsorted, onnx_export=_searchsorted_onnx,
               onnx_import=Unmapped("ONNX has no sorted search: the export's comparison and "
                                    "sum import one by one"),
               nnp_import=nnabla(F.searchsorted, "SearchSorted", right=bool))

"""Rules of identity, constants and casts (``stadyn/ops/_misc.py``)."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ...ops import CAST_DTYPES
from ._common import import_unary, onnx_unary
from ._cntk_read_more import cast_cntk, constant_op_cntk
from ._cntk_read_others import labels_to_graph_cntk
from ._cntk_rules import cntk_same
from ._nnabla import nnabla
from ._table import Unmapped, register_rules

register_rules(F.identity, onnx_export=onnx_unary("Identity"),
               onnx_import={"Identity": import_unary(F.identity, floats_only=False)},
               nnp_import=nnabla(F.identity, "Identity"),
               cntk_import={"NoOp": cntk_same(F.identity),
                            "LabelsToGraph": labels_to_graph_cntk})
# A trace probe is the identity outside Stadyn (ONNX has nothing that prints).
register_rules(F.trace, onnx_export=onnx_unary("Identity"),
               onnx_import=Unmapped("ONNX's Identity imports as identity; nothing in ONNX prints"))


def _constant_onnx(g, inputs, attrs):
    """an initializer"""
    shape = tuple(int(s) for s in attrs["shape"])
    return g.const(np.full(shape, float(attrs["val"]), dtype=np.float32))


def _import_constant(node):
    if node.attr("value") is not None:
        value = np.asarray(node.attr("value"))
    elif node.attr("value_float") is not None:
        value = np.asarray(node.attr("value_float"), dtype=np.float32)
    elif node.attr("value_floats") is not None:
        value = np.asarray(node.attr("value_floats"), dtype=np.float32)
    elif node.attr("value_int") is not None:
        value = np.asarray(node.attr("value_int"), dtype=np.int64)
    elif node.attr("value_ints") is not None:
        value = np.asarray(node.attr("value_ints"), dtype=np.int64)
    else:
        node.unsupported(f"constant attributes {sorted(node.attrs)} (strings, sparse tensors)")
    return node.constant_variable(value)


register_rules(F.constant, onnx_export=_constant_onnx, onnx_import={"Constant": _import_constant},
               nnp_import=nnabla(F.constant, "Constant", val=float, shape=tuple),
               cntk_import={"ConstantOp": constant_op_cntk})


def _unlink_nnp(e, inputs, attrs):
    """NNabla has no stop_gradient function: its ``Unlink`` is the identity that passes no
    gradient back."""
    e.function("Unlink", inputs[:1])


register_rules(F.stop_gradient, onnx_export=onnx_unary("Identity"),
               onnx_import=Unmapped("ONNX graphs have no gradients: the export (Identity) "
                                    "imports as identity"),
               cntk_import={"StopGradient": cntk_same(F.stop_gradient)},
               nnp_export=_unlink_nnp,
               nnp_import=Unmapped("NNabla writes it as Unlink, which imports as unlink"))

register_rules(F.unlink, onnx_export=onnx_unary("Identity"),
               onnx_import=Unmapped("ONNX graphs have no gradients: the export (Identity) "
                                    "imports as identity"),
               nnp_import=nnabla(F.unlink, "Unlink"))

# ONNX's TensorProto.DataType numbers of the types ``cast`` converts to (the ONNX spec fixes them).
_ONNX_TYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64",
               9: "bool", 10: "float16", 11: "float64", 16: "bfloat16"}


def _cast_onnx(g, inputs, attrs):
    """Cast"""
    if attrs["dtype"] == "bfloat16":
        g.unsupported("a bfloat16 result (NumPy, and so the exporter, has no bfloat16)")
    return g.cast(inputs[0], np.dtype(attrs["dtype"]))


def _import_cast(node):
    name = _ONNX_TYPES.get(int(node.attr("to", 0)))
    if name == "bfloat16":
        node.unsupported("a cast to bfloat16 (NumPy arrays, and so the values Stadyn gives "
                         "back, have no bfloat16)")
    if name is None:
        node.unsupported(f"a cast to ONNX type {node.attr('to')} (Stadyn's types: "
                         f"{', '.join(CAST_DTYPES)})")
    return F.cast(node.var(0), name)


_NO_CAST = Unmapped("NNabla 1.39 has no cast function (its graphs compute in float32)")
register_rules(F.cast, onnx_export=_cast_onnx, onnx_import={"Cast": _import_cast},
               nnp_export=_NO_CAST, nnp_import=_NO_CAST, cntk_import={"Cast": cast_cntk})


def _arange_onnx(g, inputs, attrs):
    """an initializer (its values are fixed by its arguments)"""
    return g.const(np.arange(float(attrs["start"]), float(attrs["stop"]), float(attrs["step"]),
                             dtype=np.float32))


register_rules(F.arange, onnx_export=_arange_onnx,
               onnx_import=Unmapped("the export is a constant; ONNX's Range is not imported"),
               nnp_import=nnabla(F.arange, "Arange", start=float, stop=float, step=float))
register_rules(F.assign, onnx_export=Unmapped("assign writes into another variable in place; "
                                              "an ONNX graph has no state to write"),
               onnx_import=Unmapped("ONNX has no in-place assignment"),
               nnp_import=nnabla(F.assign, "Assign"))


def _sink_onnx(g, inputs, attrs):
    """an initializer (0: a sink's value; its inputs are the graph's other outputs)"""
    return g.const(np.asarray(0.0, dtype=np.float32))


register_rules(F.sink, onnx_export=_sink_onnx,
               onnx_import=Unmapped("ONNX lists a graph's outputs itself: the export is a "
                                    "constant"),
               nnp_import=nnabla(F.sink, "Sink", one_input_grad=bool))


register_rules(F.python_function,
               onnx_export=Unmapped(F.python_function.spec.unstorable),
               onnx_import=Unmapped("ONNX has no Python op"))

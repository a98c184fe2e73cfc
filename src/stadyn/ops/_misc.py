"""Identity, constants, casts and graph helpers."""

from __future__ import annotations

import numpy as np
import torch

from ..graph import get_current_context
from ._registry import op
from ._util import import_unary, onnx_unary


# -- ONNX mappings (see OpSpec.onnx / OpSpec.onnx_import) -------------------------------------
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


@op(1, category="misc", onnx=onnx_unary("Identity"),
    onnx_import={"Identity": import_unary("identity", floats_only=False)})
def identity(x):
    """The input unchanged (a new graph node).  Example: ``F.identity(x)``."""
    return x.view_as(x)  # a view, not ``x`` itself: the output gets its own autograd node


@op(0, category="misc", onnx=_constant_onnx, onnx_import={"Constant": _import_constant})
def constant(val=0.0, shape=()):
    """An array of ``shape`` filled with ``val`` (no inputs, no gradient).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     c = F.constant(2.0, (2,))
        >>> c.d
        array([2., 2.], dtype=float32)
    """
    return torch.full(tuple(int(s) for s in shape), float(val),
                      device=get_current_context().device)


@op(1, category="misc", onnx=onnx_unary("Identity"))
def stop_gradient(x):
    """The input's value with no gradient flowing back.  Example: ``F.stop_gradient(h)``."""
    return x.detach()


#: The element types ``cast`` converts to, by name.
CAST_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
               "uint8", "bool")
# ONNX's TensorProto.DataType numbers of those types (the ONNX spec fixes them).
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
    return cast(node.var(0), name)


@op(1, category="misc", onnx=_cast_onnx, onnx_import={"Cast": _import_cast})
def cast(x, dtype="float32"):
    """``x`` converted to ``dtype`` (a name from :data:`CAST_DTYPES`): floats to integers round
    toward zero, anything to ``bool`` is ``x != 0``.  The gradient flows between floating-point
    types.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.cast(sd.Variable.from_numpy_array([-1.7, 0.0, 2.9]), "int64")
        >>> y.d
        array([-1,  0,  2])
    """
    if dtype not in CAST_DTYPES:
        raise ValueError(f"cannot cast to {dtype!r}; the types are {', '.join(CAST_DTYPES)}")
    return x.to(getattr(torch, dtype))

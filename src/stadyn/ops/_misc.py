"""Identity, constants and graph helpers."""

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

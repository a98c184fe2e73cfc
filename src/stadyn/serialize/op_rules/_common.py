"""Helpers shared by the rule modules: one-node export rules, one-op import rules, axes, and the
reasons shared by ops without a rule of their own."""

from __future__ import annotations

from typing import Any, Callable

from ...ops import norm_axis

#: Why a scalar variant (``add_scalar``, ``r_pow_scalar``, ...) has no import rule of its own.
SCALAR_FORM = ("ONNX has no scalar form: the export (the binary op with a constant) imports as "
               "the binary catalog op")
#: Why an op that ONNX spells as several ops has no import rule of its own.
COMPOSITE = ("ONNX has no op for it: the ops of its export import one by one as other catalog "
             "ops")


def onnx_unary(op_type: str, **fixed: Any):
    """An export rule that emits one ``op_type`` node on the op's first input.

    Example:
        >>> onnx_unary("Relu").__doc__
        'Relu'
    """
    def export(g, inputs, attrs):
        return g.op(op_type, [inputs[0]], **fixed)
    export.__doc__ = op_type
    return export


def import_unary(f: Callable[..., Any], *args: Any, floats_only: bool = True):
    """An import rule calling the ``F`` function ``f`` on input 0 (and ``args``); integer
    inputs are refused when ``floats_only`` (the torch op would return floats where ONNX keeps
    the integer type).

    Example:
        >>> import stadyn.functions as F
        >>> callable(import_unary(F.relu))
        True
    """
    def build(node):
        if floats_only and node.dtype(0).kind != "f":
            node.unsupported(f"{node.dtype(0)} input (this op computes in floating point)")
        return f(node.var(0), *args)
    return build


def onnx_axis(axis: Any, ndim: int) -> int:
    """An ONNX axis attribute (may be negative) as a non-negative axis.

    Example:
        >>> onnx_axis(-1, 3)
        2
    """
    return norm_axis(int(axis), ndim)

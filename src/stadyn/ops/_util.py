"""Small helpers shared by op implementations (attribute normalisation)."""

from __future__ import annotations

from typing import Any, Sequence

import torch


def ntuple(value: Any, n: int, default: int) -> tuple[int, ...]:
    """``value`` as an ``n``-tuple of ints (None gives ``default`` everywhere)."""
    if value is None:
        return (default,) * n
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError(f"expected {n} values, got {len(value)} ({value})")
    return value


def norm_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"axis {axis} out of range for {ndim} dimensions")
    return axis % ndim if ndim else 0


def norm_axes(axis: Any, ndim: int) -> list[int] | None:
    """A list of non-negative axes, or None for "all axes"."""
    if axis is None:
        return None
    if isinstance(axis, int):
        return [norm_axis(axis, ndim)]
    return [norm_axis(int(a), ndim) for a in axis]


def batch_flatten(x: torch.Tensor, base_axis: int) -> tuple[torch.Tensor, Sequence[int]]:
    """Merge the dims before ``base_axis`` into one batch dim (kept shape returned)."""
    batch = x.shape[:base_axis]
    if base_axis == 1:
        return x, batch
    return x.reshape((-1,) + tuple(x.shape[base_axis:])), batch


# ---------------------------------------------------------------------------------------------
# Small helpers for the ONNX mappings of the ops (see OpSpec.onnx / OpSpec.onnx_import); the
# emitter and the imported node are duck-typed, so nothing here imports onnx.
# ---------------------------------------------------------------------------------------------
def onnx_unary(op_type: str, **fixed: Any):
    """An export mapping that emits one ``op_type`` node on the op's first input."""
    def export(g, inputs, attrs):
        return g.op(op_type, [inputs[0]], **fixed)
    export.__doc__ = op_type
    return export


def import_unary(op_name: str, *args: Any, floats_only: bool = True):
    """An import mapping calling the catalog op ``op_name`` on input 0 (and ``args``); integer
    inputs are refused when ``floats_only`` (the torch op would return floats where ONNX keeps
    the integer type)."""
    def build(node):
        from ._registry import function_of
        if floats_only and node.dtype(0).kind != "f":
            node.unsupported(f"{node.dtype(0)} input (this op computes in floating point)")
        return function_of(op_name)(node.var(0), *args)
    return build


def onnx_axis(axis: Any, ndim: int) -> int:
    """An ONNX axis attribute (may be negative) as a non-negative axis."""
    return norm_axis(int(axis), ndim)

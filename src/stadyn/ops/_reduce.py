"""Reductions over axes."""

from __future__ import annotations

import numpy as np
import torch

from ._registry import op
from ._util import norm_axes, onnx_axis

_C = "reduction"


# -- ONNX mappings (see OpSpec.onnx / OpSpec.onnx_import) -------------------------------------
def _reduce_onnx(op_type, index_type=None):
    def export(g, inputs, attrs):
        x = inputs[0]
        nd = g.ndim(x)
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


def _import_reduce(op_name):
    def build(node):
        from ._misc import identity
        x = node.var(0)
        xs, dtype = node.shape(0), node.dtype(0)
        if dtype.kind != "f" and (op_name == "mean" or (op_name in ("sum", "prod")
                                                        and dtype != np.int64)):
            node.unsupported(f"{dtype} input (torch changes the result type)")
        axes = _reduce_axes(node, len(xs))
        if axes == []:
            return identity(x)
        reduced = range(len(xs)) if axes is None else axes
        if op_name in ("max", "min") and any(xs[a] == 0 for a in reduced):
            node.unsupported("an empty reduction (the catalog's max/min need elements)")
        f = {"sum": sum, "mean": mean, "prod": prod, "max": max, "min": min}[op_name]
        return f(x, axis=axes, keepdims=bool(node.attr("keepdims", 1)))
    return build


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


def _import_arg(op_name):
    def build(node):
        if node.attr("select_last_index", 0):
            node.unsupported("select_last_index=1")
        f = max if op_name == "max" else min
        return f(node.var(0), axis=onnx_axis(node.attr("axis", 0), len(node.shape(0))),
                 keepdims=bool(node.attr("keepdims", 1)), only_index=True)
    return build


def _import_global_max_pool(node):
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} input")
    return max(node.var(0), axis=tuple(range(2, len(node.shape(0)))), keepdims=True)


def _reduce(fn, x, axis, keepdims):
    axes = norm_axes(axis, x.ndim)
    if axes is None:
        axes = list(range(x.ndim))
    if not axes:  # nothing to reduce (torch would read an empty ``dim`` as "every axis")
        return x.view_as(x)
    return fn(x, dim=axes, keepdim=keepdims)


@op(1, category=_C, onnx=_reduce_onnx("ReduceSum"),
    onnx_import={"ReduceSum": _import_reduce("sum")}, precision="float")
def sum(x, axis=None, keepdims=False):  # noqa: A001 - NNabla's name
    """Sum over ``axis`` (an int, a list, or None for all axes).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.sum(sd.Variable.from_numpy_array(np.ones((2, 3))), axis=1)
        >>> y.d
        array([3., 3.], dtype=float32)
    """
    return _reduce(torch.sum, x, axis, keepdims)


@op(1, category=_C, onnx=_reduce_onnx("ReduceMean"),
    onnx_import={"ReduceMean": _import_reduce("mean")}, precision="float")
def mean(x, axis=None, keepdims=False):
    """Mean over ``axis`` (None: all axes, giving shape ``()``).  Example: ``F.mean(loss)``."""
    return _reduce(torch.mean, x, axis, keepdims)


@op(1, category=_C, onnx=_reduce_onnx("ReduceProd"),
    onnx_import={"ReduceProd": _import_reduce("prod")}, precision="float")
def prod(x, axis=None, keepdims=False):
    """Product over ``axis``.  Example: ``F.prod(x, axis=0)``."""
    axes = norm_axes(axis, x.ndim)
    if axes is None:
        axes = list(range(x.ndim))
    y = x.view_as(x)
    for a in sorted(axes, reverse=True):
        y = torch.prod(y, dim=a, keepdim=keepdims)
    return y


def _extreme(fn, x, axis, keepdims, with_index, only_index):
    axes = norm_axes(axis, x.ndim)
    if axes is None:
        axes = list(range(x.ndim))
    if len(axes) == 1:
        values, index = fn(x, dim=axes[0], keepdim=keepdims)
    else:
        # Move the reduced axes last and flatten them into one.
        keep = [a for a in range(x.ndim) if a not in axes]
        moved = x.permute(*keep, *axes).reshape(*[x.shape[a] for a in keep], -1)
        values, index = fn(moved, dim=-1)
        if keepdims:
            shape = [1 if a in axes else x.shape[a] for a in range(x.ndim)]
            values, index = values.reshape(shape), index.reshape(shape)
    if only_index:
        return index
    if with_index:
        return values, index
    return values


@op(1, category=_C, onnx=_reduce_onnx("ReduceMax", "ArgMax"),
    onnx_import={"ReduceMax": _import_reduce("max"), "ArgMax": _import_arg("max"),
                 "GlobalMaxPool": _import_global_max_pool})
def max(x, axis=None, keepdims=False, with_index=False, only_index=False):  # noqa: A001
    """Maximum over ``axis``; ``with_index`` also returns the (flat, over the reduced axes)
    index; ``only_index`` returns just the index.  Example: ``F.max(x, axis=1)``."""
    return _extreme(torch.max, x, axis, keepdims, with_index, only_index)


@op(1, category=_C, onnx=_reduce_onnx("ReduceMin", "ArgMin"),
    onnx_import={"ReduceMin": _import_reduce("min"), "ArgMin": _import_arg("min")})
def min(x, axis=None, keepdims=False, with_index=False, only_index=False):  # noqa: A001
    """Minimum over ``axis`` (see :func:`max`).  Example: ``F.min(x, axis=1)``."""
    return _extreme(torch.min, x, axis, keepdims, with_index, only_index)

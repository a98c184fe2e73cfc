"""Comparisons and selection: ``greater``, ``greater_equal``, ``less`` (NNabla's: 1 or 0 in the
inputs' type, no gradient), ``where`` and ``take_along_axis``.

Their ONNX import mappings also carry ONNX's boolean comparisons back into the catalog:
``Greater(a, b)`` imports as ``cast(greater(a, b), "bool")``.
"""

from __future__ import annotations

import numpy as np
import torch

from ._registry import op

_C = "logical"


# -- ONNX mappings (see OpSpec.onnx / OpSpec.onnx_import) -------------------------------------
def _same_dtype(g, names):
    """``names`` cast to the type torch computes them in (ONNX wants equal input types)."""
    dtypes = [g.dtype(n) for n in names]
    target = dtypes[0]
    for d in dtypes[1:]:
        target = np.promote_types(target, d)
    return [n if g.dtype(n) == target else g.cast(n, target) for n in names], target


def _comparison_onnx(op_type):
    def export(g, inputs, attrs):
        (a, b), dtype = _same_dtype(g, list(inputs[:2]))
        return g.cast(g.op(op_type, [a, b]), dtype)
    export.__doc__ = f"{op_type}, Cast"
    return export


def _import_comparison(name):
    def build(node):
        from ._misc import cast
        f = {"greater": greater, "greater_equal": greater_equal, "less": less}[name]
        return cast(f(node.var(0), node.var(1)), "bool")
    return build


def _where_onnx(g, inputs, attrs):
    """Where (a non-boolean condition compared with 0 by Cast)"""
    cond, (a, b), _ = inputs[0], *_same_dtype(g, list(inputs[1:3]))
    shape, target = g.shape(cond), g.shape(inputs[1])
    if g.dtype(cond) != np.bool_:
        cond = g.cast(cond, np.bool_)
    if len(shape) < len(target) and tuple(target[:len(shape)]) == tuple(shape):
        cond = g.reshape(cond, list(shape) + [1] * (len(target) - len(shape)))   # NNabla's rule
    return g.op("Where", [cond, a, b])


def _import_where(node):
    from ._shape import reshape
    cond = node.var(0)
    rank = max(len(node.shape(i)) for i in range(3))
    if len(node.shape(0)) < rank:   # ONNX broadcasts from the last axis (NumPy's rule)
        cond = reshape(cond, (1,) * (rank - len(node.shape(0))) + tuple(node.shape(0)))
    return where(cond, node.var(1), node.var(2))


def _compare(result: torch.Tensor, x0: torch.Tensor, x1: torch.Tensor) -> torch.Tensor:
    return result.to(torch.result_type(x0, x1))


@op(2, category=_C, onnx=_comparison_onnx("Greater"),
    onnx_import={"Greater": _import_comparison("greater")})
def greater(x0, x1):
    """1 where ``x0 > x1``, else 0, in the inputs' type (broadcasting; no gradient).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.greater(sd.Variable.from_numpy_array([1.0, 2.0, 3.0]),
        ...                   sd.Variable.from_numpy_array([2.0, 2.0, 2.0]))
        >>> y.d
        array([0., 0., 1.], dtype=float32)
    """
    return _compare(torch.gt(x0, x1), x0, x1)


@op(2, category=_C, onnx=_comparison_onnx("GreaterOrEqual"),
    onnx_import={"GreaterOrEqual": _import_comparison("greater_equal")})
def greater_equal(x0, x1):
    """1 where ``x0 >= x1``, else 0, in the inputs' type (broadcasting; no gradient).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.greater_equal(sd.Variable.from_numpy_array([1.0, 2.0, 3.0]),
        ...                         sd.Variable.from_numpy_array([2.0, 2.0, 2.0]))
        >>> y.d
        array([0., 1., 1.], dtype=float32)
    """
    return _compare(torch.ge(x0, x1), x0, x1)


@op(2, category=_C, onnx=_comparison_onnx("Less"), onnx_import={"Less": _import_comparison("less")})
def less(x0, x1):
    """1 where ``x0 < x1``, else 0, in the inputs' type (broadcasting; no gradient).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.less(sd.Variable.from_numpy_array([1.0, 2.0, 3.0]),
        ...                sd.Variable.from_numpy_array([2.0, 2.0, 2.0]))
        >>> y.d
        array([1., 0., 0.], dtype=float32)
    """
    return _compare(torch.lt(x0, x1), x0, x1)


@op(3, category=_C, onnx=_where_onnx, onnx_import={"Where": _import_where})
def where(condition_if, x_true, x_false):
    """``x_true`` where ``condition_if`` is not 0, else ``x_false`` (NNabla's ``where``).

    The three broadcast as in NumPy; a condition of lower rank whose shape is the leading
    dimensions of ``x_true`` applies to each of their trailing elements (NNabla's rule).  The
    gradient flows to ``x_true`` and ``x_false``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.where(sd.Variable.from_numpy_array([1.0, 0.0, -2.0]),
        ...                 sd.Variable.from_numpy_array([1.0, 2.0, 3.0]),
        ...                 sd.Variable.from_numpy_array([9.0, 9.0, 9.0]))
        >>> y.d
        array([1., 9., 3.], dtype=float32)
    """
    cond = condition_if if condition_if.dtype == torch.bool else condition_if != 0
    target = x_true.shape
    if cond.dim() < len(target) and tuple(target[:cond.dim()]) == tuple(cond.shape):
        cond = cond.reshape(tuple(cond.shape) + (1,) * (len(target) - cond.dim()))
    return torch.where(cond, x_true, x_false)


def _take_along_axis_onnx(g, inputs, attrs):
    """GatherElements"""
    x, ids = inputs[0], inputs[1]
    if g.dtype(ids) not in (np.int64, np.int32):
        ids = g.cast(ids, np.int64)
    return g.op("GatherElements", [x, ids], axis=int(attrs["axis"]) % max(g.ndim(x), 1))


def _import_gather_elements(node):
    if node.dtype(1).kind not in "iu":
        node.unsupported(f"{node.dtype(1)} indices")
    return take_along_axis(node.var(0), node.var(1), int(node.attr("axis", 0)))


@op(2, category="shape", onnx=_take_along_axis_onnx,
    onnx_import={"GatherElements": _import_gather_elements})
def take_along_axis(x, indices, axis=-1):
    """The elements of ``x`` at ``indices`` along ``axis`` (NumPy's ``take_along_axis``, ONNX's
    ``GatherElements``): ``indices`` has ``x``'s rank and its shape, except along ``axis``;
    a negative index counts from the end.  The gradient flows to ``x``.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.take_along_axis(sd.Variable.from_numpy_array([[1.0, 2.0], [3.0, 4.0]]),
        ...                           sd.Variable.from_numpy_array(np.array([[1], [-2]])), 1)
        >>> y.d
        array([[2.],
               [3.]], dtype=float32)
    """
    axis = axis % max(x.dim(), 1)
    ids = indices.long()
    ids = torch.where(ids < 0, ids + x.shape[axis], ids)
    return torch.gather(x, axis, ids)

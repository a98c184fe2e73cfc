"""Comparisons and selection: ``greater``, ``greater_equal``, ``less`` (NNabla's: 1 or 0 in the
inputs' type, no gradient), ``where`` and ``take_along_axis``.
"""

from __future__ import annotations

import torch

from ._registry import op
from ._sequence_axis import at_axis

_C = "logical"


def _compare(result: torch.Tensor, x0: torch.Tensor, x1: torch.Tensor) -> torch.Tensor:
    return result.to(torch.result_type(x0, x1))


@op(2, category=_C, elementwise=True)
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


@op(2, category=_C, elementwise=True)
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


@op(2, category=_C, elementwise=True)
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


@op(3, category=_C, elementwise=True, shape="where")   # (its leading-axes condition)
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


@op(2, category="shape", sequence=at_axis, frameworks=("stadyn", "cntk"))
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

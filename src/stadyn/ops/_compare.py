"""The rest of NNabla's comparisons and its logical functions: ``equal``, ``not_equal``,
``less_equal``, the ``*_scalar`` comparisons with a number, and ``logical_and``, ``logical_or``,
``logical_xor``, ``logical_not``.

As in NNabla, each gives 1 where the relation holds and 0 elsewhere, in the inputs' type (a
float array for float inputs), broadcasting; a logical function reads an input as true where it
is not 0.  None passes a gradient.

Example:
    >>> import stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     x = sd.Variable.from_numpy_array([-1.0, 0.0, 2.0])
    ...     y = F.logical_and(F.greater_scalar(x, -0.5), F.not_equal_scalar(x, 2.0))
    >>> y.d
    array([0., 1., 0.], dtype=float32)
"""

from __future__ import annotations

import torch

from ._registry import op

_C = "logical"


def _as(result: torch.Tensor, *inputs: torch.Tensor) -> torch.Tensor:
    dtype = inputs[0].dtype
    for t in inputs[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    return result.to(dtype)


@op(2, category=_C, elementwise=True)
def equal(x0, x1):
    """1 where ``x0 == x1``, else 0.  Example: ``F.equal(a, b)``."""
    return _as(torch.eq(x0, x1), x0, x1)


@op(2, category=_C, elementwise=True)
def not_equal(x0, x1):
    """1 where ``x0 != x1``, else 0.  Example: ``F.not_equal(a, b)``."""
    return _as(torch.ne(x0, x1), x0, x1)


@op(2, category=_C, elementwise=True)
def less_equal(x0, x1):
    """1 where ``x0 <= x1``, else 0.  Example: ``F.less_equal(a, b)``."""
    return _as(torch.le(x0, x1), x0, x1)


@op(1, category=_C, shape="elementwise")
def greater_scalar(x0, val=1.0):
    """1 where ``x0 > val``, else 0.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.greater_scalar(sd.Variable.from_numpy_array([0.0, 1.0, 2.0]), 1.0)
        >>> y.d
        array([0., 0., 1.], dtype=float32)
    """
    return _as(torch.gt(x0, val), x0)


@op(1, category=_C, shape="elementwise")
def greater_equal_scalar(x0, val=1.0):
    """1 where ``x0 >= val``, else 0.  Example: ``F.greater_equal_scalar(x, 0.5)``."""
    return _as(torch.ge(x0, val), x0)


@op(1, category=_C, shape="elementwise")
def less_scalar(x0, val=1.0):
    """1 where ``x0 < val``, else 0.  Example: ``F.less_scalar(x, 0.5)``."""
    return _as(torch.lt(x0, val), x0)


@op(1, category=_C, shape="elementwise")
def less_equal_scalar(x0, val=1.0):
    """1 where ``x0 <= val``, else 0.  Example: ``F.less_equal_scalar(x, 0.5)``."""
    return _as(torch.le(x0, val), x0)


@op(1, category=_C, shape="elementwise")
def equal_scalar(x0, val=1.0):
    """1 where ``x0 == val``, else 0.  Example: ``F.equal_scalar(labels, 3)``."""
    return _as(torch.eq(x0, val), x0)


@op(1, category=_C, shape="elementwise")
def not_equal_scalar(x0, val=1.0):
    """1 where ``x0 != val``, else 0.  Example: ``F.not_equal_scalar(labels, -1)``."""
    return _as(torch.ne(x0, val), x0)


@op(2, category=_C, elementwise=True)
def logical_and(x0, x1):
    """1 where both are not 0, else 0.  Example: ``F.logical_and(a, b)``."""
    return _as(torch.logical_and(x0, x1), x0, x1)


@op(2, category=_C, elementwise=True)
def logical_or(x0, x1):
    """1 where either is not 0, else 0.  Example: ``F.logical_or(a, b)``."""
    return _as(torch.logical_or(x0, x1), x0, x1)


@op(2, category=_C, elementwise=True)
def logical_xor(x0, x1):
    """1 where exactly one is not 0, else 0.  Example: ``F.logical_xor(a, b)``."""
    return _as(torch.logical_xor(x0, x1), x0, x1)


@op(1, category=_C, shape="elementwise")
def logical_not(x0):
    """1 where ``x0`` is 0, else 0.  Example: ``F.logical_not(mask)``."""
    return _as(torch.logical_not(x0), x0)

"""The trigonometric and hyperbolic family (NNabla's names): ``sin``, ``cos``, ``tan``, their
inverses ``asin``, ``acos``, ``atan`` and ``atan2``, and ``sinh``, ``cosh``, ``asinh``,
``acosh``, ``atanh`` (``tanh`` is with the activations).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     y = F.atan2(sd.Variable.from_numpy_array([1.0, -1.0]),
    ...                 sd.Variable.from_numpy_array([-1.0, -1.0]))
    >>> np.round(y.d / np.pi, 4)
    array([ 0.75, -0.75], dtype=float32)
"""

from __future__ import annotations

import torch

from . import _half_elementwise as _HE
from ._registry import op

_C = "math"


@op(1, category=_C, shape="elementwise")
def sin(x):
    """``sin(x)`` element-wise.  Example: ``F.sin(x)``."""
    return torch.sin(x)


@op(1, category=_C, shape="elementwise")
def cos(x):
    """``cos(x)`` element-wise.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.cos(sd.Variable.from_numpy_array([0.0]))
        >>> y.d
        array([1.], dtype=float32)
    """
    return torch.cos(x)


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.TAN)
def tan(x):
    """``tan(x)`` element-wise.  Example: ``F.tan(x)``."""
    return torch.tan(x)


@op(1, category=_C, shape="elementwise")
def asin(x):
    """``arcsin(x)`` element-wise (``x`` in ``[-1, 1]``).  Example: ``F.asin(x)``."""
    return torch.asin(x)


@op(1, category=_C, shape="elementwise")
def acos(x):
    """``arccos(x)`` element-wise (``x`` in ``[-1, 1]``).  Example: ``F.acos(x)``."""
    return torch.acos(x)


@op(1, category=_C, shape="elementwise")
def atan(x):
    """``arctan(x)`` element-wise.  Example: ``F.atan(x)``."""
    return torch.atan(x)


@op(2, category=_C, elementwise=True)
def atan2(x0, x1):
    """The angle of the point ``(x1, x0)``: ``arctan(x0 / x1)`` in the right quadrant
    (broadcasting).  Example: ``F.atan2(y, x)``."""
    return torch.atan2(x0, x1)


@op(1, category=_C, shape="elementwise")
def sinh(x):
    """``sinh(x)`` element-wise.  Example: ``F.sinh(x)``."""
    return torch.sinh(x)


@op(1, category=_C, shape="elementwise")
def cosh(x):
    """``cosh(x)`` element-wise.  Example: ``F.cosh(x)``."""
    return torch.cosh(x)


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.ASINH)
def asinh(x):
    """``arcsinh(x)`` element-wise.  Example: ``F.asinh(x)``."""
    return torch.asinh(x)


@op(1, category=_C, shape="elementwise")
def acosh(x):
    """``arccosh(x)`` element-wise (``x >= 1``).  Example: ``F.acosh(x)``."""
    return torch.acosh(x)


@op(1, category=_C, shape="elementwise")
def atanh(x):
    """``arctanh(x)`` element-wise (``x`` in ``(-1, 1)``).  Example: ``F.atanh(x)``."""
    return torch.atanh(x)

"""Activation functions."""

from __future__ import annotations


import torch
import torch.nn.functional as TF

from . import _kernels as kernels
from ._registry import op
from ._util import norm_axis

_C = "activation"


@op(1, category=_C)
def relu(x, inplace=False):
    """``max(x, 0)``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.relu(sd.Variable.from_numpy_array([-1.0, 2.0]))
        >>> y.d
        array([0., 2.], dtype=float32)
    """
    return torch.relu(x)


@op(1, category=_C)
def leaky_relu(x, alpha=0.1, inplace=False):
    """``x`` where positive, ``alpha * x`` elsewhere.  Example: ``F.leaky_relu(x, 0.2)``."""
    return TF.leaky_relu(x, alpha)


@op(1, category=_C)
def relu6(x):
    """``min(max(x, 0), 6)``.  Example: ``F.relu6(x)``."""
    return TF.hardtanh(x, 0.0, 6.0)


@op(1, category=_C)
def elu(x, alpha=1.0):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere.  Example: ``F.elu(x)``."""
    return TF.elu(x, alpha)


@op(1, category=_C)
def selu(x, scale=1.05070098735548, alpha=1.673263242354377):
    """``scale * elu(x, alpha)`` with the self-normalising constants.  Example: ``F.selu(x)``."""
    return scale * TF.elu(x, alpha)


@op(1, category=_C)
def gelu(x):
    """GELU with NNabla's tanh approximation:
    ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``.  Example: ``F.gelu(x)``."""
    return TF.gelu(x, approximate="tanh")


@op(1, category=_C)
def sigmoid(x):
    """``1 / (1 + exp(-x))``.  Example: ``F.sigmoid(x)``."""
    return torch.sigmoid(x)


@op(1, category=_C)
def tanh(x):
    """Hyperbolic tangent.  Example: ``F.tanh(x)``."""
    return kernels.tanh(x)


@op(1, category=_C)
def swish(x):
    """``x * sigmoid(x)``.  Example: ``F.swish(x)``."""
    return TF.silu(x)


@op(1, category=_C)
def softplus(x, beta=1.0):
    """``log(1 + exp(beta x)) / beta``.  Example: ``F.softplus(x)``."""
    return TF.softplus(x, beta)


@op(1, category=_C, precision="float")
def softmax(x, axis=None):
    """Softmax along ``axis`` (default: the last axis).

    Example:
        >>> import math, numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.softmax(sd.Variable.from_numpy_array([[0.0, math.log(3.0)]]))
        >>> np.round(y.d, 4)
        array([[0.25, 0.75]], dtype=float32)
    """
    return torch.softmax(x, norm_axis(x.ndim - 1 if axis is None else axis, x.ndim))


@op(1, category=_C, precision="float")
def log_softmax(x, axis=None):
    """Log of the softmax along ``axis`` (default: last), computed stably.
    Example: ``F.log_softmax(x, axis=1)``."""
    return torch.log_softmax(x, norm_axis(x.ndim - 1 if axis is None else axis, x.ndim))



"""More of NNabla's element-wise functions: rounding with straight-through gradients (``sign``,
``floor``, ``ceil``, ``round``), bounded and smooth activations (``hard_sigmoid``,
``hard_tanh``, ``softsign``, ``log_sigmoid``, ``mish``, ``tanh_shrink``, ``sinc``, ``erf``),
the concatenated ``crelu`` and ``celu``, and the NaN/Inf tests and resets.

Example:
    >>> import stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     y = F.round(sd.Variable.from_numpy_array([-1.5, 0.5, 2.5]))
    >>> y.d
    array([-2.,  1.,  3.], dtype=float32)
"""

from __future__ import annotations

import torch
import torch.nn.functional as TF

from . import _half_elementwise as _HE
from ._registry import op
from ._util import norm_axis

_C = "math"


def _straight_through(x, value):
    """``value`` exactly, with the gradient passed through unchanged (NNabla's rounding ops)."""
    return value.detach() + (x - x.detach())


@op(1, category=_C, shape="elementwise")
def sign(x, alpha=1.0):
    """-1 for negative ``x``, 1 for positive, ``alpha`` at 0; backward, the gradient passes
    unchanged (straight-through, as NNabla's).  Example: ``F.sign(x)``."""
    return _straight_through(x, torch.where(x == 0, torch.full_like(x, float(alpha)),
                                            torch.sign(x)))


@op(1, category=_C, shape="elementwise")
def floor(x):
    """The largest integer ``<= x``; the gradient passes unchanged.  Example: ``F.floor(x)``."""
    return _straight_through(x, torch.floor(x))


@op(1, category=_C, shape="elementwise")
def ceil(x):
    """The smallest integer ``>= x``; the gradient passes unchanged.  Example: ``F.ceil(x)``."""
    return _straight_through(x, torch.ceil(x))


@op(1, category=_C, shape="elementwise")
def round(x):  # noqa: A001 - NNabla's name
    """The nearest integer, halves away from zero (NNabla's, not NumPy's halves-to-even); the
    gradient passes unchanged.  Example: ``F.round(x)``."""
    return _straight_through(x, torch.sign(x) * torch.floor(x.abs() + 0.5))


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.HARD_SIGMOID)
def hard_sigmoid(x):
    """``clip(0.2 x + 0.5, 0, 1)``; gradient 0.2 where ``|x| <= 2.5``.
    Example: ``F.hard_sigmoid(x)``."""
    inside = x.abs() <= 2.5
    return torch.where(inside, x * 0.2 + 0.5, (x > 0).to(x.dtype))


@op(1, category=_C, shape="elementwise")
def hard_tanh(x):
    """``clip(x, -1, 1)``; gradient 1 where ``|x| <= 1``.  Example: ``F.hard_tanh(x)``."""
    return torch.where(x.abs() <= 1.0, x, torch.sign(x))


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.SOFTSIGN)
def softsign(x):
    """``x / (1 + |x|)``.  Example: ``F.softsign(x)``."""
    return x / (1.0 + x.abs())


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.LOG_SIGMOID)
def log_sigmoid(x):
    """``log(sigmoid(x))``, computed stably.  Example: ``F.log_sigmoid(x)``."""
    return TF.logsigmoid(x)


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.MISH)
def mish(x):
    """``x * tanh(softplus(x))``.  Example: ``F.mish(x)``."""
    return x * torch.tanh(TF.softplus(x))


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.TANH_SHRINK)
def tanh_shrink(x):
    """``x - tanh(x)``.  Example: ``F.tanh_shrink(x)``."""
    return x - torch.tanh(x)


@op(1, category=_C, shape="elementwise")
def sinc(x):
    """``sin(x) / x``, 1 at 0.  Example: ``F.sinc(x)``."""
    zero = x == 0
    safe = torch.where(zero, torch.ones_like(x), x)
    return torch.where(zero, torch.ones_like(x), torch.sin(safe) / safe)


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.ERF)
def erf(x):
    """The error function.  Example: ``F.erf(x)``."""
    return torch.erf(x)


@op(1, category=_C)
def crelu(x, axis=1):
    """``relu(x)`` and ``relu(-x)`` concatenated along ``axis``.  Example: ``F.crelu(x)``."""
    return torch.cat([torch.relu(x), torch.relu(-x)], dim=norm_axis(axis, x.ndim))


@op(1, category=_C)
def celu(x, alpha=1.0, axis=1):
    """``elu(x, alpha)`` and ``elu(-x, alpha)`` concatenated along ``axis`` (NNabla's
    concatenated ELU).  Example: ``F.celu(x)``."""
    return torch.cat([TF.elu(x, alpha), TF.elu(-x, alpha)], dim=norm_axis(axis, x.ndim))


@op(1, category=_C, shape="elementwise")
def isnan(x0):
    """1 where ``x0`` is NaN, else 0, in its type.  Example: ``F.isnan(x)``."""
    return torch.isnan(x0).to(x0.dtype)


@op(1, category=_C, shape="elementwise")
def isinf(x0):
    """1 where ``x0`` is infinite, else 0, in its type.  Example: ``F.isinf(x)``."""
    return torch.isinf(x0).to(x0.dtype)


@op(1, category=_C, shape="elementwise")
def reset_nan(x0, val=0.0):
    """``x0`` with NaNs replaced by ``val``; no gradient flows where they were.
    Example: ``F.reset_nan(x, 0)``."""
    return torch.where(torch.isnan(x0), torch.full_like(x0, float(val)), x0)


@op(1, category=_C, shape="elementwise")
def reset_inf(x0, val=0.0):
    """``x0`` with infinities replaced by ``val``.  Example: ``F.reset_inf(x, 0)``."""
    return torch.where(torch.isinf(x0), torch.full_like(x0, float(val)), x0)

"""NNabla's linear quantisation (ONNX's QuantizeLinear and DequantizeLinear):
``quantize_linear`` and ``dequantize_linear``, as NNabla 1.39 computes them -- the quantised
values stay float32 arrays, and the gradient of ``quantize_linear`` passes straight through
(divided by the scale).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([-3.5, 0.5, 300.0]))
    >>> one = sd.Variable.from_numpy_array(np.array([1.0]))
    >>> zero = sd.Variable.from_numpy_array(np.array([0.0]))
    >>> with sd.auto_forward():
    ...     q = F.quantize_linear(x, one, zero)
    >>> q.d.tolist()
    [-4.0, 1.0, 127.0]
"""

from __future__ import annotations

import numpy as np
import torch

from ._registry import op

_C = "quantization"
_ROUND_MODES = ("HALF_AWAY_FROM_ZERO", "HALF_TO_EVEN")


def _range(dtype, narrow_range):
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if name == "int8":
        return (-127 if narrow_range else -128), 127
    if name == "uint8":
        return (1 if narrow_range else 0), 255
    raise ValueError(f"quantize_linear: dtype {dtype!r} must be np.int8 or np.uint8")


class _StraightThrough(torch.autograd.Function):
    """``q`` forward; backward, the output gradient divided by ``scale``."""

    @staticmethod
    def forward(ctx, x, q, scale):
        ctx.save_for_backward(scale)
        return q.view_as(q)

    @staticmethod
    def backward(ctx, grad):
        (scale,) = ctx.saved_tensors
        return grad / scale, None, None


def _round(v, mode):
    if mode == "HALF_TO_EVEN":
        return torch.round(v)
    return torch.sign(v) * torch.floor(v.abs() + 0.5)


@op(3, category=_C)
def quantize_linear(x, scale, zero_point, round_mode="HALF_AWAY_FROM_ZERO", narrow_range=False,
                    dtype=np.int8):
    """``saturate(round(x / scale) + round(zero_point))`` in ``dtype``'s range (``np.int8``:
    -128..127, ``np.uint8``: 0..255; ``narrow_range`` drops the lowest value), as float32
    values (NNabla's ``quantize_linear``).  ``round_mode``: ``"HALF_AWAY_FROM_ZERO"`` or
    ``"HALF_TO_EVEN"``; ``scale`` and ``zero_point`` broadcast to ``x``.  Backward: ``x`` gets
    the output gradient divided by ``scale`` (straight through, saturated values too); scale
    and zero point get none (NNabla refuses them).  Unlike NNabla 1.39, ``zero_point``'s own
    values are left as they are (NNabla rounds them in place).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([-2.5, 0.5, 2.5]))
        >>> s = sd.Variable.from_numpy_array(np.array([1.0]))
        >>> z = sd.Variable.from_numpy_array(np.array([0.0]))
        >>> with sd.auto_forward():
        ...     q = F.quantize_linear(x, s, z, round_mode="HALF_TO_EVEN", dtype=np.uint8)
        >>> q.d.tolist()
        [0.0, 0.0, 2.0]
    """
    if round_mode not in _ROUND_MODES:
        raise ValueError(f"quantize_linear: round_mode {round_mode!r} must be one of "
                         f"{', '.join(_ROUND_MODES)}")
    low, high = _range(dtype, bool(narrow_range))
    scale = scale.detach().to(x.dtype)
    zero = _round(zero_point.detach().to(x.dtype), round_mode).clamp(low, high)
    q = (_round((x / scale).detach(), round_mode) + zero).clamp(low, high)
    return _StraightThrough.apply(x, q, scale)


@op(3, category=_C)
def dequantize_linear(x, scale, zero_point):
    """``(x - zero_point) * scale`` (NNabla's ``dequantize_linear``; ``scale`` and
    ``zero_point`` broadcast to ``x``), float32 even for integer ``x``.  Backward: ``x`` gets
    the output gradient times ``scale``; scale and zero point get none (NNabla refuses them).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> q = sd.Variable.from_numpy_array(np.array([1, -2, 5], np.int8))
        >>> s = sd.Variable.from_numpy_array(np.array([0.5]))
        >>> z = sd.Variable.from_numpy_array(np.array([1], np.int8))
        >>> with sd.auto_forward():
        ...     y = F.dequantize_linear(q, s, z)
        >>> y.d.tolist()
        [0.0, -1.5, 2.0]
    """
    dtype = x.dtype if x.is_floating_point() else torch.float32
    return (x.to(dtype) - zero_point.detach().to(dtype)) * scale.detach().to(dtype)

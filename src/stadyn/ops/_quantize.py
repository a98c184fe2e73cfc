"""Simulated quantisation (NNabla's names): ``fixed_point_quantize`` and ``pow2_quantize``
store the quantised values as floats, with a straight-through gradient.

Example:
    >>> import stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     y = F.fixed_point_quantize(sd.Variable.from_numpy_array([0.3, -2.0]), n=4, delta=0.125)
    >>> y.d
    array([ 0.25 , -0.875], dtype=float32)
"""

from __future__ import annotations

import torch

from ..graph import replaying_a_forward
from ._registry import op

_C = "quantization"


@op(1, category=_C)
def fixed_point_quantize(x, sign=True, n=8, delta=0.0625, quantize=True, ste_fine_grained=True):
    """``x`` rounded (half away from zero) to multiples of ``delta`` and clipped to ``n`` bits
    (``+-(2^(n-1) - 1) * delta`` when ``sign``, else ``[0, (2^n - 1) * delta]``); unchanged
    unless ``quantize``.  Backward, the gradient passes unchanged, or, with
    ``ste_fine_grained``, only where ``x`` lies inside the range.
    Example: ``F.fixed_point_quantize(w, n=4, delta=0.125)``."""
    if not quantize:
        return x * 1.0
    n, delta = int(n), float(delta)
    if sign:
        high = (2 ** (n - 1) - 1) * delta
        low = -high
    else:
        high, low = (2 ** n - 1) * delta, 0.0
    q = torch.sign(x) * torch.floor(x.abs() / delta + 0.5) * delta
    q = q.clamp(low, high).detach()
    if ste_fine_grained:
        inside = ((x >= low) & (x <= high)).to(x.dtype)
        return q + (x * inside - (x * inside).detach())
    return q + (x - x.detach())


@op(1, category=_C)
def pow2_quantize(x, sign=True, with_zero=True, n=8, m=1, quantize=True, ste_fine_grained=True):
    """``x`` rounded to a power of two (in the log domain: thresholds at the geometric means),
    clipped to ``[2^(m - (2^b - 1)), 2^m]`` in magnitude with ``b`` the bits left of ``n`` after
    the sign bit (``sign``) and the zero (``with_zero``); with ``with_zero``, magnitudes below
    ``min / sqrt(2)`` become 0.  Unsigned, negative values count as 0.  Unchanged unless
    ``quantize``.  Backward, the gradient passes unchanged, or, with ``ste_fine_grained``, only
    where the rounded magnitude is within ``2^m`` (and, unsigned, ``x >= 0``).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.pow2_quantize(sd.Variable.from_numpy_array([0.3, -0.75, 5.0]), n=4, m=1)
        >>> y.d
        array([ 0.25,  -1.  ,  2.  ], dtype=float32)
    """
    if not quantize:
        return x * 1.0
    bits = int(n) - int(bool(sign)) - int(bool(with_zero))
    high = 2.0 ** int(m)
    low = 2.0 ** (int(m) - (2 ** bits - 1))
    with torch.no_grad():
        magnitude = x.abs() if sign else x.clamp(min=0.0)
        rounded = torch.exp2(torch.floor(torch.log2(magnitude) + 0.5))
        q = rounded.clamp(low, high)
        if with_zero:
            q = torch.where(magnitude < low * 2.0 ** -0.5, torch.zeros_like(q), q)
        if sign:
            q = torch.where(x < 0, -q, q)
    if ste_fine_grained:
        inside = rounded <= high
        if not sign:
            inside = inside & (x >= 0)
        inside = inside.to(x.dtype)
        return q + (x * inside - (x * inside).detach())
    return q + (x - x.detach())


def _round_half_away(v):
    return torch.sign(v) * torch.floor(v.abs() + 0.5)


@op(5, category=_C)
def min_max_quantize(x, qr_min, qr_max, ql_min, ql_max, decay=0.999, x_min_max=False,
                     ema=False, ste_fine_grained=True, eps=0.01, quantize=True):
    """``x`` clipped to the quantisation range ``[qr_min, qr_max]`` and rounded to one of the
    levels ``ql_min .. ql_max`` spread evenly over it, after NNabla's *nudge*: the range moves
    so that 0 is a level (the zero point ``round(ql_min - qr_min / scale)``, clipped to the
    levels; ``scale = (qr_max - qr_min) / (ql_max - ql_min)``).

    The range is updated in place first: with ``x_min_max`` to the min and max of ``x`` over
    the axes where ``qr_min`` has size 1 (with ``ema`` too, their moving average with
    ``decay``), and ``qr_max`` becomes ``qr_min + eps`` where the range is narrower than
    ``eps``.  Backward, ``x`` gets the gradient inside the nudged range (everywhere unless
    ``ste_fine_grained``); without ``x_min_max`` and ``ema``, ``qr_min`` gets the gradient of
    the values below the range and ``qr_max`` that of the values above it (NNabla 1.39's rule).
    Unchanged unless ``quantize``.  Run again for a backward (a ``need_grad`` set after the
    forward, ``replaying_a_forward``) it moves nothing and quantises with the range its forward
    left, as NNabla, which runs no forward again, differentiates the forward that ran.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> v = lambda a: sd.Variable.from_numpy_array(np.array(a, np.float32).reshape(1, -1))
        >>> with sd.auto_forward():
        ...     y = F.min_max_quantize(v([-1.3, 0.2, 3.0]), v([-1.0]), v([1.5]), v([0.0]),
        ...                            v([15.0]))
        >>> y.d.round(4)
        array([[-1.    ,  0.1667,  1.5   ]], dtype=float32)
    """
    if not quantize:
        return x * 1.0
    # run again for a backward (a need_grad set after the forward): NNabla 1.39 runs no forward
    # again, it differentiates the one that ran: the range that forward left, not moved again
    again = replaying_a_forward()
    with torch.no_grad():
        if x_min_max and not again:
            axes = [a for a in range(x.ndim) if qr_min.shape[a] == 1]
            low = x.amin(dim=axes, keepdim=True) if axes else x
            high = x.amax(dim=axes, keepdim=True) if axes else x
            if ema:
                low = decay * qr_min + (1.0 - decay) * low
                high = decay * qr_max + (1.0 - decay) * high
            qr_min.copy_(low)
            qr_max.copy_(high)
        top = torch.where(qr_max - qr_min < eps, qr_min + eps, qr_max)
        if not again:
            qr_max.copy_(top)
        scale = (top - qr_min) / (ql_max - ql_min)
        zero = torch.minimum(torch.maximum(_round_half_away(ql_min - qr_min / scale), ql_min),
                             ql_max)
        low, high = (ql_min - zero) * scale, (ql_max - zero) * scale
        q = torch.floor((torch.minimum(torch.maximum(x, low), high) - low) / scale + 0.5)
        q = q * scale + low
    out = q.detach()
    if ste_fine_grained:
        inside = ((x >= low) & (x <= high)).to(x.dtype)
        out = out + (x * inside - (x * inside).detach())
    else:
        out = out + (x - x.detach())
    if not x_min_max and not ema:
        below, above = (x < low).to(x.dtype), (x > high).to(x.dtype)
        out = out + below * (qr_min - qr_min.detach()) + above * (qr_max - qr_max.detach())
    return out


@op(2, category="parameter")
def store(x, buffer):
    """``x``, its value also written into ``buffer`` each time the op runs; the gradient passes
    to ``x`` unchanged.  It is how NNabla's quantised layers keep their quantised weights in a
    parameter (NNabla's ``outputs=[W_q.data]``; ``PF.fixed_point_quantized_affine``'s ``W_q``):
    unlike ``assign`` it leaves a static graph traceable.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> w_q = sd.Variable((2,))
        >>> with sd.auto_forward():
        ...     y = F.store(F.fixed_point_quantize(sd.Variable.from_numpy_array([0.3, -2.0]),
        ...                                        n=4, delta=0.125), w_q)
        >>> w_q.d
        array([ 0.25 , -0.875], dtype=float32)
    """
    if tuple(buffer.shape) != tuple(x.shape):
        raise ValueError(f"store: x {tuple(x.shape)} and buffer {tuple(buffer.shape)} differ "
                         "in shape")
    with torch.no_grad():
        buffer.copy_(x.detach().to(buffer.dtype))
    return x * 1.0

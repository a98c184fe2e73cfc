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

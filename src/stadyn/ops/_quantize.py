"""Simulated quantisation (NNabla's names): ``fixed_point_quantize`` stores the quantised
values as floats, with a straight-through gradient.

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

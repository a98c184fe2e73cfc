"""Resampling and repetition (NNabla's): ``interpolate``, ``unpooling`` and ``tile``.

``interpolate`` follows NNabla's coordinate rules, which are not torch's defaults: an output
index ``o`` reads the input at ``o * in / out`` (``align_corners``: ``o * (in - 1) / (out - 1)``;
``half_pixel``: ``(o + 0.5) * in / out - 0.5``, not below 0; one output reads index 0),
clamped to the input; ``"linear"`` mixes the two neighbours along each spatial axis in turn,
``"nearest"`` takes the one below (``half_pixel_for_nn``: of ``(o + 0.5) * in / out``).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     y = F.interpolate(sd.Variable.from_numpy_array([[[0.0, 1.0]]]), scale=(2,))
    >>> y.d
    array([[[0. , 0.5, 1. , 1. ]]], dtype=float32)
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ._registry import op

_C = "shape"
_MODES = ("linear", "nearest")


def interpolation_size(shape, scale, output_size, channel_last=False) -> tuple[int, ...]:
    """The spatial output size of :func:`interpolate` for an input of ``shape``.

    Example:
        >>> interpolation_size((1, 3, 5, 4), (1.5, 2.0), None)
        (7, 8)
    """
    if output_size is not None:
        return tuple(int(s) for s in output_size)
    if scale is None:
        raise ValueError("interpolate: give scale or output_size")
    n = len(scale)
    spatial = shape[-n - 1:-1] if channel_last else shape[-n:]
    return tuple(int(math.floor(s * d)) for s, d in zip(scale, spatial))


def interpolation_source(n_in, n_out, align_corners, half_pixel, nearest, half_pixel_for_nn):
    """Where each output index of :func:`interpolate` reads the input (float coordinates,
    NumPy, float64), computed in float32 as NNabla 1.39 does: the ratio is ``in / out``
    (``align_corners``: ``(in - 1) / (out - 1)``; 0 for one output), ``half_pixel`` shifts
    by half a pixel in both modes, ``half_pixel_for_nn`` (nearest only) reads
    ``(o + 0.5) * in / out`` whatever the other two say.

    Example:
        >>> interpolation_source(2, 4, False, False, False, False)
        array([0. , 0.5, 1. , 1. ])
    """
    f = np.float32
    o = np.arange(n_out, dtype=f)
    if nearest and half_pixel_for_nn:
        src = f(n_in) / f(n_out) * (o + f(0.5))
    else:
        if n_out <= 1:
            ratio = f(0.0)
        elif align_corners:
            ratio = f(n_in - 1) / f(n_out - 1)
        else:
            ratio = f(n_in) / f(n_out)
        src = np.maximum(ratio * (o + f(0.5)) - f(0.5), f(0.0)) if half_pixel else ratio * o
    return np.minimum(src.astype(np.float64), n_in - 1)


@op(1, category=_C)
def interpolate(x, scale=None, output_size=None, mode="linear", align_corners=False,
                half_pixel=False, half_pixel_for_nn=False, channel_last=False):
    """Resize the trailing spatial axes (``len(scale)`` or ``len(output_size)`` of them; before
    the channel axis with ``channel_last``) by ``scale`` (output ``floor(scale * in)``) or to
    ``output_size``, ``mode`` ``"linear"`` or ``"nearest"``, with NNabla's coordinates (see the
    module).  Example: ``F.interpolate(x, scale=(2, 2))``."""
    if mode not in _MODES:
        raise ValueError(f"interpolate: mode {mode!r} is not one of {', '.join(_MODES)}")
    if align_corners and half_pixel:
        raise ValueError("interpolate: align_corners and half_pixel cannot both be True "
                         "(NNabla 1.39 refuses them too)")
    size = interpolation_size(tuple(x.shape), scale, output_size, channel_last)
    first = x.ndim - len(size) - (1 if channel_last else 0)
    if first < 0:
        raise ValueError(f"interpolate: {len(size)} spatial axes do not fit an input of shape "
                         f"{tuple(x.shape)}")
    y = x
    for k, n_out in enumerate(size):
        axis = first + k
        n_in = y.shape[axis]
        src = interpolation_source(n_in, n_out, align_corners, half_pixel, mode == "nearest",
                      half_pixel_for_nn)
        low = np.floor(src).astype(np.int64)
        lo = torch.as_tensor(low, device=x.device)
        if mode == "nearest":
            y = y.index_select(axis, lo)
            continue
        hi = torch.as_tensor(np.minimum(low + 1, n_in - 1), device=x.device)
        shape = [1] * y.ndim
        shape[axis] = n_out
        w = torch.as_tensor(src - low, dtype=y.dtype, device=x.device).reshape(shape)
        a, b = y.index_select(axis, lo), y.index_select(axis, hi)
        y = a + (b - a) * w
    return y


@op(1, category=_C)
def unpooling(x, kernel, channel_last=False):
    """Repeat each element ``kernel[i]`` times along the ``i``-th of the trailing axes (before
    the channel axis with ``channel_last``): the inverse shape of pooling; the gradient sums
    each window.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.unpooling(sd.Variable((2, 3, 4, 5)), (2, 3)).shape
        (2, 3, 8, 15)
    """
    kernel = tuple(int(k) for k in kernel)
    first = x.ndim - len(kernel) - (1 if channel_last else 0)
    if first < 0 or min(kernel, default=1) < 1:
        raise ValueError(f"unpooling: kernel {kernel} does not fit an input of shape "
                         f"{tuple(x.shape)}")
    y = x
    for k, r in enumerate(kernel):
        if r > 1:
            y = y.repeat_interleave(r, dim=first + k)
    return y if y is not x else x.view_as(x)


@op(1, category=_C)
def tile(x, reps):
    """``x`` repeated ``reps`` times along each axis (NumPy's ``tile``: a shorter ``reps`` is
    padded with 1s in front, a longer one adds leading axes).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.tile(sd.Variable((2, 3)), (2, 1, 1)).shape
        (2, 2, 3)
    """
    reps = (int(reps),) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    return torch.tile(x, reps)

"""Small helpers shared by op implementations (attribute normalisation)."""

from __future__ import annotations

from typing import Any, Sequence

import torch


def ntuple(value: Any, n: int, default: int) -> tuple[int, ...]:
    """``value`` as an ``n``-tuple of ints (None gives ``default`` everywhere).

    Example:
        >>> ntuple(None, 2, 1), ntuple(3, 2, 0), ntuple([1, 2], 2, 0)
        ((1, 1), (3, 3), (1, 2))
    """
    if value is None:
        return (default,) * n
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError(f"expected {n} values, got {len(value)} ({value})")
    return value


def norm_axis(axis: int, ndim: int) -> int:
    """``axis`` (negative counts from the end) as a non-negative axis of ``ndim`` dimensions.

    Example:
        >>> norm_axis(-1, 3)
        2
    """
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"axis {axis} out of range for {ndim} dimensions")
    return axis % ndim if ndim else 0


def norm_axes(axis: Any, ndim: int) -> list[int] | None:
    """A list of non-negative axes, or None for "all axes".

    Example:
        >>> norm_axes((0, -1), 3), norm_axes(None, 3)
        ([0, 2], None)
    """
    if axis is None:
        return None
    if isinstance(axis, int):
        return [norm_axis(axis, ndim)]
    return [norm_axis(int(a), ndim) for a in axis]


def batch_flatten(x: torch.Tensor, base_axis: int) -> tuple[torch.Tensor, Sequence[int]]:
    """Merge the dims before ``base_axis`` into one batch dim (kept shape returned)."""
    batch = x.shape[:base_axis]
    if base_axis == 1:
        return x, batch
    return x.reshape((-1,) + tuple(x.shape[base_axis:])), batch



def pooled_size(size: int, kernel: int, stride: int, pad: int) -> int:
    """How many windows NNabla's pooling fits along an axis with ``ignore_border=True``:
    ``(W + 2P - K) / S + 1`` in C++'s ``int`` division, which truncates toward zero
    (nnabla ``src/nbla/function/utils/base_pooling.cpp:59``), so a kernel that overhangs the
    padded input by less than a stride still gives one window, over what is there.

    Example:
        >>> pooled_size(7, 2, 2, 0), pooled_size(2, 7, 7, 0), pooled_size(2, 3, 2, 0)
        (3, 1, 1)
    """
    span = size + 2 * pad - kernel
    return (span // stride if span >= 0 else -(-span // stride)) + 1


def pool_geometry(x, kernel, stride, ignore_border, pad):
    """The window geometry of a pooling op on ``x`` (a tensor; only its shape is read), as
    NNabla defines it: ``(n, kernel, stride, pad, sizes, out, extra)`` per spatial axis, where
    ``extra`` is the padding after the end that gives ``out`` windows with floor division.

    Example:
        >>> import torch
        >>> pool_geometry(torch.empty(1, 1, 7, 7), (2, 2), None, False, None)[5:]
        ((4, 4), (1, 1))
    """
    n = len(kernel)
    kernel = tuple(int(k) for k in kernel)
    stride = ntuple(stride, n, 0) if stride is not None else kernel
    pad = ntuple(pad, n, 0)
    sizes = tuple(x.shape[-n:])
    if ignore_border:
        out = tuple(pooled_size(s, k, st, p) for s, p, k, st in zip(sizes, pad, kernel, stride))
    else:  # NNabla 1.39: every window starts inside the input (one pad on the left only)
        out = tuple((s + p - 1) // st + 1 for s, p, st in zip(sizes, pad, stride))
    # Extra right/bottom padding that makes torch's floor formula give ``out`` windows.
    extra = tuple(max(0, (o - 1) * st + k - (s + 2 * p))
                  for o, st, k, s, p in zip(out, stride, kernel, sizes, pad))
    return n, kernel, stride, pad, sizes, out, extra

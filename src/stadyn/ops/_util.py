"""Small helpers shared by op implementations (attribute normalisation)."""

from __future__ import annotations

from typing import Any, Sequence

import torch


def ntuple(value: Any, n: int, default: int) -> tuple[int, ...]:
    """``value`` as an ``n``-tuple of ints (None gives ``default`` everywhere)."""
    if value is None:
        return (default,) * n
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError(f"expected {n} values, got {len(value)} ({value})")
    return value


def norm_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"axis {axis} out of range for {ndim} dimensions")
    return axis % ndim if ndim else 0


def norm_axes(axis: Any, ndim: int) -> list[int] | None:
    """A list of non-negative axes, or None for "all axes"."""
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

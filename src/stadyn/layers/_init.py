"""CNTK's parameter initialisers, as used by the layers.

A layer knows which axes of a weight are fan-in and fan-out (a dense ``W`` of shape ``(in, out)``;
a convolution ``W`` of shape ``(out, in, kh, kw)`` has fan-in ``in*kh*kw`` and fan-out
``out*kh*kw``); it calls ``init(shape, fan_in, fan_out)``.  A number or an array is a constant
initialiser.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .. import _random

__all__ = ["CNTKInitializer", "glorot_uniform", "glorot_normal", "xavier", "he_uniform",
           "he_normal", "uniform", "normal", "truncated_normal", "constant", "zeros", "ones",
           "initial_value"]


class CNTKInitializer:
    """Variance-scaling initialiser: ``kind`` is 'uniform' or 'normal', the variance is
    ``scale**2 * gain / fan`` with ``fan`` chosen by ``mode`` ('avg', 'in', 'out', 'none').

    Example:
        >>> from stadyn.layers import CNTKInitializer
        >>> init = CNTKInitializer("uniform", scale=1.0, mode="in", gain=3.0, seed=1)
        >>> w = init((100, 4), fan_in=100, fan_out=4)      # variance 3 / 100: U(-0.3, 0.3)
        >>> w.shape, bool(abs(w).max() <= 0.3)
        ((100, 4), True)
    """

    def __init__(self, kind: str, scale: float, mode: str, gain: float, seed: int | None = None):
        self.kind, self.scale, self.mode, self.gain, self.seed = kind, scale, mode, gain, seed

    def __repr__(self) -> str:
        return f"CNTKInitializer({self.kind}, scale={self.scale}, mode={self.mode})"

    def __call__(self, shape: Sequence[int], fan_in: int, fan_out: int) -> np.ndarray:
        rng = _random.prng if self.seed is None else np.random.RandomState(self.seed)
        fan = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out, "none": 1.0}[
            self.mode]
        std = self.scale * math.sqrt(self.gain / max(fan, 1e-12))
        if self.kind == "uniform":
            limit = math.sqrt(3.0) * std
            return rng.uniform(-limit, limit, tuple(shape)).astype(np.float32)
        if self.kind == "truncated":
            values = rng.randn(*shape)
            bad = np.abs(values) > 2
            while bad.any():
                values[bad] = rng.randn(int(bad.sum()))
                bad = np.abs(values) > 2
            return (values * std).astype(np.float32)
        return (rng.randn(*shape) * std).astype(np.float32)


def glorot_uniform(scale: float = 1.0, output_rank=None, filter_rank=None, seed=None):
    """U(±scale·sqrt(6 / (fan_in + fan_out))) — CNTK's default for layers."""
    return CNTKInitializer("uniform", scale, "avg", 1.0, seed)


def glorot_normal(scale: float = 1.0, output_rank=None, filter_rank=None, seed=None):
    """N(0, scale²·2 / (fan_in + fan_out))."""
    return CNTKInitializer("normal", scale, "avg", 1.0, seed)


xavier = glorot_normal


def he_uniform(scale: float = 1.0, output_rank=None, filter_rank=None, seed=None):
    """U(±scale·sqrt(6 / fan_in))."""
    return CNTKInitializer("uniform", scale, "in", 2.0, seed)


def he_normal(scale: float = 1.0, output_rank=None, filter_rank=None, seed=None):
    """N(0, scale²·2 / fan_in)."""
    return CNTKInitializer("normal", scale, "in", 2.0, seed)


def uniform(scale: float, seed=None):
    """U(-scale, scale)."""
    return CNTKInitializer("uniform", scale / math.sqrt(3.0), "none", 1.0, seed)


def normal(scale: float, seed=None):
    """N(0, scale²)."""
    return CNTKInitializer("normal", scale, "none", 1.0, seed)


def truncated_normal(stdev: float, seed=None):
    """N(0, stdev²) truncated to ±2 standard deviations."""
    return CNTKInitializer("truncated", stdev, "none", 1.0, seed)


def constant(value: float = 0.0):
    return float(value)


def zeros():
    return 0.0


def ones():
    return 1.0


def initial_value(init: Any, shape: Sequence[int], fan_in: int, fan_out: int) -> np.ndarray:
    """The array ``init`` gives for a parameter of ``shape`` (a number, an array, or an
    initialiser).

    Example:
        >>> from stadyn.layers import glorot_uniform, initial_value
        >>> initial_value(0.5, (2, 2), 2, 2).tolist()
        [[0.5, 0.5], [0.5, 0.5]]
        >>> initial_value(glorot_uniform(seed=0), (3, 4), 3, 4).shape
        (3, 4)
    """
    if isinstance(init, (int, float)):
        return np.full(tuple(shape), float(init), dtype=np.float32)
    if isinstance(init, CNTKInitializer):
        return init(shape, fan_in, fan_out)
    if callable(init):
        return np.asarray(init(tuple(shape)), dtype=np.float32)
    value = np.asarray(init, dtype=np.float32)
    if value.shape != tuple(shape):
        value = np.broadcast_to(value, tuple(shape)).copy()
    return value

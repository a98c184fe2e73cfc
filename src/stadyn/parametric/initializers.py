"""Parameter initialisers (NNabla's names and defaults).

An initialiser is a callable ``init(shape) -> np.ndarray``.  Random ones draw from a NumPy
``RandomState`` (``rng``), by default Stadyn's own (seeded 313 at import, reseeded by
:func:`stadyn.seed`), so creating a model is reproducible as in NNabla.

Example:
    >>> import numpy as np
    >>> from stadyn.parametric import initializers as I
    >>> w = I.UniformInitializer((-1, 1), rng=np.random.RandomState(0))((3, 2))
    >>> w.shape, bool((abs(w) <= 1).all())
    ((3, 2), True)
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import _random

__all__ = [
    "Initializer", "ConstantInitializer", "UniformInitializer", "NormalInitializer",
    "UniformIntInitializer", "calc_uniform_lim_glorot", "calc_normal_std_glorot",
    "calc_normal_std_he_forward", "calc_normal_std_he_backward", "GlorotUniformInitializer",
    "GlorotNormalInitializer", "HeUniformInitializer", "HeNormalInitializer",
]


class Initializer:
    """Base class: ``__call__(shape)`` returns a float32 NumPy array."""

    def __call__(self, shape: Sequence[int]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if k != "rng")
        return f"{type(self).__name__}({fields})"


def _rng(rng):
    return _random.prng if rng is None else rng


class ConstantInitializer(Initializer):
    """Every element equals ``value``."""

    def __init__(self, value: float = 0.0):
        self.value = value

    def __call__(self, shape):
        return np.full(tuple(shape), self.value, dtype=np.float32)


class UniformInitializer(Initializer):
    """Uniform on ``lim = (low, high)``."""

    def __init__(self, lim: tuple[float, float] = (-1.0, 1.0), rng=None):
        self.lim = (float(lim[0]), float(lim[1]))
        self.rng = rng

    def __call__(self, shape):
        return _rng(self.rng).uniform(self.lim[0], self.lim[1], size=tuple(shape)).astype(
            np.float32)


class UniformIntInitializer(Initializer):
    """Uniform integers on ``[low, high)``."""

    def __init__(self, lim: tuple[int, int] = (0, 10), rng=None):
        self.lim = (int(lim[0]), int(lim[1]))
        self.rng = rng

    def __call__(self, shape):
        return _rng(self.rng).randint(self.lim[0], self.lim[1], size=tuple(shape)).astype(
            np.int32)


class NormalInitializer(Initializer):
    """Normal with mean 0 and standard deviation ``sigma``."""

    def __init__(self, sigma: float = 1.0, rng=None):
        self.sigma = float(sigma)
        self.rng = rng

    def __call__(self, shape):
        return (_rng(self.rng).randn(*tuple(shape)) * self.sigma).astype(np.float32)


def calc_uniform_lim_glorot(inmaps: int, outmaps: int, kernel: Sequence[int] = (1, 1)) -> float:
    """Glorot's uniform limit ``sqrt(6 / (prod(kernel) * (inmaps + outmaps)))``.

    Example:
        >>> round(calc_uniform_lim_glorot(1, 64, (3, 3)), 6)
        0.101274
    """
    return math.sqrt(6.0 / (math.prod(kernel) * (inmaps + outmaps)))


def calc_normal_std_glorot(inmaps: int, outmaps: int, kernel: Sequence[int] = (1, 1)) -> float:
    """Glorot's normal deviation ``sqrt(2 / (prod(kernel) * (inmaps + outmaps)))``."""
    return math.sqrt(2.0 / (math.prod(kernel) * (inmaps + outmaps)))


def calc_normal_std_he_forward(inmaps: int, outmaps: int, kernel: Sequence[int] = (1, 1)
                               ) -> float:
    """He's deviation for the forward pass ``sqrt(2 / (prod(kernel) * inmaps))``."""
    return math.sqrt(2.0 / (math.prod(kernel) * inmaps))


def calc_normal_std_he_backward(inmaps: int, outmaps: int, kernel: Sequence[int] = (1, 1)
                                ) -> float:
    """He's deviation for the backward pass ``sqrt(2 / (prod(kernel) * outmaps))``."""
    return math.sqrt(2.0 / (math.prod(kernel) * outmaps))


class GlorotUniformInitializer(UniformInitializer):
    """Glorot (Xavier) uniform for given fan-in/fan-out maps and kernel."""

    def __init__(self, inmaps: int, outmaps: int, kernel: Sequence[int] = (1, 1), rng=None):
        lim = calc_uniform_lim_glorot(inmaps, outmaps, kernel)
        super().__init__((-lim, lim), rng)


class GlorotNormalInitializer(NormalInitializer):
    """Glorot (Xavier) normal."""

    def __init__(self, inmaps: int, outmaps: int, kernel: Sequence[int] = (1, 1), rng=None):
        super().__init__(calc_normal_std_glorot(inmaps, outmaps, kernel), rng)


class HeNormalInitializer(NormalInitializer):
    """He normal (forward)."""

    def __init__(self, inmaps: int, outmaps: int, kernel: Sequence[int] = (1, 1), rng=None):
        super().__init__(calc_normal_std_he_forward(inmaps, outmaps, kernel), rng)


class HeUniformInitializer(UniformInitializer):
    """He uniform (forward): limit ``sqrt(3) * he_std``."""

    def __init__(self, inmaps: int, outmaps: int, kernel: Sequence[int] = (1, 1), rng=None):
        lim = math.sqrt(3.0) * calc_normal_std_he_forward(inmaps, outmaps, kernel)
        super().__init__((-lim, lim), rng)

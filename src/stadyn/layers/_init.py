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
from .._errors import ParameterError
from .._cpp_normal import normal_doubles, normal_floats, truncated_normal_draws
from .._mt19937 import MT19937_64, uniform_floats

__all__ = ["CNTKInitializer", "glorot_uniform", "glorot_normal", "xavier", "he_uniform",
           "he_normal", "uniform", "normal", "truncated_normal", "bilinear", "constant", "zeros",
           "ones", "initial_value"]


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

    def __init__(self, kind: str, scale: float, mode: str, gain: float, seed: int | None = None,
                 output_rank: int | None = None, filter_rank: int | None = None):
        self.kind, self.scale, self.mode, self.gain, self.seed = kind, scale, mode, gain, seed
        # How many trailing axes of a parameter made directly are the output's (fan-out) and a
        # filter's (counted in both fans); None: the last axis is the output's, no filter.
        self.output_rank, self.filter_rank = output_rank, filter_rank

    def __repr__(self) -> str:
        return f"CNTKInitializer({self.kind}, scale={self.scale}, mode={self.mode})"

    def with_seed(self, seed: int) -> "CNTKInitializer":
        """This initialiser with ``seed`` (its ranks kept)."""
        return CNTKInitializer(self.kind, self.scale, self.mode, self.gain, seed,
                               self.output_rank, self.filter_rank)

    def __call__(self, shape: Sequence[int], fan_in: int, fan_out: int,
                 dtype: Any = np.float32) -> np.ndarray:
        """The values for a parameter of ``shape``, ``dtype`` (float32 or float64: CNTK 2.7
        draws a double parameter's in double, not float32's widened)."""
        # the seed: the given one, else CNTK's (the fixed seed or the next of its count)
        seed = _random.initializer_seed() if self.seed is None else int(self.seed)
        double = np.dtype(dtype) == np.float64
        count = int(np.prod(shape, dtype=np.int64))
        if self.kind == "uniform":    # CNTK's own numbers (``_mt19937``), to the bit
            variance3 = {"avg": 6.0 * self.gain / max(fan_in + fan_out, 1),
                         "in": 3.0 * self.gain / max(fan_in, 1),
                         "out": 3.0 * self.gain / max(fan_out, 1), "none": 3.0 * self.gain}
            limit = _scaled(math.sqrt(variance3[self.mode]), self.scale, double)
            if not 0 < limit < math.inf:
                raise ParameterError(_endless_uniform(limit))
            draw = _uniform_doubles if double else uniform_floats
            return draw(seed, count, limit).reshape(tuple(shape))
        fan = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out, "none": 1.0}[
            self.mode]
        std = _scaled(math.sqrt(self.gain / max(fan, 1e-12)), self.scale, double)
        if std <= 0:    # (CPUMatrix::SetGaussianRandomValue's check; a float32 one rounded to 0)
            raise ParameterError(f"Set{'Gaussian' if self.kind == 'normal' else 'TruncatedNormal'}"
                                 "RandomValue: sigma must be a positive value.")
        # CNTK's own numbers (Boost's ziggurat), to the bit; truncated: within 2 std
        if self.kind != "normal":
            values = truncated_normal_draws(seed, count, std, double)
        elif double:    # (a double parameter's: the ziggurat's doubles times a double sigma)
            values = std * normal_doubles(MT19937_64(seed), count)
        else:
            values = normal_floats(seed, count, std)
        return values.reshape(tuple(shape))


def _endless_uniform(limit: float) -> str:
    """Why a uniform draw of the range ``±limit`` (not positive, NaN or infinite) is refused:
    CNTK 2.7 draws it with Boost's ``uniform_real_distribution(-limit, limit)``
    (``CPUMatrix::SetUniformRandomValue``, Source/Math/CPUMatrixImpl.h:1007-1014, cntk.exe's
    ``LearnableParameter::InitRandom`` and the Python API alike), which draws again while a
    value is not below ``limit``: for ever there; of an infinite range CNTK 2.7's Python API
    ends in a segmentation fault.

    Example:
        >>> print(_endless_uniform(0.0))
        SetUniformRandomValue: the range [-0.0, 0.0) is empty: CNTK 2.7 (cntk.exe and its Python \
API) never returns there (Boost's uniform_real_distribution draws again for ever); Stadyn \
refuses it
    """
    if limit == math.inf:
        what, ends = "infinite", "'s Python API ends in a segmentation fault there"
    else:
        what = "NaN" if math.isnan(limit) else "empty"
        ends = (" (cntk.exe and its Python API) never returns there (Boost's "
                "uniform_real_distribution draws again for ever)")
    return (f"SetUniformRandomValue: the range [{-limit}, {limit}) is {what}: CNTK 2.7{ends}; "
            "Stadyn refuses it")


def _uniform_doubles(seed: int, count: int, limit: float) -> np.ndarray:
    """``count`` doubles uniform in [-limit, limit), as CNTK 2.7 draws a float64 parameter's
    (Boost's ``uniform_real_distribution<double>(-limit, limit)`` on ``mt19937_64(seed)``,
    CPUMatrixImpl.h:1014, not the C++ library's: it draws again for a NaN range:
    ``u = x / 2**64`` (below 1), ``u * (2 limit) - limit``; bit for bit against CNTK 2.7)."""
    u = MT19937_64(seed).take(count).astype(np.float64) * 2.0 ** -64
    u = np.minimum(u, np.nextafter(1.0, 0.0))
    return u * (2.0 * limit) - limit


def _scaled(base: float, scale: float, double: bool = False) -> float:
    """The range (or standard deviation) CNTK draws with: the distribution's own one, computed
    in double, rounded to float32, times the scale rounded to float32, in float32
    (LearnableParameter::InitRandom's ``ElemType range = (ElemType)opts.second; range *=
    initValueScale``, for BrainScript and the Python API alike); for a float64 parameter
    (``double``) all in double.

    Example:
        >>> _scaled(0.05, 0.1), float(np.float32(0.05 * 0.1))    # not the double product's
        (0.005000000353902578, 0.004999999888241291)
        >>> _scaled(0.05, 0.1, double=True) == 0.05 * 0.1
        True
    """
    if double:
        return float(base) * float(scale)
    with np.errstate(over="ignore"):      # (an infinite range is refused by the caller)
        return float(np.float32(base) * np.float32(scale))


def _positive(scale: float, cntk_name: str) -> float:
    """``scale``, refused unless positive as CNTK 2.7's Python API refuses it when the
    initializer is made (``CreateInitializer``, Variable.cpp: ``scale <= 0``, in its words,
    which say 0 for a negative scale too; a NaN passes, as there).

    Example:
        >>> try:
        ...     _positive(-1, "normal")
        ... except ValueError as e:
        ...     print(e)
        CreateInitializer: scale value for initializer 'normal' cannot be 0.
    """
    if scale <= 0:
        raise ParameterError(f"CreateInitializer: scale value for initializer '{cntk_name}' "
                             "cannot be 0.")
    return scale


def _rank(rank) -> int | None:
    """A rank given to an initialiser, or None for CNTK's sentinel ('infer it')."""
    return None if rank is None or int(rank) >= 2147483647 else int(rank)


def glorot_uniform(scale: float = 1.0, output_rank=None, filter_rank=None, seed=None):
    """U(±scale·sqrt(6 / (fan_in + fan_out))) — CNTK's default for layers."""
    return CNTKInitializer("uniform", _positive(scale, "glorotUniform"), "avg", 1.0, seed,
                           _rank(output_rank), _rank(filter_rank))


def glorot_normal(scale: float = 1.0, output_rank=None, filter_rank=None, seed=None):
    """N(0, scale²·2 / (fan_in + fan_out))."""
    return CNTKInitializer("normal", _positive(scale, "glorotNormal"), "avg", 1.0, seed,
                           _rank(output_rank), _rank(filter_rank))


def xavier(scale: float = 1.0, output_rank=None, filter_rank=None, seed=None):
    """U(±scale·sqrt(3 / fan_in)) (CNTK 2.7's ``xavier``)."""
    return CNTKInitializer("uniform", _positive(scale, "xavier"), "in", 1.0, seed,
                           _rank(output_rank), _rank(filter_rank))


def he_uniform(scale: float = 1.0, output_rank=None, filter_rank=None, seed=None):
    """U(±scale·sqrt(6 / fan_in))."""
    return CNTKInitializer("uniform", _positive(scale, "heUniform"), "in", 2.0, seed,
                           _rank(output_rank), _rank(filter_rank))


def he_normal(scale: float = 1.0, output_rank=None, filter_rank=None, seed=None):
    """N(0, scale²·2 / fan_in)."""
    return CNTKInitializer("normal", _positive(scale, "heNormal"), "in", 2.0, seed,
                           _rank(output_rank), _rank(filter_rank))


def uniform(scale: float, seed=None):
    """U(-scale, scale)."""
    return CNTKInitializer("uniform", _positive(scale, "uniform1"), "none", 1.0 / 3.0,
                           seed)    # (a gain of 1/3: U(±scale))


def normal(scale: float, seed=None):
    """N(0, scale²)."""
    return CNTKInitializer("normal", _positive(scale, "normal"), "none", 1.0, seed)


def truncated_normal(stdev: float, seed=None):
    """N(0, stdev²) truncated to ±2 standard deviations."""
    return CNTKInitializer("truncated", _positive(stdev, "TruncNormal"), "none", 1.0, seed)


def bilinear(kernel_width: int, kernel_height: int):
    """An initialiser filling each ``kernel_height`` x ``kernel_width`` filter of a parameter
    with the bilinear upsampling kernel (for a transposed convolution that upsamples).

    Example:
        >>> bilinear(4, 4)((1, 1, 4, 4))[0, 0, 0].tolist()
        [0.0625, 0.1875, 0.1875, 0.0625]
    """
    def weights(k: int) -> np.ndarray:
        f = math.ceil(k / 2.0)
        center = f - 1 if k % 2 == 1 else f - 0.5
        return 1.0 - np.abs(np.arange(k) - center) / f
    kernel = np.outer(weights(int(kernel_height)), weights(int(kernel_width)))

    def fill(shape) -> np.ndarray:
        shape = tuple(shape)
        if len(shape) != 4:
            return np.broadcast_to(kernel, shape).astype(np.float32)
        # CNTK 2.7 (LearnableParameter::InitBilinear): output channel c reads input channel
        # c alone, the other filters are zeros; the two channel counts must be equal
        if shape[0] != shape[1]:
            raise RuntimeError("Number of input and output channels of filter for bilinear "
                               "interpolation must be equal.")
        out = np.zeros(shape, np.float32)
        for c in range(shape[0]):
            out[c, c] = np.broadcast_to(kernel, shape[2:])
        return out
    fill.cntk_initializer = True        # (an initializer made, as CNTK's bilinear(w, h) is)
    return fill


def constant(value: float = 0.0):
    return float(value)


def zeros():
    return 0.0


def ones():
    return 1.0


def initial_value(init: Any, shape: Sequence[int], fan_in: int, fan_out: int,
                  dtype: Any = None) -> np.ndarray:
    """The array ``init`` gives for a parameter of ``shape`` (a number, an array, or an
    initialiser; of a float64 ``dtype`` an initialiser draws in double, as CNTK 2.7).

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
        return init(shape, fan_in, fan_out, dtype if dtype is not None else np.float32)
    if callable(init):
        return np.asarray(init(tuple(shape)), dtype=np.float32)
    value = np.asarray(init, dtype=np.float32)
    if value.shape != tuple(shape):
        value = np.broadcast_to(value, tuple(shape)).copy()
    return value

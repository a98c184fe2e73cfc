"""CNTK's normal draws: the ``std::normal_distribution`` of libstdc++ as CNTK 2.7 builds it
(``normal_floats`` for ``C.normal``/``glorot_normal``/``he_normal`` initial values,
``normal_doubles`` for its random Functions) and its truncated normal
(``truncated_normal_draws``), from the 64-bit Mersenne Twister of ``_mt19937.py``; the ziggurat
tables are computed once, in 50-digit decimals.

Example:
    >>> from stadyn._cpp_normal import normal_floats
    >>> normal_floats(1, 2, 1.0).dtype
    dtype('float32')
"""

from __future__ import annotations

import decimal
import functools
import math

import numpy as np

from ._mt19937 import MT19937_64

__all__ = ["normal_doubles", "normal_floats", "truncated_normal_draws"]


def _pi() -> decimal.Decimal:
    """pi in the current decimal context (Machin: 16 atan(1/5) - 4 atan(1/239))."""
    def atan_inverse(k: int) -> decimal.Decimal:
        x = decimal.Decimal(1) / k
        term, total, n, limit = x, x, 1, decimal.Decimal(10) ** -(decimal.getcontext().prec + 2)
        while abs(term) > limit:
            term *= -x * x
            n += 2
            total += term / n
        return total
    return 16 * atan_inverse(5) - 4 * atan_inverse(239)


@functools.cache
def _ziggurat_tables() -> tuple[np.ndarray, np.ndarray]:
    """The 128 layers of the normal ziggurat Boost 1.60's ``normal_distribution`` samples from
    (Marsaglia and Tsang): ``x[1]`` is the tail's start ``r``, each layer has the area ``v`` of
    the base (the rectangle under ``x[1]`` and the tail), ``x[0] = v / f(r)``, ``x[128] = 0``;
    ``y = f(x) = exp(-x**2 / 2)`` (``y[0] = 0``, ``y[128] = 1``).  Computed with 50 decimal
    digits and rounded to double: Boost's table, to the bit (a table computed in double is
    off by up to 3e-14, which CNTK's float64 draws show)."""
    D = decimal.Decimal
    with decimal.localcontext() as ctx:
        ctx.prec = 50
        r, pi = D("3.4426198558966521214"), _pi()

        def f(t: decimal.Decimal) -> decimal.Decimal:
            return (-t * t / 2).exp()

        z = r / D(2).sqrt()                 # erfc(z) = 1 - erf(z), erf by its Taylor series
        power, series, n = z, z, 0
        while abs(power) > D(10) ** -60:
            n += 1
            power *= -z * z / n
            series += power / (2 * n + 1)
        v = r * f(r) + (pi / 2).sqrt() * (1 - 2 / pi.sqrt() * series)
        x = [v / f(r), r]
        for _ in range(126):
            x.append((-2 * (f(x[-1]) + v / x[-1]).ln()).sqrt())
        y = [D(0)] + [f(t) for t in x[1:]] + [D(1)]
        x.append(D(0))
        return np.array([float(t) for t in x]), np.array([float(t) for t in y])


def normal_floats(seed: int, count: int, sigma: float) -> np.ndarray:
    """``count`` float32 values of N(0, sigma**2), as CNTK 2.7 draws a parameter's normal
    initial values (``CPUMatrix::SetGaussianRandomValue``: Boost 1.60's ziggurat
    ``normal_distribution`` on ``mt19937_64(seed)``, in double, each value rounded to float32;
    found bit for bit against CNTK 2.7's ``normal`` and ``he_normal``).  Each try takes one
    64-bit number ``u``: its low 8 bits pick the layer ``i = bits >> 1`` and the sign (bit 0),
    ``r = (u >> 8) / 2**56`` (bit 11 of ``u`` cleared first, as Boost does for a double)
    and ``x = r * x[i]`` is taken when below ``x[i + 1]``.  Otherwise
    layer 0 draws from the tail (``x[1] + e1 / x[1]`` for exponential draws ``e1, e2`` with
    ``2 e2 > (e1 / x[1])**2``), any other layer takes ``x`` when a uniform ``y`` within the
    layer lies under ``exp(-x**2 / 2)``, else it tries again.  A uniform draw is
    ``u / 2**64`` (again when that rounds to 1), an exponential one ``-log(1 - uniform)``.
    The value is ``float32(sigma) * x``, rounded to float32.

    Example:
        >>> normal_floats(7, 3, 0.5).tolist()     # CNTK 2.7: C.normal(0.5, seed=7)
        [0.48164117336273193, -0.8281922936439514, -0.05767981335520744]
    """
    return (float(np.float32(sigma)) * normal_doubles(MT19937_64(seed), count)).astype(
        np.float32)


_BIT11_CLEARED = np.uint64(0xFFFFFFFFFFFFF7FF)


def normal_doubles(rng: MT19937_64, count: int) -> np.ndarray:
    """``count`` standard normal values in double from ``rng``, as Boost 1.60's
    ``normal_distribution`` draws them (its ziggurat: :func:`normal_floats` says how), taking
    from ``rng`` just the numbers those draws take, so the engine goes on from there.  The
    numbers are drawn a piece at a time and tried all at once (:func:`_ziggurat`).

    Example:
        >>> r = MT19937_64(7)
        >>> a = normal_doubles(r, 2); b = normal_doubles(r, 1)
        >>> bool((a == normal_doubles(MT19937_64(7), 3)[:2]).all())
        True
    """
    n = int(count)
    parts, filled, spare = [], 0, 64
    while filled < n:
        need = n - filled
        buf = rng.take(min(need + (need >> 4) + spare, (1 << 20) + spare))
        values, used = _ziggurat(buf, need)
        rng.give_back(buf[used:])           # (the numbers not used)
        parts.append(values)
        filled += len(values)
        spare = 64 if used else 2 * spare   # (a try that needed more numbers than the piece)
    return parts[0] if len(parts) == 1 else np.concatenate([np.zeros(0), *parts])


def _ziggurat(u: np.ndarray, need: int) -> tuple[np.ndarray, int]:
    """Up to ``need`` of Boost's normal values from the numbers ``u`` and how many of the
    numbers they take.  Every number is taken as a try at once: its layer ``i``, sign and
    ``x``, a value where ``x`` lies under the next layer's edge.  A refused try at ``p`` of a
    layer above 0 takes the number after it as the uniform ``y`` of its layer and gives ``x``
    where ``y`` lies under ``exp(-x**2 / 2)``; either way the next try is at ``p + 2`` (Boost
    tries again from the top), so the number at ``p + 1`` is no try of its own.  Which
    refused numbers start a try is found in order over the refused ones alone (about one in
    eighty); the tail (layer 0) and a uniform redrawn (a number whose double rounds to
    ``2**64``) are walked number by number (:func:`_walked`).  ``exp`` is NumPy's, and the C
    library's (Boost's) where ``y`` lies within a few units of the last place of it."""
    tx, ty = _ziggurat_tables()
    signed, edge = _try_tables()
    size = len(u)
    low = u.astype(np.uint8)                    # (the layer and the sign)
    value = ((u & _BIT11_CLEARED) >> np.uint64(8)).astype(np.float64) * signed[low]
    x = np.abs(value)
    refused = np.flatnonzero(~(x < edge[low]))
    if not len(refused) or refused[0] >= need:
        used = min(need, size)
        return value[:used], used
    nxt = refused + 1                            # (the uniform of each refused try)
    within = nxt < size
    y01 = u[np.minimum(nxt, size - 1)].astype(np.float64) * 2.0 ** -64
    i = low[refused].astype(np.intp) >> 1
    common = (i != 0) & within & (y01 < 1.0)
    y = ty[i] + y01 * (ty[i + 1] - ty[i])
    xr = x[refused]
    f = np.exp(-(xr * xr / 2))
    below = y < f
    for k in np.flatnonzero(common & (np.abs(y - f) <= 4 * np.spacing(f))).tolist():
        below[k] = y[k] < math.exp(-(xr[k] * xr[k] / 2))
    is_value = np.ones(size, bool)
    is_value[refused] = False
    ends: dict[int, int] = {}                   # where the next try starts after a refused one
    starts, walked_to, frontier = [], 0, size
    for k, (p, plain) in enumerate(zip(refused.tolist(), common.tolist())):
        if p < walked_to:                       # (a number an earlier try took)
            continue
        if plain:
            starts.append(k)
            walked_to = p + 2
            continue
        walked = _walked(u, p, int(i[k]), float(xr[k]), 1.0 if low[p] & 1 else -1.0)
        if walked is None:                      # (it needs numbers past the piece)
            frontier = p
            break
        v, walked_to = walked
        is_value[p + 1:walked_to] = False
        is_value[p] = v is not None
        if v is not None:
            value[p] = v
        ends[p] = walked_to
    if starts:
        p = refused[starts]
        is_value[p], is_value[p + 1] = below[starts], False
    is_value[frontier:] = False
    at = np.flatnonzero(is_value)
    if len(at) < need:
        return value[at], frontier
    last = int(at[need - 1])
    if last not in ends:                        # (a first try taken, or a plain refused one)
        ends[last] = last + 1 if x[last] < edge[low[last]] else last + 2
    return value[at[:need]], ends[last]


@functools.cache
def _try_tables() -> tuple[np.ndarray, np.ndarray]:
    """By the low 8 bits of a number: the factor of its try's ``x`` (the 56 bits above them
    as an integer): ``x[i] / 2**56`` of its layer ``i``, negative where the sign bit is 0
    (scaled by a power of 2, so the product is Boost's ``x`` and sign to the bit); and the edge
    ``x[i + 1]`` a try's ``x`` must lie under."""
    tx, _ = _ziggurat_tables()
    low = np.arange(256)
    return np.where(low & 1, 1.0, -1.0) * tx[low >> 1] * 2.0 ** -56, tx[(low >> 1) + 1]


def _walked(u: np.ndarray, p: int, i: int, x: float,
            sign: float) -> tuple[float | None, int] | None:
    """The refused try at ``u[p]`` (layer ``i``, ``x``, ``sign``) number by number: its value
    (None: Boost tries again) and where the next try starts; None where it needs numbers past
    ``u``."""
    tx, ty = _ziggurat_tables()
    at = p + 1

    def uniform() -> float | None:
        nonlocal at
        while at < len(u):
            v = float(u[at]) * 2.0 ** -64      # (a Python float: the double nearest u)
            at += 1
            if v < 1:
                return v
        return None

    if i == 0:                                  # the tail: exponential draws e1, e2
        while True:
            a = uniform()
            b = uniform() if a is not None else None
            if b is None:
                return None
            e1 = -math.log(1.0 - a) / float(tx[1])
            e2 = -math.log(1.0 - b)
            if 2 * e2 > e1 * e1:
                return (e1 + float(tx[1])) * sign, at
    y01 = uniform()
    if y01 is None:
        return None
    y = float(ty[i]) + y01 * (float(ty[i + 1]) - float(ty[i]))
    return (x * sign if y < math.exp(-(x * x / 2)) else None), at


def truncated_normal_draws(seed: int, count: int, sigma: float, double: bool = False) -> np.ndarray:
    """``count`` values of N(0, sigma**2) within two ``sigma``, as CNTK 2.7 draws a
    ``truncated_normal`` parameter (``CPUMatrix::SetTruncatedNormalRandomValue``): the values
    of :func:`normal_floats` (``double``: the ziggurat's doubles times ``sigma``, a float64
    parameter's), in order, those below ``-2 sigma`` or above ``2 sigma`` left out (a NaN is
    neither, so a NaN ``sigma`` gives NaNs).  ``sigma`` must be positive: the one caller,
    :class:`stadyn.layers.CNTKInitializer`, refuses another in CNTK's words (a ``ParameterError``)
    before it draws; of a negative one no value is within the bounds, so the draws never end.

    Example:
        >>> v = truncated_normal_draws(9, 1000, 0.5)
        >>> bool(abs(v).max() <= 1.0), v[:2].tolist()   # CNTK 2.7's first two
        (True, [0.47617307305336, -0.6897498369216919])
    """
    bound = 2.0 * float(sigma) if double else np.float32(2) * np.float32(sigma)
    n = int(count) + int(count) // 16 + 64
    while True:
        values = (float(sigma) * normal_doubles(MT19937_64(seed), n) if double
                  else normal_floats(seed, n, sigma))
        kept = values[~((values < -bound) | (values > bound))]
        if len(kept) >= count:
            return kept[:int(count)]
        n *= 2

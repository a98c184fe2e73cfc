"""What CNTK 2.7's CPU random Functions draw (its ``RandomDistribution``, ``Dropout`` and
``RandomSample`` nodes) from a node's ``std::mt19937_64`` (``stadyn._mt19937``), each draw going
on from where the last one left the engine, through Boost 1.60's distributions in double.
``_cntk_draws.py``'s kernels call them."""

from __future__ import annotations

import math

import numpy as np

from .._cpp_normal import normal_doubles
from .._mt19937 import MT19937_64

__all__ = ["gumbel_doubles", "inclusion_frequencies", "mask_doubles", "normal_count",
           "normal_draw", "sample_classes", "uniform_doubles"]


def uniform_doubles(rng: MT19937_64, count: int, low: float, high: float) -> np.ndarray:
    """``count`` values uniform in ``[low, high)`` as Boost 1.60's
    ``uniform_real_distribution<double>`` draws them from ``rng``: ``u / 2**64 * (high - low)
    + low`` for a number ``u``, again from the next number where that is not below ``high``
    (CNTK 2.7's ``SetUniformRandomValue``: its float32 values are these rounded, found bit for
    bit against its ``uniform``).  ``high <= low`` (where Boost never returns) gives ``low``.

    Example:
        >>> v = uniform_doubles(MT19937_64(5), 2, -1.0, 2.0)  # C.random.uniform(2, -1, 2, seed=5)
        >>> v.astype(np.float32).tolist()
        [1.0191947221755981, -0.884516179561615]
    """
    low, high = float(low), float(high)
    span = high - low
    if not span > 0:
        rng.take(int(count))
        return np.full(int(count), low)
    return _accepted(rng, count, lambda u: u.astype(np.float64) * 2.0 ** -64 * span + low,
                     lambda v: ~(v < high))


def _accepted(rng: MT19937_64, count: int, value, refused) -> np.ndarray:
    """The values (``value``: numbers -> values) of ``count`` of ``rng``'s numbers that
    ``refused`` (values -> bool mask) keeps, as Boost draws them: a refused number is dropped
    and the next one drawn in its place (the numbers taken after it given back to be drawn
    again); each number made a value once."""
    need, parts = int(count), []
    while need > 0:
        u = rng.take(need)
        v = value(u)
        out = refused(v)
        if not out.any():
            parts.append(v)
            break
        k = int(np.argmax(out))             # (the first refused: its number dropped)
        parts.append(v[:k])
        rng.give_back(u[k + 1:])
        need -= k
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else value(np.zeros(0, np.uint64))


def mask_doubles(rng: MT19937_64, count: int, rate: float) -> np.ndarray:
    """CNTK 2.7's ``SetUniformRandomMask`` as its dropout and ``bernoulli`` draw it: 0 where a
    :func:`uniform_doubles` value in ``[0, 1)`` is at most ``rate``, else 1 (dropout: its rate,
    scaling apart; ``bernoulli``: ``1 - mean``).  Compared on the engine's numbers: the value
    of a number ``u`` is ``double(u) / 2**64``, at most ``rate`` for ``u`` up to a threshold
    and refused (1.0) from another (:func:`_last_number`).

    Example:
        >>> mask_doubles(MT19937_64(7), 6, 0.5).tolist()   # C.dropout(x, 0.5, seed=7)'s mask
        [1.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    """
    u = _accepted(rng, count, lambda u: u, lambda u: u > _LAST_BELOW_ONE)
    limit = _last_number(float(rate) * 2.0 ** 64)
    if limit < 0:
        return np.ones(len(u))
    return (u > np.uint64(limit)).astype(np.float64)


def _double(u: int) -> float:
    """The double NumPy makes of the 64-bit number ``u`` (as ``uniform_doubles`` converts)."""
    return float(np.array([u], np.uint64).astype(np.float64)[0])


def _last_number(bound: float) -> int:
    """The largest 64-bit number whose double is at most ``bound`` (-1 where none is): the
    conversion rounds, so it may lie above ``bound``; found by bisection."""
    if not bound >= 0.0:
        return -1
    if bound >= 2.0 ** 64:
        return 2**64 - 1
    low, high = int(bound), min(int(bound) + 2**12, 2**64 - 1)    # (a double's ulp <= 2**11)
    while low < high:                   # double(low) <= bound; the answer in [low, high]
        mid = (low + high + 1) // 2
        if _double(mid) <= bound:
            low = mid
        else:
            high = mid - 1
    return low


#: the last number whose value ``double(u) / 2**64`` is below 1 (Boost refuses the others)
_LAST_BELOW_ONE = np.uint64(_last_number(float(np.nextafter(2.0 ** 64, 0))))


def gumbel_doubles(rng: MT19937_64, count: int, loc: float, scale: float,
                   exact: bool = False) -> np.ndarray:
    """CNTK 2.7's ``SetGumbelRandomValue``: ``loc - scale * log(-log1p(-u))`` for
    :func:`uniform_doubles` values ``u`` in ``[0, 1)``.  NumPy's ``log`` and ``log1p`` differ
    from the C library's in the last bit of a double now and then (rounded to float32 the
    values agree); ``exact`` takes Python's ``math`` (the C library's) value by value, ~15x
    slower, for float64 draws.

    Example:
        >>> v = gumbel_doubles(MT19937_64(5), 2, 0.5, 2.0)    # C.random.gumbel(2, 0.5, 2, seed=5)
        >>> [round(x, 6) for x in v.astype(np.float32).tolist()]
        [0.276929, 6.975348]
    """
    u = uniform_doubles(rng, count, 0.0, 1.0)
    loc, scale = float(loc), float(scale)
    if exact:
        return np.array([loc - scale * _log_or_inf(-math.log1p(-v)) for v in u.tolist()])
    with np.errstate(divide="ignore"):
        return loc - scale * np.log(-np.log1p(-u))


def _log_or_inf(v: float) -> float:
    return math.log(v) if v > 0 else -math.inf


def normal_draw(rng: MT19937_64, count: int, mean: float, scale: float) -> np.ndarray:
    """CNTK 2.7's ``SetGaussianRandomValue``: Boost's normal values
    (:func:`normal_doubles`) times ``scale`` plus ``mean``, in double; CNTK draws an even
    count, so an odd ``count`` draws one more value and leaves it.

    Example:
        >>> v = normal_draw(MT19937_64(5), 5, 1.0, 2.0)       # C.random.normal((5,), 1, 2)
        >>> v.astype(np.float32)[:2].tolist()
        [-0.5686930418014526, 0.8645166754722595]
    """
    n = int(count)
    return normal_doubles(rng, normal_count(n))[:n] * float(scale) + float(mean)


def normal_count(count: int) -> int:
    """How many normal values CNTK 2.7 draws for ``count``: an even count (Boost's normal
    values come in pairs), one more where ``count`` is odd.

    Example:
        >>> normal_count(5), normal_count(6)
        (6, 6)
    """
    return int(count) + (int(count) & 1)


def sample_classes(rng: MT19937_64, weights: np.ndarray, count: int,
                   allow_duplicates: bool) -> tuple[np.ndarray, int]:
    """CNTK 2.7's ``RandomSample``: ``count`` classes drawn with probability proportional to
    ``weights`` (each a :func:`uniform_doubles` value in ``[0, total)`` looked up in the
    running sums, in double: the first class whose sum reaches it), with duplicates or, without,
    drawn again until ``count`` distinct ones are found; returns the classes (int64) and the
    tries taken (CNTK's ``rngOffset`` counts them).

    Example:
        >>> w = np.array([1, 2, 3, 4, 5], np.float32)
        >>> c, tries = sample_classes(MT19937_64(3), w, 3, True)
        >>> c.tolist(), tries
        ([3, 1, 3], 3)
    """
    w = np.asarray(weights, np.float64).reshape(-1)
    sums = np.cumsum(w)
    total, count = float(sums[-1]), int(count)
    if not allow_duplicates and int(np.count_nonzero(w > 0)) < count:
        raise ValueError(f"sampling {count} distinct classes: fewer classes have a positive "
                         "weight (CNTK 2.7 draws forever)")
    if allow_duplicates:
        v = uniform_doubles(rng, count, 0.0, total)
        return np.searchsorted(sums, v, side="left").astype(np.int64), count
    picked: list[int] = []
    seen: set[int] = set()
    tries = 0
    while len(picked) < count:        # (each of these tries is taken: no number drawn ahead)
        for c in np.searchsorted(sums, uniform_doubles(rng, count - len(picked), 0.0, total),
                                 side="left").tolist():
            tries += 1
            if c not in seen:
                seen.add(c)
                picked.append(c)
    return np.array(picked, np.int64), tries


def inclusion_frequencies(rng: MT19937_64, weights: np.ndarray, count: int,
                          allow_duplicates: bool) -> tuple[np.ndarray, int]:
    """CNTK 2.7's ``RandomSampleInclusionFrequency``: how often each class is expected among
    :func:`sample_classes`' ``count``, ``p * count`` for its probability ``p`` (its weight over
    the weights' running sum, in double) with duplicates; without, ``-expm1(t * log1p(-p))``
    for CNTK's estimate ``t`` of the tries a set takes, the mean of ten samplings from ``rng``
    (its ``EstimateNumberOfTries``, made with duplicates too); returns the frequencies (double)
    and the tries taken (CNTK's ``rngOffset`` counts them).

    Example:
        >>> w = np.array([1, 2, 3, 4, 0, 10], np.float32)
        >>> f, tries = inclusion_frequencies(MT19937_64(1), w, 3, False)
        >>> f.astype(np.float32)[:2].tolist(), tries    # C.random_sample_inclusion_frequency
        ([0.23411643505096436, 0.4218226969242096], 52)
    """
    w = np.asarray(weights, np.float64).reshape(-1)
    tries = sum(sample_classes(rng, w, count, allow_duplicates)[1] for _ in range(10))
    p = w / float(np.cumsum(w)[-1])
    if allow_duplicates:
        return p * int(count), tries
    t = tries / 10.0
    return np.array([-math.expm1(t * math.log1p(-v)) if v < 1 else 1.0 for v in p.tolist()]), \
        tries

"""Counter-based randomness for readers: the same numbers whatever the number of workers.

Every random decision a reader makes is a pure function of ``(seed, sweep, position)``:

- the order of a sweep is CNTK 2.7's randomized order (``_cntk_order.py``), a function of the
  seed, the sweep and the chunks;
- the augmentation of the sample at ``position`` of sweep ``sweep`` draws from
  ``SampleRandom(seed, sweep, position)``.

Nothing depends on which process decodes a sample or on what it decoded before, so batches are
identical with 0, 1 or 8 workers and after a checkpoint restore. The generator is SplitMix64
(Steele, Lea and Flood, 2014): a 64-bit counter passed through a fixed mixing function. It is
written out here (a few integer operations) so that the stream never changes with a NumPy
release.
"""

from __future__ import annotations

__all__ = ["SampleRandom", "mix64"]

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_TWO_POW_M53 = 2.0 ** -53


def mix64(z: int) -> int:
    """SplitMix64's finalizer: a bijection of 64-bit integers that scrambles every bit."""
    z &= _MASK
    z = ((z ^ (z >> 30)) * _M1) & _MASK
    z = ((z ^ (z >> 27)) * _M2) & _MASK
    return z ^ (z >> 31)


def _key(*parts: int) -> int:
    state = 0
    for part in parts:
        state = mix64(state ^ ((part + _GOLDEN) & _MASK))
    return state


class SampleRandom:
    """A small random generator owned by one sample (or one sweep).

    Example:
        >>> a = SampleRandom(0, 1, 7)
        >>> b = SampleRandom(0, 1, 7)
        >>> [a.random() == b.random() for _ in range(3)]
        [True, True, True]
        >>> 0 <= SampleRandom(3, 0, 0).integers(0, 5) <= 5
        True
    """

    __slots__ = ("_state",)

    def __init__(self, seed: int, sweep: int, position: int, stream: int = 0):
        self._state = _key(seed, sweep, position, stream)

    def _next(self) -> int:
        self._state = (self._state + _GOLDEN) & _MASK
        return mix64(self._state)

    def random(self) -> float:
        """A float uniform in [0, 1)."""
        return (self._next() >> 11) * _TWO_POW_M53

    def uniform(self, low: float, high: float) -> float:
        """A float uniform in [low, high)."""
        return low + (high - low) * self.random()

    def integers(self, low: int, high: int) -> int:
        """An integer uniform in [low, high] (both ends included, like ``std::uniform_int``)."""
        span = high - low + 1
        if span <= 1:
            return low
        return low + ((self._next() * span) >> 64)

    def bernoulli(self, p: float = 0.5) -> bool:
        """True with probability ``p``."""
        return self.random() < p

"""Polynomials over GF(2), as arrays of their 0/1 coefficients (uint8, lowest power first):
the polynomial of the shortest linear recurrence that makes a bit sequence, and powers of
``x`` modulo it, which jump a linear engine ahead (``stadyn._mt19937``'s
``MT19937_64.discard``: the engine ``n`` steps on is ``x**n mod P`` applied to it, with ``P``
its characteristic polynomial).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = ["PowersOfX", "minimal_polynomial", "xor_of_windows"]


def _to_int(coefficients: np.ndarray) -> int:
    return int.from_bytes(np.packbits(coefficients.astype(np.uint8), bitorder="little")
                          .tobytes(), "little")


def _from_int(value: int, length: int) -> np.ndarray:
    octets = np.frombuffer(value.to_bytes((length + 7) // 8 or 1, "little"), np.uint8)
    return np.unpackbits(octets, bitorder="little")[:length].copy()


def _fast_length(n: int) -> int:
    """The least length at least ``n`` whose only prime factors are 2, 3 and 5 (the FFT's
    fast ones)."""
    best = 1 << max(n - 1, 0).bit_length()
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            m = p35
            while m < n:
                m *= 2
            best = min(best, m)
            p35 *= 3
        p5 *= 5
    return best


def minimal_polynomial(bits) -> np.ndarray:
    """The polynomial ``P`` (degree ``L``, ``P[L] = 1``) of the shortest recurrence
    ``s[n] = P[L-1] s[n-1] + ... + P[0] s[n-L]`` (mod 2) that makes the 0/1 sequence ``bits``
    (Berlekamp-Massey; ``2 L`` bits determine it).  For the bits of a linear engine whose
    characteristic polynomial is irreducible (a Mersenne Twister's) it is that polynomial.

    Example:
        >>> s = [1, 0, 0]
        >>> for _ in range(10):
        ...     s.append(s[-2] ^ s[-3])         # s[n] = s[n-2] + s[n-3]: x**3 + x + 1
        >>> minimal_polynomial(s).tolist()
        [1, 1, 0, 1]
    """
    c, b, length, gap = 1, 1, 0, 1      # connection polynomials (bit i: the term s[n-i])
    window = 0                          # bit i: s[n - i]
    for n, s in enumerate(np.asarray(bits, np.uint8).tolist()):
        window = (window << 1) | s
        if (c & window).bit_count() & 1:
            previous = c
            c ^= b << gap
            if 2 * length <= n:
                length, b, gap = n + 1 - length, previous, 1
                continue
        gap += 1
    return _from_int(c, length + 1)[::-1].copy()


class PowersOfX:
    """``x**n`` modulo a polynomial ``P`` of degree ``d`` (its coefficients, ``P[d] = 1``), as
    the ``d`` coefficients of the remainder.  Products are convolutions through NumPy's FFT,
    rounded (exact: a coefficient counts at most ``d`` terms, and the rounding is checked),
    reduced by Barrett's method (``P``'s reciprocal ``x**(2d) // P`` found once); ``x**(2**k)``
    is kept once found, so ``x**n`` costs one product a bit of ``n`` (those below ``d`` free).

    Example:
        >>> powers = PowersOfX(np.array([1, 1, 0, 1], np.uint8))    # x**3 + x + 1
        >>> powers(3).tolist(), powers(7).tolist()                  # x + 1; x**7 = 1
        ([1, 1, 0], [1, 0, 0])
    """

    def __init__(self, modulus: np.ndarray):
        self.modulus = modulus = np.asarray(modulus, np.uint8)
        self.degree = d = len(modulus) - 1
        if d < 1 or modulus[d] != 1:
            raise ValueError("the modulus must have a degree of at least 1 and end in 1")
        p = _to_int(modulus)
        remainder, quotient = 1 << (2 * d), 0        # x**(2d) // P, by long division
        for i in range(2 * d, d - 1, -1):
            if remainder >> i & 1:
                remainder ^= p << (i - d)
                quotient |= 1 << (i - d)
        self._size = _fast_length(2 * d)             # (no product wraps around)
        self._modulus = self._spectrum(modulus)
        self._reciprocal = self._spectrum(_from_int(quotient, d + 1))
        self._powers: dict[int, np.ndarray] = {}     # k -> x**(2**k) mod P

    def _spectrum(self, a: np.ndarray) -> np.ndarray:
        return np.fft.rfft(a.astype(np.float64), self._size)

    def _product(self, fa: np.ndarray, fb: np.ndarray, length: int) -> np.ndarray:
        c = np.fft.irfft(fa * fb, self._size)[:length]
        rounded = np.rint(c)
        if not np.abs(c - rounded).max(initial=0.0) < 0.25:     # (never: a guard)
            raise ArithmeticError("GF(2) product: the FFT lost the exact counts")
        return (rounded.astype(np.int64) & 1).astype(np.uint8)

    def _reduced(self, c: np.ndarray) -> np.ndarray:
        """``c`` (fewer than ``2d`` coefficients) modulo ``P``."""
        d = self.degree
        c = np.concatenate([c, np.zeros(2 * d - len(c), np.uint8)])
        q = self._product(self._spectrum(c[d:]), self._reciprocal, 2 * d)[d:]
        return c[:d] ^ self._product(self._spectrum(q), self._modulus, d)

    def times(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``a * b mod P`` of two remainders.

        Example:
            >>> powers = PowersOfX(np.array([1, 1, 0, 1], np.uint8))
            >>> powers.times(powers(2), powers(4)).tolist() == powers(6).tolist()
            True
        """
        return self._reduced(self._product(self._spectrum(a), self._spectrum(b),
                                           2 * self.degree - 1))

    def _square(self, a: np.ndarray) -> np.ndarray:
        spread = np.zeros(2 * self.degree - 1, np.uint8)     # a(x)**2 = a(x**2) over GF(2)
        spread[::2] = a
        return self._reduced(spread)

    def _power_of_two(self, k: int) -> np.ndarray:
        if k not in self._powers:
            if (1 << k) < self.degree:
                a = np.zeros(self.degree, np.uint8)
                a[1 << k] = 1
            else:
                a = self._square(self._power_of_two(k - 1))
            self._powers[k] = a
        return self._powers[k]

    def __call__(self, n: int) -> np.ndarray:
        n, d = int(n), self.degree
        if n < 0:
            raise ValueError(f"x**n for n >= 0 only, got {n}")
        low = max(d - 1, 1).bit_length() - 1        # x**(n mod 2**low) is its own remainder
        out = np.zeros(d, np.uint8)
        out[n & ((1 << low) - 1)] = 1
        n >>= low
        k = low
        while n:
            if n & 1:
                out = self.times(out, self._power_of_two(k))
            n >>= 1
            k += 1
        return out


def xor_of_windows(words: np.ndarray, coefficients: np.ndarray, width: int) -> np.ndarray:
    """The xor of the windows ``words[k:k + width]`` over the ``k`` whose coefficient is 1
    (``words`` holds ``len(coefficients) + width - 1`` of them at least): a polynomial applied
    to a linear engine whose steps are those windows.

    Example:
        >>> w = np.array([1, 2, 4, 8], np.uint64)
        >>> xor_of_windows(w, np.array([1, 0, 1], np.uint8), 2).tolist()   # [1^4, 2^8]
        [5, 10]
    """
    picked = np.flatnonzero(coefficients)
    out = np.zeros(width, words.dtype)
    windows = sliding_window_view(words[:len(coefficients) + width - 1], width)
    for start in range(0, len(picked), 1024):       # (a piece at a time: a few MB each)
        out ^= np.bitwise_xor.reduce(windows[picked[start:start + 1024]], axis=0)
    return out

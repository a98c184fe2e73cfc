"""CNTK's random numbers: ``std::mt19937_64`` and the draws CNTK 2.7 makes from it.

CNTK seeds a 64-bit Mersenne Twister for everything it randomizes on the CPU: the readers'
shuffles (``io/_cntk_order.py``) and the uniform initial values of parameters
(:func:`uniform_floats`), so both can be reproduced to the bit; the draws of CNTK's random
Functions from it are ``ops/_cntk_distributions.py``'s.  cntk.exe's legacy
``LMSequenceReader`` shuffles its sentences with ``std::shuffle`` and a 32-bit
``std::mt19937`` instead (:func:`std_shuffle`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from . import _gf2

__all__ = ["MT19937", "MT19937_64", "std_shuffle", "uniform_floats"]

_N, _M = 312, 156
_MATRIX = np.uint64(0xB5026F5AA96619E9)
_UPPER = np.uint64(0xFFFFFFFF80000000)
_LOWER = np.uint64(0x7FFFFFFF)


def _seeded(seed: int, words: int, multiplier: int, shift: int, bits: int,
            dtype: type) -> np.ndarray:
    """The Mersenne Twister's initial state: ``x[i] = multiplier * (x[i-1] ^ (x[i-1] >> shift))
    + i`` modulo ``2**bits``, from ``x[0] = seed``: a fresh array, copied from
    :func:`_seeded_kept`'s."""
    return _seeded_kept(int(seed), words, multiplier, shift, bits, np.dtype(dtype)).copy()


@functools.lru_cache(maxsize=64)
def _seeded_kept(seed: int, words: int, multiplier: int, shift: int, bits: int,
                 dtype: np.dtype) -> np.ndarray:
    """:func:`_seeded`'s state (read-only), kept for the last 64 seeds: each word needs the
    one before, a Python loop (~75 us of CPU for ``mt19937_64``'s 312 words, more than drawing
    a parameter of a few hundred values), and CNTK draws every parameter from one seed where
    its fixed seed is set (``set_fixed_random_seed``)."""
    mask = (1 << bits) - 1
    p = seed & mask
    state = [p]
    append = state.append
    for i in range(1, words):
        p = (multiplier * (p ^ (p >> shift)) + i) & mask
        append(p)
    out = np.fromiter(state, dtype, words)
    out.flags.writeable = False
    return out


#: :func:`_advance_64`'s operands, as arrays of its step's length (a NumPy scalar operand costs
#: a conversion every call)
_STEP = _N - 1
_UPPER_INT, _LOWER_INT, _MATRIX_INT = int(_UPPER), int(_LOWER), int(_MATRIX)
_UPPER_STEP = np.full(_STEP, _UPPER, np.uint64)
_LOWER_STEP = np.full(_STEP, _LOWER, np.uint64)
_ONE_STEP = np.ones(_STEP, np.uint64)
_MATRIX_STEP = np.full(_STEP, _MATRIX, np.uint64)


def _advance_64(state: np.ndarray, blocks: int) -> np.ndarray:
    """The raw (untempered) words of the next ``blocks`` states after ``state`` (``n`` words of
    ``mt19937_64``), one after the other: the sequence ``x[j] = x[j - n + m] ^ z[j]``, ``z[j] =
    A((x[j - n] & upper) | (x[j - n + 1] & lower))``, from ``x[:n] = state``, into one array,
    without copies: the state block after block, for many blocks at once.  ``z`` reads words at
    least ``n - 1`` back, so it is computed ``n - 1`` words at a time; the xor reads words
    ``n - m`` back, so it takes those ``n - 1`` words in two pieces (``n - m``, then the rest,
    which read the first piece).  Each piece is nine NumPy calls on preallocated arrays (the
    sequence allows no wider ones), so a call costs about those calls' overhead a block."""
    n, h, step = len(state), len(state) - _M, _STEP
    assert n == _N, "a state of mt19937_64 has 312 words"
    total = (blocks + 1) * n
    x = np.empty(total, np.uint64)
    x[:n] = state
    z, t = np.empty(step, np.uint64), np.empty(step, np.uint64)
    j = n
    rows = (total - n) // step
    if rows >= 16:                                      # (views made once pay from here on)
        _advance_rows(x, rows, z, t)
        j += rows * step
    while j < total:
        k = min(step, total - j)
        if k <= 8:              # a few last words, one by one (they read no word of theirs)
            back, mid = x[j - n:j - n + k + 1].tolist(), x[j - h:j - h + k].tolist()
            for i in range(k):
                y = (back[i] & _UPPER_INT) | (back[i + 1] & _LOWER_INT)
                mid[i] ^= (y >> 1) ^ (_MATRIX_INT if y & 1 else 0)
            x[j:total] = mid
            break
        upper, lower, one, matrix = _UPPER_STEP, _LOWER_STEP, _ONE_STEP, _MATRIX_STEP
        zk, tk = z, t
        if k < step:                                    # (the last few words)
            upper, lower, one, matrix = upper[:k], lower[:k], one[:k], matrix[:k]
            zk, tk = z[:k], t[:k]
        low = x[j - n + 1:j - n + 1 + k]
        np.bitwise_and(x[j - n:j - n + k], upper, out=zk)
        np.bitwise_and(low, lower, out=tk)
        np.bitwise_or(zk, tk, out=zk)
        np.bitwise_and(low, one, out=tk)                # (zk's low bit is low's)
        np.multiply(tk, matrix, out=tk)                 # A's matrix where the low bit is set
        np.right_shift(zk, one, out=zk)
        np.bitwise_xor(zk, tk, out=zk)
        a = min(k, h)
        np.bitwise_xor(x[j - h:j - h + a], zk[:a], out=x[j:j + a])
        if k > a:                                       # (these read the words just made)
            np.bitwise_xor(x[j:j + k - a], zk[a:], out=x[j + a:j + k])
        j += k
    return x[n:]


def _advance_rows(x: np.ndarray, rows: int, z: np.ndarray, t: np.ndarray) -> None:
    """:func:`_advance_64`'s first ``rows`` pieces of ``n - 1`` words into ``x`` (its state
    in ``x[:n]``), each piece's operands and results rows of strided views of ``x`` made
    once (a view of a row costs less than the slices of each piece)."""
    n, h, step = _N, _N - _M, _STEP
    s = x.strides[0]

    def view(start: int, width: int) -> np.ndarray:
        return np.lib.stride_tricks.as_strided(x[start:], (rows, width), (step * s, s))

    older, old_low = view(0, step), view(1, step)
    back1, out1 = view(n - h, h), view(n, h)
    back2, out2 = view(n, step - h), view(n + h, step - h)
    z1, z2 = z[:h], z[h:]
    upper, lower, one, matrix = _UPPER_STEP, _LOWER_STEP, _ONE_STEP, _MATRIX_STEP
    for r in range(rows):
        low = old_low[r]
        np.bitwise_and(older[r], upper, out=z)
        np.bitwise_and(low, lower, out=t)
        np.bitwise_or(z, t, out=z)
        np.bitwise_and(low, one, out=t)
        np.multiply(t, matrix, out=t)
        np.right_shift(z, one, out=z)
        np.bitwise_xor(z, t, out=z)
        np.bitwise_xor(back1[r], z1, out=out1[r])
        np.bitwise_xor(back2[r], z2, out=out2[r])


#: :func:`_temper_64`'s shifts and masks
_TEMPERING = tuple(np.uint64(v) for v in (29, 0x5555555555555555, 17, 0x71D67FFFEDA60000,
                                          37, 0xFFF7EEE000000000, 43))


def _temper_64(x: np.ndarray) -> np.ndarray:
    """``mt19937_64``'s output of raw words ``x``, in place (a piece at a time, so that the
    temporaries stay in cache); returns ``x``."""
    s29, d, s17, b, s37, c, s43 = _TEMPERING
    for i in range(0, len(x), 1 << 15):
        p = x[i:i + (1 << 15)]
        p ^= (p >> s29) & d
        p ^= (p << s17) & b
        p ^= (p << s37) & c
        p ^= p >> s43
    return x


#: where :meth:`MT19937_64.discard` jumps rather than draws (a jump costs about what drawing
#: this many numbers does)
_JUMP_FROM = 1 << 21


#: the shipped exponents of ``mt19937_64``'s characteristic polynomial (read on a first jump)
_POLYNOMIAL_FILE = Path(__file__).with_name("_mt19937_64_polynomial.txt")


def _found_polynomial() -> np.ndarray:
    """``mt19937_64``'s characteristic polynomial (degree 19937), found from the low bits of its
    raw words (any nonzero state's: the polynomial is primitive) by Berlekamp-Massey (~0.05 s
    to 0.15 s): what :data:`_POLYNOMIAL_FILE` holds, and the test that it still does."""
    words = _advance_64(_seeded(5489, _N, 6364136223846793005, 62, 64, np.uint64),
                        2 * 19937 // _N + 1)
    return _gf2.minimal_polynomial(words[:2 * 19937] & np.uint64(1))


def _shipped_polynomial() -> np.ndarray:
    """The polynomial of :func:`_found_polynomial` as :data:`_POLYNOMIAL_FILE` ships it."""
    exponents = [int(v) for line in _POLYNOMIAL_FILE.read_text().splitlines()
                 if not line.startswith("#") for v in line.split()]
    polynomial = np.zeros(max(exponents) + 1, np.uint8)
    polynomial[exponents] = 1
    return polynomial


@functools.cache
def _powers_of_x() -> _gf2.PowersOfX:
    """``x**n`` modulo ``mt19937_64``'s characteristic polynomial (the shipped one)."""
    polynomial = _shipped_polynomial()
    assert len(polynomial) == 19938, "mt19937_64's polynomial has the degree 19937"
    return _gf2.PowersOfX(polynomial)


def _jumped(state: np.ndarray, count: int) -> np.ndarray:
    """The raw words ``count`` words on from ``state`` (``x[count:count + n]`` of the sequence
    :func:`_advance_64` continues from ``x[:n] = state``).  The engine's step is linear over
    GF(2) on its 19937 bits (``x[i]``'s upper bit and ``x[i + 1:i + n]``), so ``count - 1``
    steps are ``Q(step)`` for ``Q = x**(count - 1) mod P`` (``P`` its characteristic
    polynomial, so that ``P(step) = 0``); the ``n`` words from ``x[count]`` on are a linear
    function of the bits after ``count - 1`` steps, hence the xor of the words from ``x[k + 1]``
    on over the terms ``x**k`` of ``Q``: ``std::mt19937_64``'s ``discard`` in one product a bit
    of ``count`` and one xor of at most 19937 windows of the next 19937 + ``n`` words."""
    if count == 0:
        return state.copy()
    q = _powers_of_x()(count - 1)
    words = np.concatenate([state, _advance_64(state, -(-len(q) // _N) + 1)])
    return _gf2.xor_of_windows(words[1:], q, _N)


class MT19937_64:
    """``std::mt19937_64`` seeded with an integer, its numbers generated 312 at a time.

    Example:
        >>> r = MT19937_64(5489)        # the C++ standard's check: the 10000th number
        >>> [r() for _ in range(9999)][-1] != r() == 9981545732273789042
        True
    """

    __slots__ = ("_state", "_block", "_out", "_at", "_back")

    def __init__(self, seed: int):
        self._state = _seeded(seed, _N, 6364136223846793005, 62, 64, np.uint64)
        self._block = np.zeros(0, np.uint64)   # the numbers of the current block
        self._out: list[int] | None = None     # ... as Python ints, made when first called
        self._at = _N
        self._back = np.zeros(0, np.uint64)    # numbers given back, the next ones to give

    def _twist(self) -> None:
        raw = _advance_64(self._state, 1)
        self._state = raw.copy()
        self._block, self._out = _temper_64(raw), None
        self._at = 0

    def __call__(self) -> int:
        if len(self._back):
            first, self._back = int(self._back[0]), self._back[1:]
            return first
        if self._at == _N:
            self._twist()
        if self._out is None:
            self._out = self._block.tolist()
        self._at += 1
        return self._out[self._at - 1]

    def take(self, count: int) -> np.ndarray:
        """The next ``count`` numbers (uint64), as ``count`` calls would give them."""
        parts, need = [], int(count)
        if need > 0 and len(self._back):               # numbers given back first
            parts.append(self._back[:need])
            self._back = self._back[need:]
            need -= len(parts[0])
        if need > 0 and self._at < _N:                 # the rest of the current block next
            k = min(need, _N - self._at)
            parts.append(self._block[self._at:self._at + k])
            self._at += k
            need -= k
        if need > 0:                                   # then whole blocks, in one pass
            blocks = -(-need // _N)
            raw = _advance_64(self._state, blocks)
            self._state = raw[-_N:].copy()
            out = _temper_64(raw)                      # (in place: raw is the caller's)
            self._block, self._out = out[-_N:], None
            self._at = need - (blocks - 1) * _N
            parts.append(out[:need])
        if not parts:
            return np.zeros(0, np.uint64)
        return np.concatenate(parts) if len(parts) > 1 else parts[0].copy()

    def give_back(self, numbers: np.ndarray) -> None:
        """Put ``numbers`` (the last ones taken, in order) back: the next calls give them
        again.  A draw that takes numbers ahead returns those it did not use."""
        self._back = np.concatenate([np.asarray(numbers, np.uint64), self._back])

    def discard(self, count: int) -> None:
        """Move on by ``count`` numbers, as ``std::mt19937_64::discard`` does: up to
        ``2**21`` of them drawn and dropped (~25 ns a number), more by a jump (:func:`_jumped`),
        whose time grows with the number of bits of ``count``: ~20 ms for ``2**21``, ~35 ms
        for ``10**12``, ~130 ms for ``2**60`` (measured on a shared two-core machine); its
        first use in a process adds under 10 ms, reading the engine's polynomial from the file
        shipped with stadyn and setting up its powers.

        Example:
            >>> a, b = MT19937_64(5), MT19937_64(5)
            >>> a.discard(10 ** 12)                 # (drawn and dropped: about seven hours)
            >>> _ = b.take(400); b.discard(10 ** 12 - 400)
            >>> a() == b()
            True
        """
        count = int(count)
        if count >= _JUMP_FROM:
            ahead = len(self._back) + _N - self._at     # (given back, the rest of the block)
            self.take(ahead)
            self._state = _jumped(self._state, count - ahead)
            self._block, self._out, self._at = np.zeros(0, np.uint64), None, _N
            return
        while count > 0:
            step = min(count, 1 << 20)
            self.take(step)
            count -= step

    def state(self) -> np.ndarray:
        """Where the engine stands, as uint64 words: what :meth:`from_state` takes again."""
        return np.concatenate([np.array([self._at, len(self._back)], np.uint64), self._state,
                               self._back])

    @classmethod
    def from_state(cls, words: np.ndarray) -> "MT19937_64":
        """The engine :meth:`state` described (a ValueError where ``words`` cannot be one).

        Example:
            >>> r = MT19937_64(3); _ = r.take(400)
            >>> MT19937_64.from_state(r.state())() == r()
            True
        """
        words = np.asarray(words, np.uint64)
        if len(words) < 2 + _N or int(words[0]) > _N or len(words) != 2 + _N + int(words[1]):
            raise ValueError("not the state of a std::mt19937_64")
        engine = cls(0)
        engine._at = int(words[0])
        engine._state = words[2:2 + _N].copy()
        engine._back = words[2 + _N:].copy()
        if engine._at < _N:
            engine._block = _temper_64(engine._state.copy())
        return engine


def uniform_floats(seed: int, count: int, limit: float) -> np.ndarray:
    """``count`` float32 values uniform in [-limit, limit), as CNTK 2.7 draws a parameter's
    initial values: ``mt19937_64(seed)``'s numbers ``x`` as ``x / 2**64 * 2 - 1`` in double,
    times the limit rounded to float32, rounded to float32 (found bit for bit against CNTK
    2.7's ``uniform``, ``glorot_uniform``, ``xavier`` and ``he_uniform``).

    Example:
        >>> uniform_floats(1, 3, 1.0).tolist()    # CNTK 2.7: C.uniform(1.0, seed=1)
        [-0.7322466969490051, -0.7271859049797058, -0.09757019579410553]
    """
    x = MT19937_64(seed).take(count).astype(np.float64) * 2.0 ** -63 - 1.0
    return (x * float(np.float32(limit))).astype(np.float32)


class MT19937:
    """``std::mt19937`` (32 bits) seeded with an integer: the C++ standard's seeding, then
    NumPy's ``MT19937`` bit generator (the same recurrence and tempering, in C) from that state.

    Example:
        >>> r = MT19937(5489)           # the C++ standard's check: the 10000th number
        >>> [r() for _ in range(9999)][-1] != r() == 4123659995
        True
    """

    __slots__ = ("_engine", "_out", "_at")

    def __init__(self, seed: int):
        self._engine = np.random.MT19937(0)
        self._engine.state = {"bit_generator": "MT19937", "state": {
            "key": _seeded(seed, 624, 1812433253, 30, 32, np.uint32), "pos": 624}}
        self._out: list[int] = []       # numbers drawn ahead, as Python ints
        self._at = 0

    def __call__(self) -> int:
        if self._at == len(self._out):
            self._out, self._at = self._engine.random_raw(624).tolist(), 0
        self._at += 1
        return self._out[self._at - 1]

    def take(self, count: int) -> np.ndarray:
        """The next ``count`` numbers (uint64 holding 32-bit values), as ``count`` calls would
        give them."""
        count = int(count)
        ahead = np.array(self._out[self._at:self._at + count], np.uint64)
        self._at += len(ahead)
        if len(ahead) == count:
            return ahead
        return np.concatenate([ahead, self._engine.random_raw(count - len(ahead))])


def _draws_below(rng: MT19937, spans: np.ndarray) -> np.ndarray:
    """For each ``span`` in turn, a number uniform in ``0..span - 1`` as GCC 5's
    ``uniform_int_distribution`` draws it from ``rng`` (``scale = (2**32 - 1) // span``, a
    number ``x`` redrawn while ``x >= span * scale``, then ``x // scale``): the numbers drawn
    at once, the rare redraw shifting the rest by one."""
    scale = np.uint64(0xFFFFFFFF) // spans
    past = spans * scale
    out = np.empty(len(spans), np.uint64)
    done, words = 0, np.zeros(0, np.uint64)
    while done < len(spans):
        need = len(spans) - done
        if len(words) < need:
            words = np.concatenate([words, rng.take(need - len(words))])
        refused = words[:need] >= past[done:]
        k = int(np.argmax(refused)) if refused.any() else need
        out[done:done + k] = words[:k] // scale[done:done + k]
        done += k
        words = words[k + 1:] if k < need else words[k:]      # a refused number is dropped
    return out


def std_shuffle(count: int, seed: int) -> np.ndarray:
    """The order ``std::shuffle(v.begin(), v.end(), std::mt19937(seed))`` leaves ``v = 0, 1,
    ..., count - 1`` in, as the libstdc++ of CNTK 2.7's Linux build (GCC 5.4, named in its
    libraries' ``.comment``) shuffled: Fisher-Yates from the front, element ``i`` (1, 2, ...)
    swapped with a position uniform in ``0..i``, drawn by ``uniform_int_distribution`` as GCC 5
    drew it (one 32-bit number ``x`` a draw, ``scale = (2**32 - 1) // (i + 1)``, ``x`` redrawn
    while ``x >= (i + 1) * scale``, the position ``x // scale``).  (libstdc++ 7 and later draw
    two positions from one number, and 11 and later use another division, so a newer g++
    orders differently; tests/fixtures/std_shuffle has a C++ program that prints this order.)

    Example:
        >>> std_shuffle(10, 1).tolist()
        [6, 9, 7, 2, 4, 1, 5, 3, 8, 0]
    """
    n = int(count)
    order = list(range(n))
    if n < 2:
        return np.array(order, dtype=np.int64)
    positions = _draws_below(MT19937(seed), np.arange(2, n + 1, dtype=np.uint64)).tolist()
    for i, j in enumerate(positions, 1):
        order[i], order[j] = order[j], order[i]
    return np.array(order, dtype=np.int64)

"""``stadyn._mt19937``'s ``std::mt19937_64``: ``discard`` against the C++ library's own
(``tests/fixtures/mt19937_64_discard``, written by its ``discard.cpp`` with g++'s libstdc++),
its jump against the engine stepped on, the GF(2) arithmetic the jump rests on
(``stadyn._gf2``) against Python integers, and Boost's normal draws, tried all at once,
against a plain number-by-number walk of Boost 1.60's ``normal_distribution`` (its refused
tries, tail and redrawn uniforms forced)."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from stadyn import _gf2
from stadyn import _cpp_normal as cn
from stadyn import _mt19937 as mt

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "mt19937_64_discard")
with open(os.path.join(HERE, "reference.txt")) as _fh:
    DISCARDS = [tuple(int(v) for v in line.split()) for line in _fh if line.strip()]


@pytest.mark.parametrize("seed, count, a, b, c", DISCARDS,
                         ids=[f"{s}-{n}" for s, n, *_ in DISCARDS])
def test_discard_leaves_the_engine_where_the_cpp_librarys_discard_does(seed, count, a, b, c):
    """Up to 8.6e9 numbers on: libstdc++ steps over them (tens of seconds); the jump takes
    milliseconds (stepping them here did too, for the small counts)."""
    r = mt.MT19937_64(seed)
    r.discard(count)
    assert [r(), r(), r()] == [a, b, c]


@pytest.mark.parametrize("count", [0, 1, 2, 311, 312, 313, 19937, 19938, 50001])
def test_a_jump_is_the_sequence_the_engine_steps_through(count):
    state = mt.MT19937_64(7).state()[2:2 + 312]
    words = np.concatenate([state, mt._advance_64(state, count // 312 + 2)])
    np.testing.assert_array_equal(mt._jumped(state, count), words[count:count + 312])


@pytest.mark.parametrize("count, taken, given_back", [
    (mt._JUMP_FROM, 0, 0), (mt._JUMP_FROM + 1, 5, 3), (3_000_007, 400, 2)])
def test_a_discard_that_jumps_goes_on_as_the_engine_drawn_on_does(count, taken, given_back):
    """The jump starts after the numbers given back and the rest of the current block."""
    a, b = mt.MT19937_64(11), mt.MT19937_64(11)
    for r in (a, b):
        first = r.take(taken + given_back)
        r.give_back(first[taken:])
    a.discard(count)
    for _ in range(count >> 20):
        b.take(1 << 20)
    b.take(count & ((1 << 20) - 1))
    np.testing.assert_array_equal(a.take(700), b.take(700))
    np.testing.assert_array_equal(mt.MT19937_64.from_state(a.state()).take(5), a.take(5))


def _clmul_mod(a: int, b: int, p: int) -> int:
    out = 0
    while b:
        low = b & -b
        out ^= a * low
        b ^= low
    for i in range(out.bit_length() - 1, p.bit_length() - 2, -1):
        if out >> i & 1:
            out ^= p << (i - p.bit_length() + 1)
    return out


def test_powers_of_x_and_products_are_those_of_python_integers():
    rs = np.random.default_rng(3)
    modulus = np.concatenate([[1], rs.integers(0, 2, 300), [1]]).astype(np.uint8)
    p = int("".join(map(str, modulus[::-1])), 2)
    powers = _gf2.PowersOfX(modulus)
    as_int = lambda a: int("".join(map(str, a[::-1])), 2)        # noqa: E731
    a, b = rs.integers(0, 2, 301).astype(np.uint8), rs.integers(0, 2, 301).astype(np.uint8)
    assert as_int(powers.times(a, b)) == _clmul_mod(as_int(a), as_int(b), p)
    for n in (0, 1, 299, 300, 301, 1000, 123457, 2**40 + 3):
        assert as_int(powers(n)) == pow_x(n, p), n


def pow_x(n: int, p: int) -> int:
    out, base = 1, 2
    while n:
        if n & 1:
            out = _clmul_mod(out, base, p)
        base = _clmul_mod(base, base, p)
        n >>= 1
    return out


def test_the_shipped_polynomial_is_the_one_berlekamp_massey_finds():
    """The polynomial a jump uses is read from the file shipped with stadyn (no search in the
    process); found again from the engine's words, it is the same (the file cannot rot)."""
    np.testing.assert_array_equal(mt._shipped_polynomial(), mt._found_polynomial())


def test_a_first_jump_reads_the_polynomial_rather_than_searching(monkeypatch):
    def searched(bits):
        raise AssertionError("a jump searched for the polynomial")

    monkeypatch.setattr(mt._gf2, "minimal_polynomial", searched)
    mt._powers_of_x.cache_clear()
    try:
        a, b = mt.MT19937_64(11), mt.MT19937_64(11)
        a.discard(1 << 22)
        b.take(1 << 22)
        assert a() == b()
    finally:
        mt._powers_of_x.cache_clear()


def test_the_engines_polynomial_is_that_of_each_bit_of_its_words():
    """Found from bit 0 of one engine's raw words, it is that of other bits and engines (the
    polynomial is irreducible: every bit follows the one recurrence)."""
    modulus = mt._powers_of_x().modulus
    assert len(modulus) == 19938
    words = mt._advance_64(mt.MT19937_64(3).state()[2:2 + 312], 2 * 19937 // 312 + 1)
    for bit in (17, 63):
        bits = (words[:2 * 19937] >> np.uint64(bit)) & np.uint64(1)
        np.testing.assert_array_equal(_gf2.minimal_polynomial(bits), modulus)


# ---------------------------------------------------------------------------------------------
# Boost's normal values, number by number
# ---------------------------------------------------------------------------------------------
def _boost_normals(numbers: list[int], count: int) -> tuple[list[float], int]:
    """Boost 1.60's ``normal_distribution<double>`` (ziggurat) over ``numbers``, one try at a
    time: ``count`` values and how many numbers they took."""
    tx, ty = (t.tolist() for t in cn._ziggurat_tables())
    at = 0

    def draw() -> int:
        nonlocal at
        at += 1
        return numbers[at - 1]

    def uniform() -> float:
        while True:
            v = float(draw()) * 2.0 ** -64
            if v < 1:
                return v

    out = []
    while len(out) < count:
        while True:
            u = draw()
            i, sign = (u & 0xFF) >> 1, 1.0 if u & 1 else -1.0
            x = float((u & ~(1 << 11)) >> 8) * 2.0 ** -56 * tx[i]
            if x < tx[i + 1]:
                break
            if i == 0:
                while True:
                    e1 = -math.log(1.0 - uniform()) / tx[1]
                    e2 = -math.log(1.0 - uniform())
                    if 2 * e2 > e1 * e1:
                        break
                x = e1 + tx[1]
                break
            if ty[i] + uniform() * (ty[i + 1] - ty[i]) < math.exp(-(x * x / 2)):
                break
        out.append(x * sign)
    return out, at


def _forced(rs, size: int) -> np.ndarray:
    """Numbers rich in what is rare: refused tries (``x`` near its layer's top), the tail
    (layer 0) and uniforms that round to 1 (redrawn)."""
    u = rs.integers(0, 2**64, size, dtype=np.uint64)
    kind = rs.integers(0, 6, size)
    high = np.uint64(0xFFFFFFFFFFFFF000) | rs.integers(0, 0xF00, size, dtype=np.uint64)
    u[kind == 0] = (high[kind == 0] & ~np.uint64(0xFF)) | rs.integers(
        0, 4, int((kind == 0).sum()), dtype=np.uint64)                 # a tail try
    u[kind == 1] = high[kind == 1]                                      # refused, layer > 0
    u[kind == 2] = np.uint64(2**64 - 1) - rs.integers(0, 1024, int((kind == 2).sum()),
                                                       dtype=np.uint64)  # a uniform of 1.0
    return u


@pytest.mark.parametrize("trial", range(40))
def test_normal_values_tried_at_once_are_boosts_tried_one_by_one(trial):
    rs = np.random.default_rng(trial)
    forced = _forced(rs, 60)
    count = int(rs.integers(1, 40))
    r = mt.MT19937_64(trial)
    ahead = r.take(2000)
    r.give_back(np.concatenate([forced, ahead]))
    want, used = _boost_normals(np.concatenate([forced, ahead]).tolist(), count)
    got = cn.normal_doubles(r, count)
    np.testing.assert_array_equal(got, np.array(want))
    assert int(r()) == int(np.concatenate([forced, ahead])[used])    # where the engine stands


def test_a_piece_that_ends_inside_a_try_is_taken_up_again_from_that_try():
    rs = np.random.default_rng(5)
    for _ in range(200):
        u = np.concatenate([rs.integers(0, 2**64, 6, dtype=np.uint64), _forced(rs, 4)])
        tail = rs.integers(0, 2**64, 200, dtype=np.uint64)
        want, _ = _boost_normals(np.concatenate([u, tail]).tolist(), 12)
        values, used = cn._ziggurat(u, 12)
        rest, _ = cn._ziggurat(np.concatenate([u[used:], tail]), 12 - len(values))
        np.testing.assert_array_equal(np.concatenate([values, rest]), want)


def test_normal_values_of_many_engines_are_boosts():
    for seed in range(5):
        r = mt.MT19937_64(seed)
        numbers = r.take(30000)
        r.give_back(numbers)
        want, used = _boost_normals(numbers.tolist(), 20001)
        np.testing.assert_array_equal(cn.normal_doubles(r, 20001), want)
        assert int(r()) == int(numbers[used])


def _stepped_words(state: list[int], blocks: int) -> list[int]:
    """The raw words of the next ``blocks`` states, word by word as ``std::mt19937_64``'s
    ``_M_gen_rand`` makes them (libstdc++ random.tcc; n = 312, m = 156, r = 31 lower bits)."""
    upper, lower, matrix = 0xFFFFFFFF80000000, 0x7FFFFFFF, 0xB5026F5AA96619E9
    x, out = list(state), []
    for _ in range(blocks):
        for i in range(312):
            y = (x[i] & upper) | (x[(i + 1) % 312] & lower)
            x[i] = x[(i + 156) % 312] ^ (y >> 1) ^ (matrix if y & 1 else 0)
        out.extend(x)
    return out


@pytest.mark.parametrize("blocks", [0, 1, 2, 3, 15, 16, 155, 156, 310, 311, 312, 313, 623, 700])
def test_advance_is_the_engine_stepped_word_by_word(blocks):
    """Whole blocks at once (in pieces of 311 words, the last shorter) give the words of the
    plain step, for counts on either side of the piece's and the state's sizes."""
    state = mt._seeded(blocks + 3, 312, 6364136223846793005, 62, 64, np.uint64)
    got = mt._advance_64(state, blocks)
    assert got.dtype == np.uint64 and len(got) == 312 * blocks
    assert got.tolist() == _stepped_words(state.tolist(), blocks)


def test_a_seeded_state_is_the_cpp_seeding_and_a_fresh_array_each_time():
    """``seed_seq``-less seeding (``x[i] = f * (x[i-1] ^ (x[i-1] >> 62)) + i``), kept for a
    seed seen before: the copy handed out can be changed without changing the next one."""
    first = mt._seeded(5489, 312, 6364136223846793005, 62, 64, np.uint64)
    p, want = 5489, [5489]
    for i in range(1, 312):
        p = (6364136223846793005 * (p ^ (p >> 62)) + i) % 2 ** 64
        want.append(p)
    assert first.tolist() == want
    first[:] = 0
    assert mt._seeded(5489, 312, 6364136223846793005, 62, 64, np.uint64).tolist() == want
    assert mt.MT19937_64(5489).take(10000)[-1] == 9981545732273789042   # the C++ standard's

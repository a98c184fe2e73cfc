"""cntk.exe's LMSequenceReader order: ``std::shuffle`` over a 32-bit ``std::mt19937`` as the
libstdc++ of CNTK 2.7's build (GCC 5.4) did it, against the orders a C++ program printed with
the real ``std::mt19937`` (tests/fixtures/std_shuffle/std_shuffle.cpp, reference.txt)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from stadyn._mt19937 import MT19937, std_shuffle

_REFERENCE = Path(__file__).parents[1] / "fixtures" / "std_shuffle" / "reference.txt"


def _lines(prefix):
    for line in _REFERENCE.read_text().splitlines():
        if line.startswith(prefix):
            head, values = line.split(":", 1)
            yield head, values.split()


def test_mt19937_is_the_c_plus_plus_engine():
    checked = 0
    for head, values in _lines("mt19937 "):
        seed = int(re.search(r"seed=(\d+)", head).group(1))
        r = MT19937(seed)
        first = [r() for _ in range(3)]
        for _ in range(10000 - 4):
            r()
        assert first + [r()] == [int(values[k]) for k in (0, 1, 2, 4)]
        checked += 1
    assert checked == 2


@pytest.mark.parametrize("n", [5, 10, 11, 50, 300])
def test_std_shuffle_is_gcc5s_order(n):
    cases = [(head, values) for head, values in _lines(f"gcc5 n={n} ")]
    assert len(cases) == 3
    for head, values in cases:
        seed = int(re.search(r"seed=(\d+)", head).group(1))
        assert std_shuffle(n, seed).tolist() == [int(v) for v in values]


def test_std_shuffle_of_an_epoch_is_gcc5s_order():
    # 60000 elements (large.cpp, large.txt: every 1000th position and a checksum of the whole
    # order, over the real std::mt19937)
    lines = (_REFERENCE.parent / "large.txt").read_text().splitlines()
    assert len(lines) == 3
    for line in lines:
        head, values = line.split(":", 1)
        n, seed, checksum = (int(re.search(k + r"=(\d+)", head).group(1))
                             for k in ("n", "seed", "checksum"))
        order = std_shuffle(n, seed)
        assert order[::1000].tolist() == [int(v) for v in values.split()]
        weights = np.arange(1, n + 1, dtype=object)
        assert int((weights * order.astype(object)).sum() % (2 ** 61 - 1)) == checksum


def test_mt19937_take_is_its_calls():
    a, b = MT19937(42), MT19937(42)
    first = [a() for _ in range(5)]
    assert b.take(5).tolist() == first
    assert [a() for _ in range(1300)] == b.take(1300).tolist()
    assert a() == b()


def test_a_refused_number_is_redrawn_as_gcc5_does():
    # spans just above 2**31 refuse about half the numbers (scale 1, x >= span redrawn): the
    # bulk draw matches one number at a time from the engine checked above
    from stadyn._mt19937 import _draws_below
    spans = np.array([2 ** 31 + 1 + k for k in range(200)] + [7, 2 ** 32 - 1, 3], np.uint64)
    rng = MT19937(3)
    expected = []
    for span in spans.tolist():
        scale = 0xFFFFFFFF // span
        x = rng()
        while x >= span * scale:
            x = rng()
        expected.append(x // scale)
    assert _draws_below(MT19937(3), spans).tolist() == expected

"""cntk.exe's LMSequenceReader order: ``std::shuffle`` over a 32-bit ``std::mt19937`` as the
libstdc++ of CNTK 2.7's build (GCC 5.4) did it, against the orders a C++ program printed with
the real ``std::mt19937`` (tests/fixtures/std_shuffle/std_shuffle.cpp, reference.txt)."""

from __future__ import annotations

import re
from pathlib import Path

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

"""``cntk.random.uniform`` of a range CNTK 2.7 makes but cannot draw ends where CNTK cannot.

CNTK 2.7 refuses ``low >= high`` as the op is made (Function.cpp:1434-1443, a RuntimeError:
case ``random__uniform_ranges_and_infinite_scales``), but a NaN end passes that check, and a
run draws in the node's dtype with Boost's ``uniform_real_distribution(low, high)``
(Source/Math/CPUMatrixImpl.h:1044), which draws again while a value is not below ``high``: of a
NaN range, or one empty in float32 (``1, 1 + 1e-9``), the run never returns; of an end
infinite in the dtype (``1e300`` in float32) CNTK's Python API ends in a segmentation fault.
What it did for each is ``tests/fixtures/cntk_random_uniform_endless/outcomes.json`` (written
by ``make_outcomes.py`` beside it, each op made and run in a child process under a time
limit).  Stadyn drew the low end for an empty range and ran for ever on an infinite one; it now
refuses each as the op is made, with one error saying what CNTK does.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import stadyn.compat.cntk as C

_HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_random_uniform_endless")
with open(os.path.join(_HERE, "outcomes.json")) as _f:
    OUTCOMES = json.load(_f)

_WORDS = {"hangs": r"is (NaN|empty) in float(32|64): CNTK 2\.7 makes the op, and its first run "
                   r"never returns \(Boost's uniform_real_distribution draws again for ever\); "
                   r"Stadyn refuses it",
          "segfault": r"is infinite in float(32|64): CNTK 2\.7 makes the op, and its first run "
                      r"ends CNTK 2\.7's Python API in a segmentation fault; Stadyn refuses it"}


def test_the_outcomes_cover_each_ending():
    ends = {o if isinstance(o, str) else o[0] for o in OUTCOMES.values()}
    assert ends == {"hangs", "segfault", "made"}


@pytest.mark.parametrize("key", sorted(OUTCOMES))
def test_a_uniform_op_ends_as_cntk_can(key):
    low, high, dtype = key.split()
    make = lambda: C.random.uniform((2, 3), low=float(low), high=float(high), seed=1,  # noqa: E731
                                    dtype=getattr(np, dtype))
    cntk = OUTCOMES[key]
    if isinstance(cntk, str):
        with pytest.raises(ValueError) as info:
            make()
        assert re.fullmatch(r"cntk\.random: UniformRandom's range \[\S+, \S+\) " + _WORDS[cntk],
                            str(info.value))
    else:
        got = np.asarray(make().eval()).ravel()
        assert got.dtype == np.dtype(dtype)
        assert ((got >= float(low)) & (got < float(high))).all()
        np.testing.assert_allclose(got, cntk[1:], rtol=1e-12)


def test_uniform_like_of_a_nan_range_is_refused_too():
    x = C.input_variable(3)
    with pytest.raises(ValueError, match=r"UniformRandomLike's range \[nan, 1\.0\) is NaN"):
        C.random.uniform_like(x, low=float("nan"), high=1.0)

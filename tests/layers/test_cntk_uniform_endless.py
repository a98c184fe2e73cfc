"""A uniform initializer whose range is NaN, infinite or rounds to 0 ends where CNTK 2.7 cannot.

CNTK 2.7 draws a uniform parameter with Boost's ``uniform_real_distribution(-r, r)``
(``CPUMatrix::SetUniformRandomValue``, Source/Math/CPUMatrixImpl.h:1007-1014), which draws again
while a value is not below ``r``: of a NaN range (``C.glorot_uniform(nan)``, float32 and float64)
or one that rounds to 0 in float32 (``C.uniform(1e-46)``) it never returns; of an infinite one its
Python API ends in a segmentation fault.  What it did for each is
``tests/fixtures/cntk_uniform_endless/outcomes.json`` (written by ``make_outcomes.py`` beside it,
each draw in a child process under a time limit).  Stadyn drew NaNs, infinities or zeros; it now
refuses each with one error saying what CNTK does, and draws CNTK's values, to the bit, where CNTK
returns (a range of a denormal or two).
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import stadyn.compat.cntk as C
from stadyn._errors import ParameterError

_HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_uniform_endless")
with open(os.path.join(_HERE, "outcomes.json")) as _f:
    OUTCOMES = json.load(_f)

_WORDS = {"hangs": r"is (empty|NaN): CNTK 2\.7 \(cntk\.exe and its Python API\) never returns "
                   r"there \(Boost's uniform_real_distribution draws again for ever\); Stadyn "
                   r"refuses it",
          "segfault": r"is infinite: CNTK 2\.7's Python API ends in a segmentation fault there; "
                      r"Stadyn refuses it"}


def _value(kind: str, scale: str, dtype: str) -> np.ndarray:
    make = getattr(C.initializer, kind)
    init = make(float(scale), seed=1) if kind == "uniform" else make(scale=float(scale), seed=1)
    return np.asarray(C.parameter((2, 3), init=init, dtype=getattr(np, dtype)).value)


def test_the_outcomes_cover_each_ending():
    ends = {o if isinstance(o, str) else "values" for o in OUTCOMES.values()}
    assert ends == {"hangs", "segfault", "values"} and len(OUTCOMES) == 32


@pytest.mark.parametrize("key", sorted(OUTCOMES))
def test_a_uniform_initializer_ends_as_cntk_can(key):
    kind, scale, dtype = key.split()
    cntk = OUTCOMES[key]
    if isinstance(cntk, str):
        with pytest.raises(ParameterError) as info:
            _value(kind, scale, dtype)
        assert re.fullmatch(r"SetUniformRandomValue: the range \[\S+, \S+\) " + _WORDS[cntk],
                            str(info.value))
    else:
        got = _value(kind, scale, dtype).ravel()
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, np.array(cntk, dtype=dtype))

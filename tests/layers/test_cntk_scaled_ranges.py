"""A scaled CNTK initialiser draws from CNTK 2.7's range to the bit: CNTK rounds the
distribution's own range to float32 and multiplies it by the scale in float32
(LearnableParameter::InitRandom), which differs in the last bit from the product in double for
``he_uniform(0.3)``, ``xavier(0.1)``, ...  ``refs/cntk27_scaled_ranges.npz`` holds CNTK 2.7's
values (``refs/make_cntk_scaled_ranges.py``)."""

import math
import os
import sys

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.cntk as C
from stadyn._mt19937 import uniform_floats

REFS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "refs")
sys.path.insert(0, REFS)

from make_cntk_scaled_ranges import CASES, draw  # noqa: E402

REFERENCE = np.load(os.path.join(REFS, "cntk27_scaled_ranges.npz"))


@pytest.mark.parametrize("name,scale", CASES)
def test_a_scaled_initialiser_draws_cntk_27s_values(name, scale):
    with sd.parameter_registry(sd.ParameterRegistry()):
        got = draw(C, name, scale)
    assert np.array_equal(got, REFERENCE[f"{name}_{scale}"])


def test_the_range_is_the_float32_product():
    # he_uniform(0.3) of a (37, 11) parameter: sqrt(6 / 37) (fan-in 37) times 0.3 -- in float32
    # it is the reference; in double, rounded once, it is not
    base = math.sqrt(6 / 37)
    in_float = np.float32(base) * np.float32(0.3)
    in_double = np.float32(base * 0.3)
    assert in_float != in_double
    want = REFERENCE["he_uniform_0.3"].ravel()
    assert np.array_equal(uniform_floats(1, want.size, float(in_float)), want)
    assert not np.array_equal(uniform_floats(1, want.size, float(in_double)), want)

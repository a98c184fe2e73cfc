"""The compat harness compares a reference's JSON values (lists, dicts, floats) exactly where
a float is infinite or NaN, within the case's tolerance elsewhere
(``compat_harness._compare_json``)."""

import math

import compat_harness as H


def _problems(actual, expected, rtol=1e-5, atol=1e-6):
    return H._compare_json("k", actual, expected, rtol, atol)


def test_infinities_and_nan_inside_a_list_compare_exactly():
    """``[1.0, inf, -inf, nan]`` equals itself (inf - inf is NaN, so it used to differ)."""
    ref = [1.0, math.inf, -math.inf, math.nan]
    assert _problems(list(ref), ref) == []
    assert _problems({"a": list(ref)}, {"a": ref}) == []
    assert _problems(math.inf, math.inf) == []


def test_an_infinity_differs_from_every_other_value():
    """A finite value, the other infinity or NaN where the reference has an infinity (and the
    other way round) is a difference, however wide the tolerance."""
    for actual, expected in ((1e300, math.inf), (math.inf, 1e300), (-math.inf, math.inf),
                             (math.nan, math.inf), (math.inf, math.nan), (1.0, math.nan)):
        assert _problems([actual], [expected], rtol=1.0, atol=1.0) != [], (actual, expected)


def test_finite_values_still_compare_within_the_tolerance():
    assert _problems([1.0, 2.0], [1.0, 2.0 + 1e-7]) == []
    assert _problems([1.0, 2.0], [1.0, 2.1]) != []

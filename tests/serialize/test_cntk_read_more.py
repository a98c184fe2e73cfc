"""Reading CNTK 2.7 model files with the ops Stadyn's CNTK reader learnt last: the
trigonometric and hyperbolic ops, ``Cast``, ``CosDistance``, ``ConstantOp`` (``zeros_like``,
``ones_like``) and ``Clip`` with bounds that are a tensor, a computed value or an input.

``tests/fixtures/cntk_read_more/read_more.model`` and ``read_more.npz`` (its inputs and CNTK
2.7's outputs) were written by the real CNTK 2.7 (``make_model.py`` there).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_read_more")
DATA = np.load(os.path.join(FIXTURES, "read_more.npz"))
NAMES = [str(n) for n in DATA["names"]]


@pytest.fixture(scope="module")
def outputs():
    m = C.load_model(os.path.join(FIXTURES, "read_more.model"))
    got = m.eval({a: DATA[a.name] for a in m.arguments})
    assert [o.name for o in m.outputs] == NAMES
    return {o.name: np.asarray(got[o]) for o in m.outputs}


@pytest.mark.parametrize("k,name", list(enumerate(NAMES)))
def test_a_cntk_27_file_reads_with_cntks_outputs(outputs, k, name):
    # before: UnsupportedModelError ("CNTK functions no Stadyn op maps: Tan ...; Cast ...;
    # CosDistance ...; ConstantOp ...") or, for Clip with tensor bounds, "clip bounds that are
    # not scalars"
    expected = DATA[str(k)]
    got = outputs[name]
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_clip_with_crossing_bounds_takes_the_lower_one_as_cntk():
    # CNTK's Clip (Source/Math/TensorOps.h:347): x < min ? min : (x > max ? max : x), so where
    # min > max a value below min gets min and one above it max; clip_input's lower bound p
    # is above its upper bound 0.5 at several positions
    x, p = DATA["x"], DATA["p"]
    crossed = p > 0.5
    assert crossed.any()
    hand = np.where(x < p, p, np.where(x > 0.5, 0.5, x))
    np.testing.assert_array_equal(DATA[str(NAMES.index("clip_input"))], hand)

"""CNTK 2.7's model files of ``Pooling`` with ``ceilOutDim`` read with CNTK's geometry
(``cntk_semantics.window_edges``, shared with ``C.pooling``): with auto-padding the windows
CNTK adds by rounding up (before: one fewer output per axis, CNTK's auto-padding without
``ceilOutDim``).  ``tests/fixtures/cntk_pooling_ceil/``: CNTK 2.7's files and its outputs on
them (``make_refs.py``)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_pooling_ceil")
REFS = dict(np.load(os.path.join(FIXTURES, "refs.npz")))


@pytest.mark.parametrize("name", ["avg_auto", "max_auto", "max_plain"])
def test_ceil_out_dim_pooling_file_computes_cntks_values(name):
    g = C.load_model(os.path.join(FIXTURES, name + ".model"))
    got = g.eval({g.arguments[0]: REFS["x"]})
    np.testing.assert_allclose(got, REFS[name], rtol=1e-6, atol=1e-6)

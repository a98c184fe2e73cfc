"""A CNTK 2.7 model file whose ``ReconcileDynamicAxis`` puts a sequence on another sequence
axis (``tests/fixtures/cntk_reconcile_axes``, written by CNTK 2.7 with its make_files.py):
Stadyn computes CNTK's values where the lengths agree and refuses, as CNTK 2.7 does, where
they differ (963552ed computed with the swapped lengths)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_reconcile_axes")
sys.path.insert(0, FIXTURES)
from make_files import S, T_SAME, T_SWAPPED  # noqa: E402

sys.path.remove(FIXTURES)


@pytest.fixture(scope="module")
def loaded():
    with open(os.path.join(FIXTURES, "refs.json")) as f:
        refs = json.load(f)
    m = C.load_model(os.path.join(FIXTURES, "reconcile.model"))
    return m, {v.name: v for v in m.arguments}, refs


def test_sequences_of_the_same_lengths_compute_cntks_values(loaded):
    m, a, refs = loaded
    out = m.eval({a["s"]: S, a["t"]: T_SAME})
    assert len(out) == len(refs["same lengths"])
    for got, want in zip(out, refs["same lengths"]):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want, np.float32))


def test_sequences_of_other_lengths_are_refused(loaded):
    m, a, refs = loaded
    assert refs["swapped lengths"] == "ValueError"
    with pytest.raises(ValueError, match="ReconcileDynamicAxis.*lengths"):
        m.eval({a["s"]: S, a["t"]: T_SWAPPED})

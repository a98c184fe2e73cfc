"""``reset_smoothed_gradients()`` (what block momentum calls after each merge) against CNTK 2.7
(``tests/fixtures/cntk_learner_reset/refs.json``, written by its ``make_refs.py``): besides the
per-parameter state, FSAdaGrad's smoothed sample count and adam's bias-correction count start
again, as CNTK's LearnerFSAdaGrad/LearnerAdam::ResetSmoothedGradients zero them."""

import json
import os
import sys

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                       "cntk_learner_reset")
sys.path.insert(0, FIXTURE)
import make_refs  # noqa: E402


@pytest.mark.parametrize("name", ["fsadagrad", "adam", "momentum_sgd"])
def test_updates_after_a_reset_are_cntk_27s(name):
    with open(os.path.join(FIXTURE, "refs.json")) as f:
        expected = json.load(f)[name]
    got = make_refs.run(C)[name]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)

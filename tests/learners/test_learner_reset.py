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


def test_adams_checkpoint_after_a_reset_restores_its_bias_correction():
    """CNTK's checkpoint of an adam reset after two updates holds smoothed_count 1 after one
    more (minibatchCount 3); restored, the next update is the one the learner would take."""
    def make():
        w = C.parameter((3,), init=np.array([0.5, -1.0, 2.0], np.float32))
        return w, C.adam([w], C.learning_parameter_schedule_per_sample(0.01),
                         C.momentum_schedule_per_sample(0.99))
    w, learner = make()
    for step, g in enumerate(make_refs.GRADIENTS):
        if step == 2:
            learner.reset_smoothed_gradients()
        learner.update({w: np.array(g, np.float32)}, 4)
    checkpoint = learner.create_checkpoint()
    assert (checkpoint["smoothed_count"], checkpoint["minibatchCount"]) == (1.0, 3)
    w2, restored = make()
    w2.value = w.value
    restored.restore_from_checkpoint(checkpoint)
    for v, x in ((w, learner), (w2, restored)):
        x.update({v: np.ones(3, np.float32)}, 4)
    np.testing.assert_array_equal(w2.value, w.value)

"""``reset_smoothed_gradients()`` (what block momentum calls after each merge) against CNTK 2.7
(``tests/fixtures/cntk_learner_reset/refs.json``, written by its ``make_refs.py``): besides the
per-parameter state, FSAdaGrad's smoothed sample count and adam's and rmsprop's update counts
start again, as CNTK's LearnerFSAdaGrad/LearnerAdam/LearnerRMSProp::ResetSmoothedGradients zero
them (rmsprop's next update initialises its averages as a first one)."""

import importlib.util
import json
import os

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                       "cntk_learner_reset")
# (loaded under a name of its own: other fixture folders hold a make_refs.py too)
_spec = importlib.util.spec_from_file_location("cntk_learner_reset_make_refs",
                                               os.path.join(FIXTURE, "make_refs.py"))
make_refs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_refs)


def _refs():
    with open(os.path.join(FIXTURE, "refs.json")) as f:
        return json.load(f)


@pytest.mark.parametrize("name", make_refs.NAMES)
def test_updates_after_a_reset_are_cntk_27s(name):
    expected = _refs()[name]
    got = make_refs.run(C)[name]
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_adams_checkpoint_after_a_reset_restores_its_bias_correction():
    """CNTK's checkpoint of an adam reset after two updates holds smoothed_count 3 after three
    more (minibatchCount 5); restored, the next update is the one the learner would take."""
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
    assert (checkpoint["smoothed_count"], checkpoint["minibatchCount"]) == (3.0, 5)
    w2, restored = make()
    w2.value = w.value
    restored.restore_from_checkpoint(checkpoint)
    for v, x in ((w, learner), (w2, restored)):
        x.update({v: np.ones(3, np.float32)}, 4)
    np.testing.assert_array_equal(w2.value, w.value)


@pytest.mark.parametrize("name", ["adam", "rmsprop"])
def test_a_checkpoint_taken_right_after_a_reset_restores_the_zeroed_count(name):
    """CNTK 2.7 writes smoothed_count 0 (minibatchCount 2) for an adam or rmsprop reset after
    two updates; a learner restored from it takes CNTK's next updates (rmsprop's first one
    initialises its averages again)."""
    expected = _refs()["restored_after_reset"][name]
    got = make_refs.run_restored(C)[name]
    assert got["counts"] == expected["counts"]
    np.testing.assert_allclose(got["values"], expected["values"], rtol=1e-6, atol=1e-7)


def test_a_state_saved_before_the_update_count_offset_was_renamed_still_loads():
    """States written before the rename hold the offset as ``refused_updates``: an rmsprop reset
    after two updates, saved that way and loaded, continues as the learner does."""
    import torch

    import stadyn as sd
    import stadyn.learners as L

    def make():
        w = sd.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32), need_grad=True)
        return w, L.rmsprop([w], L.learning_parameter_schedule_per_sample(0.01), 0.9, 2.0, 0.5,
                            10.0, 1e-4)

    def step(w, learner, g):
        w.grad = torch.tensor(g, dtype=torch.float32)
        learner.update(4)

    w, learner = make()
    for g in make_refs.GRADIENTS[:2]:
        step(w, learner, g)
    learner.reset_smoothed_gradients()
    state = learner.state_dict()
    assert state["scalars"]["update_count_offset"] == -2.0
    state["scalars"] = {"refused_updates": state["scalars"].pop("update_count_offset")}
    w2, restored = make()
    w2.d = w.d.copy()
    restored.load_state_dict(state)
    for g in make_refs.GRADIENTS[2:]:
        step(w, learner, g)
        step(w2, restored, g)
    np.testing.assert_array_equal(w2.d, w.d)

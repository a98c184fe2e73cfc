"""A learner ``cntk.learners`` makes pickles and copies as itself: it comes back with CNTK's
``Learner`` API (the counts as methods, ``update`` with ``{parameter: gradient}``, the checks
of ``reset_learning_rate``) and the unit of its rate the Trainer reports, and continues as the
original does.  (CNTK 2.7's learners pickle not at all: SWIG objects; this is Stadyn's own.)"""

import copy
import pickle

import numpy as np
import pytest

import stadyn.compat.cntk as C
from stadyn.compat.cntk._adapt import unwrap
from stadyn.compat.cntk.learners import _learning_rate_unit

_ROUND_TRIPS = {"pickle": lambda o: pickle.loads(pickle.dumps(o)),
                "deepcopy": copy.deepcopy}

_MAKERS = {
    "momentum_sgd": lambda ps: C.learners.momentum_sgd(
        ps, C.learning_parameter_schedule(0.5), C.momentum_schedule(0.9)),
    "adam per sample": lambda ps: C.learners.adam(
        ps, C.learning_parameter_schedule_per_sample(0.1), C.momentum_schedule(0.9)),
}


@pytest.mark.usefixtures("fresh_parameters")
@pytest.mark.parametrize("how", sorted(_ROUND_TRIPS))
@pytest.mark.parametrize("kind", sorted(_MAKERS))
def test_a_learner_round_trips_with_cntks_api(kind, how):
    rs = np.random.RandomState(0)
    w = C.parameter((3, 2), init=rs.randn(3, 2).astype(np.float32), name="w")
    learner = _MAKERS[kind]([w])
    first = rs.randn(3, 2).astype(np.float32)
    learner.update({w: first}, 4)

    again = _ROUND_TRIPS[how](learner)
    assert type(again) is type(learner)
    assert isinstance(again, C.learners.Learner)
    assert again.total_number_of_minibatches_seen() == 1
    assert again.total_number_of_samples_seen() == 4
    assert _learning_rate_unit(again) == _learning_rate_unit(learner) == (
        "Learning rate per minibatch" if kind == "momentum_sgd" else
        "Learning rate per 1 samples")
    with pytest.raises(ValueError, match="learning_rate must be a training schedule"):
        again.reset_learning_rate(0.1)

    # the copy continues from the state the original had: its next update (on its own
    # copy of the parameter) is the one the original makes
    # (a learner's parameters are CNTK Parameters, as the model's: named w, with a value)
    (w_again,) = again.parameters
    (w_native,) = learner.parameters
    assert [w_again.name, w_native.name] == ["w", "w"]
    assert unwrap(w_again) is not unwrap(w_native) and unwrap(w_native) is unwrap(w)
    np.testing.assert_array_equal(w_again.value, w.value)
    second = rs.randn(3, 2).astype(np.float32)
    learner.update({w: second}, 5)
    again.update({w_again: second}, 5)
    np.testing.assert_array_equal(w_again.value, w.value)
    assert again.total_number_of_samples_seen() == learner.total_number_of_samples_seen() == 9

"""A Trainer whose learners update parameters its loss is not computed from (the learners given
another model's parameters, or a parameter only the metric reads): CNTK 2.7 makes it, tests and
evaluates with it, and dies in its first ``train_minibatch`` (signal 11, checked live below where
CNTK 2.7 is installed), so no reference can be recorded for the training; Stadyn trained on
silently, leaving those parameters as they were, and now refuses the training with a
ValueError naming the parameters, the model and the loss.  A learner's parameter that none of
the model, the loss and the metric reads CNTK 2.7 refuses as the Trainer is made (its
ValueError, checked live below); Stadyn refused it only in ``train_minibatch`` (1d1a81d4).
(Made and not trained, such a Trainer is CNTK's: case trainer__parameters_no_learner_covers.)
The Trainers CNTK 2.7 trains (a model that is another Function over the loss's graph, or the
learners given the loss's parameters) are case trainer__models_over_the_loss_graph."""

import os
import subprocess

import numpy as np
import pytest
import peers

import stadyn.compat.cntk as C


def _graph():
    x, y = C.input_variable(3, name="x"), C.input_variable(2, name="y")
    z = C.layers.Dense(2, name="z")(x)
    loss = C.cross_entropy_with_softmax(z, y)
    return x, y, z, loss


def _lr():
    return C.learning_parameter_schedule(0.1)


def _data(x, y):
    return {x: np.ones((2, 3), np.float32), y: np.array([[1, 0], [0, 1]], np.float32)}


def test_learners_of_another_model_are_refused_when_it_trains():
    x, y, z, loss = _graph()
    other = C.layers.Dense(2, name="other")(x)
    trainer = C.Trainer(other, (loss, C.classification_error(other, y)),
                        C.sgd(other.parameters, _lr()))
    assert trainer.test_minibatch(_data(x, y)) in (0.0, 0.5, 1.0)    # (as CNTK 2.7: it tests)
    before = [p.value.copy() for p in other.parameters]
    with pytest.raises(ValueError) as e:
        trainer.train_minibatch(_data(x, y))
    said = str(e.value)
    assert said.startswith("Trainer: the learners update parameters the loss is not computed "
                           "from (W, b)")
    assert "Output('other'" in said and "CrossEntropyWithSoftmax" in said
    assert "segmentation fault" in said
    assert all(np.array_equal(p.value, b) for p, b in zip(other.parameters, before))


def test_a_parameter_only_the_metric_reads_is_refused():
    x, y, z, loss = _graph()
    q = C.parameter(2, init=1.0, name="q")
    metric = C.classification_error(z * q, y)
    trainer = C.Trainer(z, (loss, metric), C.sgd(list(z.parameters) + [q], _lr()))
    with pytest.raises(ValueError, match=r"not computed from \(q\)"):
        trainer.train_minibatch(_data(x, y))


def test_another_model_with_the_loss_parameters_still_trains():
    x, y, z, loss = _graph()
    other = C.layers.Dense(2, name="other")(x)
    before = z.parameters[0].value.copy()
    trainer = C.Trainer(other, (loss, None), C.sgd(loss.parameters, _lr()))
    trainer.train_minibatch(_data(x, y))
    assert not np.allclose(z.parameters[0].value, before)


_CNTK_PYTHON = peers.CNTK_PYTHON
_CRASHES = """
import numpy as np, cntk as C
x, y = C.input_variable(3), C.input_variable(2)
loss = C.cross_entropy_with_softmax(C.layers.Dense(2)(x), y)
other = C.layers.Dense(2)(x)
t = C.Trainer(other, (loss, None), C.sgd(other.parameters, C.learning_parameter_schedule(0.1)))
print("MADE", flush=True)
t.train_minibatch({x: np.ones((2, 3), np.float32), y: np.array([[1, 0], [0, 1]], np.float32)})
print("TRAINED", flush=True)
"""


@pytest.mark.skipif(not os.path.exists(_CNTK_PYTHON), reason="CNTK 2.7 is not installed "
                    "(STADYN_CNTK_PYTHON): the crash this refusal stands for is checked live")
def test_cntk_crashes_training_such_a_trainer():
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
    run = subprocess.run([_CNTK_PYTHON, "-W", "ignore", "-c", _CRASHES], env=env,
                         capture_output=True, text=True, timeout=120)
    assert "MADE" in run.stdout and "TRAINED" not in run.stdout, run.stdout + run.stderr
    assert run.returncode == -11, run.returncode       # (SIGSEGV)



# (run by both: here, and by CNTK 2.7's Python below)
_EXTRA = """
def extra_parameter_trainer(C, metric_reads_it):
    x, y = C.input_variable(2, name="x"), C.input_variable(3, name="y")
    z = C.layers.Dense(3, name="z")(x)
    extra = C.parameter((3,), init=1.0, name="extra")
    metric = C.squared_error(z + extra, y) if metric_reads_it else None
    return C.Trainer(z, (C.squared_error(z, y), metric),
                     C.sgd(list(z.parameters) + [extra], lr=0.1))
"""
_CTOR_ERROR = ("Trainer ctor: 1 of the learner parameters 'Parameter('extra', [], [3])' are "
               "not part of the model specified")


def test_a_parameter_no_function_reads_is_refused_as_the_trainer_is_made():
    space: dict = {}
    exec(_EXTRA, space)
    with pytest.raises(ValueError) as e:
        space["extra_parameter_trainer"](C, metric_reads_it=False)
    assert str(e.value) == _CTOR_ERROR
    trainer = space["extra_parameter_trainer"](C, metric_reads_it=True)  # (made, as CNTK's)
    assert trainer.model is not None


_CTOR = _EXTRA + """
import cntk as C
extra_parameter_trainer(C, metric_reads_it=True)
print("MADE", flush=True)
try:
    extra_parameter_trainer(C, metric_reads_it=False)
except ValueError as e:
    print("REFUSED " + str(e).splitlines()[0], flush=True)
"""


@pytest.mark.skipif(not os.path.exists(_CNTK_PYTHON), reason="CNTK 2.7 is not installed "
                    "(STADYN_CNTK_PYTHON): its ctor error is checked live")
def test_cntk_refuses_a_parameter_no_function_reads_as_the_trainer_is_made():
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
    run = subprocess.run([_CNTK_PYTHON, "-W", "ignore", "-c", _CTOR], env=env,
                         capture_output=True, text=True, timeout=120)
    assert "MADE" in run.stdout, run.stdout + run.stderr
    assert "REFUSED " + _CTOR_ERROR in run.stdout, run.stdout + run.stderr

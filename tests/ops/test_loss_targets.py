"""Losses and metrics take the targets NNabla and CNTK take, and refuse the others.

The cases and the real frameworks' answers are in ``tests/fixtures/loss_targets/`` (made by the
script there with NNabla 1.39 and CNTK 2.7): NNabla's losses take class ids of the scores' shape
with size 1 on the class axis (or, element-wise, the scores' very shape); CNTK's take one-hot rows
of the output's shape.  A target of the other kind used to broadcast into a wrong result.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn.graph import StaticPlan, _runner
from stadyn.ops import function_of

_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "fixtures",
                     "loss_targets")


@pytest.fixture(autouse=True)
def _lowered_at_once(monkeypatch):
    """A static run here is an evaluation's first run, which would run eagerly: lowered at
    once, the plan's accepting and refusing is what is checked."""
    monkeypatch.setattr(_runner, "BUILD_RUNS", 0)


def _cases():
    cases = []
    for framework in ("nnabla", "cntk"):
        with open(os.path.join(_HERE, f"{framework}.json"), encoding="utf-8") as f:
            records = json.load(f)["cases"]
        for k, record in enumerate(records):
            shape = np.shape(record["target"])
            cases.append(pytest.param(record, id=f"{framework}-{k}-{record['op']}-"
                                               f"{record['target_dtype']}{list(shape)}"))
    return cases


def _run(record, dynamic: bool):
    x = sd.Variable.from_numpy_array(np.asarray(record["x"], np.float32))
    t = sd.Variable.from_numpy_array(np.asarray(record["target"], record["target_dtype"]))
    with sd.auto_forward(dynamic), sd.parameter_scope("head"):
        y = function_of(record["op"])(x, t, **record["kwargs"])
    if not dynamic:
        y.forward()
        assert isinstance(y._plan, StaticPlan)
    return y


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("record", _cases())
def test_targets_are_accepted_and_refused_as_the_real_framework_does(record, dynamic):
    if record["accepted"]:
        y = _run(record, dynamic)
        assert list(y.shape) == record["output_shape"]
        np.testing.assert_allclose(y.d, record["output"], rtol=1e-5, atol=1e-6)
    else:
        # refused when the graph is built, in both modes, naming the op and the scope
        with pytest.raises(sd.ShapeError, match=rf"^{record['op']} in scope 'head': .*target"):
            _run(record, dynamic)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_one_hot_rows_given_for_class_ids_say_which_op_takes_them(dynamic):
    x = sd.Variable((2, 3))
    t = sd.Variable.from_numpy_array(np.eye(3, dtype=np.float32)[[0, 2]])
    with sd.auto_forward(dynamic), pytest.raises(
            sd.ShapeError, match=r"softmax_cross_entropy: .*class ids of shape \(2, 1\).*"
                                 r"cross_entropy_with_softmax"):
        F.softmax_cross_entropy(x, t)
    with sd.auto_forward(dynamic), pytest.raises(
            sd.ShapeError, match=r"cross_entropy_with_softmax: .*one-hot.*\(2, 3\).*"
                                 r"softmax_cross_entropy"):
        F.cross_entropy_with_softmax(x, sd.Variable.from_numpy_array(np.array([[0], [2]])))


@pytest.mark.parametrize("op", ["softmax_cross_entropy", "categorical_cross_entropy",
                                "top_n_error"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_float_class_ids_must_be_whole_numbers(op, dynamic):
    """NNabla truncates 2.7 to class 2 without a word; Stadyn refuses it."""
    x = sd.Variable.from_numpy_array(np.full((2, 3), 0.5, np.float32))
    good = sd.Variable.from_numpy_array(np.array([[0.0], [2.0]], np.float32))
    bad = sd.Variable.from_numpy_array(np.array([[0.0], [2.7]], np.float32))
    with sd.auto_forward(dynamic):
        y = function_of(op)(x, good)
        if not dynamic:
            y.forward()
        assert y.shape == (2, 1)
        with pytest.raises(sd.ShapeError, match=rf"{op}.*not whole numbers"):
            y = function_of(op)(x, bad)
            if not dynamic:
                y.forward()


@pytest.mark.parametrize("op", ["softmax_cross_entropy", "categorical_cross_entropy",
                                "top_n_error"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_the_nnabla_rule_truncates_float_class_ids_toward_zero(op, dynamic):
    """``rule="nnabla"`` (compat.nnabla's functions, an .nnp file's) reads 2.7 as class 2 and
    -0.5 as class 0, as NNabla 1.39's kernels do (they take the target array as int)."""
    x = sd.Variable.from_numpy_array(np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], np.float32))
    fractional = sd.Variable.from_numpy_array(np.array([[2.7], [-0.5]], np.float32))
    whole = sd.Variable.from_numpy_array(np.array([[2], [0]], np.int32))
    with sd.auto_forward(dynamic):
        y = function_of(op)(x, fractional, rule="nnabla")
        want = function_of(op)(x, whole)
        if not dynamic:
            y.forward()
            want.forward()
    np.testing.assert_array_equal(y.d, want.d)


def test_a_class_id_rule_other_than_torch_or_nnabla_is_refused():
    x = sd.Variable.from_numpy_array(np.zeros((1, 2), np.float32))
    t = sd.Variable.from_numpy_array(np.array([[1]]))
    with sd.auto_forward(), pytest.raises(sd.ShapeError, match="rule='cntk'.*'nnabla'"):
        F.softmax_cross_entropy(x, t, rule="cntk")


def test_float_class_ids_are_checked_in_a_static_graph_on_every_forward():
    x = sd.Variable.from_numpy_array(np.full((2, 3), 0.5, np.float32))
    t = sd.Variable((2, 1))
    loss = F.mean(F.softmax_cross_entropy(x, t))
    t.d = np.array([[0.0], [1.0]])
    loss.forward()
    np.testing.assert_allclose(loss.d, np.log(3.0), rtol=1e-6)
    t.d = np.array([[0.0], [1.5]])
    with pytest.raises(sd.ShapeError, match="softmax_cross_entropy.*not whole numbers"):
        loss.forward()


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_a_row_of_nan_scores_is_an_error_not_a_hit(dynamic):
    """A diverged model's NaN logits used to count as right ("metric = 0.00%") in
    ``top_n_error``; ``classification_error`` counts them as CNTK 2.7 does."""
    z = np.array([[np.nan] * 3, [0.1, 0.7, 0.2], [0.9, np.nan, 0.0]], np.float32)
    one_hot = np.eye(3, dtype=np.float32)[[0, 1, 0]]
    ids = np.array([[0], [1], [0]])
    with sd.auto_forward(dynamic):
        zv = sd.Variable.from_numpy_array(z)
        errors = F.classification_error(zv, sd.Variable.from_numpy_array(one_hot))
        top1 = F.top_n_error(zv, sd.Variable.from_numpy_array(ids))
        top2 = F.top_n_error(zv, sd.Variable.from_numpy_array(ids), n=2)
    for y in (errors, top1, top2):
        if not dynamic:
            y.forward()
    # classification_error is CNTK 2.7's: the prediction is the first output no later one
    # exceeds, so a row of NaN predicts class 0 and row 3's later NaN is passed by -- both hits
    # here, as CNTK 2.7 gives them (cases nan__losses in tests/compat/compat_cases/cntk_nan.py)
    np.testing.assert_array_equal(errors.d[:, 0], [0.0, 0.0, 0.0])
    # top_n_error: the NaN ranks above the target's 0.9, so row 3 is a top-1 miss but a top-2 hit
    np.testing.assert_array_equal(top1.d[:, 0], [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(top2.d[:, 0], [1.0, 0.0, 0.0])

"""A static plan checks a split target once (``graph/_merged_checks.py``): an unrolled loss over
the steps of one float target tensor runs one whole-number check, not one per step, with the
same values and the same error; a target only partly used keeps its per-piece checks (its unused
part may hold anything)."""

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F

STEPS, CLASSES = 3, 4


def _unrolled(x, t, used=STEPS):
    """One softmax cross-entropy per step of ``t`` (batch, STEPS), as an unrolled language
    model's loss: ``F.split`` along the steps, the first ``used`` steps scored."""
    loss = 0
    for k, t_k in enumerate(F.split(t, axis=1)[:used]):
        loss += F.mean(F.softmax_cross_entropy(x[k], F.reshape(t_k, (2, 1))))
    return loss


def _expected(scores, ids, used=STEPS):
    total = 0.0
    for k in range(used):
        z = scores[k] - scores[k].max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        total += -logp[np.arange(2), ids[:, k].astype(int)].mean()
    return total


def _scores():
    rng = np.random.RandomState(0)
    values = rng.randn(STEPS, 2, CLASSES).astype(np.float32)
    return values, [sd.Variable.from_numpy_array(v) for v in values]


def test_a_split_target_is_checked_once_with_the_same_values_and_error():
    values, x = _scores()
    t = sd.Variable((2, STEPS))
    loss = _unrolled(x, t)
    t.d = np.array([[0, 1, 3], [2, 2, 0]], np.float32)
    loss.forward()                  # no leaf needs a gradient: the first run is eager
    np.testing.assert_allclose(float(loss.d), _expected(values, t.d), rtol=1e-5)
    loss.forward()
    assert loss._plan.code.count("aten._assert_async") == 1
    np.testing.assert_allclose(float(loss.d), _expected(values, t.d), rtol=1e-5)
    t.d = np.array([[0, 1, 3], [2, 2, 0.5]], np.float32)      # the last step's label
    with pytest.raises(sd.ShapeError, match="softmax_cross_entropy.*not whole numbers"):
        loss.forward()


def test_a_target_used_in_part_keeps_a_check_per_piece():
    values, x = _scores()
    t = sd.Variable((2, STEPS))
    loss = _unrolled(x, t, used=2)
    t.d = np.array([[0, 1, 0.5], [2, 2, 0.25]], np.float32)   # the unused step: not labels
    loss.forward()                  # no leaf needs a gradient: the first run is eager
    np.testing.assert_allclose(float(loss.d), _expected(values, t.d, used=2), rtol=1e-5)
    loss.forward()
    assert loss._plan.code.count("aten._assert_async") == 2
    np.testing.assert_allclose(float(loss.d), _expected(values, t.d, used=2), rtol=1e-5)
    t.d = np.array([[0, 1.5, 0.5], [2, 2, 0.25]], np.float32)
    with pytest.raises(sd.ShapeError, match="softmax_cross_entropy.*not whole numbers"):
        loss.forward()

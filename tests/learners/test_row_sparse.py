"""Row-sparse gradients (``Learner.set_row_sparse_gradients``) against NumPy transcriptions of
CNTK 2.7's sparse kernels: ``Source/Math/Matrix.cpp:1652-1745`` (momentum, Nesterov),
``CPUSparseMatrix.cpp:1323-1353`` (``NormalGrad``) and ``1358-1421`` (``Adagrad``).  The
CNTK 2.7 runs themselves are the harness cases ``cntk:sparse_learners__*``
(``tests/compat/compat_cases/cntk_sparse_learners_35.py``)."""

import numpy as np
import pytest
import torch

import stadyn as sd
from stadyn.learners import adagrad, adam, adadelta, momentum_sgd, nesterov, rmsprop, sgd

STEPS = [([0, 2], 3), ([1, 2], 2), ([4, 0], 4), ([6], 1)]   # (rows touched, sample count)


def _grads(seed=0):
    rs = np.random.RandomState(seed)
    out = []
    for rows, _ in STEPS:
        g = np.zeros((7, 3), np.float32)
        g[rows] = rs.randn(len(rows), 3)
        out.append(g)
    return out


def _run(make, sparse=True):
    w = sd.Variable.from_numpy_array(np.arange(21, dtype=np.float32).reshape(7, 3) * 0.1,
                                     need_grad=True)
    learner = make([w])
    seen = []
    for (rows, n), g in zip(STEPS, _grads()):
        if sparse:
            learner.set_row_sparse_gradients({w: rows})
        w.grad = torch.from_numpy(g)
        learner.update(n)
        seen.append(w.d.copy())
    return seen


def _reference(rule, m=0.9, unit_gain=True, average=True):
    """NumPy transcription of CNTK 2.7's sparse kernels (lr 0.5 per minibatch: 0.5 / M)."""
    w = np.arange(21, dtype=np.float64).reshape(7, 3) * 0.1
    s = np.zeros_like(w)
    seen = []
    for (rows, n), g in zip(STEPS, _grads()):
        lr = 0.5 / n
        r = sorted(set(rows))
        u = 1 - m if unit_gain else 1.0
        if rule == "momentum":
            s[r] = m * s[r] + u * g[r]
            w[r] -= lr * s[r]
        elif rule == "nesterov":
            s[r] = m * s[r] + u * g[r]
            w -= m * s
            w[r] -= u * lr * g[r]
        elif rule == "adagrad":
            s[r] += g[r] ** 2
            a = np.sqrt(1e-16 + s[r])
            ave = np.mean(1 / a) if average else 1.0
            w[r] -= lr / ave * g[r] / a
        seen.append(w.copy())
    return seen


@pytest.mark.parametrize("unit_gain", [True, False])
def test_momentum_decays_only_the_touched_rows(unit_gain):
    got = _run(lambda p: momentum_sgd(p, 0.5, 0.9, unit_gain=unit_gain))
    for a, b in zip(got, _reference("momentum", unit_gain=unit_gain)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # a row not touched since step 0 keeps its place (the dense rule moves it on)
    np.testing.assert_array_equal(got[1][0], got[0][0])
    dense = _run(lambda p: momentum_sgd(p, 0.5, 0.9, unit_gain=unit_gain), sparse=False)
    assert not np.allclose(dense[1][0], dense[0][0])


def test_nesterov_moves_every_row_by_its_momentum():
    got = _run(lambda p: nesterov(p, 0.5, 0.9))
    for a, b in zip(got, _reference("nesterov")):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_nesterov_without_momentum_moves_nothing():
    got = _run(lambda p: nesterov(p, 0.5, 0.0))
    np.testing.assert_array_equal(got[-1], np.arange(21, dtype=np.float32).reshape(7, 3) * 0.1)


@pytest.mark.parametrize("average", [True, False])
def test_adagrad_averages_over_the_touched_rows(average):
    got = _run(lambda p: adagrad(p, 0.5, need_ave_multiplier=average))
    for a, b in zip(got, _reference("adagrad", average=average)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [lambda p: sgd(p, 0.5), lambda p: adadelta(p, 0.5)])
def test_sgd_and_adadelta_as_dense(make):
    for a, b in zip(_run(make), _run(make, sparse=False)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("make, kernel", [
    (lambda p: adam(p, 0.5, 0.9), "AdamUpdate"),
    (lambda p: rmsprop(p, 0.5, 0.9, 1.2, 0.5, 10.0, 0.001), "RmsProp"),
    (lambda p: sgd(p, 0.5, l2_regularization_weight=0.1), "ScaleAndAdd")])
def test_refusals_in_cntks_words(make, kernel):
    w = sd.Variable.from_numpy_array(np.ones((7, 3), np.float32), need_grad=True)
    learner = make([w])
    learner.set_row_sparse_gradients({w: [1]})
    w.grad = torch.ones(7, 3)
    with pytest.raises(RuntimeError, match=f"Function: {kernel}  -> Feature Not Implemented"):
        learner.update(1)
    np.testing.assert_array_equal(w.d, np.ones((7, 3), np.float32))
    assert learner.total_number_of_samples_seen == 0


def test_rows_are_for_one_update_and_checked():
    w = sd.Variable.from_numpy_array(np.zeros((3, 1), np.float32), need_grad=True)
    learner = momentum_sgd([w], 0.5, 0.5)
    with pytest.raises(sd.StadynError, match=r"rows \[3\] of parameter 0 are outside its 3"):
        learner.set_row_sparse_gradients({w: [3]})
    learner.set_row_sparse_gradients({w: [0]})
    w.grad = torch.ones(3, 1)
    learner.update(1)
    learner.update(1)                           # dense again: every row moves
    assert w.d[1, 0] != 0 and w.d[0, 0] != w.d[1, 0]


def test_refusal_after_the_parameters_before_it():
    """CNTK 2.7 updates a learner's parameters in order: those before the refused one move
    (harness case cntk:sparse_learners__adam__bias_first has CNTK 2.7's numbers)."""
    b = sd.Variable.from_numpy_array(np.zeros(3, np.float32), need_grad=True)
    w = sd.Variable.from_numpy_array(np.ones((7, 3), np.float32), need_grad=True)
    learner = adam([b, w], 0.5, 0.9)
    learner.set_row_sparse_gradients({w: [2]})
    b.grad, w.grad = torch.ones(3), torch.ones(7, 3)
    with pytest.raises(RuntimeError, match="AdamUpdate"):
        learner.update(1)
    assert (b.d < 0).all() and (w.d == 1).all()
    assert learner.step_scalars(None, 1)["step_size"] != adam([b], 0.5, 0.9).step_scalars(
        None, 1)["step_size"]          # the update begun is counted (its bias correction)

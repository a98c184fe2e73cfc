"""A graph built after its parameters were differentiated by another graph (an evaluation graph
beside a training graph) gets a forward-only plan (``graph/_deferred_backward.py``); a backward
asked of it later builds the backward and runs the forward again on what the first run started
from: the same random draws and the same running statistics, and the generator and statistics
left as the backward found them.  Values are checked against NumPy."""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F


@pytest.fixture
def builds(monkeypatch):
    from stadyn.graph import _runner
    built = []
    original = _runner.build_plan
    monkeypatch.setattr(_runner, "build_plan",
                        lambda *a, **k: built.append(k.get("backward", True)) or original(*a, **k))
    return built


def _trained(w, x):
    """One training step's forward and backward: ``w`` holds a gradient afterwards."""
    loss = F.sum(F.tanh(x * w))
    loss.forward()
    loss.backward()
    return loss


def test_an_evaluation_graph_is_built_without_its_backward(builds):
    rng = np.random.RandomState(0)
    w = sd.Variable.from_numpy_array(rng.randn(3).astype(np.float32), need_grad=True)
    x = sd.Variable.from_numpy_array(rng.randn(3).astype(np.float32))
    train = _trained(w, x)
    assert train._plan.has_backward and builds == [True]    # a training graph: at once
    vx = sd.Variable.from_numpy_array(rng.randn(3).astype(np.float32))
    valid = F.sum(F.tanh(vx * w) ** 2)
    for _ in range(2):
        valid.forward()
    assert builds == [True, False] and not valid._plan.has_backward
    np.testing.assert_allclose(float(valid.d), (np.tanh(vx.d * w.d) ** 2).sum(), rtol=1e-5)
    train.forward()                                         # the training graph: unchanged
    train.backward()
    assert builds == [True, False]


def test_a_backward_of_a_forward_only_plan_builds_it_and_gives_the_gradients(builds):
    rng = np.random.RandomState(1)
    w = sd.Variable.from_numpy_array(rng.randn(3).astype(np.float32), need_grad=True)
    x = sd.Variable.from_numpy_array(rng.randn(3).astype(np.float32))
    _trained(w, x)
    y = F.sum(F.tanh(x * w) ** 2)
    y.forward()
    w.g = 0
    y.backward()
    t = np.tanh(x.d * w.d)
    np.testing.assert_allclose(w.g, 2 * t * (1 - t * t) * x.d, rtol=1e-4, atol=1e-6)
    assert builds == [True, False, True] and y._plan.has_backward
    y.forward()                                             # its plan with a backward stays
    w.g = 0
    y.backward()
    np.testing.assert_allclose(w.g, 2 * t * (1 - t * t) * x.d, rtol=1e-4, atol=1e-6)
    assert builds == [True, False, True]


def test_the_second_run_draws_the_same_masks_and_updates_the_statistics_once(builds):
    rng = np.random.RandomState(2)
    shape = (4, 3)
    w = sd.Variable.from_numpy_array(rng.randn(*shape).astype(np.float32), need_grad=True)
    beta = sd.Variable.from_numpy_array(np.zeros((1, 3), np.float32), need_grad=True)
    gamma = sd.Variable.from_numpy_array(np.ones((1, 3), np.float32), need_grad=True)
    mean = sd.Variable.from_numpy_array(np.zeros((1, 3), np.float32))
    var = sd.Variable.from_numpy_array(np.ones((1, 3), np.float32))
    x = sd.Variable.from_numpy_array(rng.randn(*shape).astype(np.float32))
    _trained(w, x)
    _trained(beta, x)
    _trained(gamma, x)
    h = F.dropout(x * w, 0.5)
    y = F.sum(F.batch_normalization(h, beta, gamma, mean, var, batch_stat=True) * x)
    torch.manual_seed(0)
    y.forward()
    assert not y._plan.has_backward
    dropped, stats, value = h.d.copy(), (mean.d.copy(), var.d.copy()), float(y.d)
    after_forward = torch.get_rng_state()
    w.g = 0
    y.backward()
    assert y._plan.has_backward and builds[-2:] == [False, True]
    np.testing.assert_array_equal(h.d, dropped)              # the same masks
    assert float(y.d) == pytest.approx(value, rel=1e-6)
    np.testing.assert_array_equal(mean.d, stats[0])          # updated once, not twice
    np.testing.assert_array_equal(var.d, stats[1])
    assert torch.equal(torch.get_rng_state(), after_forward)  # the generator as it was
    expected = _dropout_bn_grad(x.d, w.d, dropped != 0)
    np.testing.assert_allclose(w.g, expected, rtol=1e-3, atol=1e-4)


def _dropout_bn_grad(x, w, kept, eps=1e-5):
    """d/dw of sum(bn(dropout(x * w)) * x) with the mask ``kept`` (scale 2), batch statistics
    over axis 0, gamma 1, beta 0 (NumPy)."""
    h = np.where(kept, x * w * 2.0, 0.0)
    mu, var = h.mean(0), h.var(0)
    n = h.shape[0]
    g = x                                            # d loss / d bn output
    xhat = (h - mu) / np.sqrt(var + eps)
    dh = (g - g.mean(0) - xhat * (g * xhat).mean(0)) / np.sqrt(var + eps)
    assert n == 4
    return np.where(kept, dh * x * 2.0, 0.0)

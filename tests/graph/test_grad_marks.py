"""need_grad set between forward() and backward() (NNabla's rule, graph/_grad_marks.py; the
compat case ``nnabla:need_grad__set_after_forward`` holds the NNabla 1.39 side)."""

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F

X = np.array([0.5, -1.0, 2.0], np.float32)


def _graph():
    x = sd.Variable.from_numpy_array(X, need_grad=True)
    h = F.tanh(x)
    y = F.sum(h * 3.0 + x)
    return x, h, y


def test_a_stop_set_after_the_forward_is_honoured():
    x, h, y = _graph()
    y.forward()
    h.need_grad = False
    x.g = 0
    y.backward()
    np.testing.assert_allclose(x.g, np.ones(3))           # only the direct path
    h.need_grad = True
    y.forward()
    x.g = 0
    y.backward()
    np.testing.assert_allclose(x.g, 1 + 3 * (1 - np.tanh(X) ** 2), rtol=1e-6)


def test_marks_set_back_before_the_backward_run_no_second_forward():
    x, h, y = _graph()
    y.forward()
    plan = y._plan
    x.need_grad = False
    x.need_grad = True
    x.g = 0
    y.backward()
    assert y._plan is plan
    np.testing.assert_allclose(x.g, 1 + 3 * (1 - np.tanh(X) ** 2), rtol=1e-6)


def test_a_graph_with_random_numbers_refuses():
    """Running its forward again would draw a new mask: a clear error, not other values."""
    x = sd.Variable.from_numpy_array(np.ones((4, 3), np.float32), need_grad=True)
    h = F.dropout(x * 2.0, 0.5)
    y = F.sum(F.tanh(h) + x)
    y.forward()
    h.need_grad = False
    with pytest.raises(sd.StadynError, match="need_grad was set .* after its forward"):
        y.backward()


def test_a_graph_updating_running_statistics_refuses():
    x = sd.Variable.from_numpy_array(np.ones((4, 3), np.float32) * X, need_grad=True)
    beta = sd.Variable.from_numpy_array(np.zeros((1, 3), np.float32), need_grad=True)
    gamma = sd.Variable.from_numpy_array(np.ones((1, 3), np.float32), need_grad=True)
    mean = sd.Variable.from_numpy_array(np.zeros((1, 3), np.float32))
    var = sd.Variable.from_numpy_array(np.ones((1, 3), np.float32))
    h = x * 2.0
    y = F.sum(F.tanh(F.batch_normalization(h, beta, gamma, mean, var, batch_stat=True)))
    y.forward()
    updated = mean.d.copy()
    h.need_grad = False
    with pytest.raises(sd.StadynError, match="running statistics"):
        y.backward()
    np.testing.assert_array_equal(mean.d, updated)        # updated once, by the forward

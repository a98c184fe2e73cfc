"""need_grad set between forward() and backward() (NNabla's rule, graph/_grad_marks.py; the
compat case ``nnabla:need_grad__set_after_forward`` holds the NNabla 1.39 side)."""

import weakref

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
from stadyn.graph import EagerPlan, StaticPlan, TrialPlan

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


def _x_hat(h, eps=1e-5):
    """NumPy's batch normalisation of ``h`` over its rows (the batch statistics)."""
    return (h - h.mean(0)) / np.sqrt(h.var(0) + eps)


# a rows, not all equal (a batch normalisation of equal rows is 0 and passes no gradient)
ROWS = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [-2.0, 3.0, 1.0], [0.75, -0.25, 0.5]],
                np.float32)


def test_a_graph_updating_running_statistics_keeps_them():
    # NNabla 1.39 runs no forward again for a backward after a late need_grad: it
    # differentiates the forward that ran and leaves the running statistics as it left them
    # (case nnabla_fidelity_27b.late_need_grad__batch_normalization_static_and_dynamic); a
    # lowered plan runs its forward again and gives them back their values
    x = sd.Variable.from_numpy_array(ROWS)
    beta = sd.Variable.from_numpy_array(np.zeros((1, 3), np.float32), need_grad=True)
    gamma = sd.Variable.from_numpy_array(np.ones((1, 3), np.float32))
    mean = sd.Variable.from_numpy_array(np.zeros((1, 3), np.float32))
    var = sd.Variable.from_numpy_array(np.ones((1, 3), np.float32))
    h = x * 2.0
    y = F.sum(F.tanh(F.batch_normalization(h, beta, gamma, mean, var, batch_stat=True)))
    y.forward()
    assert isinstance(y._plan, StaticPlan)
    updated, updated_var = mean.d.copy(), var.d.copy()
    gamma.need_grad = True
    y.backward()
    np.testing.assert_array_equal(mean.d, updated)        # updated once, by the forward
    np.testing.assert_array_equal(var.d, updated_var)
    x_hat = _x_hat(ROWS.astype(np.float64) * 2)
    slope = 1 - np.tanh(x_hat) ** 2
    np.testing.assert_allclose(gamma.g, (slope * x_hat).sum(0, keepdims=True), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(beta.g, slope.sum(0, keepdims=True), rtol=1e-5)
    y.forward()                                            # the next forward goes on from there
    np.testing.assert_allclose(mean.d, updated * 0.9 + 0.1 * ROWS.mean(0) * 2, rtol=1e-6)


def _new_shape(x, rows=6):
    """Feed ``x`` another batch size: the graph's next forward runs as a TrialPlan."""
    x.data = torch.ones(rows, *x.shape[1:], requires_grad=x.need_grad)


def test_a_new_shape_run_eagerly_refuses_random_numbers():
    """A trial run (a new shape, eager) ran again would draw a new mask too."""
    x = sd.Variable.from_numpy_array(np.ones((4, 3), np.float32), need_grad=True)
    h = F.dropout(x * 2.0, 0.5)
    y = F.sum(F.tanh(h) + x)
    y.forward()
    y.backward()
    _new_shape(x)
    y.forward()
    assert isinstance(y._plan, TrialPlan)
    h.need_grad = False
    with pytest.raises(sd.StadynError, match="after its forward.*random numbers"):
        y.backward()


def test_a_new_shape_updating_running_statistics_keeps_them():
    # NNabla 1.39 runs no forward again for a backward: the running statistics stay as the
    # forward left them (case nnabla_simplify_31.late_need_grad__inner_backward_keeps_running_
    # stats); the replay writes them and they get their values back
    x = sd.Variable.from_numpy_array(np.ones((4, 3), np.float32) * X, need_grad=True)
    beta = sd.Variable.from_numpy_array(np.zeros((1, 3), np.float32), need_grad=True)
    gamma = sd.Variable.from_numpy_array(np.ones((1, 3), np.float32), need_grad=True)
    mean = sd.Variable.from_numpy_array(np.zeros((1, 3), np.float32))
    var = sd.Variable.from_numpy_array(np.ones((1, 3), np.float32))
    h = x * 2.0
    y = F.sum(F.tanh(F.batch_normalization(h, beta, gamma, mean, var, batch_stat=True)))
    y.forward()
    x.data = torch.tensor(np.ones((6, 3), np.float32) * X * 3, requires_grad=True)
    y.forward()
    assert isinstance(y._plan, TrialPlan)
    updated, updated_var = mean.d.copy(), var.d.copy()
    h.need_grad = False
    y.backward()
    np.testing.assert_array_equal(mean.d, updated)        # updated once, by the forward
    np.testing.assert_array_equal(var.d, updated_var)
    # the rows are equal: the normalised values are 0, tanh' = 1, so beta's gradient counts
    # the 6 rows and gamma's (x_hat) is 0; x's is none (h stopped)
    np.testing.assert_allclose(beta.g, np.full((1, 3), 6.0), rtol=1e-6)
    np.testing.assert_allclose(gamma.g, np.zeros((1, 3)), atol=1e-6)


def test_a_new_shape_reading_the_statistics_it_updates_differentiates_its_forward():
    # mean_subtraction subtracts the mean it has just updated and scales its gradient by the
    # count it has just incremented: run again for the backward it computes from the state its
    # forward left, without updating it, as NNabla 1.39 differentiates the forward that ran
    # (case nnabla_fidelity_27b.late_need_grad__mean_subtraction_static_and_dynamic)
    x = sd.Variable.from_numpy_array(np.ones((4, 3), np.float32) * X)
    w = sd.Variable.from_numpy_array(np.array([1.0, 2.0, -1.0], np.float32), need_grad=True)
    mean = sd.Variable.from_numpy_array(np.zeros(3, np.float32))
    t = sd.Variable.from_numpy_array(np.zeros(1, np.float32))
    h = x * w
    y = F.sum(F.tanh(F.mean_subtraction(h, mean, t)))
    y.forward()
    x.data = torch.tensor(ROWS[[0, 1, 2, 3, 0, 2]] * 0.5)
    y.forward()
    assert isinstance(y._plan, TrialPlan)
    updated, count = mean.d.copy(), t.d.copy()
    np.testing.assert_array_equal(count, [2.0])
    x.need_grad = True
    y.backward()
    np.testing.assert_array_equal(mean.d, updated)
    np.testing.assert_array_equal(t.d, count)
    h_np = ROWS[[0, 1, 2, 3, 0, 2]].astype(np.float64) * 0.5 * [1.0, 2.0, -1.0]
    slope = 1 - np.tanh(h_np - updated) ** 2
    np.testing.assert_allclose(x.g, slope * (1 - 1 / (6 * 2)) * [1.0, 2.0, -1.0], rtol=1e-5,
                               atol=1e-7)


def test_a_new_shape_honours_a_stop_set_after_the_forward():
    x, h, y = _graph()
    y.forward()
    y.backward()
    x.data = torch.tensor(np.concatenate([X, X]), requires_grad=True)
    y.forward()
    assert isinstance(y._plan, TrialPlan)
    h.need_grad = False
    x.g = 0
    y.backward()
    np.testing.assert_allclose(x.g, np.ones(6))           # only the direct path


def test_an_eager_graph_replays_without_side_effects_and_refuses_random_numbers():
    """A graph that cannot be lowered (here: an output shape that depends on values) runs
    its forward again eagerly; a random op in it refuses before drawing."""
    def graph(random):
        x = sd.Variable.from_numpy_array(X, need_grad=True)
        h = F.tanh(x)
        if random:
            h = F.dropout(h, 0.5)
        n = F.nonzero(x)                                   # (1, 3): every element is nonzero
        y = F.sum(h * 3.0 + x) + F.sum(n) * 0.0
        return x, h, y

    x, h, y = graph(False)
    y.forward()
    assert isinstance(y._plan, EagerPlan)
    h.need_grad = False
    x.g = 0
    y.backward()
    np.testing.assert_allclose(x.g, np.ones(3))
    x, h, y = graph(True)
    y.forward()
    state = torch.get_rng_state()
    h.need_grad = False
    with pytest.raises(sd.StadynError, match="random numbers"):
        y.backward()
    assert torch.equal(torch.get_rng_state(), state)      # refused before it drew


def _eager_graph(update: bool):
    """tanh, then NNabla's mean_subtraction (untraceable: the graph runs eagerly)."""
    x = sd.Variable.from_numpy_array(X.reshape(1, 3), need_grad=True)
    mean = sd.Variable.from_numpy_array(np.full(3, 0.25, np.float32))
    t = sd.Variable.from_numpy_array(np.array([3.0], np.float32))
    h = F.tanh(x)
    m = F.mean_subtraction(h, mean, t, update_running_mean=update)
    y = F.sum(m * 3.0 + x)
    return x, h, mean, t, y


def test_an_eager_graph_of_a_deterministic_untraceable_op_honours_a_stop():
    """Running mean_subtraction without its update again is safe (the case
    nnabla:need_grad__set_after_forward_eager_graph holds NNabla's gradients)."""
    x, h, mean, t, y = _eager_graph(update=False)
    y.forward()
    assert isinstance(y._plan, EagerPlan)
    h.need_grad = False
    x.g = 0
    y.backward()
    np.testing.assert_allclose(x.g, np.ones((1, 3)))
    np.testing.assert_allclose(mean.d, np.full(3, 0.25))


def test_an_eager_graph_updating_its_running_mean_keeps_it():
    # the forward run again (eagerly) subtracts the mean its forward left and updates nothing
    # (NNabla 1.39: case nnabla_simplify_31.late_need_grad__mean_subtraction)
    x, h, mean, t, y = _eager_graph(update=True)
    y.forward()
    after = mean.d.copy(), t.d.copy()
    h.need_grad = False
    x.g = 0
    y.backward()
    np.testing.assert_allclose(x.g, np.ones((1, 3)))      # the x branch alone (h stopped)
    np.testing.assert_array_equal(mean.d, after[0])
    np.testing.assert_array_equal(t.d, after[1])


def test_an_eager_graph_keeping_state_refuses():
    x = sd.Variable.from_numpy_array(np.ones((1, 2), np.float32), need_grad=True)
    w = sd.Variable.from_numpy_array(np.array([[0.3125], [-0.875]], np.float32), need_grad=True)
    i = sd.Variable.from_numpy_array(np.zeros((2, 1), np.float32))
    h = F.tanh(x)
    y = F.sum(F.inq_affine(h, w, i, inq_iterations=(5,)))
    y.forward()
    h.need_grad = False
    with pytest.raises(sd.StadynError, match="keep state from run to run.*inq_affine"):
        y.backward()


def _dynamic():
    x = sd.Variable.from_numpy_array(X, need_grad=True)
    with sd.auto_forward():
        h = F.tanh(x)
        y = F.sum(h * 3.0 + x)
    return x, h, y


def test_dynamic_a_stop_set_after_the_consumers_ran_cuts_the_gradient():
    """NNabla's side: the case nnabla:need_grad__dynamic_after_the_op_ran."""
    x, h, y = _dynamic()
    h.need_grad = False
    x.g, h.g = 7, 7
    y.backward()
    np.testing.assert_allclose(x.g, 8 * np.ones(3))
    np.testing.assert_allclose(h.g, 7 * np.ones(3))       # untouched
    h.need_grad = True
    x.g = 0
    y.backward()
    np.testing.assert_allclose(x.g, 1 + 3 * (1 - np.tanh(X) ** 2), rtol=1e-6)


def test_dynamic_a_stop_lifted_before_the_consumers_ran_passes_the_gradient():
    x = sd.Variable.from_numpy_array(X, need_grad=True)
    with sd.auto_forward():
        h = F.tanh(x)
        h.need_grad = False
        h.need_grad = True
        y = F.sum(h * 3.0 + x)
    y.backward()
    np.testing.assert_allclose(x.g, 1 + 3 * (1 - np.tanh(X) ** 2), rtol=1e-6)


def test_dynamic_no_op_took_part_no_gradient_and_no_second_forward(recwarn):
    x = sd.Variable.from_numpy_array(X)
    with sd.auto_forward():
        h = F.tanh(x)
        y = F.sum(F.exp(h))
    h.need_grad = True
    h.g = 7
    y.backward()
    np.testing.assert_allclose(h.g, 7 * np.ones(3))
    assert y._plan is None and not [w for w in recwarn if "re-runs" in str(w.message)]


def test_dynamic_a_leaf_switched_on_after_its_op_took_part_gets_its_gradient():
    """NNabla gives ``w`` a gradient through x * w (the case
    nnabla:need_grad__dynamic_leaf_switched_on_late); x's is the same as without it."""
    x = sd.Variable.from_numpy_array(X, need_grad=True)
    w = sd.Variable.from_numpy_array(X * 2)
    with sd.auto_forward():
        y = F.sum(F.tanh(x * w))
    w.need_grad = True
    w.g = 1.0
    y.backward()
    slope = 1 - np.tanh(X * X * 2) ** 2
    np.testing.assert_allclose(w.g, 1 + slope * X, rtol=1e-6)
    np.testing.assert_allclose(x.g, slope * X * 2, rtol=1e-6)


def test_dynamic_a_late_leaf_whose_op_updates_running_statistics_keeps_them():
    """The training batch normalisation run again for gamma (switched on late) updates its
    running mean again in scratch: the mean gets back the value the forward left (NNabla 1.39:
    case nnabla_fidelity_27b.late_need_grad__batch_normalization_static_and_dynamic)."""
    x = sd.Variable.from_numpy_array(np.arange(6.0).reshape(3, 2) ** 1.5, need_grad=True)
    beta, gamma = (sd.Variable.from_numpy_array(np.full((1, 2), v)) for v in (0.0, 1.0))
    mean, var = (sd.Variable.from_numpy_array(np.full((1, 2), v)) for v in (0.0, 1.0))
    with sd.auto_forward():
        y = F.sum(F.batch_normalization(x, beta, gamma, mean, var, batch_stat=True) * x)
    after_forward = mean.d.copy(), var.d.copy()
    gamma.need_grad = True
    y.backward()
    np.testing.assert_array_equal(mean.d, after_forward[0])
    np.testing.assert_array_equal(var.d, after_forward[1])
    xs = np.arange(6.0).reshape(3, 2) ** 1.5
    np.testing.assert_allclose(gamma.g, (_x_hat(xs) * xs).sum(0, keepdims=True), rtol=1e-5)


def _freed(*vs):
    return [v._data is None for v in vs]


@pytest.mark.parametrize("kind", ["static", "trial", "dynamic"])
def test_backward_clear_buffer_frees_the_values_it_passes_through(kind):
    """As NNabla 1.39's ``backward(clear_buffer=True)`` after a plain ``forward()``: the
    intermediates on the gradient's path lose their values; a branch needing no gradient, the
    persistent ones and the forward's roots keep theirs.  ``a`` and ``b`` are looked at through
    weak references: a Variable the program holds keeps its value (``_held_values.py``)."""
    x = sd.Variable.from_numpy_array(np.ones((4, 3), np.float32), need_grad=True)
    c = sd.Variable.from_numpy_array(np.ones((4, 3), np.float32))
    with sd.auto_forward(kind == "dynamic"):
        a, b = F.tanh(x * 2.0), F.sin(c)
        p = F.sigmoid(a)
        p.persistent = True
        z = F.exp(p) * b
        y = F.sum(z)
    a, b = weakref.ref(a), weakref.ref(b)
    if kind == "trial":
        sd.forward_all([y, z])
        y.backward()
        _new_shape(x)
        _new_shape(c)
    if kind != "dynamic":
        sd.forward_all([y, z])
        assert isinstance(y._plan, TrialPlan if kind == "trial" else StaticPlan)
    y.backward(clear_buffer=True)
    assert _freed(a(), b(), p) == [True, False, False]
    if kind != "dynamic":
        assert _freed(y, z) == [False, False]

"""CNTK learners copy the gradients that L2 and clipping change into buffers kept between steps:
each step must still read that step's gradient and leave ``.grad`` as it was."""

import numpy as np
import torch

import stadyn as sd
import stadyn.learners as L
from stadyn.schedules import learning_parameter_schedule_per_sample


def test_momentum_sgd_with_l2_reads_each_steps_gradient_and_leaves_grad_alone():
    w0 = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
    w = sd.Variable.from_numpy_array(w0.copy(), need_grad=True)
    lr, m, l2, M = 0.01, 0.5, 0.002, 4
    learner = L.momentum_sgd([w], learning_parameter_schedule_per_sample(lr), m, unit_gain=True,
                             l2_regularization_weight=l2)
    ref_w, ref_v = w0.astype(np.float64), np.zeros((2, 2))
    rng = np.random.RandomState(0)
    for _ in range(3):
        g = rng.randn(2, 2).astype(np.float32)
        w.grad = torch.from_numpy(g.copy())
        assert learner.update(M)
        # CNTK: L2 adds l2 * M * w to the summed gradient; unit-gain momentum; per-sample rate
        ref_v = m * ref_v + (1 - m) * lr * (g + l2 * M * ref_w)
        ref_w = ref_w - ref_v
        np.testing.assert_allclose(w.d, ref_w, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(w.g, g)           # .grad is not modified


def test_clipping_reads_each_steps_gradient_through_the_kept_copy():
    w = sd.Variable.from_numpy_array(np.zeros(3, np.float32), need_grad=True)
    learner = L.sgd([w], learning_parameter_schedule_per_sample(1.0),
                    gradient_clipping_threshold_per_sample=0.5,
                    gradient_clipping_with_truncation=True)
    for g, clipped in (([2.0, -0.25, -3.0], [0.5, -0.25, -0.5]),
                       ([0.1, 0.2, -0.1], [0.1, 0.2, -0.1])):
        before = w.d.copy()
        w.grad = torch.tensor(g)
        learner.update(1)
        np.testing.assert_allclose(before - w.d, clipped, rtol=1e-6)
        assert w.g.tolist() == torch.tensor(g).tolist()


def test_update_writes_the_values_in_place_and_keeps_them_leaves():
    """``update`` hands the parameters' own value tensors to the maths (no detached alias per
    step): they stay leaves that require grad, their memory is the one written, and a gradient
    that carries a graph of its own (``create_graph``) is read as its values, as CNTK's
    ``w - lr*g`` (hand computed: 1 - 0.5*3 = -0.5 per element)."""
    for l2 in (0.0, 0.25):
        w = sd.Variable.from_numpy_array(np.ones(3, np.float32), need_grad=True)
        value = w.data
        before = value.data_ptr()
        x = torch.tensor([3.0, 3.0, 3.0], requires_grad=True)
        w.grad = x * 1.0                                  # requires grad, has a grad_fn
        learner = L.sgd([w], learning_parameter_schedule_per_sample(0.5),
                        l2_regularization_weight=l2)
        assert learner.update(1)
        assert w.data is value and value.data_ptr() == before
        assert value.requires_grad and value.grad_fn is None and value.is_leaf
        expected = np.float32(1) - np.float32(0.5) * (np.float32(3) + np.float32(l2))
        np.testing.assert_array_equal(w.d, np.full(3, expected, np.float32))
        assert x.grad is None


def test_a_gradient_written_in_place_and_then_replaced_is_read_each_step():
    """The kept copy is checked against a gradient tensor once (``Learner._scratch_for``): the
    same ``.grad`` written in place between steps (as a static plan's backward writes it) is
    copied again each step, and a ``.grad`` replaced by a transposed (non-contiguous) tensor is
    seen.  Expected: SGD with L2 by hand, w - lr * (g + l2 * M * w), in float64 over
    float32 values (one rounding apart at most)."""
    w0 = np.array([[0.5, -1.0, 2.0], [0.25, 3.0, -0.5]], np.float32)
    w = sd.Variable.from_numpy_array(w0.copy(), need_grad=True)
    lr, l2, M = 0.1, 0.01, 2
    learner = L.sgd([w], learning_parameter_schedule_per_sample(lr), l2_regularization_weight=l2)
    ref = w0.astype(np.float64)
    rng = np.random.RandomState(1)
    grad = torch.zeros(2, 3)
    w.grad = grad
    for step in range(4):
        g = rng.randn(2, 3).astype(np.float32)
        if step < 2:
            w.grad.copy_(torch.from_numpy(g))      # the same tensor, written in place
        else:                                       # a new, transposed (non-contiguous) one
            w.grad = torch.from_numpy(g.T.copy()).t()
        assert learner.update(M)
        ref = ref - lr * (g + l2 * M * ref)
        np.testing.assert_allclose(w.d, ref, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(w.g, g)       # .grad is not modified

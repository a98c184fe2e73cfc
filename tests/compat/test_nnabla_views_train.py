"""Views of a parameter train in both modes, whatever the order of forward and zero_grad.

NNabla 1.39's ``get_parameter_or_create`` hands out views sharing the registered parameter's
value and gradient arrays, and ``get_unlinked_variable`` of a leaf does the same: a backward
through a view reaches the parameter, in the dynamic mode too, and ``solver.zero_grad()``
zeroes the shared array wherever it comes (NNabla's own loop, and nnabla-examples' VQ-VAE, run
the forward before it).  Run on NNabla 1.39, the loops below print the gradients 2w each step
(``sum(w ** 2)``), then 0.8 times them after an SGD step of 0.1; Stadyn's views gave zeros in
the dynamic mode, and in the static mode when the forward came before ``zero_grad``, so the
parameter never moved.
"""

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.solvers as S


@pytest.fixture(autouse=True)
def _fresh():
    with sd.parameter_registry(sd.ParameterRegistry()):
        yield
    nn.set_auto_forward(False)


@pytest.mark.parametrize("auto_forward", [True, False], ids=["dynamic", "static"])
@pytest.mark.parametrize("zero_first", [True, False],
                         ids=["zero_grad-forward", "forward-zero_grad"])
def test_a_parameter_view_trains(auto_forward, zero_first):
    nn.set_auto_forward(auto_forward)
    with nn.parameter_scope("vq"):
        w = nn.parameter.get_parameter_or_create("W", (3,), np.array([1.0, -2.0, 0.5]))
    registered = nn.get_parameters()["vq/W"]
    solver = S.Sgd(0.1)
    solver.set_parameters(nn.get_parameters())
    expected = np.array([1.0, -2.0, 0.5])
    for _ in range(3):
        if zero_first:
            solver.zero_grad()
        loss = F.sum(w ** 2)
        if not auto_forward:
            loss.forward()
        if not zero_first:
            solver.zero_grad()
        loss.backward(clear_buffer=True)
        np.testing.assert_allclose(registered.g, 2 * expected, rtol=1e-6)
        np.testing.assert_allclose(w.g, 2 * expected, rtol=1e-6)
        solver.update()
        expected = expected - 0.1 * 2 * expected
        np.testing.assert_allclose(registered.d, expected, rtol=1e-6)
        np.testing.assert_allclose(w.d, expected, rtol=1e-6)


@pytest.mark.parametrize("auto_forward", [True, False], ids=["dynamic", "static"])
def test_an_unlinked_leaf_shares_its_gradient(auto_forward):
    nn.set_auto_forward(auto_forward)
    x = nn.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0], np.float32), need_grad=True)
    x.g = 0
    u = x.get_unlinked_variable()
    loss = F.sum(u ** 2)
    if not auto_forward:
        loss.forward()
    loss.backward()
    np.testing.assert_allclose(u.g, [2.0, 4.0, 6.0])
    np.testing.assert_allclose(x.g, [2.0, 4.0, 6.0])


@pytest.mark.parametrize("auto_forward", [True, False], ids=["dynamic", "static"])
def test_a_parameter_no_backward_reached_is_not_updated(auto_forward):
    """NNabla's solvers skip a parameter whose gradient nothing wrote since ``zero_grad``: a
    view frozen after the first step (``need_grad = False``, fine-tuning's freeze) keeps the
    first step's value under Adam, whose state would otherwise keep moving it.  NNabla 1.39
    prints [0.9, 0.9] after each of the three steps (lr 0.1 from ones: Adam's first step is
    lr * sign(g))."""
    nn.set_auto_forward(auto_forward)
    w = nn.parameter.get_parameter_or_create("W", (2,), np.ones(2, np.float32))
    solver = S.Adam(0.1)
    solver.set_parameters(nn.get_parameters())
    for step in range(3):
        w.need_grad = step == 0
        if auto_forward:
            solver.zero_grad()
            y = F.sum(w * w)
        else:
            y = F.sum(w * w)
            y.forward()
            solver.zero_grad()
        y.backward()
        solver.update()
        np.testing.assert_allclose(nn.get_parameters()["W"].d, [0.9, 0.9], rtol=1e-6)

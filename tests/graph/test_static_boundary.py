"""Dynamic ops over a static graph's outputs carry the gradient into the static graph
(graph/_static_boundary.py); NNabla 1.39's numbers are the harness's ``static_mix__*`` cases
(tests/compat/compat_cases/nnabla_static_mix_37.py), the values here derived by hand."""

import numpy as np

import stadyn as sd
import stadyn.functions as F


def _x():
    return sd.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)


def test_a_dynamic_loss_on_a_static_output_reaches_the_static_leaves():
    # d(3 * sum(2x))/dx = 6; y.g = dl/dy = 3
    x = _x()
    y = F.sum(x * 2.0)
    y.forward()
    with sd.auto_forward():
        loss = y * 3.0
    loss.backward()
    np.testing.assert_allclose(x.g, [6.0, 6.0])
    np.testing.assert_allclose(y.g, 3.0)
    loss.backward()                 # the leaf adds, the intermediate is written anew
    np.testing.assert_allclose(x.g, [12.0, 12.0])
    np.testing.assert_allclose(y.g, 3.0)


def test_two_static_roots_and_an_inner_output_sum_their_paths():
    # l = 2 sum(x^2) + 5 sum(3x): dl/dx = 4x + 15
    x = _x()
    a, b = F.sum(x * x), F.sum(x * 3.0)
    sd.forward_all([a, b])
    with sd.auto_forward():
        loss = a * 2.0 + b * 5.0
    loss.backward()
    np.testing.assert_allclose(x.g, 4.0 * np.array([1.0, 2.0]) + 15.0)
    # l = sum(h * y), h = x^2, y = sum(h): dl/dh = y + sum(h) = 10, dl/dx = 20 x
    x = _x()
    h = x * x
    y = F.sum(h)
    y.forward()
    with sd.auto_forward():
        loss = F.sum(h * F.reshape(y, (1,)))
    loss.backward()
    np.testing.assert_allclose(h.g, [10.0, 10.0])
    np.testing.assert_allclose(x.g, [20.0, 40.0])


def test_a_stopped_output_and_no_grad_carry_nothing():
    x = _x()
    y = F.sum(x * 2.0)
    y.forward()
    y.need_grad = False
    with sd.auto_forward():
        loss = y * 3.0 + F.sum(x)
    loss.backward()
    np.testing.assert_allclose(x.g, [1.0, 1.0])

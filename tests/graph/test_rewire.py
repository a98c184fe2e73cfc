"""Graph editing on Stadyn's own Variables: ``rewire_on`` puts the rewired Variable among its
new op's outputs and gives it that output's gradient marks; ``backward()`` from an output set
``need_grad=False`` still reaches its inputs (NNabla 1.39's rules, which Stadyn's graph keeps:
compat cases ``variable_rewire_on_output``, ``backward_from_an_output_set_no_grad``)."""

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F


def test_rewired_variable_is_its_new_ops_output_once_the_replaced_one_is_gone():
    x = sd.Variable.from_numpy_array(np.array([1.0, 4.0]))
    h = sd.Variable((2,))
    y = F.add_scalar(h, 1.0)
    z = F.pow_scalar(x, 2.0)
    h.rewire_on(z)
    del z
    assert h.parent.outputs[0] is h
    y.forward()
    h.forward()                           # (a forward from the rewired Variable itself)
    np.testing.assert_array_equal(y.d, [2.0, 17.0])
    np.testing.assert_array_equal(h.d, [1.0, 16.0])


@pytest.mark.parametrize("stopped", [False, True])
def test_rewired_variable_takes_the_replaced_outputs_gradient_mark(stopped):
    x = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
    a = sd.Variable.from_numpy_array(np.array([3.0, 4.0]), need_grad=True)
    h = F.tanh(x)
    h.need_grad = False                   # set on h: replaced by z's mark
    s = F.sum(h * 2.0)
    z = F.mul_scalar(a, 3.0)
    if stopped:
        z.need_grad = False
    h.rewire_on(z)
    del z                                 # (h alone holds the mark now)
    s.forward()
    s.backward()
    np.testing.assert_array_equal(a.g, [0.0, 0.0] if stopped else [6.0, 6.0])


@pytest.mark.parametrize("dynamic", [False, True])
def test_backward_from_an_output_set_no_grad_reaches_its_inputs(dynamic):
    x = sd.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0]), need_grad=True)
    with sd.auto_forward(dynamic):
        y = F.sum(x * x)
    y.need_grad = False
    if not dynamic:
        y.forward()
    y.backward()
    np.testing.assert_allclose(x.g, 2 * np.array([1.0, 2.0, 3.0]))
    x.g = 0.0
    z = F.mul_scalar(y, 3.0)              # ... but what reads it gets no gradient through it
    z.forward()
    z.backward()
    np.testing.assert_array_equal(x.g, [0.0, 0.0, 0.0])

"""An NNabla file's ``MulN``, ``Swish`` and ``Prod`` load with NNabla 1.39's backward, which
reads the output (``F.mul_n``/``F.swish``/``F.prod`` ``rule="nnabla"``): MulN's input
gradient is ``dy * y / x_i``, so ``0 / 0`` (NaN) where an input is 0, as NNabla computes it
(``MulN::backward_impl``), where the product of the other inputs would be finite."""

import os

import numpy as np

import stadyn as sd

OPS_NNP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nnabla_files", "ops.nnp")


def test_a_loaded_mul_n_takes_nnablas_gradient():
    net = sd.load_nnp(OPS_NNP, network="mul_n")
    xs = [net.inputs[k] for k in ("x0", "x1", "x2")]
    values = [np.array([[0.0, 2.0, 3.0], [1.0, -1.0, 0.5]], np.float32),
              np.full((2, 3), 2.0, np.float32), np.full((2, 3), 0.5, np.float32)]
    for x, v in zip(xs, values):
        x.d = v
        x.need_grad = True
    y = net.outputs["y0"]
    y.forward()
    for x in xs:
        x.grad = None
    y.backward(np.ones((2, 3), np.float32))
    g = xs[0].g
    assert np.isnan(g[0, 0])                          # dy * y / x = 1 * 0 / 0
    np.testing.assert_allclose(g.ravel()[1:], np.ones(5))      # dy * y / x = 2 * 0.5
    np.testing.assert_allclose(xs[1].g, values[0] * values[2])   # y / x1, finite

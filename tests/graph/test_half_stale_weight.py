"""A weight updated in place between the forward and the backward of a ``cpu:half`` program:
NNabla 1.39's backward casts the current (updated) weight, so the affine's ``x.g`` is
``(1 - tanh(x W0)^2) W1^T``.  A static plan casts the parameter again in its backward
(``graph/_partition.py``); a dynamic graph, whose torch history saved the forward's half copy
of ``W0``, has the updated weight cast into that copy before the backward
(``graph/_written_leaves.py``; before nnhalf43 it refused the backward)."""

import numpy as np
import pytest

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.solvers as S
from stadyn.compat.nnabla.ext_utils import get_extension_context


def _step(dynamic):
    rs = np.random.RandomState(41)
    xv, wv = rs.randn(4, 8).astype(np.float32), rs.randn(8, 8).astype(np.float32)
    nn.set_auto_forward(dynamic)
    try:
        with nn.context_scope(get_extension_context("cpu", type_config="half")):
            x = nn.Variable.from_numpy_array(xv, need_grad=True)
            w = nn.Variable.from_numpy_array(wv, need_grad=True)
            y = F.sum(F.tanh(F.affine(x, w)))
            solver = S.Sgd(lr=1.0)
            solver.set_parameters({"w": w})
            if not dynamic:
                y.forward()
            w.g = np.ones((8, 8), np.float32)
            solver.update()                     # w -= 1
            x.grad.zero()
            y.backward()
            return xv, wv, np.asarray(x.g, np.float32)
    finally:
        nn.set_auto_forward(False)


@pytest.mark.parametrize("dynamic", [False, True])
def test_half_backward_reads_the_updated_weight(dynamic):
    xv, wv, got = _step(dynamic=dynamic)
    x, w0 = xv.astype(np.float64), wv.astype(np.float64)
    expected = (1 - np.tanh(x @ w0) ** 2) @ (w0 - 1).T     # NNabla 1.39: the new weight
    np.testing.assert_allclose(got, expected, rtol=2e-2, atol=2e-2)
    stale = (1 - np.tanh(x @ w0) ** 2) @ w0.T              # the forward's copy: off by ~3
    assert np.abs(got - stale).max() > 1


def test_static_and_dynamic_agree_bit_for_bit():
    assert np.array_equal(_step(dynamic=False)[2], _step(dynamic=True)[2])

"""A backward from an inner Variable after a forward of a loss over it (``y.backward()`` after
``loss.forward()``): NNabla 1.39 prints nothing there (its backward runs no forward), so
compat.nnabla's Variable does not warn; Stadyn's own Variable warns that it runs the forward
again (``stadyn.graph.Variable.warns_forward_again``).  The gradients against NNabla's are
the harness case ``backward_from_intermediate__random_ops_keep_forward_draws``
(``compat_cases/nnabla_fidelity_23.py``)."""

import warnings

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as NF
import stadyn.functions as F


def test_nnabla_inner_backward_says_nothing():
    x = nn.Variable.from_numpy_array(np.arange(1.0, 5.0, dtype=np.float32), need_grad=True)
    y = NF.tanh(x) * 2.0
    loss = NF.sum(y * y)
    loss.forward()
    x.grad.zero()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y.backward()
    expected = 2.0 * (1.0 - np.tanh(np.arange(1.0, 5.0)) ** 2)     # d(2 tanh x)/dx
    np.testing.assert_allclose(x.g, expected, rtol=1e-5, atol=1e-6)


def test_stadyn_inner_backward_still_warns():
    x = sd.Variable.from_numpy_array(np.arange(1.0, 5.0, dtype=np.float32), need_grad=True)
    y = F.tanh(x) * 2.0
    loss = F.sum(y * y)
    loss.forward()
    with pytest.warns(RuntimeWarning, match="re-runs its forward first"):
        y.backward()
    expected = 2.0 * (1.0 - np.tanh(np.arange(1.0, 5.0)) ** 2)
    np.testing.assert_allclose(x.g, expected, rtol=1e-5, atol=1e-6)

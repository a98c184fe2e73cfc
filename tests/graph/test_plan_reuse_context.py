"""``graph/_plan_reuse``: a graph rebuilt alike reuses the first one's plan only when its
nodes are bound to the same context (``FunctionNode.context``)."""

import numpy as np

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
from stadyn.compat.nnabla.ext_utils import get_extension_context

_XV = np.array([[0.3, -1.2, 2.5]], np.float32)
# NNabla 1.39, F.tanh(x) * 3.0 made in get_extension_context('cpu', type_config='half')
_NNABLA_HALF = np.array([[0.8740234375, -2.5, 2.9609375]], np.float16)


def _run(half):
    x = nn.Variable.from_numpy_array(_XV, need_grad=True)
    if half:
        with nn.context_scope(get_extension_context("cpu", type_config="half")):
            y = F.tanh(x) * 3.0
    else:
        y = F.tanh(x) * 3.0
    y.forward()
    return y.d


def test_a_half_graph_built_like_a_float_one_runs_in_half():
    # the float graph's plan was replayed for the half one: float32 values (SILENT)
    f = _run(False)
    h = _run(True)
    assert f.dtype == np.float32
    np.testing.assert_allclose(f, np.tanh(_XV.astype(np.float64)) * 3.0, rtol=1e-6)
    assert h.dtype == np.float16
    np.testing.assert_array_equal(h, _NNABLA_HALF)


def test_a_float_graph_built_like_a_half_one_runs_in_float():
    h = _run(True)
    f = _run(False)
    np.testing.assert_array_equal(h, _NNABLA_HALF)
    assert f.dtype == np.float32
    np.testing.assert_allclose(f, np.tanh(_XV.astype(np.float64)) * 3.0, rtol=1e-6)

"""A static graph that silently runs eagerly fails the test that built it.

``pyproject.toml`` turns the fallback's warning into an error (see ``tests/conftest.py``), so a
static == dynamic test cannot end up comparing eager with eager.  These tests plant a trace
failure through the public op interface — an op whose implementation reads a tensor's value,
which works on real tensors and fails on the fake ones the static trace uses — and check both
sides of the setting: without the marker the fallback is an error, with it the test may run
the fallback and check its results.
"""

import warnings

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
from stadyn.graph import EagerPlan, OpSpec, apply


def _value_dependent(x):
    """``x`` scaled by its own largest element: eager-only (reads a value with ``.item()``)."""
    return x * float(x.max().item())


# The shape rule lets the graph be built; only the trace (and so the static plan) fails.
_SPEC = OpSpec.from_function(_value_dependent, 1, shape=lambda x: torch.empty_like(x))


def _graph():
    w = sd.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0]), need_grad=True)
    return w, F.sum(apply(_SPEC, (w * w,), {}))


def test_the_setting_is_in_force():
    with pytest.raises(RuntimeWarning, match="a static graph runs eagerly"):
        warnings.warn("a static graph runs eagerly: planted", RuntimeWarning)


def test_a_static_graph_that_falls_back_to_eager_is_an_error():
    _, loss = _graph()
    with pytest.raises(RuntimeWarning, match="a static graph runs eagerly: tracing failed"):
        loss.forward()


@pytest.mark.eager_fallback
def test_the_marker_lets_a_test_run_the_fallback_and_check_it():
    w, loss = _graph()
    with warnings.catch_warnings(record=True) as caught:     # the marker's filter still applies
        loss.forward()
    assert caught == []                                         # ignored, not raised
    assert isinstance(loss._plan, EagerPlan)
    assert float(loss.d) == 9.0 * (1 + 4 + 9)                   # max(w*w) = 9 scales sum(w*w)
    loss.backward()
    # m = max_j w_j^2 = 9 is read as a number (a constant for autograd): d/dw_i = 2 m w_i
    np.testing.assert_allclose(w.g, [18.0, 36.0, 54.0])
    assert torch.is_tensor(w.grad)

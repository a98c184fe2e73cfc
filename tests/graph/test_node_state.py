"""Ops declared with per-node state (``@op(..., state=factory)``, ``OpSpec.state``): each node
gets its own object, which every run of that node receives -- static forwards continue it,
each dynamic call starts a new one (NNabla's function objects; the INQ layers use it)."""

import numpy as np
import pytest
import torch

import stadyn as sd
from stadyn.graph import OpSpec, apply


class _Runs:
    def __init__(self):
        self.count = 0


def _counting(x, scale=1.0, *, state=None):
    state.count += 1
    return x * (scale * state.count)


def _spec(**kw):
    return OpSpec.from_function(_counting, 1, name="counting", state=_Runs, traceable=False,
                                **kw)


def test_state_is_not_an_attribute():
    spec = _spec()
    assert spec.attrs == {"scale": 1.0}


def test_a_static_node_keeps_its_state_across_forwards():
    spec = _spec()
    x = sd.Variable.from_numpy_array(np.ones(2, np.float32))
    y, z = apply(spec, (x,), {}), apply(spec, (x,), {"scale": 10.0})
    got = []
    for _ in range(3):
        y.forward()
        got.append(y.d[0])
    z.forward()
    assert got == [1.0, 2.0, 3.0] and z.d[0] == 10.0
    assert y.parent.state.count == 3 and z.parent.state.count == 1


def test_each_dynamic_call_is_a_new_node_with_new_state():
    spec = _spec()
    x = sd.Variable.from_numpy_array(np.ones(2, np.float32))
    with sd.auto_forward():
        a, b = apply(spec, (x,), {}), apply(spec, (x,), {})
    assert a.d[0] == 1.0 and b.d[0] == 1.0


def test_the_shape_rule_is_not_given_the_state():
    seen = []

    def rule(x, scale=1.0):
        seen.append(scale)
        return torch.empty(x.shape, device="meta")
    spec = OpSpec.from_function(_counting, 1, name="counting", state=_Runs, shape=rule,
                                traceable=False)
    y = apply(spec, (sd.Variable.from_numpy_array(np.ones(3, np.float32)),), {})
    y.forward()
    assert seen and y.shape == (3,) and y.d[0] == 1.0


def test_declaring_state_needs_a_state_parameter_and_no_tracing():
    with pytest.raises(TypeError, match="keyword-only parameter 'state'"):
        OpSpec.from_function(lambda x: x, 1, name="stateless", state=_Runs, traceable=False)
    with pytest.raises(TypeError, match="traceable=False"):
        OpSpec.from_function(_counting, 1, name="counting", state=_Runs)

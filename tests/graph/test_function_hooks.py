"""Function hooks: a hooked forward/backward (op by op) gives the lowered program's values and
gradients, every op is seen once before and once after in each direction, and nothing is called
once the hooks are unset."""

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.parametric_functions as PF
from stadyn.graph import (set_function_post_hook, set_function_pre_hook,
                          unset_function_post_hook, unset_function_pre_hook)


def _run(x, y):
    y.forward()
    x.g = 0
    for p in sd.get_parameters().values():
        p.g = 0
    y.backward()
    return y.d.copy(), x.g.copy(), {k: p.g.copy() for k, p in sd.get_parameters().items()}


def test_hooked_runs_equal_the_lowered_ones_and_see_every_op():
    rng = np.random.RandomState(0)
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.Variable.from_numpy_array(rng.randn(4, 3), need_grad=True)
        h = F.tanh(PF.affine(x, 5))
        y = F.sum(h * F.sigmoid(h) + F.max(x, axis=1, keepdims=True))   # h and x used twice
        plain = _run(x, y)
        events = []
        set_function_pre_hook("t", lambda node: events.append(("pre", id(node))))
        set_function_post_hook("t", lambda node: events.append(("post", id(node))))
        try:
            hooked = _run(x, y)
        finally:
            unset_function_pre_hook("t")
            unset_function_post_hook("t")
        nodes = [id(n) for n in sd.graph.topological_nodes([y])]
        forward = events[:2 * len(nodes)]
        assert forward == [(kind, n) for n in nodes for kind in ("pre", "post")]
        backward = events[2 * len(nodes):]
        for n in nodes:                    # each op's backward: its pre before its post, once
            assert backward.count(("pre", n)) <= 1 and backward.count(("post", n)) <= 1
            if ("post", n) in backward:
                assert backward.index(("pre", n)) < backward.index(("post", n))
        assert {n for _, n in backward} == set(nodes)
        np.testing.assert_allclose(hooked[0], plain[0], rtol=1e-6)
        np.testing.assert_allclose(hooked[1], plain[1], rtol=1e-6)
        for k in plain[2]:
            np.testing.assert_allclose(hooked[2][k], plain[2][k], rtol=1e-6)
        events.clear()
        _run(x, y)
        assert events == []


def test_a_function_hook_must_be_callable():
    with pytest.raises(TypeError, match="set_function_post_hook"):
        set_function_post_hook("x", None)


def test_a_handed_out_output_follows_the_hooked_runs():
    """An output tensor handed to the user (NNabla's ``y.d``) is written in place by later runs
    (graph/_shared_values.py); runs with function hooks (op by op) do it too."""
    from stadyn.graph import data_of, hand_out
    x = sd.Variable.from_numpy_array(np.ones((2, 3), np.float32))
    y = F.mul_scalar(x, 2.0)
    seen = []
    set_function_pre_hook("t", lambda node: seen.append(node))
    try:
        y.forward()
        kept = data_of(y)
        hand_out(kept)
        x.d = np.full((2, 3), 3.0, np.float32)
        y.forward()
    finally:
        unset_function_pre_hook("t")
    assert len(seen) == 2                                    # both runs were hooked
    assert np.array_equal(kept.numpy(), np.full((2, 3), 6.0, np.float32))


def test_backward_hooks_give_the_lowered_gradients_and_run_each_op_once():
    """``backward(function_pre_hook=, function_post_hook=)`` after a plain forward: every op
    with a gradient to pass is hooked once, before then after, and the gradients (leaves,
    an unlinked view's source, an op with two outputs, an input given twice) are the lowered
    plan's; the forward's own hooks are not called by the backward."""
    rng = np.random.RandomState(1)
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.Variable.from_numpy_array(rng.randn(4, 3), need_grad=True)
        h = F.tanh(PF.affine(x, 4))
        u = h.unlinked(need_grad=True)
        a, b = F.split(F.sigmoid(u) * u, axis=1)[:2]
        y = F.sum(a * a + b) + F.sum(h)

        def run(**hooks):
            y.forward()
            for v in [x, h] + list(sd.get_parameters().values()):
                v.g = 0
            y.backward(**hooks)
            return [v.g.copy() for v in [x, h] + list(sd.get_parameters().values())]

        plain = run()
        events = []
        y.forward(function_pre_hook=lambda n: events.append(("fwd", n.name)))
        assert events and all(kind == "fwd" for kind, _ in events)
        events.clear()
        hooked = run(function_pre_hook=lambda n: events.append(("pre", id(n))),
                     function_post_hook=lambda n: events.append(("post", id(n))))
        for got, want in zip(hooked, plain):
            np.testing.assert_allclose(got, want, rtol=1e-6)
        nodes = {id(n) for n in sd.graph.topological_nodes([y])}
        assert {n for _, n in events} <= nodes and len(events) == 2 * len({n for _, n in events})
        for n in {n for _, n in events}:
            assert events.index(("pre", n)) < events.index(("post", n))

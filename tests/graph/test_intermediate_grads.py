"""The gradients a backward leaves on intermediate Variables (NNabla's rule; the compat case
``nnabla:intermediate_gradients`` holds the NNabla 1.39 side): every path -- a static plan, a
plan run eagerly, a hooked run, the dynamic mode -- gives d loss / d h, computed by hand here."""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
from stadyn.graph import OpSpec, apply, set_function_pre_hook, unset_function_pre_hook

X = np.array([[0.5, -1.0, 2.0], [0.1, 0.3, -0.7]], np.float32)


def _expected():
    """h = tanh(x), loss = sum(h * h + 3 h): d loss / d h = 2 h + 3, d loss / d x = that
    times 1 - h^2; the product p = h * h: 1."""
    h = np.tanh(X)
    dh = 2 * h + 3
    return dh, dh * (1 - h * h)


def _graph(dynamic=False, untraceable=False):
    x = sd.Variable.from_numpy_array(X, need_grad=True)
    with sd.auto_forward(dynamic):
        h = F.tanh(x)
        if untraceable:     # an op that cannot be traced: the static graph runs eagerly
            spec = OpSpec.from_function(lambda t: t * 1.0, 1, name="same", traceable=False)
            h = apply(spec, (h,), {})
        p = h * h
        loss = F.sum(p + h * 3.0)
    return x, h, p, loss


@pytest.mark.parametrize("how", ["static", "eager", "hooked", "dynamic"])
def test_every_path_keeps_the_intermediate_gradients(how):
    dh, dx = _expected()
    x, h, p, loss = _graph(dynamic=how == "dynamic", untraceable=how == "eager")
    if how == "hooked":
        set_function_pre_hook("t", lambda node: None)
    try:
        if how != "dynamic":
            loss.forward()
        h.g = 5.0                          # overwritten by the backward, not added to
        loss.backward()
        np.testing.assert_allclose(h.g, dh, rtol=1e-6)
        np.testing.assert_allclose(p.g, np.ones_like(X))
        np.testing.assert_allclose(x.g, dx, rtol=1e-6)
        loss.backward(grad=2.0)            # intermediates: the new gradient; the leaf: summed
        np.testing.assert_allclose(h.g, 2 * dh, rtol=1e-6)
        np.testing.assert_allclose(x.g, 3 * dx, rtol=1e-6)
        assert float(loss.g) == 0.0        # the root's own gradient is not written
    finally:
        unset_function_pre_hook("t")


@pytest.mark.parametrize("dynamic", [False, True])
def test_clear_buffer_keeps_only_the_persistent_ones(dynamic):
    dh, _ = _expected()
    x, h, p, loss = _graph(dynamic=dynamic)
    h.persistent = True
    if not dynamic:
        loss.forward(clear_no_need_grad=True)
    loss.backward(clear_buffer=True)
    np.testing.assert_allclose(h.g, dh, rtol=1e-6)
    np.testing.assert_array_equal(p.g, np.zeros_like(X))


def test_the_training_flags_plan_returns_no_intermediate_gradient():
    """The program of a clearing forward is the one it was before intermediates' gradients
    were kept: no extra outputs, so no cost on the training path."""
    x, h, p, loss = _graph()
    loss.forward(clear_no_need_grad=True)
    assert loss._plan.grad_inters == []
    loss.forward()
    kept = {id(v) for v in loss._plan.grad_inters}    # tanh, the product, h * 3, the sum
    assert len(kept) == 4 and {id(h), id(p)} <= kept and id(loss) not in kept


def test_an_intermediate_gradient_that_is_a_leafs_is_its_own_copy():
    """y = sum((w + c) * 2): d y / d (w + c) is the very tensor that becomes w's .grad; a
    solver's in-place change of w.grad must not reach the intermediate's."""
    w = sd.Variable.from_numpy_array(np.ones(3, np.float32), need_grad=True)
    c = sd.Variable.from_numpy_array(np.ones(3, np.float32))
    s = w + c
    y = F.sum(s * 2.0)
    y.forward()
    y.backward()
    with torch.no_grad():
        w.grad.mul_(10.0)
    np.testing.assert_array_equal(s.g, np.full(3, 2.0))
    np.testing.assert_array_equal(w.g, np.full(3, 20.0))


def test_a_backward_after_a_clearing_forward_gives_every_gradient():
    """NNabla keeps every intermediate's gradient after forward(clear_no_need_grad=True) and a
    backward that clears nothing; the clearing backward still runs the persistent-only
    program."""
    dh, dx = _expected()
    x, h, p, loss = _graph()
    loss.forward(clear_no_need_grad=True)
    program = loss._plan.bw
    loss.backward()
    np.testing.assert_allclose(h.g, dh, rtol=1e-6)
    np.testing.assert_allclose(p.g, np.ones_like(X))
    np.testing.assert_allclose(x.g, dx, rtol=1e-6)
    loss.forward(clear_no_need_grad=True)
    loss.backward(clear_buffer=True)
    assert loss._plan.bw is program and loss._plan.grad_inters == []
    np.testing.assert_allclose(x.g, 2 * dx, rtol=1e-6)


def test_an_intermediates_gradient_follows_a_new_shape():
    """NNabla 1.39 resizes an intermediate's gradient with the Variable (h.g of a batch of 6
    after one of 3 is 6 long; compat case ``nnabla:an_intermediates_gradient_follows_a_new_shape``);
    it kept the old batch's array."""
    x = sd.Variable.from_numpy_array(np.ones(3, np.float32), need_grad=True)
    h = F.tanh(x)
    y = F.sum(h * 3.0)
    y.forward()
    y.backward()
    x.data = torch.ones(6, requires_grad=True)
    y.forward()
    assert h.g.shape == (6,)
    h.g = 7
    np.testing.assert_array_equal(h.g, np.full(6, 7.0))
    y.backward()
    np.testing.assert_allclose(h.g, np.full(6, 3.0))


@pytest.mark.parametrize("untraceable", [False, True], ids=["static", "eager"])
def test_a_root_another_root_reads_gets_its_gradient(untraceable):
    """After ``forward_all([h, loss])`` (h read by loss's ops), ``loss.backward()`` writes
    h.g = d loss / d h, as for any intermediate (NNabla 1.39 writes it: case
    ``nnabla:fix38__roots_read_by_another_root_get_gradients``); ``h.backward()`` leaves
    loss's own gradient, and h's: a backward does not write its root's."""
    x, h, _, loss = _graph(untraceable=untraceable)
    dh, dx = _expected()
    sd.forward_all([h, loss])
    h.g = 5.0
    loss.backward()
    np.testing.assert_allclose(h.g, dh, rtol=1e-6)
    np.testing.assert_allclose(x.g, dx, rtol=1e-6)
    loss.g = 4.0
    h.g = 5.0
    h.backward()
    assert float(loss.g) == 4.0 and np.all(h.g == 5.0)


def test_a_sinks_inputs_read_by_one_another():
    """``sink(l1, m, l2)`` with m = 2 l1, l2 = sum(3 m): its backward fills each input's
    gradient with 1 and the functions below add (NNabla's Sink, sink.cpp:41): m.g = 1 + 3,
    l1.g = 1 + 2 m.g; with ``clear_buffer=True`` too; l1 = sum(2 x): x.g = 2 l1.g."""
    for clear in (False, True):
        x = sd.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
        l1 = F.sum(x * 2.0)
        m = l1 * 2.0
        l2 = F.sum(m * 3.0)
        s = F.sink(l1, m, l2)
        s.forward()
        s.backward(clear_buffer=clear)
        assert (float(l1.g), float(m.g), float(l2.g)) == (9.0, 4.0, 1.0)
        assert x.g.tolist() == [18.0, 18.0] and float(m.d) == 12.0


@pytest.mark.parametrize("clear", [False, True], ids=["keep", "clear_buffer"])
def test_a_sinks_inputs_read_by_one_another_in_an_eager_plan(clear):
    """As above with an op that cannot be traced below the sink (its plan runs eagerly): NNabla
    1.39 gives l1.g = 9, m.g = 4 with ``clear_buffer=True`` too (case
    ``nnabla:fix38__roots_read_by_another_root_get_gradients``, the static plan's numbers);
    the eager plan dropped the roots' gradients under ``clear_buffer`` (l1.g, m.g 1, 1)."""
    spec = OpSpec.from_function(lambda t: t * 1.0, 1, name="same", traceable=False)
    x = sd.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
    l1 = apply(spec, (F.sum(x * 2.0),), {})
    m = l1 * 2.0
    l2 = F.sum(m * 3.0)
    s = F.sink(l1, m, l2)
    s.forward()
    assert "runs eagerly" in s._plan.code
    s.backward(clear_buffer=clear)
    assert (float(l1.g), float(m.g), float(l2.g)) == (9.0, 4.0, 1.0)
    assert x.g.tolist() == [18.0, 18.0] and float(l1.d) == 6.0 and float(m.d) == 12.0

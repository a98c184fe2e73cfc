"""A channels-last plan gives its values NCHW when they are read, not by copying every one back
as its forward program ends (``graph/_deferred_layout.py``).

At ee9d720a the forward program of a channels-last plan ended with one ``clone`` to NCHW per
value it gave a Variable: on ``stadyn bench cifar-bs`` ten copies (~80 MB) a step, 180 of the
1352 ms that four static steps took (docs/performance.md).  The copies also made those values
other tensors than the ones the backward reads, so a write into an intermediate's ``.d``
between forward and backward was lost to the backward of an NNabla Variable (whose backward
reads the arrays the Variables hold: NNabla 1.39 doubles ``c2``'s weight gradient below when
``h.d`` is doubled, measured with /work/peers/nnabla; a Stadyn NCHW plan did too, a
channels-last one did not).
"""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as NF
import stadyn.compat.nnabla.parametric_functions as NPF
import stadyn.functions as F
import stadyn.parametric_functions as PF

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BATCH, SHAPE = 4, (3, 12, 12)


def _net(x, t):
    """A CIFAR-like chain under the channels-last rule; returns the loss and the 4-d values
    (convolutions, ReLUs, pooling), which the caller holds (so a clearing forward gives them
    values: ``graph/_held_values.py``)."""
    h = F.mul_scalar(x, 0.00390625)
    c1 = PF.convolution(h, 8, (3, 3), pad=(1, 1), name="c1")
    r1 = F.relu(c1)
    c2 = PF.convolution(r1, 8, (3, 3), pad=(1, 1), name="c2")
    r2 = F.relu(c2)
    p = F.max_pooling(r2, (3, 3), (2, 2))
    loss = F.mean(F.softmax_cross_entropy(PF.affine(p, 10, name="fc"), t))
    return loss, [c1, r1, c2, r2, p]


def _graph():
    registry = sd.ParameterRegistry()
    sd.seed(0)
    rng = np.random.RandomState(3)
    x, t = sd.Variable((BATCH,) + SHAPE), sd.Variable((BATCH, 1))
    x.d = rng.uniform(0, 255, (BATCH,) + SHAPE).astype(np.float32)
    t.d = rng.randint(0, 10, (BATCH, 1))
    with sd.parameter_registry(registry):
        loss, held = _net(x, t)
    return x, t, loss, held, registry


def test_a_channels_last_plan_copies_no_value_back_to_nchw_as_it_runs():
    _, _, loss, held, _ = _graph()
    with sd.training(False):
        loss.forward(clear_no_need_grad=True)
    plan = loss._plan
    assert "memory_format = torch.channels_last" in plan.code
    output = next(n for n in plan.fw.graph.nodes if n.op == "output")
    given = output.args[0][:plan.n_fill]
    assert [n.name for n in given if n.target is torch.ops.aten.clone.default] == []
    # every value is the tensor the program made, channels-last, until it is read
    assert [v._data.is_contiguous(memory_format=torch.channels_last) for v in held] == \
        [True] * len(held)


def test_the_values_read_nchw_with_the_dynamic_modes_numbers():
    x, t, loss, held, reg = _graph()
    with sd.training(False):
        loss.forward(clear_no_need_grad=True)
        with sd.parameter_registry(reg), sd.auto_forward():
            _, dynamic = _net(x, t)
    for v, w in zip(held, dynamic):
        name = v.parent.spec.name
        assert v.d.flags.c_contiguous and v.data.is_contiguous(), name
        np.testing.assert_allclose(v.d, w.d, rtol=1e-5, atol=1e-5, err_msg=name)


def test_an_eager_op_and_another_plan_read_a_value_nchw():
    _, _, loss, held, _ = _graph()
    with sd.training(False):
        loss.forward(clear_no_need_grad=True)
    expected = held[1]._data.contiguous().numpy().copy()
    with sd.auto_forward():
        eager = F.mul_scalar(held[1], 1.0)
    assert eager.data.is_contiguous()
    np.testing.assert_array_equal(eager.d, expected)
    other = F.mul_scalar(held[3], 1.0)
    other.forward()
    assert other.data.is_contiguous()


def _nnabla_net():
    nn.clear_parameters()
    rng = np.random.RandomState(0)
    x = nn.Variable.from_numpy_array(rng.randn(2, 3, 6, 6).astype(np.float32))
    h = NF.relu(NPF.convolution(x, 4, (3, 3), pad=(1, 1), name="c1"))
    y = NPF.convolution(h, 4, (3, 3), pad=(1, 1), name="c2")
    loss = NF.sum(y * y)
    params = nn.get_parameters()
    for name, p in params.items():
        p.d = np.random.RandomState(len(name)).randn(*p.shape).astype(np.float32) * 0.3
    return h, loss, params


def _gradients(h, loss, params, touch):
    for p in params.values():
        p.grad.zero()
    loss.forward(clear_no_need_grad=True)
    touch(h)
    loss.backward(clear_buffer=True)
    return {k: p.g.copy() for k, p in params.items()}


def test_an_nnabla_backward_reads_the_value_written_into_an_intermediate():
    h, loss, params = _nnabla_net()
    try:
        plain = _gradients(h, loss, params, lambda h: None)
        assert "channels_last" in loss._plan.code
        read = _gradients(h, loss, params, lambda h: h.d.sum())
        doubled = _gradients(h, loss, params, lambda h: setattr(h, "d", h.d * 2))
    finally:
        nn.clear_parameters()
    for k in plain:            # reading .d changes no bit of any gradient
        np.testing.assert_array_equal(read[k], plain[k], err_msg=k)
    # y stays the forward's, so c2's weight gradient (h's correlation with 2y) doubles, as in
    # NNabla 1.39 (ee9d720a's channels-last plan kept the gradient of the undoubled h)
    np.testing.assert_allclose(doubled["c2/conv/W"], 2 * plain["c2/conv/W"], rtol=1e-6)
    np.testing.assert_array_equal(doubled["c2/conv/b"], plain["c2/conv/b"])


def _unlink(v):
    v.clear_all_graph_links()


def _need_grad(v):
    v.need_grad = True


@pytest.mark.parametrize("method", [_unlink, _need_grad], ids=["clear_all_graph_links",
                                                                "need_grad"])
def test_a_value_made_a_leaf_or_given_a_gradient_still_reads_nchw(method):
    # Both methods detach what the Variable holds; at 434e6b6a the detached tensor lost the
    # deferred mark, so .d / .data kept the plan's NHWC strides for good: .data.view(-1)
    # raised and a write through .d.reshape(-1) went to a copy (NNabla 1.39: C-contiguous, the
    # write reaches the Variable: the NNabla row below)
    _, _, loss, held, _ = _graph()
    loss.forward(clear_no_need_grad=True)
    for v in held:
        name = v.parent.spec.name
        assert v._data.is_contiguous(memory_format=torch.channels_last), name  # still deferred
        method(v)
        assert v.d.flags.c_contiguous and v.data.is_contiguous(), name
        assert v.data.view(-1).shape == (v.size,), name
        flat = v.d.reshape(-1)
        flat[:] = 7.0
        np.testing.assert_array_equal(v.d, np.full(v.shape, 7.0, np.float32), err_msg=name)


# NNabla 1.39 (/work/peers/nnabla, /tmp/rev32_D_w/nn4.py real): after a forward of
# conv-relu-conv-max_pooling-sum over a (2, 3, 6, 6) input, ``c2`` (2, 4, 6, 6) float32 reads
# C-contiguous after either method, with these byte strides, and 7.0 written through
# ``c2.d.reshape(-1)`` is c2.d's maximum after.
_NNABLA_STRIDES = (576, 144, 24, 4)


@pytest.mark.parametrize("how", ["need_grad", "clear_all_graph_links"])
def test_nnabla_a_value_unlinked_or_given_a_gradient_reads_as_nnabla(how):
    nn.clear_parameters()
    try:
        x = nn.Variable.from_numpy_array(
            np.random.RandomState(0).randn(2, 3, 6, 6).astype(np.float32))
        h = NF.relu(NPF.convolution(x, 4, (3, 3), pad=(1, 1), name="c1"))
        c2 = NPF.convolution(h, 4, (3, 3), pad=(1, 1), name="c2")
        loss = NF.sum(NF.max_pooling(c2, (2, 2)))
        loss.forward(clear_no_need_grad=True)
        assert "channels_last" in loss._plan.code
        if how == "need_grad":
            c2.need_grad = False
            c2.need_grad = True
        else:
            c2.clear_all_graph_links()
        d = c2.d
        d.reshape(-1)[:] = 7.0
        assert (d.flags.c_contiguous, d.strides) == (True, _NNABLA_STRIDES)
        assert float(c2.d.max()) == 7.0 and float(c2.d.min()) == 7.0
    finally:
        nn.clear_parameters()

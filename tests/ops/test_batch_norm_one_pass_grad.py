"""Batch normalisation's one-pass gradient (NNabla 1.39's, ``rule="nnabla"``) is one operator,
``stadyn_kernels::batch_norm_nnabla_one_pass_grad`` (``ops/_batch_norm_kernel.py``): a static
plan's trace records one node for it where the composite made about 40, half of a batch
normalised ResNet's build (docs/performance.md, "A large static graph's build"), and its
values are the composite's, bit for bit.  The gradient is checked against NNabla's formula
(``BatchNormalization::backward_impl_batch``) computed in NumPy float64, the static plan
against the dynamic mode, and the second derivative (MAML's) by finite differences.
"""

import numpy as np
import pytest
import torch

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF
from stadyn.graph import trace_fake
from stadyn.ops._batch_norm_kernel import batch_norm_nnabla

EPS = 1e-5


def _nnabla_grads(x, gamma, dy, eps=EPS):
    """NNabla 1.39's batch-statistics gradient term by term (float64), over axes 0, 2, 3."""
    axes = (0, 2, 3)
    n = x.size // x.shape[1]
    m = x.sum(axes, keepdims=True) / n
    v = (x * x).sum(axes, keepdims=True) / n - m * m
    g = gamma.reshape(1, -1, 1, 1)
    dxh = dy * g
    dv = (dxh * (x - m)).sum(axes, keepdims=True) * -0.5 * (v + eps) ** -1.5
    dm = -dxh.sum(axes, keepdims=True) / np.sqrt(v + eps) \
        + dv * -2.0 * (x - m).sum(axes, keepdims=True) / n
    dx = dxh / np.sqrt(v + eps) + dv * 2.0 * (x - m) / n + dm / n
    dgamma = (dy * (x - m) / np.sqrt(v + eps)).sum(axes)
    return dx, dgamma, dy.sum(axes)


def _graph(xb):
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(xb, need_grad=True)
    y = PF.batch_normalization(F.relu(PF.convolution(x, 3, (3, 3), pad=(1, 1), name="c")),
                               name="bn")
    return x, F.sum(F.tanh(y))


def test_the_plans_trace_holds_one_operator_per_batch_normalization_gradient():
    # on 0c52e7e4 the joint trace of one batch normalisation held ~50 nodes (the composite)
    def joint(x, w, gy):
        y = batch_norm_nnabla(x, w, None, None, None, True, EPS, one_pass=True)[0]
        return torch.autograd.grad(y, [x, w], gy)

    with torch.enable_grad():
        gm = trace_fake(joint, torch.randn(4, 3, 5, 5, requires_grad=True),
                        torch.randn(3, requires_grad=True), torch.randn(4, 3, 5, 5))
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"
               and "getitem" not in str(n.target)]
    assert targets.count("stadyn_kernels.batch_norm_nnabla_one_pass_grad.default") == 1
    assert len(targets) <= 6, targets


def test_a_static_plans_batch_normalization_backward_is_one_node_and_equals_dynamic():
    rng = np.random.RandomState(0)
    xb = rng.randn(4, 2, 6, 6).astype(np.float32)
    x, loss = _graph(xb)
    loss.forward()
    x.grad.zero()
    loss.backward()
    static = {k: v.g.copy() for k, v in nn.get_parameters().items()}
    static["x"] = x.g.copy()
    targets = [str(n.target) for n in loss._plan.bw.graph.nodes if n.op == "call_function"]
    assert targets.count("stadyn_kernels.batch_norm_nnabla_one_pass_grad.default") == 1
    assert "aten.pow.Tensor_Scalar" not in targets    # the composite's (v + eps) ** -1.5
    with nn.auto_forward():
        xd = nn.Variable.from_numpy_array(xb, need_grad=True)
        yd = PF.batch_normalization(F.relu(PF.convolution(xd, 3, (3, 3), pad=(1, 1),
                                                          name="c")), name="bn")
        for p in nn.get_parameters().values():
            p.grad.zero()
        xd.grad.zero()
        F.sum(F.tanh(yd)).backward()
    dynamic = {k: v.g for k, v in nn.get_parameters().items()}
    dynamic["x"] = xd.g
    for k, g in static.items():
        assert np.array_equal(g, dynamic[k]), k


@pytest.mark.parametrize("weighted", [True, False])
def test_the_operator_gives_nnablas_gradient(weighted):
    rng = np.random.RandomState(1)
    xb, dyb = rng.randn(5, 3, 4, 2), rng.randn(5, 3, 4, 2)
    gb = rng.rand(3) + 0.5 if weighted else np.ones(3)
    x = torch.tensor(xb, requires_grad=True)
    w = torch.tensor(gb, requires_grad=True) if weighted else None
    b = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    y = batch_norm_nnabla(x, w, b, None, None, True, EPS, one_pass=True)[0]
    got = torch.autograd.grad(y, [x, b] + ([w] if weighted else []), torch.tensor(dyb))
    dx, dgamma, dbeta = _nnabla_grads(xb, gb, dyb)
    np.testing.assert_allclose(got[0].numpy(), dx, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got[1].numpy(), dbeta, rtol=1e-12)
    if weighted:
        np.testing.assert_allclose(got[2].numpy(), dgamma, rtol=1e-9)


def test_the_second_derivative_is_the_composites():
    x = torch.randn(3, 2, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, dtype=torch.float64, requires_grad=True)
    b = torch.randn(2, dtype=torch.float64, requires_grad=True)

    def f(x, w, b):
        return batch_norm_nnabla(x, w, b, None, None, True, EPS, one_pass=True)[0]

    assert torch.autograd.gradgradcheck(f, (x, w, b))


def test_half_precision_and_channels_last_keep_their_types_and_layout():
    x = torch.randn(4, 3, 5, 5).to(memory_format=torch.channels_last).requires_grad_()
    y = batch_norm_nnabla(x, torch.ones(3, requires_grad=True), None, None, None, True, EPS,
                          one_pass=True)[0]
    gy = torch.randn(4, 3, 5, 5)
    gx, = torch.autograd.grad(y, [x], gy)
    assert gx.stride() == gy.stride()               # the composite's (dy * gamma leads)
    h = torch.randn(4, 3, 5, dtype=torch.bfloat16, requires_grad=True)
    w = torch.ones(3, dtype=torch.bfloat16, requires_grad=True)
    y = batch_norm_nnabla(h, w, None, None, None, True, EPS, one_pass=True)[0]
    gh, gw = torch.autograd.grad(y, [h, w], torch.randn_like(h))
    assert gh.dtype == gw.dtype == torch.bfloat16


def test_the_second_derivative_through_a_loss_that_reads_the_output_again():
    # The upstream gradient depends on x here (tanh(h)^2 of h = BN(conv(x, W))): the operator's
    # second derivative must be partial in gy and x, not count the path through gy twice.
    torch.manual_seed(0)
    x = torch.randn(4, 2, 3, 3, dtype=torch.float64)
    W = torch.randn(3, 2, 3, 3, dtype=torch.float64, requires_grad=True)
    gamma = torch.rand(3, dtype=torch.float64, requires_grad=True)

    def grad_norm(W, gamma):
        h = batch_norm_nnabla(torch.nn.functional.conv2d(x, W, padding=1), gamma, None, None,
                              None, True, EPS, one_pass=True)[0]
        grads = torch.autograd.grad((torch.tanh(h) ** 2).sum(), [W, gamma], create_graph=True)
        return sum((g * g).sum() for g in grads)

    assert torch.autograd.gradcheck(grad_norm, (W, gamma))


def test_the_operator_is_differentiable_itself():
    # a create_graph backward runs the composite; the operator, called under autograd, is too
    op = torch.ops.stadyn_kernels.batch_norm_nnabla_one_pass_grad.default
    torch.manual_seed(1)
    gy, x = (torch.randn(3, 2, 4, dtype=torch.float64, requires_grad=True) for _ in range(2))
    w = torch.rand(2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda gy, x, w: op(gy, x, w, EPS, [True] * 3), (gy, x, w))

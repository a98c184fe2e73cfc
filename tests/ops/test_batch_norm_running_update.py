"""Batch normalisation's forward in a static plan's trace: the operator and the running
statistics' update as one more (``stadyn_kernels::batch_norm_nnabla_update_running``,
``ops/_batch_norm_kernel.py``), where the update made ten ATen nodes and the batch statistics'
unused gradients two ``zeros``.  NNabla's update in float32 (NumPy) to within an ulp or two
(the channel sums are added in another order than NumPy's pairwise one, so the last bit may
differ), and static against dynamic over several steps, both rules, bit for bit.
"""

import numpy as np
import pytest
import torch

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF
import stadyn.compat.nnabla.solvers as S
from stadyn.graph import trace_fake
from stadyn.ops import _nn

EPS = 1e-5


@pytest.mark.parametrize("one_pass", [False, True])
def test_a_training_batch_normalization_traces_two_operators(one_pass):
    def joint(x, w, b, rm, rv, gy):
        y = _nn._bn_core(x, b, w, rm, rv, 0.9, EPS, True, one_pass=one_pass)
        return torch.autograd.grad(y, [x, w, b], gy)

    s = (1, 3, 1, 1)
    with torch.enable_grad():
        gm = trace_fake(joint, torch.randn(4, 3, 5, 5, requires_grad=True),
                        torch.randn(s, requires_grad=True), torch.randn(s, requires_grad=True),
                        torch.zeros(s), torch.ones(s), torch.randn(4, 3, 5, 5))
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"
               and "getitem" not in str(n.target)]
    # on 843c47fc: the update's mul_, mul, view, add_, mul_, mul, mul, div, view, add_ and two
    # aten.zeros for the statistics' gradients (17 and 21 nodes with the rest)
    assert targets.count("stadyn_kernels.batch_norm_nnabla_update_running.default") == 1
    assert not any(t.startswith("aten.zeros") or t.endswith("_.Tensor") for t in targets)
    assert len(targets) <= (6 if one_pass else 10), targets


def test_the_update_is_nnabla_s_in_float32():
    rng = np.random.RandomState(0)
    x = rng.randn(6, 3, 2, 2).astype(np.float32) * 3 + 1
    rm = rng.randn(1, 3, 1, 1).astype(np.float32)
    rv = rng.rand(1, 3, 1, 1).astype(np.float32) + 0.5
    mean, var = torch.tensor(rm), torch.tensor(rv)
    xt = torch.tensor(x)
    _nn._bn_core(xt, None, None, mean, var, 0.9, EPS, True, one_pass=True)
    # NNabla 1.39's kernel, its float32 factors (batch_normalization.cpp forward_impl_batch)
    n = x.size // 3
    m = (x.sum((0, 2, 3), keepdims=True, dtype=np.float32) / np.float32(n))
    v = (x * x).sum((0, 2, 3), keepdims=True, dtype=np.float32) / np.float32(n) - m * m
    d = np.float32(0.9)
    want_m = rm * d + m * (np.float32(1) - d)
    want_v = rv * d + v * (np.float32(1) - d) * np.float32(n) / np.float32(n - 1)
    np.testing.assert_allclose(mean.numpy(), want_m, rtol=2e-7, atol=0)
    np.testing.assert_allclose(var.numpy(), want_v, rtol=1e-6, atol=0)


def _net(x):
    h = PF.batch_normalization(PF.convolution(x, 3, (3, 3), pad=(1, 1), name="c"), name="bn1")
    h = PF.batch_normalization(F.relu(h), axes=[1], decay_rate=0.8, name="bn2")
    return F.mean(F.tanh(h) * h)


def _train(static, steps=3):
    nn.clear_parameters()
    nn.seed(0)
    torch.manual_seed(0)
    rng = np.random.RandomState(1)
    xs = [rng.randn(4, 2, 5, 5).astype(np.float32) for _ in range(steps)]
    if static:
        x = nn.Variable((4, 2, 5, 5))
        loss = _net(x)
    solver = None
    losses = []
    for xb in xs:
        if static:
            x.d = xb
            loss.forward()
        else:
            with nn.auto_forward():
                loss = _net(nn.Variable.from_numpy_array(xb))
        if solver is None:
            solver = S.Momentum(0.1, 0.9)
            solver.set_parameters(nn.get_parameters())
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
        losses.append(float(loss.d).hex())
    return losses, {k: v.d.copy() for k, v in nn.get_parameters(grad_only=False).items()}


def test_static_equals_dynamic_bit_for_bit_over_steps():
    static_losses, static_params = _train(True)
    dynamic_losses, dynamic_params = _train(False)
    assert static_losses == dynamic_losses
    assert static_params.keys() == dynamic_params.keys()
    assert any("mean" in k for k in static_params)
    for k in static_params:
        assert np.array_equal(static_params[k], dynamic_params[k]), k

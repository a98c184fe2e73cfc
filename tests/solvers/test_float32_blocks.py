"""NNabla's Adam family on CPU in cache-sized NumPy blocks (``solvers/_float32_blocks.py``) against
an independent NumPy float32 loop of NNabla 1.39's C++ (``src/nbla/solver/generic/adam.cpp:68-73``,
``adamw.cpp``, ``amsgrad.cpp``: one rounding per operation), over tensors longer than a block,
a gradient laid out otherwise than its parameter, per-tensor step sizes and a 0-d step; and
Lars' torch path against its blocks (``solvers/_float32_kernels.py``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from stadyn.solvers._float32_blocks import BLOCK, adam_blocks
from stadyn.solvers._functional_nnabla import adam_nnabla


def _nnabla_adam(w, g, m, v, vmax, step, b1, b2, eps, decay):
    """NNabla's float32 arithmetic element by element order (NumPy float32 scalars throughout)."""
    f = np.float32
    b1, b2, eps, step, decay = f(b1), f(b2), f(eps), f(step), f(decay)
    old = w * decay
    m[:] = m * b1 + g * (f(1) - b1)
    v[:] = v * b2 + (g * (f(1) - b2)) * g
    second = v
    if vmax is not None:
        vmax[:] = np.maximum(vmax, v)
        second = vmax
    w[:] = w - (step * m) / (np.sqrt(second) + eps)
    if decay:
        w[:] = w - old


def _data(seed):
    rs = np.random.RandomState(seed)
    shapes = [(BLOCK + 123,), (7, 5), (3,)]
    return ([rs.randn(*s).astype(np.float32) for s in shapes],
            [(rs.randn(*s) * 10 ** rs.uniform(-6, 2, s)).astype(np.float32) for s in shapes])


@pytest.mark.parametrize("amsgrad", [False, True])
@pytest.mark.parametrize("decay", [0.0, 3.0517578e-05])
def test_blocks_equal_nnabla_float32_arithmetic(amsgrad, decay):
    ws, gs = _data(0)
    want = [w.copy() for w in ws]
    ms = [np.zeros_like(w) for w in ws]
    vs = [np.zeros_like(w) for w in ws]
    vmax = [np.zeros_like(w) for w in ws]
    tw = [torch.from_numpy(w.copy()) for w in ws]
    tm = [torch.zeros_like(t) for t in tw]
    tv = [torch.zeros_like(t) for t in tw]
    tvm = [torch.zeros_like(t) for t in tw] if amsgrad else None
    steps = [0.0009999, 0.0012345, 0.5]
    for t in range(5):
        for i in range(3):
            _nnabla_adam(want[i], gs[i], ms[i], vs[i], vmax[i] if amsgrad else None,
                         steps[i] * (t + 1), 0.95, 0.999, 1e-8, decay)
        # the (7, 5) gradient transposed in memory: read in the parameter's element order
        grads = [torch.from_numpy(gs[0]), torch.from_numpy(gs[1].T.copy()).T,
                 torch.from_numpy(gs[2])]
        assert adam_blocks(tw, grads, tm, tv, step_size=[s * (t + 1) for s in steps],
                           beta1=0.95, beta2=0.999, eps=1e-8, v_max=tvm, decay=decay)
    for i in range(3):
        np.testing.assert_array_equal(tw[i].numpy(), want[i])
        np.testing.assert_array_equal(tm[i].numpy(), ms[i])
        np.testing.assert_array_equal(tv[i].numpy(), vs[i])


def test_blocks_equal_the_per_tensor_path_with_a_0d_step():
    ws, gs = _data(1)
    a = [torch.from_numpy(w.copy()) for w in ws]
    b = [torch.from_numpy(w.copy()) for w in ws]
    sa = [[torch.zeros_like(t) for t in a] for _ in range(2)]
    sb = [[torch.zeros_like(t) for t in b] for _ in range(2)]
    grads = [torch.from_numpy(g) for g in gs]
    for _ in range(3):
        adam_nnabla(a, grads, *sa, step_size=torch.tensor(1e-3), beta1=0.9, beta2=0.999,
                    eps=1e-8)                                   # foreach: the blocks
        adam_nnabla(b, grads, *sb, step_size=torch.tensor(1e-3), beta1=0.9, beta2=0.999,
                    eps=1e-8, foreach=False)                    # one torch op at a time
    for x, y in zip(a + sa[0] + sa[1], b + sb[0] + sb[1]):
        assert torch.equal(x, y)


def test_blocks_leave_other_tensors_to_torch_untouched():
    w = torch.ones(4, 4).t()                                    # not contiguous
    g, m, v = torch.ones(4, 4), torch.zeros(4, 4), torch.zeros(4, 4)
    assert not adam_blocks([w], [g], [m], [v], step_size=0.1, beta1=0.9, beta2=0.999, eps=1e-8)
    assert not adam_blocks([torch.ones(3, dtype=torch.float64)], [torch.ones(3)],
                           [torch.zeros(3)], [torch.zeros(3)], step_size=0.1, beta1=0.9,
                           beta2=0.999, eps=1e-8)
    assert torch.equal(w, torch.ones(4, 4)) and not m.any() and not v.any()


def test_blocks_give_inf_and_nan_unwarned_and_bump_versions():
    w = torch.ones(3)
    version = w._version
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert adam_blocks([w], [torch.tensor([float("inf"), float("nan"), 1e30])],
                           [torch.zeros(3)], [torch.zeros(3)], step_size=0.1, beta1=0.9,
                           beta2=0.999, eps=1e-8)
    assert w._version > version
    assert np.isnan(w[0].item()) and np.isnan(w[1].item()) and np.isfinite(w[2].item())


@pytest.mark.parametrize("foreach", [True, False])
def test_lars_torch_path_takes_nnabla_eps_rule(foreach):
    """Lars' torch path (CUDA, non-contiguous tensors) against its CPU blocks, which equal NNabla
    1.39 bit for bit (compat case ``fidelity40__lars_float32_steps``): ``eps`` joins ``||g|| +
    wd ||w||`` only where that is below ``eps``, and the local rate is ``lr`` where ``||w|| <
    eps`` (``lars.cpp:53-60``).  With ``eps=1e3`` the torch path added ``eps`` to every
    denominator (steps 1000 times too small); with a tiny ``w`` it scaled by ``||w||``."""
    from stadyn.solvers._float32_kernels import lars_blocks
    from stadyn.solvers._functional_nnabla import lars

    rs = np.random.RandomState(3)
    for eps, scale in ((1e3, 1.0), (1e-6, 1.0), (1e-2, 1e-5)):
        w = (rs.randn(30) * scale).astype(np.float32)
        g = rs.randn(30).astype(np.float32)
        got = [torch.from_numpy(w.copy())], [torch.from_numpy(g.copy())], [torch.zeros(30)]
        ref = [torch.from_numpy(w.copy())], [torch.from_numpy(g.copy())], [torch.zeros(30)]
        kw = dict(lr=0.1, momentum=0.9, coefficient=1e-2, eps=eps, weight_decay=1e-3)
        lars(*got, foreach=foreach, **kw)
        assert lars_blocks(*ref, **kw)
        np.testing.assert_allclose(got[2][0].numpy(), ref[2][0].numpy(), rtol=1e-5, atol=0)
        np.testing.assert_allclose(got[0][0].numpy(), ref[0][0].numpy(), rtol=1e-6, atol=1e-12)

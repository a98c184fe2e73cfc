"""The kernel choices behind ops (stadyn.ops._kernels): the oneDNN affine product and the NumPy
tanh give the exact values (a float64 NumPy reference), the same gradients, to any order, and
are chosen only where they are meant to be."""

import doctest

import numpy as np
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import stadyn as sd
import stadyn.functions as F
from stadyn.ops import _kernels as K

# fp32 sums of K = 2048 products: rounding grows like sqrt(K) * 2^-24 ~ 2.7e-6 (MKL gives ~3e-7
# here, oneDNN ~1e-6); a wrong kernel or layout is off by O(1).
TOL = 5e-6
ONEDNN = K._linear_onednn is not None and torch.backends.mkldnn.is_available()
needs_onednn = pytest.mark.skipif(not ONEDNN, reason="this torch build has no oneDNN")


def _targets(fn, *args) -> set[str]:
    gm = make_fx(fn, tracing_mode="fake")(*args)
    return {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}


def _f32(a: np.ndarray) -> np.ndarray:
    """``a`` rounded to float32 but kept in float64: a reference on the values the kernel sees."""
    return a.astype(np.float32).astype(np.float64)


def _rel(a: torch.Tensor, ref: np.ndarray) -> float:
    return float(np.abs(a.detach().double().numpy() - ref).max() / np.abs(ref).max())


@needs_onednn
@pytest.mark.parametrize("bias", [True, False])
def test_large_affine_product_runs_on_onednn_with_exact_values_and_gradients(bias):
    rng = np.random.RandomState(0)
    x64 = _f32(rng.randn(16, 2048))                # 16 x 2048 x 1024: 2^25 multiply-adds
    w64 = _f32(rng.randn(2048, 1024) * 0.02)
    b64 = _f32(rng.randn(1024))
    g64 = _f32(rng.randn(16, 1024))
    x, w, b = (torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in (x64, w64, b64))
    y = K.linear(x, w, b if bias else None)
    assert "stadyn_kernels.linear_onednn.default" in _targets(
        lambda x, w: K.linear(x, w, None), x.detach(), w.detach())
    ref = x64 @ w64 + (b64 if bias else 0.0)
    assert _rel(y, ref) < TOL
    grads = torch.autograd.grad(y, (x, w, b) if bias else (x, w), torch.tensor(g64).float())
    assert _rel(grads[0], g64 @ w64.T) < TOL
    assert _rel(grads[1], x64.T @ g64) < TOL
    if bias:
        assert _rel(grads[2], g64.sum(0)) < TOL


@needs_onednn
def test_onednn_affine_is_differentiable_twice():
    """The input gradient is itself a product through linear(), so a gradient of a gradient
    (sd.grad, create_graph) matches torch's own matmul."""
    torch.manual_seed(0)
    x = torch.randn(16, 2048, requires_grad=True)
    w = (torch.randn(2048, 1024) * 0.02).requires_grad_()
    outs = []
    for f in (K.linear, lambda a, b: a @ b):
        gx, = torch.autograd.grad(f(x, w).pow(2).sum(), x, create_graph=True)
        gw, = torch.autograd.grad(gx.pow(2).sum(), w)
        outs.append((gx.detach(), gw))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-5, atol=1e-5 * b.abs().max().item())


@needs_onednn
def test_onednn_affine_takes_strided_inputs_and_broadcast_gradients():
    """A transposed input, and the gradient of a sum (a stride-0 view of ones)."""
    rng = np.random.RandomState(3)
    x64, w64 = _f32(rng.randn(2048, 16)), _f32(rng.randn(2048, 1024) * 0.02)
    x = torch.tensor(x64, dtype=torch.float32).t().requires_grad_()
    w = torch.tensor(w64, dtype=torch.float32, requires_grad=True)
    y = K.linear(x, w)
    assert _rel(y, x64.T @ w64) < TOL
    y.sum().backward()
    ones = np.ones((16, 1024))
    assert _rel(x.grad, ones @ w64.T) < TOL
    assert _rel(w.grad, x64 @ ones) < TOL


def test_small_and_bf16_products_keep_atens_kernel():
    small = (torch.zeros(16, 256), torch.zeros(256, 256))   # 2^20 multiply-adds
    assert "stadyn_kernels.linear_onednn.default" not in _targets(lambda x, w: K.linear(x, w), *small)
    assert "aten.addmm.default" in _targets(lambda x, w, b: K.linear(x, w, b), *small,
                                            torch.zeros(256))
    large16 = (torch.zeros(16, 2048, dtype=torch.bfloat16),
               torch.zeros(2048, 1024, dtype=torch.bfloat16))
    assert "stadyn_kernels.linear_onednn.default" not in _targets(lambda x, w: K.linear(x, w), *large16)


def _call_targets(fn, *args) -> list[str]:
    gm = make_fx(fn, tracing_mode="fake")(*args)
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


@pytest.mark.parametrize("bias", [True, False])
def test_small_affine_traces_one_product_equal_to_torch_linear_bit_for_bit(bias):
    """An affine of operands already of the product's shapes (an LSTM step's ``h W``) traces
    to the product alone: no reshape, no transpose (``F.linear(x, w.t())`` recorded two
    transposes and four reshapes at every step of an unrolled recurrence); its values and
    gradients are torch's ``linear``'s to the bit."""
    affine = F.affine.spec.impl                 # the op's implementation, as a plan traces it
    rng = np.random.RandomState(0)
    xd, wd, bd = rng.randn(3, 5), rng.randn(5, 4), rng.randn(4)
    args = [torch.tensor(xd, dtype=torch.float32), torch.tensor(wd, dtype=torch.float32)]
    if bias:
        args.append(torch.tensor(bd, dtype=torch.float32))
    assert _call_targets(lambda *a: affine(*a), *args) == [
        "aten.addmm.default" if bias else "aten.mm.default"]
    mine = [a.clone().requires_grad_(True) for a in args]
    ref = [a.clone().requires_grad_(True) for a in args]
    y = affine(*mine)
    want = torch.nn.functional.linear(ref[0], ref[1].t(), ref[2] if bias else None)
    assert torch.equal(y, want)
    (y * y).sum().backward()
    (want * want).sum().backward()
    for a, b in zip(mine, ref):
        assert torch.equal(a.grad, b.grad)


@needs_onednn
def test_large_affine_static_equals_dynamic_bit_for_bit():
    rng = np.random.RandomState(1)
    xd, wd, bd = rng.randn(16, 4, 16, 32), rng.randn(2048, 1024) * 0.02, rng.randn(1024)
    results = []
    for dynamic in (False, True):
        x, w, b = sd.Variable(xd.shape, need_grad=True), sd.Variable(wd.shape, need_grad=True), \
            sd.Variable(bd.shape, need_grad=True)
        x.d, w.d, b.d = xd, wd, bd
        with sd.auto_forward(dynamic):
            y = F.sum(F.tanh(F.affine(x, w, b)) ** 2)
        if not dynamic:
            y.forward()
        y.backward()
        results.append((y.d.copy(), x.g.copy(), w.g.copy(), b.g.copy()))
    for s, d in zip(*results):
        np.testing.assert_array_equal(s, d)


def test_tanh_of_a_large_tensor_is_exact_to_two_ulp_with_its_gradient():
    rng = np.random.RandomState(2)
    x64 = np.concatenate([rng.randn(40000) * 3, rng.randn(10000) * 1e-4, [0.0, -20.0, 20.0]])
    x = torch.tensor(x64, dtype=torch.float32, requires_grad=True)
    assert "stadyn_kernels.tanh_numpy.default" in _targets(K.tanh, x.detach())
    y = K.tanh(x)
    exact = np.tanh(x.detach().double().numpy())
    np.testing.assert_allclose(y.detach().double().numpy(), exact, rtol=2.5e-7, atol=0)
    g = torch.tensor(rng.randn(x64.size), dtype=torch.float32)
    gx, = torch.autograd.grad(y, x, g, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(),
                               g.numpy() * (1 - y.detach().double().numpy() ** 2),
                               rtol=1e-6, atol=1e-7)
    # second order: d/dx sum(g * (1 - tanh^2)) = -2 g tanh (1 - tanh^2)
    ggx, = torch.autograd.grad(gx.sum(), x)
    yd = y.detach().double().numpy()
    np.testing.assert_allclose(ggx.numpy(), -2 * g.numpy() * yd * (1 - yd ** 2),
                               rtol=1e-5, atol=1e-6)


def test_small_strided_and_half_tanh_keep_atens_kernel():
    for t in (torch.zeros(100), torch.zeros(256, 256).t(),
              torch.zeros(1 << 16, dtype=torch.bfloat16)):
        targets = _targets(K.tanh, t)
        assert "stadyn_kernels.tanh_numpy.default" not in targets and "aten.tanh.default" in targets


@pytest.mark.parametrize("shape, kernel", [((16, 512, 8, 8), (2, 2)), ((2, 3, 6, 4), (3, 2)),
                                           ((2, 3, 8, 8), (4, 4)), ((2, 5, 4, 4, 4), (2, 2, 2)),
                                           ((7, 12), (3,))])
def test_average_pool_tiles_is_the_tile_mean_with_its_gradient(shape, kernel):
    rng = np.random.RandomState(4)
    x64 = _f32(rng.randn(*shape))
    x = torch.tensor(x64, dtype=torch.float32, requires_grad=True)
    y = K.average_pool_tiles(x, kernel)
    n = len(kernel)
    lead, sizes = shape[:-n], shape[-n:]
    split = lead + sum(((s // k, k) for s, k in zip(sizes, kernel)), ())
    tiles = tuple(len(lead) + 2 * i + 1 for i in range(n))
    np.testing.assert_allclose(y.detach().numpy(), x64.reshape(split).mean(axis=tiles),
                               rtol=1e-6, atol=1e-6)
    g64 = _f32(rng.randn(*y.shape))
    gx, = torch.autograd.grad(y, x, torch.tensor(g64, dtype=torch.float32))
    expected = g64 / np.prod(kernel)
    for axis, k in enumerate(kernel):
        expected = np.repeat(expected, k, axis=len(lead) + axis)
    np.testing.assert_allclose(gx.numpy(), expected, rtol=1e-6, atol=1e-7)


def test_average_pool_tiles_declines_what_it_cannot_do_faster():
    assert K.average_pool_tiles(torch.zeros(2, 3, 7, 8), (2, 2)) is None       # no tiling
    assert K.average_pool_tiles(torch.zeros(2, 3, 32, 32), (2, 2)) is None     # plane too large
    assert K.average_pool_tiles(torch.zeros(2, 3, 8, 8, dtype=torch.int64), (2, 2)) is None
    assert "aten.mm.default" in _targets(lambda x: K.average_pool_tiles(x, (2, 2)),
                                         torch.zeros(16, 512, 8, 8))


def test_docstring_examples_run():
    result = doctest.testmod(K, verbose=False)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("conv, weight_shape", [
    (torch.nn.functional.conv2d, (6, 4, 3, 3)),
    (torch.nn.functional.conv_transpose2d, (4, 6, 3, 3))])
def test_a_half_convolution_gives_fp32_accumulated_values_and_never_runs_atens_slow_kernel(
        dtype, conv, weight_shape):
    """A bf16/fp16 convolution gives the values of fp32 sums of the (exact) products of the half
    inputs, rounded once to the half type -- a float64 NumPy-free reference: the same
    convolution in float64 on the same half values -- and its gradients too; and it never runs
    ATen's unvectorised fallback (``_slow_conv2d``/``slow_conv_transpose2d``), ~15x slower than
    fp32, which ATen picks for half types on CPUs without oneDNN's half kernels (AVX2)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, 9, 9, generator=g).to(dtype).requires_grad_()
    w = torch.randn(*weight_shape, generator=g).to(dtype).requires_grad_()
    b = torch.randn(6, generator=g).to(dtype).requires_grad_()
    with torch.profiler.profile() as prof:
        y = K.convolution(conv, x, w, b, 1, 1)
        y.backward(torch.ones_like(y))
    ran = {e.key for e in prof.key_averages()}
    assert not {n for n in ran if "slow_conv" in n}, ran
    x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, w, b))
    y64 = conv(x64, w64, b64, 1, 1)
    y64.backward(torch.ones_like(y64))
    assert y.dtype == dtype
    # one rounding of a sum whose fp32 error is far below the half type's half-ulp
    eps = torch.finfo(dtype).eps
    for got, want in ((y, y64), (x.grad, x64.grad), (w.grad, w64.grad), (b.grad, b64.grad)):
        err = (got.double() - want).abs() / want.abs().clamp_min(1.0)
        assert float(err.max()) <= eps, float(err.max())

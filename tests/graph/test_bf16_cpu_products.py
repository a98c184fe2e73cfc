"""bf16 products and convolutions on the CPU: where the CPU lacks oneDNN's bf16 kernels (AVX2),
ATen's generic bf16 ``addmm``/``mm``/``bmm`` is 20-70x slower than fp32
(``benchmarks/bf16_cpu_products.py``), so Stadyn sums the same bf16 values in fp32 and rounds
once (``stadyn.ops._half_kernels``; ``STADYN_CPU_HALF_KERNELS`` = ``auto`` | ``fp32`` |
``native``).
Both choices are tested here on any machine by forcing each."""

import os

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import stadyn as sd
import stadyn.functions as F
import stadyn.parametric_functions as PF
from stadyn.ops import _half_kernels as half_kernels
from stadyn.ops import _kernels as K

pytestmark = pytest.mark.usefixtures("fresh_parameters")

BF = torch.bfloat16
ENV = "STADYN_CPU_HALF_KERNELS"
_PRODUCTS = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default,
             torch.ops.aten.convolution.default, torch.ops.aten.convolution_backward.default}


class _HalfProducts(TorchDispatchMode):
    """Records the ATen products (and convolutions) called on half-precision CPU operands (not
    the shape inference of a static graph's ops, on ``meta`` tensors: it computes nothing)."""

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in _PRODUCTS and any(isinstance(a, torch.Tensor) and a.dtype == BF
                                     and a.device.type == "cpu"
                                     for a in list(args) + list((kwargs or {}).values())):
            self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def _net(x, w_mm):
    """A small bf16 network of every product kind: a convolution, the tiled average pooling
    (a matrix product), affine layers and a batched product."""
    h = F.tanh(PF.convolution(x, 4, (3, 3), pad=(1, 1), name="conv"))
    h = F.average_pooling(h, (2, 2))
    h = F.tanh(PF.affine(h, 12, name="fc"))                     # (8, 12)
    h = F.batch_matmul(F.reshape(h, (8, 3, 4)), w_mm)           # (8, 3, 5)
    return F.sum(F.tanh(PF.affine(h, 6, name="out")))


def _inputs():
    rng = np.random.RandomState(0)
    x = sd.Variable.from_numpy_array(rng.randn(8, 2, 8, 8).astype(np.float32))
    w_mm = sd.Variable.from_numpy_array(rng.randn(8, 4, 5).astype(np.float32), need_grad=True)
    return x, w_mm


@pytest.mark.parametrize("kernels", ["fp32", "native"])
@pytest.mark.parametrize("dynamic", [False, True])
def test_forced_fp32_never_runs_atens_bf16_products(dynamic, kernels, monkeypatch):
    """With the choice ``fp32`` (``auto`` on an AVX2 CPU) no ATen product or convolution sees a
    bf16 operand, forward or backward, static or dynamic; with ``native`` they do."""
    monkeypatch.setenv(ENV, kernels)
    x, w_mm = _inputs()
    with sd.context_scope(sd.context("cpu", dtype="bfloat16")), _HalfProducts() as mode:
        with sd.auto_forward(dynamic):
            loss = _net(x, w_mm)
            if not dynamic:
                loss.forward()
        loss.backward()
    if kernels == "fp32":
        assert mode.seen == [], mode.seen
    else:
        assert {"aten.addmm.default", "aten.mm.default", "aten.bmm.default",
                "aten.convolution.default"} <= set(mode.seen), mode.seen


@pytest.mark.parametrize("kernels", ["fp32", "native"])
def test_static_and_dynamic_bf16_agree_bit_for_bit_forward_and_backward(kernels, monkeypatch):
    monkeypatch.setenv(ENV, kernels)
    x, w_mm = _inputs()
    ctx = sd.context("cpu", dtype="bfloat16")
    with sd.context_scope(ctx):
        loss = _net(x, w_mm)
        loss.forward()
        loss.backward()
        static = float(loss.d)
        grads = {k: v.g.copy() for k, v in sd.get_parameters().items()}
        grads["w_mm"] = w_mm.g.copy()
        for v in list(sd.get_parameters().values()) + [w_mm]:
            v.grad = None
        with sd.auto_forward():
            dyn = _net(x, w_mm)
        dyn.backward()
    assert float(dyn.d) == static
    assert len(grads) == 7
    for k, v in list(sd.get_parameters().items()) + [("w_mm", w_mm)]:
        np.testing.assert_array_equal(v.g, grads[k], err_msg=k)


def _bits(t):
    """bf16 values as ordered integers: consecutive bf16 numbers differ by one."""
    i = t.contiguous().view(torch.int16).to(torch.int32)
    return torch.where(i < 0, -(i & 0x7FFF), i)


@pytest.mark.parametrize("m, k, n", [(16, 1024, 256), (512, 16, 1024), (16, 256, 2048)])
def test_fp32_summed_products_are_one_rounding_of_the_exact_value_and_near_atens(m, k, n,
                                                                                monkeypatch):
    """``x @ W + b`` and both gradient products in bf16: the fp32 path is the float64 value
    rounded once (an fp32 sum's error is far below bf16's half-ulp: one ulp at most, where
    rounding meets the sum's own error) and differs from ATen's bf16 kernel on at most 0.1% of
    the elements.  The three products make each blocking path run (rows of a row-major W
    summed block by block, columns of the transposed W, rows of the transposed x;
    HALF_BLOCK_BYTES reduced to force several blocks)."""
    monkeypatch.setattr(half_kernels, "HALF_BLOCK_BYTES", 1 << 16)
    g = torch.Generator().manual_seed(m + k + n)
    x, w, b = (torch.randn(*s, generator=g).to(BF).requires_grad_() for s in ((m, k), (k, n), (n,)))
    gy = torch.randn(m, n, generator=g).to(BF)
    results = {}
    for kernels in ("fp32", "native"):
        monkeypatch.setenv(ENV, kernels)
        y = K.linear(x, w, b)
        gx, gw, gb = torch.autograd.grad(y, (x, w, b), gy)
        results[kernels] = (y, gx, gw, gb)
    x64, w64, b64 = (t.detach().double() for t in (x, w, b))
    exact = (torch.addmm(b64, x64, w64), gy.double() @ w64.t(), x64.t() @ gy.double(),
             gy.double().sum(0))
    for name, got, native, want in zip(("y", "grad x", "grad W", "grad b"), results["fp32"],
                                       results["native"], exact):
        assert got.dtype == BF and got.shape == want.shape, name
        off = (_bits(got) - _bits(want.to(BF))).abs()
        assert int(off.max()) <= 1, name
        err = (got.double() - want).abs() / want.abs().clamp_min(1.0)
        assert float(err.max()) <= torch.finfo(BF).eps, name
        differ = float((got != native).double().mean())
        assert differ <= 1e-3, (name, differ)


def test_the_out_form_writes_the_same_values_into_the_buffer():
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(300, 8, generator=g).to(BF), torch.randn(8, 600, generator=g).to(BF)
    out = torch.empty(300, 600, dtype=BF)
    written = torch.ops.stadyn_kernels.half_mm.out(a, b, out=out)
    assert written.data_ptr() == out.data_ptr()
    assert torch.equal(out, torch.ops.stadyn_kernels.half_mm(a, b))
    assert torch.equal(out, torch.mm(a.float(), b.float()).to(BF))


def test_auto_follows_onednns_probe_and_a_wrong_choice_is_named(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    lacks = not torch.ops.mkldnn._is_mkldnn_bf16_supported()
    assert K.half_in_fp32(BF) == (lacks and torch.backends.mkldnn.is_available())
    monkeypatch.setenv(ENV, "fp32")
    assert K.half_in_fp32(BF)
    monkeypatch.setenv(ENV, "native")
    assert not K.half_in_fp32(BF)
    monkeypatch.setenv(ENV, "fast")
    with pytest.raises(ValueError, match="STADYN_CPU_HALF_KERNELS='fast'.*auto, fp32, native"):
        K.half_in_fp32(BF)
    assert os.environ[ENV] == "fast"


def test_fp32_products_keep_their_kernels(monkeypatch):
    monkeypatch.setenv(ENV, "fp32")
    with _HalfProducts() as mode:
        y = K.linear(torch.ones(4, 3), torch.ones(3, 2), torch.zeros(2))
    assert mode.seen == [] and y.dtype == torch.float32
    from torch.fx.experimental.proxy_tensor import make_fx
    gm = make_fx(lambda a, b: K.matrix_product(a, b))(torch.ones(4, 3), torch.ones(3, 2))
    assert [str(n.target) for n in gm.graph.nodes if n.op == "call_function"] == \
        ["aten.mm.default"]

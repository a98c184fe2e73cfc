"""CNTK's ReLU (``rule="cntk"``: ``x * (x > 0) + 0.0`` forward, ``b > 0 ? a : 0`` backward)
keeps its mask in the values' dtype, and takes two passes over memory forward and one backward.

At ee9d720a the mask was bool, and torch converted it to float inside both products, the
forward's and the backward's: a pass over memory each (on ``stadyn bench cifar-bs`` 4 + 4
``aten::_to_copy`` of up to 64x64x32x32 a step, ~1/8 of the step's time in ops; see
docs/performance.md).  At 843c47fc the forward was four passes (``gt``, ``_to_copy``, ``mul``,
``add``) and the backward a product, NaN where CNTK's choice gives 0; now the comparison writes
the float mask, one ``addcmul`` makes the output (the same bits: ``0 + x * m`` with ``m`` 0 or 1)
and ``threshold_backward`` on the mask chooses the gradient as CNTK's
``ElementwiseProductWithLinearRectifierDerivativeFromOutput`` does (Source/Math/TensorOps.h:318).
``tests/ops/test_nan_picks.py`` holds the values, NaN and infinities included, to NumPy.
"""

import os

import numpy as np
import torch

import stadyn as sd
import stadyn.functions as F
from stadyn.graph import trace_fake
from stadyn.ops._registry import CATALOG

A = np.array([[np.nan, np.inf, -np.inf, 1, -0.0, 0, 2, -3]], np.float32)


def test_the_static_backward_reads_a_mask_of_the_values_dtype():
    x = sd.Variable.from_numpy_array(A, need_grad=True)
    y = F.sum(F.relu(x, rule="cntk"))
    y.forward()
    dtypes = {t.dtype for t in y._plan.saved if isinstance(t, torch.Tensor)}  # what bw reads
    assert torch.bool not in dtypes and torch.float32 in dtypes
    y.backward()
    np.testing.assert_array_equal(x.g, (A > 0).astype(np.float32))   # (0 at NaN)


def test_the_dynamic_relu_saves_a_mask_of_the_values_dtype():
    x = sd.Variable.from_numpy_array(A, need_grad=True)
    with sd.auto_forward():
        y = F.relu(x, rule="cntk")
    (mask,) = y.data.grad_fn.saved_tensors
    assert mask.dtype == torch.float32
    assert torch.equal(mask, torch.tensor(A > 0, dtype=torch.float32))


def _product_form(x):
    """843c47fc's forward, the bits to keep: the product with the mask, then + 0.0."""
    return x * (x > 0).to(x.dtype) + 0.0


def test_the_forward_keeps_the_product_form_s_bits():
    rng = np.random.RandomState(0)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3e38,
                        -3e38], np.float32)
    data = torch.tensor(np.concatenate([special, rng.randn(1000).astype(np.float32)]))
    bits = {torch.float64: torch.int64, torch.float32: torch.int32,
            torch.bfloat16: torch.int16, torch.float16: torch.int16}
    for dtype, view in bits.items():
        t = data.to(dtype)
        got = CATALOG["relu"].impl(t, rule="cntk")
        assert got.dtype == dtype
        # float64: CNTK 2.7's choice ``a > 0 ? a : 0`` (TensorOps.h:274), +0 where not taken
        want = torch.where(t > 0, t, 0.0) if dtype == torch.float64 else _product_form(t)
        assert torch.equal(got.view(view), want.view(view)), dtype
    with sd.auto_forward():
        y = F.relu(sd.Variable.from_numpy_array(data.numpy()), rule="cntk")
    assert torch.equal(y.data.view(torch.int32), _product_form(data).view(torch.int32))
    channels_last = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    out = CATALOG["relu"].impl(channels_last, rule="cntk")
    assert out.stride() == _product_form(channels_last).stride()
    assert torch.equal(out, _product_form(channels_last))


# CNTK 2.7, measured (LD_LIBRARY_PATH=/work/peers/cntk27/shimlib
# /work/peers/cntk27/venv36/bin/python): C.relu of X, then reduce_sum(element_times(y, W)):
# the gradient at x is W where x > 0 and 0 elsewhere, NaN and infinite W included (a choice,
# b > 0 ? a : 0, Source/Math/TensorOps.h:318), where a product gives NaN
X = np.array([[np.nan, np.inf, -np.inf, 1, -0.0, 0, 2, -3]], np.float32)
W = np.array([np.nan, np.inf, np.nan, np.nan, np.nan, np.inf, np.nan, np.inf], np.float32)
CNTK_GRAD = np.array([[0.0, np.inf, 0.0, np.nan, 0.0, 0.0, np.nan, 0.0]], np.float32)


def test_a_nan_or_infinite_gradient_stops_where_cntk_s_relu_is_off():
    # on 843c47fc: NaN at every place W is NaN or infinite (g * 0)
    for mode in ("dynamic", "static"):
        x = sd.Variable.from_numpy_array(X, need_grad=True)
        with sd.auto_forward(mode == "dynamic"):
            y = F.sum(F.relu(x, rule="cntk") * sd.Variable.from_numpy_array(W))
        if mode == "static":
            y.forward()
        y.backward()
        np.testing.assert_array_equal(x.g, CNTK_GRAD)
        assert not np.signbit(x.g[~np.isnan(x.g)]).any()


# CNTK 2.7, measured as above with W = -1.5, -2, ..., -8: +0 where x is not above 0 (a product
# gave -0.0 there: a negative gradient times 0)
W_NEGATIVE = -np.array([1.5, 2, 3, 4, 5, 6, 7, 8], np.float32)
CNTK_GRAD_NEGATIVE = np.array([[0.0, -2.0, 0.0, -4.0, 0.0, 0.0, -7.0, 0.0]], np.float32)


def test_the_gradient_s_zeros_are_positive_as_cntk_s():
    # on 843c47fc: -0.0 at the five places x is not above 0
    for mode in ("dynamic", "static"):
        x = sd.Variable.from_numpy_array(X, need_grad=True)
        with sd.auto_forward(mode == "dynamic"):
            y = F.sum(F.relu(x, rule="cntk") * sd.Variable.from_numpy_array(W_NEGATIVE))
        if mode == "static":
            y.forward()
        y.backward()
        np.testing.assert_array_equal(x.g, CNTK_GRAD_NEGATIVE)
        np.testing.assert_array_equal(np.signbit(x.g), np.signbit(CNTK_GRAD_NEGATIVE))


def test_the_plans_trace_makes_two_passes_forward_and_one_backward():
    def joint(x, gy):
        y = CATALOG["relu"].impl(x, rule="cntk")
        return y, torch.autograd.grad(y, [x], gy)

    with torch.enable_grad():
        gm = trace_fake(joint, torch.randn(4, 3, requires_grad=True), torch.randn(4, 3))
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    # on 843c47fc: gt, _to_copy, mul, add and the backward's mul
    assert targets == ["aten.empty_like.default", "aten.gt.Scalar_out",
                       "aten.new_zeros.default", "aten.addcmul.default",
                       "aten.threshold_backward.default"]


# CNTK 2.7 in float32 and float64 (tests/fixtures/cntk_relu_dtypes/make_refs.py writes them):
# float64's forward is the choice ``a > 0 ? a : 0`` (Source/Math/TensorOps.h:274), 0 for NaN
# and -inf, where float32's product gives NaN; the gradients choose alike in both.
REFS = np.load(os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_relu_dtypes",
                            "refs.npz"))
# float32 subnormals near the smallest: CNTK 2.7 gave relu(1e-45) = 0 (and no gradient there)
# and relu(-1e-45) = -0.0 (docs/cntk-names.md, "behaves differently"); Stadyn keeps 1e-45
# (and its gradient) and gives +0
KNOWN = {"float32": {6: "CNTK 2.7 flushes relu(1e-45) to 0",
                     7: "CNTK 2.7 gives -0.0 for relu(-1e-45)"}}


def _cntk_relu_both_modes(name):
    x_np, w_np = REFS[name + "_x"], REFS[name + "_w"]
    for mode in ("dynamic", "static"):
        x = sd.Variable.from_numpy_array(x_np, need_grad=True, dtype=x_np.dtype)
        with sd.auto_forward(mode == "dynamic"):
            y = F.relu(x, rule="cntk")
            f = F.sum(y * sd.Variable.from_numpy_array(w_np, dtype=w_np.dtype))
        if mode == "static":
            f.forward()
        f.backward()
        g = x.g.copy()
        x2 = sd.Variable.from_numpy_array(x_np, need_grad=True, dtype=x_np.dtype)
        with sd.auto_forward(mode == "dynamic"):
            f2 = F.sum(F.relu(x2, rule="cntk") * x2)
        if mode == "static":
            f2.forward()
        f2.backward()
        yield mode, y.d.copy(), g, x2.g.copy()


def test_relu_matches_cntk_2_7_in_float32_and_float64():
    # on a21eddab: float64's NaN and -inf gave NaN (float32's rule)
    for name in ("float32", "float64"):
        keep = np.ones(REFS[name + "_x"].size, bool)
        keep[list(KNOWN.get(name, {}))] = False
        for mode, y, g, g2 in _cntk_relu_both_modes(name):
            assert y.dtype == np.dtype(name)
            np.testing.assert_array_equal(y[keep], REFS[name + "_y"][keep], err_msg=mode)
            np.testing.assert_array_equal(np.signbit(y[keep]),
                                          np.signbit(REFS[name + "_y"][keep]), err_msg=mode)
            np.testing.assert_array_equal(g[keep], REFS[name + "_g"][keep], err_msg=mode)
            np.testing.assert_array_equal(g2[keep], REFS[name + "_g2"][keep], err_msg=mode)
        # the known differences stay what the docs say
        if name == "float32":
            assert REFS[name + "_y"][6] == 0 and np.signbit(REFS[name + "_y"][7])
            assert y[6] == REFS[name + "_x"][6] and not np.signbit(y[7])


def test_float64_relu_keeps_the_mask_and_one_backward_pass():
    def joint(x, gy):
        y = CATALOG["relu"].impl(x, rule="cntk")
        return y, torch.autograd.grad(y, [x], gy)

    with torch.enable_grad():
        gm = trace_fake(joint, torch.randn(4, 3, dtype=torch.float64, requires_grad=True),
                        torch.randn(4, 3, dtype=torch.float64))
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == ["aten.empty_like.default", "aten.gt.Scalar_out",
                       "aten.threshold_backward.default", "aten.threshold_backward.default"]

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
        assert torch.equal(got.view(view), _product_form(t).view(view)), dtype
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

"""Batch normalisation's gradient with half-precision parameters (float16 / bfloat16 gamma
and beta, as a network cast to half has them).

ATen's ``native_batch_norm_backward`` takes the weight and statistics all in x's dtype or all
float32 beside half x; the two-pass backward (``rule="torch"``) gave it a half weight beside the
float32 batch statistics the forward computes, and refused ("expected scalar type Half but found
Float", at a21eddab).  Now the weight is cast to float32 there and the parameters' gradients
come back in their own dtypes.  Reference: the same values in float32 through the same ops
(NNabla 1.39's CPU build has no half kernels for batch normalisation to compare with).
"""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F

RNG = np.random.RandomState(0)
X = RNG.randn(4, 3, 2, 2) * 2 + 0.5
GAMMA = RNG.rand(1, 3, 1, 1) + 0.5
BETA = RNG.randn(1, 3, 1, 1)
MEAN = RNG.randn(1, 3, 1, 1) * 0.1
VAR = RNG.rand(1, 3, 1, 1) + 0.5
W = RNG.randn(4, 3, 2, 2)           # the loss's weights: sum(bn(x) * W)
TOL = {torch.float16: 2e-2, torch.bfloat16: 8e-2}


def _grads(dtype, param_dtype, batch_stat, rule, dynamic):
    def var(a, dt, need_grad=False):
        v = sd.Variable.from_numpy_array(a.astype(np.float32), need_grad=need_grad)
        v.data = v.data.to(dt)
        return v

    x, g, b = var(X, dtype, True), var(GAMMA, param_dtype, True), var(BETA, param_dtype, True)
    m, v = var(MEAN, param_dtype), var(VAR, param_dtype)
    with sd.auto_forward(dynamic):
        y = F.batch_normalization(x, b, g, m, v, batch_stat=batch_stat, rule=rule)
        loss = F.sum(y * var(W, dtype))
    if not dynamic:
        loss.forward()
    loss.backward()
    dts = [t.grad.dtype for t in (x, g, b)]
    return [np.asarray(t.g, np.float32) for t in (x, g, b)], dts


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("batch_stat, rule", [(True, "torch"), (True, "nnabla"),
                                               (False, "torch")])
@pytest.mark.parametrize("dynamic", [True, False])
def test_half_parameters_give_float32_s_gradients_in_their_dtypes(dtype, batch_stat, rule,
                                                                   dynamic):
    # on a21eddab: RuntimeError for rule="torch", batch_stat=True (the two-pass backward)
    got, dts = _grads(dtype, dtype, batch_stat, rule, dynamic)
    ref, _ = _grads(torch.float32, torch.float32, batch_stat, rule, dynamic)
    assert dts == [dtype, dtype, dtype]
    for name, a, r in zip(("x", "gamma", "beta"), got, ref):
        scale = max(1.0, float(np.abs(r).max()))
        np.testing.assert_allclose(a, r, rtol=0, atol=TOL[dtype] * scale, err_msg=name)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_data_with_float32_parameters_still_runs_mixed(dtype):
    got, dts = _grads(dtype, torch.float32, True, "torch", True)
    ref, _ = _grads(torch.float32, torch.float32, True, "torch", True)
    assert dts == [dtype, torch.float32, torch.float32]
    for a, r in zip(got, ref):
        np.testing.assert_allclose(a, r, rtol=0, atol=TOL[dtype] * max(1.0, np.abs(r).max()))

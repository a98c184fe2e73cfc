"""``cntk_batch_normalization`` with a blend time constant, against NumPy written from CNTK's
GPU kernels (the CPU build of cntk.exe/CNTK 2.7 cannot train batch normalisation with a blend:
its MKL path ignores blendFactor, CPUMatrix::BatchNormalizationForward refuses training):

* forward, Source/Math/CntkBatchNormalization.cuh, kComputeBatchMeanAndInvStdDev::

      run[k] = expAvgFactor * mean[k] + (1.0 - expAvgFactor) * run[k];
      x[k] = blendFactor * run[k] + (1.0 - blendFactor) * mean[k];
      ...
      im2[k] = blendFactor * runInvStdDev + (1.0 - blendFactor) * im2[k];

  with blendFactor = ``b / (b + M)`` (0 while the run count is 0, 1 for an infinite b;
  TrainingNodes.h, ComputeBlendFactor) and expAvgFactor = ``1 - exp(-M / T)``;
* backward, kBackpropagateBatchNormGradients with mbStatsWeight = 1 - blendFactor::

      dx = scale * invStdDev * (dy - mbStatsWeight * (xHat * dScale + dBias) / m)
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from stadyn.ops import CATALOG

EPS = 1e-5


def _cntk(x, scale, bias, run_mean, run_var, count, tc, blend, dy):
    """(y, dx, dscale, dbias, new running mean, new running variance) of CNTK's kernels."""
    m = x.shape[0]
    mean, var = x.mean(0), x.var(0)
    f = 1.0 if count == 0 else -math.expm1(-m / tc)
    run_mean = f * mean + (1 - f) * run_mean
    run_var = f * x.var(0, ddof=1) + (1 - f) * run_var
    w = 0.0 if count == 0 else (1.0 if math.isinf(blend) else blend / (blend + m))
    x_mean = w * run_mean + (1 - w) * mean
    inv = w / np.sqrt(run_var + EPS) + (1 - w) / np.sqrt(var + EPS)
    xhat = (x - x_mean) * inv
    y = scale * xhat + bias
    dbias, dscale = dy.sum(0), (dy * xhat).sum(0)
    dx = scale * inv * (dy - (1 - w) * (xhat * dscale + dbias) / m)
    return y, dx, dscale, dbias, run_mean, run_var


@pytest.mark.parametrize("count, blend", [(7.0, 3.0), (7.0, 40.0), (7.0, math.inf),
                                          (0.0, 3.0)])
def test_blend_forward_backward_and_update_follow_cntks_kernels(count, blend):
    rng = np.random.default_rng(5)
    x = rng.normal(1.0, 2.0, (6, 4))
    scale, bias = rng.uniform(0.5, 2, 4), rng.normal(0, 1, 4)
    run_mean, run_var = rng.normal(0, 1, 4), rng.uniform(0.5, 2, 4)
    dy = rng.normal(0, 1, (6, 4))
    tc = 20.0
    y, dx, dscale, dbias, new_mean, new_var = _cntk(x, scale, bias, run_mean, run_var, count,
                                                    tc, blend, dy)
    xt = torch.tensor(x, requires_grad=True)
    st = torch.tensor(scale, requires_grad=True)
    bt = torch.tensor(bias, requires_grad=True)
    mt, vt, ct = torch.tensor(run_mean), torch.tensor(run_var), torch.tensor(count)
    out = CATALOG["cntk_batch_normalization"].impl(xt, st, bt, mt, vt, ct, None, False, tc,
                                                   blend, EPS, True)
    out.backward(torch.tensor(dy))
    np.testing.assert_allclose(out.detach().numpy(), y, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mt.numpy(), new_mean, rtol=1e-12)
    np.testing.assert_allclose(vt.numpy(), new_var, rtol=1e-12)
    assert float(ct) == count + 6
    np.testing.assert_allclose(xt.grad.numpy(), dx, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(st.grad.numpy(), dscale, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(bt.grad.numpy(), dbias, rtol=1e-9, atol=1e-12)

"""Harness entries of NNabla 1.39's ``vat_noise`` and ``adaptive_separable_convolution``,
merged into ``test_ops.ENTRIES``.  NumPy references written from NNabla's C++ forward;
tests/compat's cases compare the functions with NNabla's own numbers (and ``vat_noise``'s
backward, which writes its input ``w``).
"""

from __future__ import annotations

import numpy as np

from op_harness_types import Data

_D = Data(139)


def ref_vat_noise(x, w, base_axis=1, eps=1.0):
    rows = x.reshape(int(np.prod(x.shape[:base_axis])), -1)
    scale = eps / np.sqrt((rows ** 2).sum(1, keepdims=True) + 1e-8)
    return (rows * scale).reshape(x.shape)


def ref_adaptive_separable_convolution(x, kv, kh):
    ho, wo = x.shape[2] - kv.shape[1] + 1, x.shape[3] - kh.shape[1] + 1
    y = np.zeros(x.shape[:2] + (ho, wo))
    for b in range(x.shape[0]):
        for h in range(ho):
            for w in range(wo):
                kernel = np.outer(kv[b, :, h, w], kh[b, :, h, w])
                patch = x[b, :, h:h + kv.shape[1], w:w + kh.shape[1]]
                y[b, :, h, w] = (patch * kernel).sum((1, 2))
    return y


def nnabla_more_entries(Case, Entry) -> dict:
    return {
        "vat_noise": Entry(
            [Case((_D.normal(2, 3, 2), _D.normal(2, 3, 2)), {"eps": 2.0}),
             Case((_D.normal(2, 2, 3), np.zeros((2, 2, 3), np.float32)),
                  {"base_axis": 2, "eps": 0.5})],
            ref_vat_noise,
            no_grad="its backward writes eps * dy into w's values and sends x nothing "
                    "(tests/compat's vat_noise cases compare it with NNabla 1.39's)"),
        "adaptive_separable_convolution": Entry(
            [Case((_D.normal(2, 3, 6, 7), _D.uniform(0.0, 1.0, 2, 3, 4, 6),
                   _D.uniform(0.0, 1.0, 2, 2, 4, 6))),
             Case((_D.normal(1, 2, 5, 5), _D.normal(1, 2, 5, 5), _D.normal(1, 3, 5, 5)))],
            ref_adaptive_separable_convolution),
    }

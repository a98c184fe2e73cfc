"""Harness entries of NNabla's ``bc_add2``, ``prune`` and ``batch_cholesky``
(``stadyn/ops/_nnabla_tensor.py``), merged into ``test_ops.ENTRIES``: NumPy references from
NNabla 1.39's definitions (tests/compat's ``nnabla_functions_2026`` cases compare with
NNabla's own numbers and gradients).
"""

from __future__ import annotations

import numpy as np

from op_harness_types import Data

_D = Data(2718)
normal = _D.normal


def ref_prune(x, rate=0.9):
    flat = np.sort(np.abs(x).ravel())
    threshold = flat[int((x.size - 1) * rate)] + (1.0 if rate == 1.0 else 0.0)
    return np.where(np.abs(x) < threshold, 0.0, x)


def ref_batch_cholesky(x, upper=False):
    lower = np.linalg.cholesky(x)
    return lower.transpose(0, 2, 1) if upper else lower


def _spd(b, n):
    a = normal(b, n, n).astype(np.float64)
    return (a @ a.transpose(0, 2, 1) + 2.0 * np.eye(n)).astype(np.float32)


def nnabla_tensor_entries(Case, Entry) -> dict:
    magnitudes = (_D.rng.permutation(12).reshape(3, 4) + 1.0).astype(np.float32) * np.where(
        _D.ints(2, 3, 4) == 0, -1, 1).astype(np.float32)
    return {
        "bc_add2": Entry([Case((normal(2, 3, 4), normal(1, 3, 1))),
                          Case((normal(2, 3), normal(2, 3)))],
                         lambda a, b, inplace=False: a + b),
        "prune": Entry([Case((magnitudes,)), Case((magnitudes,), {"rate": 0.5}),
                        Case((magnitudes,), {"rate": 1.0}), Case((magnitudes,), {"rate": 0.0})],
                       ref_prune,
                       no_grad="the gradient is NNabla's straight-through rule, not a "
                               "derivative (tests/compat compares it with NNabla's)"),
        "batch_cholesky": Entry([Case((_spd(2, 3),)), Case((_spd(1, 4),), {"upper": True})],
                                ref_batch_cholesky,
                                no_grad="torch's Cholesky gradient (a symmetric matrix, which "
                                        "finite differences of the lower triangle do not "
                                        "give); tests/compat compares it with NNabla's"),
    }

"""Harness entries of the quantisation ops added for NNabla's quantised layers
(``stadyn/ops/_quantize.py``): ``store`` and ``min_max_quantize`` (NNabla's documented rule,
written out with NumPy; its straight-through gradient is compared with NNabla's in the compat
harness); and NNabla's ``scatter_nd`` (``stadyn/ops/_nnabla_extra.py``).  What NNabla 1.39
computes with them is compared in ``tests/compat/compat_cases/nnabla_quantized.py``.
"""

from __future__ import annotations

import numpy as np

_RNG = np.random.default_rng(5150)


def _normal(*shape):
    return _RNG.standard_normal(shape).astype(np.float32)


_STE = ("a straight-through estimator: its gradient is not the derivative (the compat harness "
        "checks it against NNabla's)")


def _min_max_range(x, qr_min, qr_max, decay, x_min_max, ema, eps):
    """The range after the op's in-place updates."""
    if x_min_max:
        low = np.full_like(qr_min, x.min())
        high = np.full_like(qr_max, x.max())
        if ema:
            low = decay * qr_min + (1 - decay) * low
            high = decay * qr_max + (1 - decay) * high
        qr_min, qr_max = low, high
    return qr_min, np.where(qr_max - qr_min < eps, qr_min + eps, qr_max)


def ref_min_max_quantize(x, qr_min, qr_max, ql_min, ql_max, decay=0.999, x_min_max=False,
                         ema=False, ste_fine_grained=True, eps=0.01, quantize=True):
    if not quantize:
        return x
    m, big_m = _min_max_range(x, qr_min, qr_max, decay, x_min_max, ema, eps)
    scale = (big_m - m) / (ql_max - ql_min)
    zp_f = ql_min - m / scale
    zp = np.clip(np.sign(zp_f) * np.floor(np.abs(zp_f) + 0.5), ql_min, ql_max)
    low, high = (ql_min - zp) * scale, (ql_max - zp) * scale
    return np.floor((np.clip(x, low, high) - low) / scale + 0.5) * scale + low


def updates_min_max_quantize(x, qr_min, qr_max, ql_min, ql_max, decay=0.999, x_min_max=False,
                             ema=False, ste_fine_grained=True, eps=0.01, quantize=True):
    if not quantize:
        return {}
    m, big_m = _min_max_range(x, qr_min, qr_max, decay, x_min_max, ema, eps)
    return {1: m, 2: big_m}


def _ranges(low, high, levels=15.0):
    return (np.full((1, 1), low, np.float32), np.full((1, 1), high, np.float32),
            np.zeros((1, 1), np.float32), np.full((1, 1), levels, np.float32))


def ref_scatter_nd(data, indices, shape=None, add=False):
    out = np.zeros(shape, data.dtype)
    index = tuple(indices.astype(np.int64))
    if add:
        np.add.at(out, index, data)
    else:
        out[index] = data
    return out


def nnabla_extra_entries(Case, Entry) -> dict:
    return {
        "scatter_nd": Entry(
            [Case((_normal(3, 2), np.array([[4, 0, 2]])), {"shape": (5, 2)}),
             Case((_normal(4), np.array([[0, 2, 1, 0], [1, 0, 2, 2]])), {"shape": (3, 3)}),
             Case((_normal(4, 2), np.array([[1, 3, 1, 0]])), {"shape": (4, 2), "add": True})],
            ref_scatter_nd, grad_inputs=(0,), why_not_others="indices are integers"),
    }


def quantize_entries(Case, Entry) -> dict:
    def ref_store(x, buffer):
        return x

    def writes_x(x, buffer):
        return {1: x}

    x = _RNG.uniform(-2.0, 3.0, (3, 4)).astype(np.float32)
    return {
        "min_max_quantize": Entry(
            [Case((x,) + _ranges(-1.0, 1.5), no_grad=_STE),
             Case((x,) + _ranges(-1.0, 1.5, 255.0), {"ste_fine_grained": False}, no_grad=_STE),
             Case((x,) + _ranges(0.0, 0.0), {"x_min_max": True}, no_grad=_STE),
             Case((x,) + _ranges(-1.0, 1.5, 7.0), {"x_min_max": True, "ema": True,
                                                    "decay": 0.9}, no_grad=_STE),
             Case((x,) + _ranges(0.5, 0.5), {"eps": 0.25}, no_grad=_STE),
             Case((x,) + _ranges(-1.0, 1.5), {"quantize": False}, no_grad=_STE)],
            ref_min_max_quantize, updates=updates_min_max_quantize),
        "store": Entry([Case((_normal(3, 4), np.zeros((3, 4), np.float32))),
                        Case((_normal(5), np.full(5, 7.0, np.float32)))],
                       ref_store, grad_inputs=(0,), updates=writes_x,
                       why_not_others="the buffer is written, never read: no gradient flows "
                                      "into it"),
    }

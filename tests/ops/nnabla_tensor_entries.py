"""Harness entries of NNabla's ``bc_add2``, ``prune``, ``batch_cholesky``,
``depthwise_deconvolution``, ``deformable_convolution``, ``quantize_linear`` and
``dequantize_linear``
(``stadyn/ops/_nnabla_tensor.py``, ``_nnabla_conv.py``, ``_nnabla_qlinear.py``), merged into
``test_ops.ENTRIES``: NumPy references from NNabla 1.39's definitions (tests/compat's
``nnabla_functions_2026`` and ``nnabla_conv`` cases compare with NNabla's own numbers and
gradients).
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


def ref_depthwise_deconvolution(x, weight, bias=None, base_axis=1, pad=None, stride=None,
                                dilation=None, divisor=1):
    """Each input pixel scattered through its channel's kernel into its group's output."""
    n = weight.ndim - 1
    pad, stride = tuple(pad or (0,) * n), tuple(stride or (1,) * n)
    dilation = tuple(dilation or (1,) * n)
    channels, spatial = x.shape[1], x.shape[2:]
    kernel = weight.shape[1:]
    size = tuple((i - 1) * s - 2 * p + d * (k - 1) + 1
                 for i, s, p, d, k in zip(spatial, stride, pad, dilation, kernel))
    full = np.zeros((x.shape[0], channels // divisor) + tuple(
        sz + 2 * p for sz, p in zip(size, pad)))
    for c in range(channels):
        for pos in np.ndindex(*spatial):
            for k in np.ndindex(*kernel):
                at = tuple(i * s + kk * d for i, s, kk, d in zip(pos, stride, k, dilation))
                full[(slice(None), c // divisor) + at] += x[(slice(None), c) + pos] * weight[
                    (c,) + k]
    out = full[(slice(None), slice(None)) + tuple(slice(p, p + sz) for p, sz in zip(pad, size))]
    if bias is not None:
        out = out + bias.reshape((1, -1) + (1,) * n)
    return out


def nnabla_conv_entries(Case, Entry) -> dict:
    return {
        "depthwise_deconvolution": Entry(
            [Case((normal(2, 3, 4, 4), normal(3, 3, 3), normal(3))),
             Case((normal(1, 4, 3, 5), normal(4, 2, 3), normal(2)),
                  {"pad": (1, 0), "stride": (2, 1), "dilation": (1, 2), "divisor": 2}),
             Case((normal(2, 6, 5), normal(6, 4)), {"stride": (3,), "divisor": 3})],
            ref_depthwise_deconvolution),
    }


def _round_half_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def ref_quantize_linear(x, scale, zero_point, round_mode="HALF_AWAY_FROM_ZERO",
                        narrow_range=False, dtype=np.int8):
    low, high = ((-127 if narrow_range else -128), 127) if np.dtype(dtype) == np.int8 else (
        (1 if narrow_range else 0), 255)
    rnd = np.round if round_mode == "HALF_TO_EVEN" else _round_half_away
    return np.clip(rnd(x / scale) + np.clip(rnd(zero_point), low, high), low, high)


def nnabla_qlinear_entries(Case, Entry) -> dict:
    values = (_D.ints(601, 3, 4) - 300.0) * 0.5 + 0.13 * (_D.ints(2, 3, 4))
    values = values.astype(np.float32)
    one = np.ones((1, 1), np.float32)
    return {
        "quantize_linear": Entry(
            [Case((values, one * 0.5, one * 3.4)),
             Case((values, np.array([[1.0], [0.5], [2.0]], np.float32),
                   np.array([[-2.5], [0.0], [1.5]], np.float32)),
                  {"round_mode": "HALF_TO_EVEN", "narrow_range": True}),
             Case((values, one * 0.25, one * 128.0), {"dtype": np.uint8})],
            ref_quantize_linear,
            no_grad="the gradient is NNabla's straight-through rule (divided by the scale), "
                    "not a derivative (tests/compat compares it with NNabla's)"),
        "dequantize_linear": Entry(
            [Case((values, np.array([[0.5, 1.0, 0.25, 2.0]], np.float32),
                   np.array([[1, 0, -3, 7]], np.float32)))],
            lambda x, s, z: (x - z) * s, grad_inputs=(0,),
            why_not_others="NNabla refuses gradients of the scale and the zero point"),
    }


def _sample(img, y, x):
    """NNabla's deformable bilinear sample: zero outside ``(-1, H) x (-1, W)`` and for the
    corners beyond the image."""
    h, w = img.shape[-2:]
    if not (-1 < y < h and -1 < x < w):
        return np.zeros(img.shape[:-2])
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    out = np.zeros(img.shape[:-2])
    corners = ((y0, x0, (y0 + 1 - y) * (x0 + 1 - x)), (y0, x0 + 1, (y0 + 1 - y) * (x - x0)),
               (y0 + 1, x0, (y - y0) * (x0 + 1 - x)), (y0 + 1, x0 + 1, (y - y0) * (x - x0)))
    for yy, xx, wt in corners:
        if 0 <= yy < h and 0 <= xx < w:
            out = out + wt * img[..., yy, xx]
    return out


def ref_deformable_convolution(x, weight, offset, mask=None, bias=None, base_axis=1, pad=None,
                               stride=None, dilation=None, group=1, deformable_group=1,
                               channel_last=False):
    n, c, h, w = x.shape
    o, _, kh, kw = weight.shape
    (ph, pw), (sh, sw) = pad or (0, 0), stride or (1, 1)
    dh, dw = dilation or (1, 1)
    ho, wo = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    per_dg, per_g = c // deformable_group, c // group
    cols = np.zeros((n, c, kh, kw, ho, wo))
    for b in range(n):
        for ch in range(c):
            g = ch // per_dg
            for i in range(kh):
                for j in range(kw):
                    k = i * kw + j
                    for yo in range(ho):
                        for xo in range(wo):
                            yi, xi = yo * sh, xo * sw
                            dy = offset[b, g * 2 * kh * kw + 2 * k, yi, xi]
                            dx = offset[b, g * 2 * kh * kw + 2 * k + 1, yi, xi]
                            v = _sample(x[b, ch], yi + i * dh - ph + dy, xi + j * dw - pw + dx)
                            if mask is not None:
                                v = v * mask[b, g * kh * kw + k, yi, xi]
                            cols[b, ch, i, j, yo, xo] = v
    out = np.zeros((n, o, ho, wo))
    for oc in range(o):
        g = oc // (o // group)
        part = cols[:, g * per_g:(g + 1) * per_g]
        out[:, oc] = np.tensordot(part, weight[oc], axes=([1, 2, 3], [0, 1, 2]))
    return out if bias is None else out + bias.reshape(1, -1, 1, 1)


def nnabla_deform_entries(Case, Entry) -> dict:
    return {
        "deformable_convolution": Entry(
            [Case((normal(1, 2, 4, 5), normal(3, 2, 3, 3), normal(1, 18, 4, 5, scale=0.8))),
             Case((normal(1, 4, 5, 4), normal(4, 2, 2, 2), normal(1, 16, 5, 4, scale=0.8),
                   _D.uniform(0, 1, 1, 8, 5, 4), normal(4)),
                  {"pad": (1, 0), "stride": (2, 1), "dilation": (1, 2), "group": 2,
                   "deformable_group": 2})],
            ref_deformable_convolution),
    }


def ref_fused_convolution(x, weight, bias=None, beta=None, gamma=None, mean=None, variance=None,
                          z=None, base_axis=1, pad=None, stride=None, dilation=None, group=1,
                          channel_last=False, decay_rate=0.9, eps=1e-05, batch_stat=True,
                          nonlinearity="relu", nonlinearity_args=(), pad_mode="constant",
                          constant_value=0):
    """Pad, convolve (the deformable reference with zero offsets), normalise by the running
    statistics, add ``z``, activate."""
    n = weight.ndim - 2
    pad = tuple(pad or (0,) * n)
    width = [(p, p) for p in pad] if len(pad) == n else list(zip(pad[::2], pad[1::2]))
    kw = {"constant_values": constant_value} if pad_mode == "constant" else {}
    h = np.pad(x, [(0, 0), (0, 0)] + width, mode=pad_mode, **kw)
    zero = np.zeros((h.shape[0], 2 * weight.shape[2] * weight.shape[3]) + h.shape[2:])
    h = ref_deformable_convolution(h, weight, zero, None, bias, stride=stride, dilation=dilation,
                                   group=group)
    if beta is not None:
        h = (h - mean) / np.sqrt(variance + eps) * gamma + beta
    if z is not None:
        h = h + z
    act = {"relu": lambda v: np.maximum(v, 0), "tanh": np.tanh, "identity": lambda v: v,
           "leaky_relu": lambda v: np.where(v > 0, v, v * nonlinearity_args[0])}
    return act[nonlinearity](h)


def nnabla_fused_conv_entries(Case, Entry) -> dict:
    s = (1, 3, 1, 1)
    return {
        "fused_convolution": Entry(
            [Case((normal(2, 2, 5, 5), normal(3, 2, 3, 3), normal(3)), {"pad": (1, 1)}),
             Case((normal(2, 2, 5, 4), normal(3, 2, 3, 2), None, normal(*s), normal(*s),
                   normal(*s), _D.uniform(0.5, 1.5, *s), normal(2, 3, 2, 3)),
                  {"stride": (2, 1), "batch_stat": False, "nonlinearity": "tanh"}),
             Case((normal(1, 2, 4, 5), normal(3, 2, 2, 2)),
                  {"pad": (1, 2, 0, 1), "pad_mode": "reflect", "nonlinearity": "leaky_relu",
                   "nonlinearity_args": [0.2]})],
            ref_fused_convolution, grad_inputs=(0, 1),
            why_not_others="the cases differ in which optional inputs they give: the "
                           "gradients of bias, beta, gamma and z are compared with NNabla's "
                           "in tests/compat; the running statistics are not trained"),
    }


def ref_max_pooling_backward(dy, x, kernel, stride=None, ignore_border=True, pad=None,
                             channel_last=False):
    """Each window's ``dy`` added at its maximum (non-overlapping or overlapping windows, no
    padding, ``ignore_border``)."""
    stride = tuple(stride or kernel)
    dx = np.zeros_like(x)
    for idx in np.ndindex(*dy.shape):
        *lead, i, j = idx
        window = x[tuple(lead)][i * stride[0]:i * stride[0] + kernel[0],
                                j * stride[1]:j * stride[1] + kernel[1]]
        a, b = np.unravel_index(np.argmax(window), window.shape)
        dx[tuple(lead) + (i * stride[0] + a, j * stride[1] + b)] += dy[idx]
    return dx


def nnabla_pool_backward_entries(Case, Entry) -> dict:
    distinct = _D.distinct
    return {
        "max_pooling_backward": Entry(
            [Case((normal(2, 3, 3, 2), distinct(2, 3, 6, 5)), {"kernel": (2, 2)}),
             Case((normal(1, 2, 4, 2), distinct(1, 2, 6, 5)),
                  {"kernel": (3, 2), "stride": (1, 2)})],
            ref_max_pooling_backward, grad_inputs=(0,),
            why_not_others="x gets no gradient (NNabla's rule: the maxima's positions are "
                           "piecewise constant)"),
    }

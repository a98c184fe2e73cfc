"""Harness entries of NNabla's ``roi_align``, ``warp_by_flow``, ``nms_detection2d``,
``patch_correlation`` (``stadyn/ops/_nnabla_vision.py``) and ``random_choice``
(``_nnabla_sampling.py``), merged into ``test_ops.ENTRIES``: NumPy references written pixel by
pixel from NNabla 1.39's definitions, and a check of the draws (tests/compat's
``nnabla_vision`` and ``nnabla_sampling`` cases compare with NNabla's own numbers).
"""

from __future__ import annotations

import math

import numpy as np

from op_harness_types import Data

_D = Data(7331)
normal = _D.normal


def _bilinear(img, y, x):
    h, w = img.shape[-2:]
    y, x = min(max(y, 0.0), h - 1), min(max(x, 0.0), w - 1)
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[..., y0, x0] + (1 - ly) * lx * img[..., y0, x1]
            + ly * (1 - lx) * img[..., y1, x0] + ly * lx * img[..., y1, x1])


def ref_roi_align(x, boxes, output_size, spatial_scale=(1.0, 1.0), sampling_ratio=None,
                  channel_last=None):
    if channel_last:
        x = np.moveaxis(x, -1, 1)
    oh, ow = output_size
    h, w = x.shape[-2:]
    out = np.zeros((len(boxes), x.shape[1], oh, ow))
    for k, (b, x1, y1, x2, y2) in enumerate(boxes):
        x1, x2 = x1 * spatial_scale[1] - 0.5, x2 * spatial_scale[1] - 0.5
        y1, y2 = y1 * spatial_scale[0] - 0.5, y2 * spatial_scale[0] - 0.5
        sy, sx = (y2 - y1) / oh, (x2 - x1) / ow
        gy = sampling_ratio if sampling_ratio and sampling_ratio > 0 else math.ceil(sy)
        gx = sampling_ratio if sampling_ratio and sampling_ratio > 0 else math.ceil(sx)
        for i in range(oh):
            for j in range(ow):
                total = 0.0
                for a in range(gy):
                    yy = y1 + i * sy + (a + 0.5) * sy / gy
                    for c in range(gx):
                        xx = x1 + j * sx + (c + 0.5) * sx / gx
                        if -1 <= yy <= h and -1 <= xx <= w:
                            total = total + _bilinear(x[int(b)], yy, xx)
                out[k, :, i, j] = total / (gy * gx)
    return np.moveaxis(out, 1, -1) if channel_last else out


def ref_warp_by_flow(data, flow):
    out = np.zeros_like(data)
    n, _, h, w = data.shape
    for s in range(n):
        for y in range(h):
            for x in range(w):
                out[s, :, y, x] = _bilinear(data[s], y + flow[s, 1, y, x], x + flow[s, 0, y, x])
    return out


def _flow(*shape):
    v = normal(*shape, scale=1.7).astype(np.float64)
    frac = v - np.floor(v)
    return np.where(np.abs(frac - 0.5) > 0.45, v + 0.2, v).astype(np.float32)


_BOXES = np.array([[0, 0.5, 1.0, 6.5, 5.0], [1, 2.0, 0.0, 4.0, 3.5],
                   [0, -1.5, -2.0, 9.0, 7.5]], np.float32)


def vision_entries(Case, Entry) -> dict:
    why = "the boxes' coordinates get no gradient (NNabla's backward has none)"
    return {
        "roi_align": Entry([Case((normal(2, 2, 6, 8), _BOXES), {"output_size": (2, 3)}),
                            Case((normal(2, 6, 8, 2), _BOXES), {
                                "output_size": (3, 2), "sampling_ratio": 2,
                                "spatial_scale": (0.5, 1.5), "channel_last": True})],
                           ref_roi_align, grad_inputs=(0,), why_not_others=why),
        "warp_by_flow": Entry([Case((normal(2, 2, 4, 5), _flow(2, 2, 4, 5)))],
                              ref_warp_by_flow),
    }


def check_random_choice(inputs, outputs, shape=(), replace=True, seed=-1):
    """Every value drawn from its own row; frequencies near the weights (many draws); without
    replacement, no member twice."""
    x, w = (np.asarray(a, np.float64) for a in inputs)
    y = np.asarray(outputs[0], np.float64)
    count = int(np.prod(shape)) if shape else 1
    assert y.shape == x.shape[:-1] + (tuple(shape) or (1,))
    rows_x, rows_w = x.reshape(-1, x.shape[-1]), w.reshape(-1, w.shape[-1])
    for xs, ws, ys in zip(rows_x, rows_w, y.reshape(-1, count)):
        picks = np.array([int(np.flatnonzero(xs == v)[0]) for v in ys])
        assert (ws[picks] > 0).all(), "a member of weight 0 was drawn"
        if not replace:
            assert len(set(picks.tolist())) == count, "a member drawn twice without replacement"
        elif count >= 2000:
            freq = np.bincount(picks, minlength=len(ws)) / count
            np.testing.assert_allclose(freq, ws / ws.sum(), atol=0.03)


def sampling_entries(Case, Entry) -> dict:
    population = _D.distinct(2, 5)
    weights = np.array([[1, 2, 3, 0, 4], [0.5, 0.5, 0, 1, 2]], np.float32)
    return {
        "random_choice": Entry(
            [Case((population, weights), {"shape": (3000,)}),
             Case((population, weights), {"shape": (2, 2), "replace": False, "seed": 5}),
             Case((population, weights), {})],
            check=check_random_choice, random=True, grad_inputs=(0,),
            why_not_others="w's gradient is NNabla's rule (the output gradient at the drawn "
                           "positions), not a derivative: tests/compat compares it"),
    }


def _iou_one(a, b):
    w = min(a[0] + a[2] / 2, b[0] + b[2] / 2) - max(a[0] - a[2] / 2, b[0] - b[2] / 2)
    h = min(a[1] + a[3] / 2, b[1] + b[3] / 2) - max(a[1] - a[3] / 2, b[1] - b[3] / 2)
    if w <= 0 or h <= 0:
        return 0.0
    return w * h / (a[2] * a[3] + b[2] * b[3] - w * h)


def ref_nms_detection2d(x, thresh=None, nms=None, nms_per_class=None):
    """Box by box, as NNabla 1.39's loops read."""
    thresh = 0.5 if thresh is None else thresh
    nms = 0.45 if nms is None else nms
    y = x.copy()
    y[..., 4] = np.where(x[..., 4] < thresh, 0.0, x[..., 4])
    score = y[..., 4:5] * x[..., 5:]
    y[..., 5:] = np.where(score < thresh, 0.0, score)
    for b in range(x.shape[0]):
        boxes = list(range(x.shape[1]))
        if nms_per_class is None or nms_per_class:
            for k in range(5, x.shape[2]):
                order = sorted(boxes, key=lambda i: -y[b, i, k])
                for p, i in enumerate(order):
                    for j in order[p + 1:]:
                        if y[b, i, k] and y[b, j, k] and _iou_one(y[b, i], y[b, j]) > nms:
                            y[b, j, k] = 0.0
        else:
            order = sorted(boxes, key=lambda i: -y[b, i, 4])
            for p, i in enumerate(order):
                if y[b, i, 4] and any(_iou_one(y[b, i], y[b, j]) > nms for j in order[:p]):
                    y[b, i, 4:] = 0.0
    return y


def nms_entries(Case, Entry) -> dict:
    d = np.zeros((2, 9, 7), np.float32)
    d[..., :2] = _D.uniform(0.3, 0.5, 2, 9, 2)
    d[..., 2:4] = _D.uniform(0.1, 0.3, 2, 9, 2)
    d[..., 4] = _D.rng.permutation(18).reshape(2, 9) / 20.0 + 0.1
    d[..., 5:] = _D.uniform(0.5, 1.0, 2, 9, 2)
    return {
        "nms_detection2d": Entry([Case((d,)), Case((d,), {"nms_per_class": False, "nms": 0.3}),
                                  Case((d,), {"thresh": 0.2, "nms": 0.6})],
                                 ref_nms_detection2d, no_grad="no gradient (NNabla's backward "
                                                              "computes none)"),
    }


def ref_patch_correlation(x1, x2, patch=(1, 1), shift=(0, 0), patch_step=(1, 1),
                          shift_step=(1, 1), padding=(0, 0, 0, 0), channel_last=False):
    """NNabla 1.39's loops over NHWC arrays, out-of-image samples contributing nothing."""
    a, b = (x if channel_last else x.transpose(0, 2, 3, 1) for x in (x1, x2))
    n, h, w, _ = a.shape
    top, bottom, left, right = padding
    ys = range(-top, h - patch[0] + bottom + 1, patch_step[0])
    xs = range(-left, w - patch[1] + right + 1, patch_step[1])
    dys = range(-shift[0], shift[0] + 1, shift_step[0])
    dxs = range(-shift[1], shift[1] + 1, shift_step[1])
    out = np.zeros((n, len(ys), len(xs), len(dys), len(dxs)))
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            for k, dy in enumerate(dys):
                for m, dx in enumerate(dxs):
                    for ky in range(patch[0]):
                        for kx in range(patch[1]):
                            p, q = y + ky, x + kx
                            if 0 <= p < h and 0 <= q < w and 0 <= p + dy < h and 0 <= q + dx < w:
                                out[:, i, j, k, m] += (a[:, p, q] * b[:, p + dy, q + dx]).sum(-1)
    return out if channel_last else out.transpose(0, 3, 4, 1, 2)


def correlation_entries(Case, Entry) -> dict:
    return {
        "patch_correlation": Entry(
            [Case((normal(1, 2, 4, 5), normal(1, 2, 4, 5)), {"patch": (2, 3)}),
             Case((normal(1, 2, 5, 4), normal(1, 2, 5, 4)),
                  {"patch": (2, 2), "shift": (1, 2), "patch_step": (2, 1), "shift_step": (1, 2),
                   "padding": (1, 0, 1, 1)}),
             Case((normal(1, 4, 3, 2), normal(1, 4, 3, 2)),
                  {"shift": (1, 1), "channel_last": True, "padding": (0, 1, 1, 0)})],
            ref_patch_correlation),
    }

"""Harness entries of NNabla 1.39's ``vat_noise``, ``adaptive_separable_convolution``,
``onnx_resize`` and ``onnx_non_max_suppression``, merged into ``test_ops.ENTRIES``.  NumPy
references written element by element from NNabla's C++ forward; tests/compat's cases compare
the functions with NNabla's own numbers (and ``vat_noise``'s backward, which writes its input
``w``).
"""

from __future__ import annotations

import math

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


def _f32(v):
    return np.float32(v)


def _source_index(mode, scale, o, n_out, n_in, start, end):
    o, scale = _f32(o), _f32(scale)
    if mode == "half_pixel":
        return (o + _f32(0.5)) / scale - _f32(0.5)
    if mode == "asymmetric":
        return o / scale
    if mode == "align_corners":
        return _f32(0.0) if n_out == 1 else o * _f32(n_in - 1) / _f32(n_out - 1)
    if mode == "tf_crop_and_resize":
        return (_f32(start) * _f32(n_in - 1) + o * (_f32(end) - _f32(start)) * _f32(n_in - 1)
                / _f32(n_out - 1))
    raise AssertionError(mode)


def _taps(fx, n_in, mode, a, exclude, nearest):
    """``[(input index, weight)]`` of one output position of one axis."""
    def clamp(i):
        return min(max(i, 0), n_in - 1)
    base = math.floor(fx)
    if mode == "nearest":
        if nearest == "floor":
            i = base
        elif fx == base + 0.5:
            i = base
        else:
            i = int(math.copysign(math.floor(abs(fx) + 0.5), fx))
        return [(clamp(i), 1.0)]
    if mode == "linear":
        x0 = clamp(base)
        return [(x0, 1.0 - (fx - x0)), (clamp(base + 1), fx - x0)]
    t = fx - base

    def near(x):
        return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1

    def far(x):
        return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a
    weights = [far(1 + t), near(t), near(1 - t), far(2 - t)]
    if exclude:
        weights = [0.0 if not 0 <= base + k - 1 < n_in else w for k, w in enumerate(weights)]
        total = sum(weights)
        weights = [w / total for w in weights]
    return [(clamp(base + k - 1), w) for k, w in enumerate(weights)]


def ref_onnx_resize(x, roi=(), scales=(), sizes=(), mode="nearest",
                    coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75,
                    exclude_outside=0, extrapolation_value=0.0,
                    nearest_mode="round_prefer_floor"):
    if sizes:
        out = tuple(sizes)
        axis_scales = [_f32(o) / _f32(i) for o, i in zip(sizes, x.shape)]
    else:
        out = tuple(int(math.floor(_f32(i) * _f32(s))) for i, s in zip(x.shape, scales))
        axis_scales = [_f32(s) for s in scales]
    y, outside = x, np.zeros(out, bool)
    crop = coordinate_transformation_mode == "tf_crop_and_resize"
    for axis, scale in enumerate(axis_scales):
        if scale == 1.0:
            continue
        n_in, n_out = x.shape[axis], out[axis]
        moved = np.moveaxis(y, axis, -1)
        result = np.zeros(moved.shape[:-1] + (n_out,))
        for o in range(n_out):
            fx = float(_source_index(coordinate_transformation_mode, scale, o, n_out, n_in,
                                     roi[axis] if crop else 0, roi[x.ndim + axis] if crop else 0))
            if crop and not 0 <= fx <= n_in - 1:
                index = [slice(None)] * len(out)
                index[axis] = o
                outside[tuple(index)] = True
            for i, w in _taps(fx, n_in, mode, cubic_coeff_a, exclude_outside, nearest_mode):
                result[..., o] += w * moved[..., i]
        y = np.moveaxis(result, -1, axis)
    return np.where(outside, extrapolation_value, y)


def ref_onnx_non_max_suppression(boxes, scores, center_point_box=0,
                                 max_output_boxes_per_class=0, iou_threshold=0.0,
                                 score_threshold=0.0):
    def corners(box):
        if center_point_box:
            xc, yc, w, h = box
            return yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2
        return min(box[0], box[2]), min(box[1], box[3]), max(box[0], box[2]), max(box[1], box[3])

    def iou(a, b):
        (ay0, ax0, ay1, ax1), (by0, bx0, by1, bx1) = corners(a), corners(b)
        wi, hi = min(ax1, bx1) - max(ax0, bx0), min(ay1, by1) - max(ay0, by0)
        if wi <= 0 or hi <= 0:
            return 0.0
        inter = wi * hi
        return inter / ((ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter)

    selected = []
    for b in range(boxes.shape[0]):
        for k in range(scores.shape[1]):
            order = sorted(range(boxes.shape[1]), key=lambda i: -scores[b, k, i])
            kept = []
            for i in order:
                if scores[b, k, i] >= score_threshold and all(
                        iou(boxes[b, i], boxes[b, j]) <= iou_threshold for j in kept):
                    kept.append(i)
            selected += [(b, k, i) for i in kept[:max_output_boxes_per_class]]
    return np.array(selected, np.int64).reshape(-1, 3)


def _clustered_boxes(b, n):
    centres = _D.uniform(0.0, 3.0, b, n, 2)
    half = _D.uniform(0.25, 0.75, b, n, 2)
    return np.concatenate([centres - half, centres + half], 2)[..., [1, 0, 3, 2]].astype(
        np.float32)


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
        "onnx_resize": Entry(
            [Case((_D.normal(1, 2, 3, 4),), {"scales": (1.0, 1.0, 2.0, 1.5)}),
             Case((_D.normal(2, 5, 7),), {"sizes": (2, 8, 3), "mode": "linear"}),
             Case((_D.normal(1, 4, 5),), {"scales": (1.0, 1.5, 0.6), "mode": "cubic",
                                          "exclude_outside": 1,
                                          "coordinate_transformation_mode": "asymmetric"}),
             Case((_D.normal(3, 6),), {"sizes": (3, 4), "mode": "nearest", "nearest_mode": "floor",
                                       "coordinate_transformation_mode": "align_corners"}),
             Case((_D.normal(2, 6, 8),), {"sizes": (2, 5, 4), "mode": "linear",
                                          "coordinate_transformation_mode": "tf_crop_and_resize",
                                          "roi": (0.0, 0.2, -0.1, 1.0, 0.9, 1.2),
                                          "extrapolation_value": -3.0})],
            ref_onnx_resize, atol=1e-5),
        "onnx_non_max_suppression": Entry(
            [Case((_clustered_boxes(2, 10), _D.uniform(0.0, 1.0, 2, 3, 10)),
                  {"max_output_boxes_per_class": 6, "iou_threshold": 0.3,
                   "score_threshold": 0.1}),
             Case((_clustered_boxes(1, 8), _D.uniform(0.0, 1.0, 1, 2, 8)), {})],
            ref_onnx_non_max_suppression,
            no_grad="selects indices (integers); NNabla 1.39 has no backward"),
    }

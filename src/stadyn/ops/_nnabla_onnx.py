"""NNabla's ONNX-compatible functions: ``onnx_resize`` (ONNX's Resize) and
``onnx_non_max_suppression`` (ONNX's NonMaxSuppression), as NNabla 1.39 computes them.

``onnx_resize`` interpolates the axes whose scale is not 1, one axis at a time: each axis gets
an ``(out, in)`` matrix of interpolation weights computed from NNabla's source coordinates (in
float32, as NNabla computes them), so the op is differentiable (NNabla 1.39's refuses a
backward).  ``onnx_non_max_suppression`` selects boxes greedily per batch and class; how many
it keeps depends on the values, so a static graph holding it runs eagerly (``value_shape``).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([[[[1.0, 2.0], [3.0, 4.0]]]]))
    >>> with sd.auto_forward():
    ...     y = F.onnx_resize(x, scales=(1.0, 1.0, 2.0, 2.0))
    >>> y.d[0, 0].tolist()
    [[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 4.0, 4.0], [3.0, 3.0, 4.0, 4.0]]
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ._registry import op

_C = "vision"
_COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                     "tf_half_pixel_for_nn", "tf_crop_and_resize")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_MODES = ("nearest", "linear", "cubic")


# -- onnx_resize --------------------------------------------------------------------------------
def _resize_geometry(shape, scales, sizes):
    """``(output shape, float32 scale per axis)`` as NNabla computes them: ``sizes`` give the
    shape and ``size_out / size_in``; ``scales`` give ``floor(size_in * scale)``."""
    scales, sizes = tuple(float(s) for s in scales), tuple(int(s) for s in sizes)
    if bool(scales) == bool(sizes):
        raise ValueError("onnx_resize: give exactly one of scales and sizes")
    given = scales or sizes
    if len(given) != len(shape):
        raise ValueError(f"onnx_resize: {'scales' if scales else 'sizes'} {given} must have one "
                         f"entry per axis of x {tuple(shape)}")
    if sizes:
        return sizes, [np.float32(o) / np.float32(i) for o, i in zip(sizes, shape)]
    out = tuple(int(math.floor(np.float32(i) * np.float32(s))) for i, s in zip(shape, scales))
    return out, [np.float32(s) for s in scales]


def _source(mode, scale, n_out, n_in, roi_start, roi_end):
    """NNabla's source coordinate of every output index of one axis (float32)."""
    f32 = torch.float32
    x = torch.arange(n_out, dtype=f32)
    s = torch.tensor(scale, dtype=f32)
    one = torch.tensor(1.0, dtype=f32)
    if mode == "half_pixel":
        return (x + 0.5) / s - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / s - 0.5 if n_out > 1 else torch.zeros(n_out, dtype=f32)
    if mode == "align_corners":
        if n_out == 1:
            return torch.zeros(n_out, dtype=f32)
        return x * (torch.tensor(float(n_in), dtype=f32) - one) / (
            torch.tensor(float(n_out), dtype=f32) - one)
    if mode == "asymmetric":
        return x / s
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / s
    start, end = torch.tensor(roi_start, dtype=f32), torch.tensor(roi_end, dtype=f32)
    span = torch.tensor(float(n_in), dtype=f32) - one
    if n_out > 1:
        return start * span + x * (end - start) * span / (
            torch.tensor(float(n_out), dtype=f32) - one)
    return torch.full((n_out,), float(np.float32(0.5) * (np.float32(roi_start)
                                                          + np.float32(roi_end))
                                      * np.float32(n_in - 1)), dtype=f32)


def _nearest_index(fx, nearest_mode):
    floor = torch.floor(fx)
    if nearest_mode == "floor":
        return floor
    if nearest_mode == "ceil":
        return torch.ceil(fx)
    away = torch.sign(fx) * torch.floor(fx.abs() + 0.5)     # std::round: half away from zero
    if nearest_mode == "round_prefer_ceil":
        return away
    return torch.where(fx == floor + 0.5, floor, away)


def _cubic_coefficients(fx, a, exclude_outside, n_in):
    """The four weights of the neighbours ``floor(fx) - 1 .. floor(fx) + 2`` (NNabla's)."""
    lx = fx - torch.floor(fx)

    def near(x):                      # 0 <= x <= 1
        return (a + 2.0) * x ** 3 - (a + 3.0) * x ** 2 + 1.0

    def far(x):                       # 1 <= x <= 2
        return a * x ** 3 - 5.0 * a * x ** 2 + 8.0 * a * x - 4.0 * a
    c = torch.stack([far(1.0 + lx), near(lx), near(1.0 - lx), far(2.0 - lx)], 1)
    if exclude_outside:
        base = torch.floor(fx).to(torch.int64).unsqueeze(1) + torch.arange(-1, 3)
        c = torch.where((base < 0) | (base >= n_in), torch.zeros_like(c), c)
        c = c / c.sum(1, keepdim=True)
    return c


def _axis_weights(fx, n_in, mode, cubic_coeff_a, exclude_outside, nearest_mode):
    """The ``(out, in)`` float32 interpolation matrix of one axis."""
    n_out = fx.shape[0]
    weights = torch.zeros(n_out, n_in, dtype=torch.float32)
    rows = torch.arange(n_out)
    if mode == "nearest":
        index = _nearest_index(fx, nearest_mode).clamp(0, n_in - 1).to(torch.int64)
        weights[rows, index] = 1.0
        return weights
    floor = torch.floor(fx).to(torch.int64)
    if mode == "linear":
        x0 = floor.clamp(0, n_in - 1)
        right = fx - x0.to(torch.float32)
        columns = torch.stack([x0, (floor + 1).clamp(0, n_in - 1)], 1)
        coefficients = torch.stack([1.0 - right, right], 1)
    else:
        columns = (floor.unsqueeze(1) + torch.arange(-1, 3)).clamp(0, n_in - 1)
        coefficients = _cubic_coefficients(fx, float(cubic_coeff_a), exclude_outside, n_in)
    weights.index_put_((rows.unsqueeze(1).expand_as(columns), columns), coefficients,
                       accumulate=True)
    return weights


def _resize_shape(x, roi=(), scales=(), sizes=(), mode="nearest",
                  coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75,
                  exclude_outside=0, extrapolation_value=0.0,
                  nearest_mode="round_prefer_floor"):
    out, _ = _resize_geometry(tuple(x.shape), scales, sizes)
    return torch.empty(out, dtype=x.dtype, device="meta").requires_grad_(x.requires_grad)


@op(1, category=_C, shape=_resize_shape)
def onnx_resize(x, roi=(), scales=(), sizes=(), mode="nearest",
                coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75,
                exclude_outside=0, extrapolation_value=0.0, nearest_mode="round_prefer_floor"):
    """``x`` resized as ONNX's Resize (NNabla's ``onnx_resize``): give ``scales`` (output size
    ``floor(size * scale)``) or ``sizes``, one per axis; ``mode`` ``"nearest"`` (rounded by
    ``nearest_mode``: ``"round_prefer_floor"``, ``"round_prefer_ceil"``, ``"floor"``,
    ``"ceil"``), ``"linear"`` or ``"cubic"`` (``cubic_coeff_a``; ``exclude_outside`` drops and
    renormalises the weights of neighbours outside ``x``); ``coordinate_transformation_mode``
    ``"half_pixel"``, ``"pytorch_half_pixel"``, ``"align_corners"``, ``"asymmetric"``,
    ``"tf_half_pixel_for_nn"`` or ``"tf_crop_and_resize"`` (``roi``: the starts of every axis,
    then the ends, normalised; outside them ``extrapolation_value``).  Axes whose scale is 1
    are copied.  Differentiable (NNabla 1.39's has no backward).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([[0.0, 1.0, 2.0]]))
        >>> with sd.auto_forward():
        ...     y = F.onnx_resize(x, sizes=(1, 5), mode="linear",
        ...                       coordinate_transformation_mode="align_corners")
        >>> y.d.tolist()
        [[0.0, 0.5, 1.0, 1.5, 2.0]]
    """
    if mode not in _MODES:
        raise ValueError(f"onnx_resize: mode {mode!r} must be one of {', '.join(_MODES)}")
    if coordinate_transformation_mode not in _COORDINATE_MODES:
        raise ValueError(f"onnx_resize: coordinate_transformation_mode "
                         f"{coordinate_transformation_mode!r} must be one of "
                         f"{', '.join(_COORDINATE_MODES)}")
    if mode == "nearest" and nearest_mode not in _NEAREST_MODES:
        raise ValueError(f"onnx_resize: nearest_mode {nearest_mode!r} must be one of "
                         f"{', '.join(_NEAREST_MODES)}")
    crop = coordinate_transformation_mode == "tf_crop_and_resize"
    if crop and len(roi) != 2 * x.ndim:
        raise ValueError(f"onnx_resize: roi must hold {2 * x.ndim} numbers (the starts of every "
                         f"axis, then the ends) for tf_crop_and_resize, got {len(roi)}")
    out_shape, axis_scales = _resize_geometry(tuple(x.shape), scales, sizes)
    y, inside = x, None
    for axis, (n_in, n_out, scale) in enumerate(zip(x.shape, out_shape, axis_scales)):
        if scale == np.float32(1.0):
            continue                              # NNabla: the source index is the output's
        fx = _source(coordinate_transformation_mode, scale, n_out, n_in,
                     float(roi[axis]) if crop else 0.0, float(roi[x.ndim + axis]) if crop
                     else 0.0)
        weights = _axis_weights(fx, n_in, mode, cubic_coeff_a, bool(exclude_outside),
                                nearest_mode).to(device=x.device, dtype=x.dtype)
        y = torch.tensordot(y, weights, dims=([axis], [1])).movedim(-1, axis)
        if crop:
            valid = ((fx >= 0) & (fx <= float(n_in - 1))).to(x.device)
            view = [1] * x.ndim
            view[axis] = n_out
            valid = valid.reshape(view)
            inside = valid if inside is None else inside & valid
    if inside is not None:
        y = torch.where(inside, y, torch.full_like(y, float(extrapolation_value)))
    return y if y is not x else x.view_as(x)


# -- onnx_non_max_suppression ------------------------------------------------------------------
def _iou_matrix(boxes, center_point_box):
    """IoU of every pair of ``boxes`` (N, 4), as NNabla computes it (0 without overlap)."""
    if center_point_box == 0:
        y0, y1 = torch.minimum(boxes[:, 0], boxes[:, 2]), torch.maximum(boxes[:, 0], boxes[:, 2])
        x0, x1 = torch.minimum(boxes[:, 1], boxes[:, 3]), torch.maximum(boxes[:, 1], boxes[:, 3])
    else:
        xc, yc, w, h = boxes.unbind(1)
        x0, x1, y0, y1 = xc - w / 2, xc + w / 2, yc - h / 2, yc + h / 2
    wi = torch.minimum(x1[:, None], x1[None]) - torch.maximum(x0[:, None], x0[None])
    hi = torch.minimum(y1[:, None], y1[None]) - torch.maximum(y0[:, None], y0[None])
    if center_point_box == 0:
        area = (x1 - x0) * (y1 - y0)
    else:
        area = boxes[:, 2] * boxes[:, 3]
    intersection = wi * hi
    iou = intersection / (area[:, None] + area[None] - intersection)
    return torch.where((wi <= 0) | (hi <= 0), torch.zeros_like(iou), iou)


def _nms_shape(boxes, scores, center_point_box=0, max_output_boxes_per_class=0,
               iou_threshold=0.0, score_threshold=0.0):
    _check_nms(boxes, scores, center_point_box, max_output_boxes_per_class)
    most = boxes.shape[0] * scores.shape[1] * min(boxes.shape[1], int(max_output_boxes_per_class))
    return torch.empty((most, 3), dtype=torch.int64, device="meta")


def _check_nms(boxes, scores, center_point_box, max_output_boxes_per_class):
    if boxes.ndim != 3 or boxes.shape[2] != 4:
        raise ValueError(f"onnx_non_max_suppression: boxes {tuple(boxes.shape)} must be "
                         "(B, N, 4)")
    if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise ValueError(f"onnx_non_max_suppression: scores {tuple(scores.shape)} must be "
                         f"(B={boxes.shape[0]}, C, N={boxes.shape[1]})")
    if center_point_box not in (0, 1):
        raise ValueError(f"onnx_non_max_suppression: center_point_box must be 0 or 1, got "
                         f"{center_point_box}")
    if int(max_output_boxes_per_class) < 0:
        raise ValueError("onnx_non_max_suppression: max_output_boxes_per_class must be "
                         f"non-negative, got {max_output_boxes_per_class}")


@op(2, category=_C, shape=_nms_shape, value_shape="the number of boxes selected")
def onnx_non_max_suppression(boxes, scores, center_point_box=0, max_output_boxes_per_class=0,
                             iou_threshold=0.0, score_threshold=0.0):
    """The boxes that survive non-maximum suppression, as ONNX's NonMaxSuppression (NNabla's
    ``onnx_non_max_suppression``): ``boxes`` ``(B, N, 4)`` (``center_point_box=0``: two
    opposite corners ``y1, x1, y2, x2``; ``1``: ``x_center, y_center, width, height``),
    ``scores`` ``(B, C, N)``.  Per batch and class, boxes scoring at least ``score_threshold``
    are taken by decreasing score (ties in index order), each suppressing the later ones whose
    IoU with it exceeds ``iou_threshold``; at most ``max_output_boxes_per_class`` are kept (0:
    none, NNabla's default).  Returns ``(M, 3)`` indices ``batch, class, box`` (int64 where
    NNabla's are uint64); no gradient.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> boxes = sd.Variable.from_numpy_array(np.array(
        ...     [[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 5, 1, 6]]], np.float32))
        >>> scores = sd.Variable.from_numpy_array(np.array([[[0.9, 0.8, 0.7]]], np.float32))
        >>> with sd.auto_forward():
        ...     y = F.onnx_non_max_suppression(boxes, scores, max_output_boxes_per_class=5,
        ...                                    iou_threshold=0.5)
        >>> y.d.tolist()
        [[0, 0, 0], [0, 0, 2]]
    """
    _check_nms(boxes, scores, center_point_box, max_output_boxes_per_class)
    keep_at_most = int(max_output_boxes_per_class)
    selected: list[tuple[int, int, int]] = []
    device = boxes.device
    boxes, scores = boxes.detach().cpu(), scores.detach().cpu()
    for b in range(boxes.shape[0] if keep_at_most > 0 else 0):
        iou = _iou_matrix(boxes[b], int(center_point_box)) > float(iou_threshold)
        for k in range(scores.shape[1]):
            order = torch.sort(scores[b, k], descending=True, stable=True).indices.tolist()
            alive = (scores[b, k] >= float(score_threshold)).tolist()
            kept = 0
            for position, i in enumerate(order):
                if not alive[i]:
                    continue
                selected.append((b, k, i))
                kept += 1
                if kept >= keep_at_most:
                    break
                for j in order[position + 1:]:
                    if alive[j] and iou[i, j]:
                        alive[j] = False
    return torch.tensor(selected, dtype=torch.int64, device=device).reshape(-1, 3)

"""NNabla's detection and image-warping functions: ``roi_align`` (Mask R-CNN's region
features), ``warp_by_flow`` (an image moved by a flow field), ``nms_detection2d`` (YOLO's
non-maximum suppression) and ``patch_correlation`` (FlowNet's correlation), as NNabla 1.39
computes them.

``roi_align``'s default sampling grid depends on the boxes' values (``ceil`` of each box's
bin size), so the op reads the boxes on the host: it is declared ``traceable=False`` and a
static graph holding it runs eagerly (its plan's one-line reason says so); its output shape
depends on nothing but the arguments, so static shape inference still works.  So does
``nms_detection2d`` (its suppression is a sequence of data-dependent decisions).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = np.ones((1, 1, 4, 4), np.float32); x[..., 1:3, 1:3] = 2.0
    >>> boxes = np.array([[0, 0, 0, 4, 4], [0, 1, 1, 3, 3]], np.float32)
    >>> with sd.auto_forward():
    ...     y = F.roi_align(sd.Variable.from_numpy_array(x), sd.Variable.from_numpy_array(boxes),
    ...                     (2, 2))
    >>> y.d[:, 0].tolist()
    [[[1.25, 1.25], [1.25, 1.25]], [[2.0, 2.0], [2.0, 2.0]]]
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as TF

from ._registry import op

_C = "nn"


def _roi_align_shape(input, boxes, output_size, spatial_scale=(1.0, 1.0),  # noqa: A002
                     sampling_ratio=None, channel_last=None):
    _check_roi_align(input, boxes, output_size, spatial_scale)
    k, (h, w) = boxes.shape[0], (int(s) for s in output_size)
    c = input.shape[3] if channel_last else input.shape[1]
    shape = (k, h, w, c) if channel_last else (k, c, h, w)
    return torch.empty(shape, dtype=input.dtype, device="meta").requires_grad_(
        input.requires_grad)


def _check_roi_align(input, boxes, output_size, spatial_scale):  # noqa: A002
    if input.ndim != 4:
        raise ValueError(f"roi_align: input {tuple(input.shape)} must be 4-D")
    if boxes.ndim != 2 or boxes.shape[1] != 5:
        raise ValueError(f"roi_align: boxes {tuple(boxes.shape)} must be (K, 5): (batch index, "
                         "x1, y1, x2, y2) per row")
    if len(tuple(output_size)) != 2 or min(int(s) for s in output_size) <= 0:
        raise ValueError(f"roi_align: output_size {tuple(output_size)} must be a positive "
                         "(height, width)")
    if len(tuple(spatial_scale)) != 2:
        raise ValueError(f"roi_align: spatial_scale {tuple(spatial_scale)} must be a pair")


def _axis_weights(start, stop, bins, ratio, size):
    """``(bins, size)``: the weights of the input rows (or columns) that the bilinear samples
    of each output bin read, summed over the bin's sampling grid (NNabla's float32 arithmetic:
    a sample outside ``[-1, size]`` counts as zero, the rest are clamped into the image)."""
    f32 = torch.float32
    start, stop = torch.tensor(start, dtype=f32), torch.tensor(stop, dtype=f32)
    step = (stop - start) / bins
    grid = ratio if ratio > 0 else int(math.ceil(float(step)))
    weights = torch.zeros(bins, size, dtype=torch.float64)
    if grid <= 0:
        return weights, 1
    sub = step / grid
    half = torch.tensor(0.5, dtype=f32) * sub
    first = start + torch.arange(bins, dtype=f32)[:, None] * step
    pos = first + torch.arange(grid, dtype=f32)[None, :] * sub + half
    valid = (pos >= -1) & (pos <= size)
    pos = pos.clamp(0, size - 1)
    lo = pos.floor()
    frac = pos - lo
    lo = lo.long()
    hi = (lo + 1).clamp(max=size - 1)
    rows = torch.arange(bins)[:, None].expand_as(lo)
    keep = valid.double()
    weights.index_put_((rows, lo), (1.0 - frac).double() * keep, accumulate=True)
    weights.index_put_((rows, hi), frac.double() * keep, accumulate=True)
    return weights, grid


@op(2, category=_C, shape=_roi_align_shape, traceable=False)
def roi_align(input, boxes, output_size, spatial_scale=(1.0, 1.0), sampling_ratio=None,  # noqa: A002
              channel_last=None):
    """Features of ``output_size`` ``(height, width)`` for each box of ``boxes`` ``(K, 5)``
    (rows ``(b, x1, y1, x2, y2)``, ``b`` the sample of ``input``), each bin the mean of
    bilinear samples on a grid of ``sampling_ratio`` points per axis (``None`` or <= 0: the
    ceiling of the bin's size) -- NNabla's ``roi_align`` (Mask R-CNN).  Box coordinates are
    multiplied by ``spatial_scale`` ``(y, x)``.  ``channel_last``: NHWC input and output (which
    NNabla 1.39 runs on CUDA only).  Backward: the input's gradient; the boxes get none.
    Runs eagerly in a static graph (the grid depends on the boxes' values).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.arange(1, 13, dtype=np.float32).reshape(1, 1, 3, 4))
        >>> b = sd.Variable.from_numpy_array(np.array([[0, 1 / 4, 1 / 3, 3 / 4, 2 / 3]]))
        >>> with sd.auto_forward():
        ...     y = F.roi_align(x, b, (1, 2), spatial_scale=(3, 4))
        >>> y.d.tolist()
        [[[[6.0, 7.0]]]]
    """
    _check_roi_align(input, boxes, output_size, spatial_scale)
    ratio = -1 if sampling_ratio is None else int(sampling_ratio)
    oh, ow = (int(s) for s in output_size)
    scale_y, scale_x = (float(torch.tensor(s, dtype=torch.float32)) for s in spatial_scale)
    x = input.permute(0, 3, 1, 2) if channel_last else input
    n, _, h, w = x.shape
    outs = []
    for b, x1, y1, x2, y2 in boxes.detach().to("cpu", torch.float32).tolist():
        index = int(b)
        if not 0 <= index < n:
            raise ValueError(f"roi_align: batch index {index} of a box is not within the "
                             f"{n} input samples")
        f32 = torch.float32
        sx, sy = torch.tensor(scale_x, dtype=f32), torch.tensor(scale_y, dtype=f32)
        half = torch.tensor(0.5, dtype=f32)
        wy, gy = _axis_weights(float(torch.tensor(y1, dtype=f32) * sy - half),
                               float(torch.tensor(y2, dtype=f32) * sy - half), oh, ratio, h)
        wx, gx = _axis_weights(float(torch.tensor(x1, dtype=f32) * sx - half),
                               float(torch.tensor(x2, dtype=f32) * sx - half), ow, ratio, w)
        wy = (wy / (gy * gx)).to(x.dtype).to(x.device)
        wx = wx.to(x.dtype).to(x.device)
        outs.append(torch.einsum("ih,chw,jw->cij", wy, x[index], wx))
    y = torch.stack(outs) if outs else x.new_zeros((0, x.shape[1], oh, ow))
    return y.permute(0, 2, 3, 1) if channel_last else y


@op(2, category=_C)
def warp_by_flow(data, flow):
    """``data`` ``(N, C, H, W)`` moved by ``flow`` ``(N, 2, H, W)``: each output pixel ``(y,
    x)`` is the bilinear interpolation of ``data`` at ``(y + flow[:, 1], x + flow[:, 0])``,
    positions outside the image taking the closest border pixel (NNabla's ``warp_by_flow``).
    Backward: gradients for both ``data`` and ``flow``.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> d = sd.Variable.from_numpy_array(np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4))
        >>> f = sd.Variable.from_numpy_array(np.full((1, 2, 1, 4), 0.5, np.float32))
        >>> with sd.auto_forward():
        ...     y = F.warp_by_flow(d, f)
        >>> y.d.ravel().tolist()
        [0.5, 1.5, 2.5, 3.0]
    """
    if data.ndim != 4 or flow.ndim != 4 or flow.shape[1] != 2 or flow.shape[0] != data.shape[0] \
            or tuple(flow.shape[2:]) != tuple(data.shape[2:]):
        raise ValueError(f"warp_by_flow: data {tuple(data.shape)} must be (N, C, H, W) and flow "
                         f"{tuple(flow.shape)} (N, 2, H, W)")
    n, c, h, w = data.shape
    flow = flow.to(data.dtype)
    xf = torch.arange(w, dtype=data.dtype, device=data.device) + flow[:, 0]
    yf = torch.arange(h, dtype=data.dtype, device=data.device)[:, None] + flow[:, 1]
    x0, y0 = xf.detach().floor(), yf.detach().floor()
    xl, xr = x0.clamp(0, w - 1), (x0 + 1).clamp(0, w - 1)
    yt, yb = y0.clamp(0, h - 1), (y0 + 1).clamp(0, h - 1)
    alpha, beta = (xf - xl)[:, None], (yf - yt)[:, None]
    flat = data.reshape(n, c, h * w)

    def at(yy, xx):
        index = (yy * w + xx).long().reshape(n, 1, h * w).expand(n, c, h * w)
        return flat.gather(2, index).reshape(n, c, h, w)

    tl, tr, bl, br = at(yt, xl), at(yt, xr), at(yb, xl), at(yb, xr)
    upper = alpha * (tr - tl) + tl
    lower = alpha * (br - bl) + bl
    return beta * (lower - upper) + upper


def _nms_shape(x, thresh=None, nms=None, nms_per_class=None):
    _check_nms(x)
    return torch.empty(x.shape, dtype=x.dtype, device="meta")


def _check_nms(x):
    if x.ndim != 3 or x.shape[2] <= 5:
        raise ValueError(f"nms_detection2d: the input {tuple(x.shape)} must be (B, N, 5 + C): "
                         "x, y, w, h, objectness and C class probabilities per box")


def _iou(boxes):
    """``(N, N)`` IoU of centre-size boxes ``(N, 4)`` (float32, NNabla's arithmetic)."""
    x, y, w, h = (boxes[:, k] for k in range(4))
    ow = (np.minimum((x + w / 2)[:, None], (x + w / 2)[None])
          - np.maximum((x - w / 2)[:, None], (x - w / 2)[None]))
    oh = (np.minimum((y + h / 2)[:, None], (y + h / 2)[None])
          - np.maximum((y - h / 2)[:, None], (y - h / 2)[None]))
    inter = ow * oh
    union = (w * h)[:, None] + (w * h)[None] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / union
    return np.where((ow <= 0) | (oh <= 0), np.float32(0), iou).astype(np.float32)


@op(1, category=_C, shape=_nms_shape, traceable=False)
def nms_detection2d(x, thresh=None, nms=None, nms_per_class=None):
    """Non-maximum suppression of 2-D detections ``(B, N, 5 + C)`` (rows ``x, y, w, h``,
    objectness, ``C`` class probabilities), NNabla's ``nms_detection2d``: the boxes are copied;
    the objectness below ``thresh`` (default 0.5) becomes 0, each class score is ``objectness *
    probability`` (0 below ``thresh``); then a box overlapping a higher-scored one by an IoU
    above ``nms`` (default 0.45) is suppressed -- per class (``nms_per_class``, default True:
    that class's score becomes 0, greedily from the highest) or by objectness (all its scores
    become 0).  No gradient (NNabla's backward computes none).  Runs eagerly in a static graph.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> d = np.array([[[0.5, 0.5, 0.4, 0.4, 0.9, 1.0],
        ...                [0.52, 0.5, 0.4, 0.4, 0.8, 1.0],
        ...                [0.1, 0.1, 0.1, 0.1, 0.7, 1.0]]], np.float32)
        >>> with sd.auto_forward():
        ...     y = F.nms_detection2d(sd.Variable.from_numpy_array(d))
        >>> [round(float(v), 2) for v in y.d[0, :, 5]]
        [0.9, 0.0, 0.7]
    """
    _check_nms(x)
    thresh = np.float32(0.5 if thresh is None else thresh)
    nms = np.float32(0.45 if nms is None else nms)
    per_class = True if nms_per_class is None else bool(nms_per_class)
    d = x.detach().to("cpu", torch.float32).numpy()
    y = d.copy()
    obj = np.where(d[..., 4] < thresh, np.float32(0), d[..., 4])
    y[..., 4] = obj
    scores = obj[..., None] * d[..., 5:]
    y[..., 5:] = np.where(scores < thresh, np.float32(0), scores)
    for b in range(d.shape[0]):
        iou = _iou(y[b, :, :4])
        if per_class:
            for k in range(d.shape[2] - 5):
                prob = y[b, :, 5 + k]
                order = np.argsort(-prob, kind="stable")
                for pos, i in enumerate(order):
                    if prob[i] == 0:
                        continue
                    later = order[pos + 1:]
                    prob[later[iou[i, later] > nms]] = 0
        else:
            rank = np.empty(d.shape[1], np.int64)
            rank[np.argsort(-obj[b], kind="stable")] = np.arange(d.shape[1])
            above = rank[:, None] < rank[None, :]            # [j, i]: j ranks above i
            hit = (above & (iou > nms)).any(0) & (obj[b] != 0)
            y[b, hit, 4:] = 0
    return torch.from_numpy(y).to(device=x.device, dtype=x.dtype)


def _pair(v, name, n=2):
    v = (int(v),) * n if isinstance(v, int) else tuple(int(a) for a in v)
    if len(v) != n:
        raise ValueError(f"patch_correlation: {name} {v} must have {n} values")
    return v


@op(2, category=_C)
def patch_correlation(x1, x2, patch=(1, 1), shift=(0, 0), patch_step=(1, 1), shift_step=(1, 1),
                      padding=(0, 0, 0, 0), channel_last=False):
    """NNabla's ``patch_correlation`` (FlowNet's correlation layer): for each ``patch``
    position (every ``patch_step``, over the input zero-padded by ``padding`` ``(top, bottom,
    left, right)``, or ``(vertical, horizontal)``) and each shift ``(sy, sx)`` in
    ``-shift..shift`` by ``shift_step``, the sum over the patch and the channels of ``x1 * x2``
    shifted: ``(N, Cy, Cx, Ho, Wo)`` for NCHW inputs, ``(N, Ho, Wo, Cy, Cx)`` with
    ``channel_last``.  Gradients for both inputs.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones((1, 2, 3, 4)))
        >>> with sd.auto_forward():
        ...     y = F.patch_correlation(x, x, patch=(2, 3))
        >>> y.shape, float(y.d[0, 0, 0, 0, 0])
        ((1, 1, 1, 2, 2), 12.0)
    """
    if x1.ndim != 4 or tuple(x1.shape) != tuple(x2.shape):
        raise ValueError(f"patch_correlation: x1 {tuple(x1.shape)} and x2 {tuple(x2.shape)} "
                         "must be 4-D arrays of one shape")
    ph, pw = _pair(patch, "patch")
    sh, sw = _pair(shift, "shift")
    psh, psw = _pair(patch_step, "patch_step")
    ssh, ssw = _pair(shift_step, "shift_step")
    pad = (int(padding),) * 4 if isinstance(padding, int) else tuple(int(p) for p in padding)
    if len(pad) == 2:
        pad = (pad[0], pad[0], pad[1], pad[1])
    if len(pad) != 4 or min(pad) < 0 or min(ph, pw, psh, psw, ssh, ssw) <= 0 or min(sh, sw) < 0:
        raise ValueError("patch_correlation: patch, patch_step and shift_step must be positive, "
                         "shift and padding (top, bottom, left, right) not negative")
    a = x1 if channel_last else x1.permute(0, 2, 3, 1)
    b = x2 if channel_last else x2.permute(0, 2, 3, 1)
    n, h, w, _ = a.shape
    top, bottom, left, right = pad
    a = TF.pad(a, (0, 0, left, right, top, bottom))
    b = TF.pad(b, (0, 0, left + sw, right + sw, top + sh, bottom + sh))
    hp, wp = a.shape[1], a.shape[2]
    if hp < ph or wp < pw:
        raise ValueError(f"patch_correlation: the patch {(ph, pw)} is larger than the padded "
                         f"input {(hp, wp)}")
    box = a.new_ones((1, 1, ph, pw))
    maps = []
    for dy in range(-sh, sh + 1, ssh):
        for dx in range(-sw, sw + 1, ssw):
            shifted = b[:, sh + dy:sh + dy + hp, sw + dx:sw + dx + wp]
            corr = (a * shifted).sum(-1, keepdim=True).permute(0, 3, 1, 2)
            maps.append(TF.conv2d(corr, box, stride=(psh, psw))[:, 0])
    cy, cx = len(range(-sh, sh + 1, ssh)), len(range(-sw, sw + 1, ssw))
    y = torch.stack(maps, 1).reshape((n, cy, cx) + maps[0].shape[1:])
    return y.permute(0, 3, 4, 1, 2) if channel_last else y

"""``nnabla.functions``' detection and warping functions: ``roi_align`` (adaptive and fixed
sampling grids, scaled boxes, boxes reaching outside the image; the input's gradient) and
``warp_by_flow`` (flows reaching past the border; gradients of data and flow) and
``nms_detection2d`` (per class and by objectness), ``patch_correlation`` (shifts, steps,
padding, both layouts).
"""

import numpy as np

from compat_cases.nnabla_functions import fn_case


def _boxes(rows):
    def make(r, s):
        return np.array(rows, np.float32)
    return make


def _flow(r, s):
    v = r.randn(*s) * 1.7
    frac = v - np.floor(v)
    return np.where(np.abs(frac - 0.5) > 0.45, v + 0.2, v).astype(np.float32)  # no kinks


_BOXES = [[0, 0.5, 1.0, 6.5, 5.0], [1, 2.0, 0.0, 4.0, 3.5], [0, -1.5, -2.0, 9.0, 7.5],
          [1, 3.3, 2.1, 3.9, 2.6]]

fn_case("roi_align", lambda F, x, b: F.roi_align(x, b, (2, 3)), [(2, 3, 6, 8), (4, 5)],
        data=[None, _boxes(_BOXES)], grads=[0])
fn_case("roi_align__sampling_ratio", lambda F, x, b: F.roi_align(x, b, (3, 2), sampling_ratio=2),
        [(2, 2, 6, 8), (4, 5)], data=[None, _boxes(_BOXES)], grads=[0])
fn_case("roi_align__spatial_scale", lambda F, x, b: F.roi_align(
    x, b, (2, 2), spatial_scale=(0.5, 0.25), sampling_ratio=0), [(2, 2, 5, 4), (3, 5)],
    data=[None, _boxes([[1, 0, 0, 16, 10], [0, 4, 2, 12, 8], [1, 1, 3, 9, 9]])], grads=[0])
fn_case("roi_align__channel_last", lambda F, x, b: F.roi_align(x, b, (2, 3), channel_last=True),
        [(2, 6, 8, 3), (4, 5)], data=[None, _boxes(_BOXES)], grads=[0],
        real=lambda F, x, b: F.transpose(F.roi_align(F.transpose(x, (0, 3, 1, 2)), b, (2, 3)),
                                         (0, 2, 3, 1)),
        note="NNabla 1.39 refuses channel_last on CPU: its reference is the channel-first "
             "roi_align between transposes")
fn_case("warp_by_flow", lambda F, d, f: F.warp_by_flow(d, f), [(2, 3, 5, 6), (2, 2, 5, 6)],
        data=[None, _flow])


def _detections(r, s):
    """Boxes clustered so that many overlap; distinct scores (no ties), some below 0.5."""
    b, n, c = s
    d = np.zeros(s, np.float32)
    centres = r.rand(b, 3, 2)
    pick = r.randint(0, 3, (b, n))
    for i in range(b):
        d[i, :, :2] = centres[i, pick[i]] + r.randn(n, 2) * 0.04
    d[..., 2:4] = r.rand(b, n, 2, low=0.1, high=0.3)
    d[..., 4] = (r.rng.permutation(n * b).reshape(b, n) + 1.0) / (n * b + 1) * 0.5 + 0.45
    d[..., 5:] = r.rand(b, n, c - 5, low=0.3, high=1.0)
    return d


_NMS = ["nnabla.functions.nms_detection2d"]
fn_case("nms_detection2d", lambda F, x: F.nms_detection2d(x), [(2, 12, 8)],
        data=[_detections], grads=False, names=_NMS)
fn_case("nms_detection2d__by_objectness", lambda F, x: F.nms_detection2d(
    x, thresh=0.4, nms=0.3, nms_per_class=False), [(2, 12, 7)], data=[_detections],
    grads=False, names=_NMS)
fn_case("nms_detection2d__loose", lambda F, x: F.nms_detection2d(x, thresh=0.2, nms=0.7),
        [(1, 16, 6)], data=[_detections], grads=False, names=_NMS)


_PC = ["nnabla.functions.patch_correlation"]
fn_case("patch_correlation", lambda F, a, b: F.patch_correlation(a, b, patch=(2, 3)),
        [(2, 3, 5, 6), (2, 3, 5, 6)], names=_PC)
fn_case("patch_correlation__shift_steps_padding", lambda F, a, b: F.patch_correlation(
    a, b, patch=3, shift=(2, 1), patch_step=(2, 1), shift_step=(2, 1), padding=(1, 0, 2, 1)),
    [(1, 2, 7, 6), (1, 2, 7, 6)], names=_PC)
fn_case("patch_correlation__one_channel_int_padding", lambda F, a, b: F.patch_correlation(
    a, b, patch=(1, 2), shift=1, padding=1), [(2, 1, 4, 5), (2, 1, 4, 5)], names=_PC)
fn_case("patch_correlation__channel_last", lambda F, a, b: F.patch_correlation(
    a, b, patch=(2, 2), shift=(1, 2), padding=(1, 1), channel_last=True),
    [(1, 4, 5, 3), (1, 4, 5, 3)], names=_PC)

"""Region ops: ``crop_manual`` and ``roipooling`` -- values and gradients w.r.t. the feature
map (``op_case``, see cntk_ops.py).  ``crop_automatic`` and ``crop_automatic_with_ancestors``
are not in Stadyn's compat (docs/cntk-names.md says why)."""

import numpy as np

from compat_cases.cntk_ops import op_case

op_case("crop_manual", lambda C, x, ref: C.crop_manual(x, ref, 1, 2), [(2, 5, 6), (3, 3, 4)],
        grads=[0])
op_case("crop_manual__origin", lambda C, x, ref: C.crop_manual(x, ref, 0, 0) * 2.0,
        [(1, 4, 4), (1, 4, 2)], grads=[0], names=["cntk.ops.crop_manual"])


def _boxes(width, height, scale, outside=False):
    """Regions ``x1, y1, x2, y2`` in image pixels (the feature map is ``scale`` of the image):
    integer corners, so that the halves ``scale`` makes are rounded the way CNTK rounds them;
    ``outside``: the last region reaches past the image's right and bottom edges."""
    def make(r, shape):
        n, rois = shape[0], shape[1]
        w, h = width / scale, height / scale
        x1 = r.randint(0, int(w * 0.6), (n, rois))
        y1 = r.randint(0, int(h * 0.6), (n, rois))
        x2 = x1 + r.randint(1, int(w * 0.5), (n, rois))
        y2 = y1 + r.randint(1, int(h * 0.5), (n, rois))
        boxes = np.stack([x1, y1, x2, y2], axis=-1).astype(np.float32)
        if outside:
            boxes[:, -1] = [w - 2, h - 2, w + 6, h + 6]
        return boxes
    return make


op_case("roipooling", lambda C, fm, rois: C.roipooling(fm, rois, C.MAX_POOLING, (2, 3), 0.5),
        [(2, 6, 8), (3, 4)], data=[None, _boxes(8, 6, 0.5)], grads=[0])
op_case("roipooling__outside",
        lambda C, fm, rois: C.roipooling(fm, rois, C.MAX_POOLING, (3, 3), 1.0),
        [(3, 7, 7), (4, 4)], data=[None, _boxes(7, 7, 1.0, outside=True)], grads=[0],
        names=["cntk.ops.roipooling"],
        note="the last region reaches past the feature map: its bins there are clipped (empty "
             "ones give 0)")

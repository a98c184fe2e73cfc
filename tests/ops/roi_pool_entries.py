"""Harness entry of ``cntk_bin_max_pooling`` (CNTK 2.7's max pooling over bins, its
``ROIPooling``'s pooling; ``stadyn/ops/_roi_pool.py``), merged into ``test_ops.ENTRIES``, and
the NumPy loops ``test_roi_pool.py`` checks the op and ``cntk_semantics.roi_pooling`` against:
written bin by bin from the rules (CNTK's ``MaxROIPoolingForward``, Source/Math/
CPUMatrixImpl.h, and what the masked composition of 7f55448b did at -FLT_MAX), independently
of the op's sparse tables.
"""

from __future__ import annotations

import math

import numpy as np

from op_harness_types import Data

_D = Data(4099)

#: -FLT_MAX, where CNTK's scan over a bin starts.
LOWEST = -3.4028234663852886e38


def _positions(lo, hi, size):
    """The positions ``p`` with ``lo <= p < hi`` on an axis of ``size`` (none for NaN)."""
    if math.isnan(lo) or math.isnan(hi):
        return range(0)
    return range(max(0, math.ceil(lo)), min(size, max(0, math.ceil(hi))))


def bin_max_pooling_loop(x, rows, cols, g=None):
    """``(output, gradient of sum(output * g))`` of max pooling ``x`` ``(B, C, H, W)`` over
    the bins ``rows`` ``(B, R, PH, 2)``, ``cols`` ``(B, R, PW, 2)``, in ``x``'s type: a bin's
    largest value, NaN passed by, at least -FLT_MAX, 0 if empty (``stop <= start`` on an axis);
    the first largest in row-major order takes the gradient (a largest of -FLT_MAX only where
    no position outside the bin comes first in the map); CNTK 2.7's sums: a region's bins that
    chose a position added in row-major order from 0, then that sum added to the position's
    gradient, region after region."""
    b_, c_, h, w = x.shape
    r_, ph, pw = rows.shape[1], rows.shape[2], cols.shape[2]
    kind = x.dtype.type
    lowest = kind(LOWEST)
    out = np.zeros((b_, r_, c_, ph, pw), x.dtype)
    gx = np.zeros_like(x)
    every = np.arange(c_)
    for b in range(b_):
        for r in range(r_):
            sums = {}                                   # (channel, row, column): the region's
            for i in range(ph):
                for j in range(pw):
                    (ylo, yhi), (xlo, xhi) = rows[b, r, i], cols[b, r, j]
                    if yhi <= ylo or xhi <= xlo:
                        continue                                    # empty: 0
                    ys, xs = _positions(ylo, yhi, h), _positions(xlo, xhi, w)
                    if not ys or not xs:                            # NaN bounds: nothing
                        out[b, r, :, i, j] = lowest
                        continue
                    window = x[b][:, ys.start:ys.stop, xs.start:xs.stop].reshape(c_, -1)
                    window = np.where(np.isnan(window), -np.inf, window)
                    first = window.argmax(1)                        # the first largest
                    best = window[every, first]
                    out[b, r, :, i, j] = np.maximum(best, lowest)
                    row = ys.start + first // len(xs)
                    col = xs.start + first % len(xs)
                    passes = best > lowest
                    if ylo <= 0 and xlo <= 0:       # (the bin starts at the map's corner)
                        passes |= (best == lowest) & ((xs.stop == w) | (row == 0))
                    if g is not None:
                        for c in every[passes]:
                            at = (c, row[c], col[c])
                            sums[at] = sums.get(at, kind(0)) + g[b, r, c, i, j].astype(kind)
            for (c, y, x_), total in sums.items():
                gx[b, c, y, x_] += total
    return out, gx


def _half_away(v):
    return math.copysign(math.floor(abs(v) + 0.5), v)


def region_bins(rois, output_shape, spatial_scale, h, w, dtype):
    """CNTK's bins of regions ``rois`` ``(B, R, 4)`` (x1, y1, x2, y2 in the image's pixels):
    the corners scaled in double precision and rounded half away from zero, then in the map's
    type ``s = max(last - first + 1, 1) / bins`` and bin ``k`` from ``first + floor(k s)`` to
    ``first + ceil((k + 1) s)``, clipped to the axis.  Returns ``rows``, ``cols`` as the op
    takes them."""
    kind = np.dtype(dtype).type
    ph, pw = output_shape
    b_, r_ = rois.shape[:2]
    rows = np.zeros((b_, r_, ph, 2), dtype)
    cols = np.zeros((b_, r_, pw, 2), dtype)
    for b in range(b_):
        for r in range(r_):
            x1, y1, x2, y2 = (kind(_half_away(float(np.float64(v) * spatial_scale)))
                              for v in rois[b, r])
            for out, first, last, n, size in ((cols, x1, x2, pw, w), (rows, y1, y2, ph, h)):
                step = kind(max(kind(last - first + kind(1)), kind(1)) / kind(n))
                for k in range(n):
                    lo = kind(np.floor(kind(k) * step) + first)
                    hi = kind(np.ceil(kind(k + 1) * step) + first)
                    out[b, r, k] = (min(max(lo, 0), size), min(max(hi, 0), size))
    return rows, cols


def _bins(starts, sizes):
    return np.array([[[[s, s + n] for s, n in zip(starts, sizes)]]], np.float32)


def ref_bin_max_pooling(x, rows, cols):
    return bin_max_pooling_loop(x, rows, cols)[0]


def roi_pool_entries(Case, Entry) -> dict:
    why = "the bins' bounds get no gradient (CNTK's ROIPooling gives the regions none)"
    x = _D.distinct(2, 3, 6, 7)
    # two images, two regions: overlapping bins, a bin one row high, an empty bin (stop <=
    # start), a bin clipped at the edge, a bin of the whole map
    rows = np.concatenate([_bins([0, 2, 3], [3, 2, 1]), _bins([5, 0, 4], [1, 6, 0])], 1)
    cols = np.concatenate([_bins([0, 3], [4, 4]), _bins([6, 0], [1, 7])], 1)
    rows = np.concatenate([rows, rows[:, ::-1]], 0)
    cols = np.concatenate([cols, cols[:, ::-1]], 0)
    return {"cntk_bin_max_pooling": Entry(
        [Case((x, rows, cols)), Case((_D.distinct(1, 2, 4, 4), _bins([0, 1], [2, 3]),
                                      _bins([1, 0, 2], [3, 1, 2])))],
        ref_bin_max_pooling, grad_inputs=(0,), why_not_others=why)}

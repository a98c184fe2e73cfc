"""CNTK's ROI pooling (``stadyn.cntk_semantics.roi_pooling``: ``C.roipooling`` and a loaded
CNTK file's ``ROIPooling``) over the op ``cntk_bin_max_pooling`` (``stadyn/ops/_roi_pool.py``),
against NumPy loops written bin by bin from the rules (``roi_pool_entries.py``): values and
gradients bit for bit, NaN, ties, -inf and -FLT_MAX, empty bins, regions off the map, float32
and float64, static and dynamic graphs; and its memory: no intermediate of the map's size per
region.

Before (7f55448b) ``roi_pooling`` was a composition of masks over a ``(B, R, C, H, pw, W)``
intermediate: the memory test's 32 regions of a 64-channel 32x32 map grew the process by
~325 MB (a Fast R-CNN head's 2000 regions of a 512-channel 38x38 map would need ~40 GB per
such tensor); the CNTK 2.7 fixtures (``tests/fixtures/cntk_roipooling/``, the compat cases
``roipooling*``) check the numbers against CNTK itself.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import stadyn as sd
import stadyn.cntk_semantics as S
import stadyn.functions as F
from roi_pool_entries import LOWEST, bin_max_pooling_loop, region_bins

FLT_MAX = np.finfo(np.float32).max


def _map(rng, shape, dtype, special=True):
    """A feature map with ties (small integers), NaN, infinities, -FLT_MAX and, in float64,
    numbers below it."""
    x = rng.integers(-3, 4, shape).astype(dtype)
    if special:
        u = rng.random(shape)
        x[u < 0.08] = np.nan
        x[(u >= 0.08) & (u < 0.12)] = -np.inf
        x[(u >= 0.12) & (u < 0.16)] = -FLT_MAX
        x[(u >= 0.16) & (u < 0.18)] = np.inf
        if dtype == np.float64:
            x[(u >= 0.18) & (u < 0.22)] = -1e300
    return x


def _regions(rng, b, r, h, w, scale):
    """Regions in the image's pixels, some reaching past the map, some reversed (x2 < x1),
    corners on halves (CNTK rounds them half away from zero)."""
    rois = rng.uniform(-3, max(h, w) / scale + 3, (b, r, 4))
    rois = (np.round(rois * 2) / 2).astype(np.float32)
    swap = rng.random((b, r)) < 0.7
    rois[swap, 0], rois[swap, 2] = (np.minimum(rois[swap, 0], rois[swap, 2]),
                                    np.maximum(rois[swap, 0], rois[swap, 2]))
    return rois


def _roi_pooling(x, rois, shape, scale, g, static=False):
    def build():
        v = sd.Variable.from_numpy_array(x, need_grad=True, dtype=x.dtype)
        return v, S.roi_pooling(v, sd.Variable.from_numpy_array(rois), shape, scale)
    if static:
        v, y = build()
        y.forward()
    else:
        with sd.auto_forward():
            v, y = build()
    y.backward(g)
    return y.d.copy(), v.g.copy()


def _same(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)
    np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_roi_pooling_is_the_numpy_loop_bit_for_bit(dtype):
    rng = np.random.default_rng(7)
    for trial in range(12):
        b, c, h, w = 2, 3, int(rng.integers(1, 12)), int(rng.integers(1, 12))
        r, shape = int(rng.integers(1, 5)), (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
        scale = [1.0, 0.5, 1 / 3][trial % 3]
        x = _map(rng, (b, c, h, w), dtype, special=trial % 4 != 0)
        if trial % 6 == 5:                  # bins of NaN and -FLT_MAX only
            x = np.where(rng.random(x.shape) < 0.5, np.nan, -FLT_MAX).astype(dtype)
        rois = _regions(rng, b, r, h, w, scale)
        g = rng.standard_normal((b, r, c) + shape).astype(dtype)
        rows, cols = region_bins(rois, shape, scale, h, w, dtype)
        want, want_g = bin_max_pooling_loop(x, rows, cols, g)
        got, got_g = _roi_pooling(x, rois, shape, scale, g)
        _same(got, want)
        _same(got_g, want_g)


def test_values_and_gradients_are_cntks_bit_for_bit():
    # tests/fixtures/cntk_roipooling/gradients.npz, written by CNTK 2.7 (make_gradients.py):
    # ties, NaN, 120 overlapping regions, the gradient of sum(output * g); 7f55448b's
    # composition summed in its reductions' order: 37 of 4,096 gradients differed in the last
    # bit
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_roipooling",
                        "gradients.npz")
    ref = np.load(path)
    got, got_g = _roi_pooling(ref["x"], ref["rois"], (3, 3), 0.5, ref["g"])
    _same(got, ref["output"])
    _same(got_g, ref["grad"])


def test_static_graphs_give_the_dynamic_numbers():
    rng = np.random.default_rng(3)
    x = _map(rng, (2, 4, 9, 10), np.float32)
    rois = _regions(rng, 2, 5, 9, 10, 0.5)
    g = rng.standard_normal((2, 5, 4, 3, 2)).astype(np.float32)
    dynamic = _roi_pooling(x, rois, (3, 2), 0.5, g)
    static = _roi_pooling(x, rois, (3, 2), 0.5, g, static=True)
    _same(static[0], dynamic[0])
    _same(static[1], dynamic[1])


def test_bins_are_looked_up_a_block_of_regions_at_a_time(monkeypatch):
    from stadyn.ops import _roi_pool
    rng = np.random.default_rng(5)
    x = _map(rng, (1, 3, 17, 13), np.float32)
    rois = _regions(rng, 1, 9, 17, 13, 1.0)
    g = rng.standard_normal((1, 9, 3, 2, 3)).astype(np.float32)
    whole = _roi_pooling(x, rois, (2, 3), 1.0, g)
    monkeypatch.setattr(_roi_pool, "BLOCK_BYTES", 1)      # one region per block
    _same(_roi_pooling(x, rois, (2, 3), 1.0, g)[0], whole[0])
    _same(_roi_pooling(x, rois, (2, 3), 1.0, g)[1], whole[1])


def _resident() -> int:
    with open("/proc/self/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) << 10


def _peak() -> int:
    with open("/proc/self/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1)) << 10


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"),
                    reason="the peak of resident memory is read from Linux's /proc")
def test_a_fast_rcnn_head_keeps_its_memory_to_the_map_and_the_output():
    # 32 regions of a 64-channel 32x32 map into 7x7 bins: the masked composition's
    # (B, R, C, H, pw, W) intermediate was 59 MB a tensor (325 MB at the peak, forward and
    # backward); the inputs, output and gradients here are under 1 MB
    rng = np.random.default_rng(11)
    b, r, c, h, w, shape, scale = 1, 32, 64, 32, 32, (7, 7), 1 / 16
    x = _map(rng, (b, c, h, w), np.float32)
    rois = np.concatenate([_regions(rng, b, r - 2, h, w, scale),
                           np.array([[[0, 0, 511, 511], [-40, -40, 600, 600]]], np.float32)],
                          axis=1)
    g = rng.standard_normal((b, r, c) + shape).astype(np.float32)
    _roi_pooling(x[:, :, :4, :4], rois[:, :2] / 8, shape, scale, g[:, :2])   # first calls
    before = _resident()
    if not _reset_peak():
        pytest.skip("this kernel does not reset the peak of resident memory")
    got, got_g = _roi_pooling(x, rois, shape, scale, g)
    grown = _peak() - before
    assert grown < 48 << 20, f"ROI pooling grew the process by {grown / 2**20:.0f} MB"
    rows, cols = region_bins(rois, shape, scale, h, w, np.float32)
    want, want_g = bin_max_pooling_loop(x, rows, cols, g)
    _same(got, want)
    _same(got_g, want_g)


def test_the_op_takes_bins_and_says_what_it_needs():
    x = sd.Variable((1, 2, 4, 4))
    y = F.cntk_bin_max_pooling(x, sd.Variable((1, 3, 2, 2)), sd.Variable((1, 3, 5, 2)))
    assert y.shape == (1, 3, 2, 2, 5)
    with pytest.raises(Exception, match=r"cntk_bin_max_pooling: a \(B, C, H, W\) map and its "
                                        r"bins' rows \(B, R, PH, 2\)"):
        F.cntk_bin_max_pooling(x, sd.Variable((1, 3, 2, 3)), sd.Variable((1, 3, 5, 2)))


def test_an_empty_bin_is_zero_and_a_bin_of_nan_only_is_lowest():
    x = np.full((1, 1, 3, 3), np.nan, np.float32)
    x[0, 0, 2, 2] = 5.0
    rows = np.array([[[[0, 2], [1, 1], [0, 3]]]], np.float32)
    cols = np.array([[[[0, 2]]]], np.float32)
    with sd.auto_forward():
        y = F.cntk_bin_max_pooling(sd.Variable.from_numpy_array(x),
                                   sd.Variable.from_numpy_array(rows),
                                   sd.Variable.from_numpy_array(cols))
    assert y.d.ravel().tolist() == [LOWEST, 0.0, LOWEST]


def test_the_gradient_sums_in_one_order_on_two_threads():
    # 300 regions over one 20x20 map of small integers (ties): positions chosen by many bins;
    # an accumulating index_put_ summed them in another order on two threads (the last bit,
    # in most of these trials)
    import torch
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(-3, 4, (1, 64, 20, 20)).astype(np.float32)
        rois = (np.array([[[0, 0, 39, 39]]], np.float32)
                + rng.integers(-2, 3, (1, 300, 4)).astype(np.float32))
        g = rng.standard_normal((1, 300, 64, 3, 3)).astype(np.float32)
        rows, cols = region_bins(rois, (3, 3), 0.5, 20, 20, np.float32)
        want, want_g = bin_max_pooling_loop(x, rows, cols, g)
        threads = torch.get_num_threads()
        torch.set_num_threads(2)
        try:
            got, got_g = _roi_pooling(x, rois, (3, 3), 0.5, g)
        finally:
            torch.set_num_threads(threads)
        _same(got, want)
        _same(got_g, want_g)

"""BrainScript's pooling nodes against CNTK 2.7's Python ops for the same nodes
(``refgen_bs_pooling.py`` wrote tests/fixtures/brainscript/pooling.json): the raw ``Pooling``
node of CNTK.core.bs, with the auto-padding CNTK makes asymmetric (an even window, a stride of
2) or negative before the first window (a stride of 3 or more skips the first positions), the
raw ``Convolution`` with such a stride, with explicit pads and with a ``[maps x kernel
elements]`` ``Parameter``, ``ceilOutDim`` and explicit ``lowerPad``/``upperPad`` (against CNTK's
pad op and unpadded pooling or convolution), ``MaxUnpooling`` padded after only and with
explicit pads, and Fast
R-CNN's ``ROIPooling``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import build_network
from stadyn.brainscript._stadyn_library import StadynLibrary
from stadyn.train import feed
from test_bs_ndl import _build_text, _ndl_config

REFS = json.loads((Path(__file__).parent.parent / "fixtures" / "brainscript" /
                   "pooling.json").read_text())


def _ref(name: str) -> np.ndarray:
    return np.asarray(REFS[name], dtype=np.float32)


def _run(text: str, out: str, inputs: dict, params: dict | None = None) -> np.ndarray:
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ " + text + " }", StadynLibrary())
        for name, value in inputs.items():
            feed(net.nodes[name], _ref(value))
        for name, value in (params or {}).items():
            net.nodes[name].d = _ref(value).reshape(net.nodes[name].shape)
        node = net.nodes[out]
        node.forward()
        return node.d.copy()


@pytest.mark.parametrize("case, text", [
    # an even window: padded after only
    ("max_even", 'x = Input {5:4:3} ; y = Pooling (x, "max", (2:2), stride = 1)'),
    # a window of 3 every 2 over 6 x 5: padded before or after depending on the axis
    ("avg_stride2", 'x = Input {6:5:3} ; y = Pooling (x, "average", (3:3), stride = 2)'),
    # a window of 2 every 3 over 9 columns: the first column skipped
    ("max_stride3", 'x = Input {9:8:2} ; y = Pooling (x, "max", (2:2), stride = (3:3))'),
    # a window of 3 every 5 over 10: the first position skipped
    ("avg_stride5", 'x = Input {10:10:1} ; y = Pooling (x, "average", (3:3), stride = 5, '
                    'autoPadding = (true:true:false))'),
])
def test_pooling_node_pads_as_cntk(case, text):
    y = _run(text, "y", {"x": case + "_x"})
    np.testing.assert_allclose(y, _ref(case), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case, text", [
    ("avg_stride2_inc", 'x = Input {6:5:3} ; y = Pooling (x, "average", (3:3), stride = 2, '
                        'includePad = true)'),
    ("avg_stride5_inc", 'x = Input {10:10:1} ; y = Pooling (x, "average", (3:3), stride = 5, '
                        'autoPadding = (true:true:false), includePad = true)'),
])
def test_average_pooling_including_the_padding_as_cntk(case, text):
    y = _run(text, "y", {"x": case[:-4] + "_x"})
    np.testing.assert_allclose(y, _ref(case), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case, text", [
    # no padding: the last window of each axis hangs over the end
    ("ceil_max", 'y = Pooling (x, "max", (3:3), stride = 2, autoPadding = false, '
                 'ceilOutDim = true)'),
    ("ceil_avg", 'y = Pooling (x, "average", (3:3), stride = 2, autoPadding = false, '
                 'ceilOutDim = true)'),
    # includePad: the part past the end counts as zeros
    ("ceil_avg_inc", 'y = Pooling (x, "average", (3:3), stride = 2, autoPadding = false, '
                     'ceilOutDim = true, includePad = true)'),
    # the layer: CNTK.core.bs's _PoolingLayer passes ceilOutDim to the node
    ("ceil_max", "y = MaxPoolingLayer {(3:3), stride = 2, ceilOutDim = true} (x)"),
])
def test_pooling_ceil_out_dim_as_cntk(case, text):
    y = _run("x = Input {7:6:3} ; " + text, "y", {"x": "ceil_x"})
    assert y.shape == _ref(case).shape == (2, 3, 3, 3)     # 2.5 rows rounded up
    np.testing.assert_allclose(y, _ref(case), rtol=1e-6, atol=1e-6)


def test_pooling_ceil_out_dim_with_auto_padding_as_cntk():
    # the width auto-padded: 6 columns give 4 windows every 2 (3 without ceilOutDim)
    y = _run('x = Input {6:5:2} ; y = Pooling (x, "average", (3:3), stride = 2, '
             'autoPadding = (true:false), ceilOutDim = true)', "y", {"x": "ceil_auto_x"})
    np.testing.assert_allclose(y, _ref("ceil_auto_avg"), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case, text", [
    ("pads_max", 'y = Pooling (x, "max", (3:2), stride = (2:1), autoPadding = false, '
                 'lowerPad = (1:0), upperPad = (0:1))'),
    ("pads_avg", 'y = Pooling (x, "average", (3:2), stride = (2:1), autoPadding = false, '
                 'lowerPad = (1:0), upperPad = (0:1))'),
    ("pads_avg_inc", "y = AveragePoolingLayer {(3:2), stride = (2:1), lowerPad = (1:0), "
                     "upperPad = (0:1), includePad = true} (x)"),
])
def test_pooling_explicit_pads_as_cntk(case, text):
    # window (3:2) every (2:1) over 6 x 5, one column before, one row after: 3 x 5 windows
    y = _run("x = Input {6:5:3} ; " + text, "y", {"x": "pads_x"})
    assert y.shape == (2, 3, 5, 3)
    np.testing.assert_allclose(y, _ref(case), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case, text", [
    # includePad = true: the padding counted, as zeros (refused before)
    ("avg_stride2_inc", "y = AveragePoolingLayer {(3:3), stride = 2, pad = true, "
                        "includePad = true} (x)"),
    # pad on the width only (refused before)
    ("avg_stride2_mixed", "y = AveragePoolingLayer {(3:3), stride = 2, pad = (true:false)} (x)"),
])
def test_average_pooling_layer_options_as_cntk(case, text):
    y = _run("x = Input {6:5:3} ; " + text, "y", {"x": "avg_stride2_x"})
    np.testing.assert_allclose(y, _ref(case), rtol=1e-6, atol=1e-6)


def test_max_pooling_layer_skips_as_cntk_with_stride_3():
    # MaxPoolingLayer is CNTK.core.bs's Pooling with autoPadding = pad
    y = _run("x = Input {9:8:2} ; y = MaxPoolingLayer {(2:2), stride = 3, pad = true} (x)", "y",
             {"x": "max_stride3_x"})
    np.testing.assert_allclose(y, _ref("max_stride3"), rtol=1e-6, atol=1e-6)


def test_convolution_with_stride_3_skips_as_cntk():
    y = _run("""x = Input {9:9:3}
        W = ParameterTensor {(2:2:3:2)}
        y = Convolution (W, x, (2:2:3), mapDims = 2, stride = (3:3:3), autoPadding = true)""",
             "y", {"x": "conv_x"}, {"W": "conv_w"})
    np.testing.assert_allclose(y, _ref("conv_stride3"), rtol=1e-5, atol=1e-5)


def test_convolution_reads_a_maps_by_kernel_parameter_in_value_order():
    # a [2 x 9] Parameter: map m's kernel is its values m * 9 ... m * 9 + 8 (memory order), as
    # CNTK's engines read them, not the Parameter's row m
    y = _run("""x = Input {3:3:1}
        W = Parameter (2, 9)
        y = Convolution (W, x, (3:3:1), mapDims = 2, autoPadding = (true:true:false))""",
             "y", {"x": "conv_matrix_x"}, {"W": "conv_matrix_w"})
    np.testing.assert_allclose(y, _ref("conv_matrix"), rtol=1e-5, atol=1e-5)


def test_convolution_explicit_pads_as_cntk():
    # lowerPad (1:0:0), upperPad (1:1:0): the width padded by one each side, the height after
    y = _run("""x = Input {5:6:3}
        W = ParameterTensor {(3:2:3:2)}
        y = Convolution (W, x, (3:2:3), mapDims = 2, stride = (2:1:3), autoPadding = false,
                         lowerPad = (1:0:0), upperPad = (1:1:0))""",
             "y", {"x": "conv_pads_x"}, {"W": "conv_pads_w"})
    np.testing.assert_allclose(y, _ref("conv_pads"), rtol=1e-5, atol=1e-5)


def test_max_unpooling_padded_after_only():
    y = _run("""x = Input {5:5:2} ; v = Input {3:3:2}
        y = MaxUnpooling (v, x, (2:2), stride = (2:2), autoPadding = (true:true:false))""",
             "y", {"x": "unpool_x", "v": "unpool_v"})
    np.testing.assert_allclose(y, _ref("unpool"), rtol=1e-6, atol=1e-6)


def test_max_unpooling_of_overlapping_windows_takes_the_minibatchs_size():
    # windows 2 x 2 every 1: the windows' ordinals (the last window wins a shared maximum)
    # were laid out at the size the network was built with (1), not the minibatch's (2)
    y = _run("""x = Input {5:5:2} ; v = Input {4:4:2}
        y = MaxUnpooling (v, x, (2:2), stride = (1:1), autoPadding = false)""",
             "y", {"x": "unpool_x", "v": "unpool_overlap_v"})
    np.testing.assert_allclose(y, _ref("unpool_overlap"), rtol=1e-6, atol=1e-6)


def test_max_unpooling_with_explicit_pads_as_cntk():
    # the overlapping windows (3:2) every (2:1) of test_pooling_explicit_pads_as_cntk: each
    # value at its window's maximum in x, the last window's where two share one (refused
    # before: "explicit lowerPad/upperPad are not supported yet")
    y = _run("""x = Input {6:5:3} ; v = Input {3:5:3}
        y = MaxUnpooling (v, x, (3:2), stride = (2:1), autoPadding = false,
                          lowerPad = (1:0), upperPad = (0:1))""",
             "y", {"x": "pads_x", "v": "unpool_pads_v"})
    assert y.shape == (2, 3, 5, 6)
    np.testing.assert_allclose(y, _ref("unpool_pads"), rtol=1e-6, atol=1e-6)


def test_roi_pooling_as_cntk():
    y = _run("""fm = Input {8:6:2} ; rois = Input {4:3}
        y = ROIPooling (fm, rois, (3:2), spatialScale = 0.5)""", "y",
             {"fm": "roi_fm", "rois": "roi_rois"})
    assert y.shape == (2, 3, 2, 2, 3)                  # 3:2:2:3 per sample, column-major
    np.testing.assert_allclose(y, _ref("roi"), rtol=1e-6, atol=1e-6)


def test_roi_pooling_default_scale_is_a_sixteenth():
    # CNTK.core.bs: spatialScale = 0.0625; the region 0..15 covers map cells 0..1 (rounded)
    y = _run("fm = Input {8:6:2} ; rois = Input {4:3} ; y = ROIPooling (fm, rois, (1:1))", "y",
             {"fm": "roi_fm", "rois": "roi_rois"})
    fm = _ref("roi_fm")
    np.testing.assert_allclose(y[0, 0, :, 0, 0], fm[0, :, 0:2, 0:2].max(axis=(1, 2)))


@pytest.mark.parametrize("text, message", [
    ('x = Input {5:4:3} ; y = Pooling (x, "min", (2:2))', "poolKind"),
    ('x = Input {5:4:3} ; y = Pooling (x, "max", (2:2:1:1))', "more entries"),
    # a window of 3 every 2 over 2 + 6 + 0 columns leaves the last one uncovered
    ('x = Input {6:4:3} ; y = Pooling (x, "max", (3:3), stride = 2, autoPadding = false, '
     'lowerPad = (2:0), upperPad = 0)', "Pooling: lowerPad 2 and upperPad 0 .* fill it"),
    ('x = Input {5:4:3} ; y = Pooling (x, "max", (2:2), ceilOutDim = 2)', "ceilOutDim"),
    ("fm = Input {8:6:2} ; r = Input {5:3} ; y = ROIPooling (fm, r, (2:2))", "4:R"),
    # explicit pads whose windows leave part of the padded axis uncovered, and on the channels
    ('x = Input {5:6:3} ; W = ParameterTensor {(3:2:3:2)} ; y = Convolution (W, x, (3:2:3), '
     'mapDims = 2, stride = (2:1:3), autoPadding = false, lowerPad = (1:0:0), upperPad = 0)',
     "Convolution: lowerPad 1 and upperPad 0 .* fill it"),
    ('x = Input {5:6:3} ; W = ParameterTensor {(3:2:3:2)} ; y = Convolution (W, x, (3:2:3), '
     'mapDims = 2, autoPadding = false, lowerPad = 1, upperPad = 1)', "before the channel axis"),
])
def test_bad_pooling_arguments_are_named(text, message):
    with pytest.raises(ConfigError, match=message):
        _run(text, "y", {})


@pytest.mark.parametrize("case, text", [
    # NDL's ND Pooling is the same node: a stride of 3 skips the first column
    ("max_stride3", 'x = ImageInput(9, 8, 2, imageLayout = "cudnn")\n'
                    'y = Pooling(x, "max", {2, 2, 1}, stride = {3, 3, 1})'),
    # autoPadding per axis: the width padded, the height not (refused before)
    ("avg_stride2_mixed", 'x = ImageInput(6, 5, 3, imageLayout = "cudnn")\n'
                          'y = Pooling(x, "average", {3, 3, 1}, stride = {2, 2, 1}, '
                          'autoPadding = {true, false, false})'),
])
def test_ndl_pooling_node_as_cntk(tmp_path, case, text):
    x = "max_stride3_x" if case == "max_stride3" else "avg_stride2_x"
    with sd.parameter_registry(sd.ParameterRegistry()):
        net, _, _ = _build_text(_ndl_config(tmp_path, text))
        feed(net.nodes["x"], _ref(x))
        node = net.nodes["y"]
        node.forward()
        np.testing.assert_allclose(node.d, _ref(case), rtol=1e-6, atol=1e-6)

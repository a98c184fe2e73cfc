"""What Fast R-CNN's BrainScript (CNTK's Examples/Image/Detection/FastRCNN/BrainScript/
fastrcnn.cntk) does after its ``ROIPooling``: the fully connected layers of a network of one
image, cloned with ``BS.Network.CloneFunction`` and applied to the ``W:H:C:R`` regions (CNTK
validates the cloned ``Times`` again: the weight's input axes are the first ones of the regions',
the region axis is kept), and the criteria along ``axis = 1`` of ``classes:regions``
(CNTK.core.bs's compositions; references by CNTK 2.7's Python ops, written by
``refgen_bs_roi_heads.py`` to tests/fixtures/brainscript/roi_heads.json)."""

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

REFS = json.loads((Path(__file__).parent.parent / "fixtures" / "brainscript" /
                   "roi_heads.json").read_text())


def _ref(name: str) -> np.ndarray:
    return np.asarray(REFS[name], dtype=np.float32)


def _build(text: str):
    return build_network("{ " + text + " }", StadynLibrary())


def _forward(node) -> np.ndarray:
    node.forward()
    return node.d.copy()


def test_cloned_times_keeps_the_region_axis():
    # TimesNodeBase::Validate (LinearAlgebraNodes.h, "legacy compatibility"): a [5 x 8] weight
    # times [2:2:2:3] reduces the first 2*2*2 = 8 elements, keeping the 3 regions: [5 x 3]
    rng = np.random.RandomState(0)
    regions = rng.uniform(-1, 1, (2, 3, 2, 2, 2)).astype(np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = _build("""x = Input {2:2:2} ; W = Parameter {5, 8} ; h = ReLU (W * x)
            W2 = Parameter {4, 5} ; o = W2 * h
            heads = BS.Network.CloneFunction (x, o, parameters = "shared")
            r = Input {2:2:2:3} ; y = heads (r)""")
        w, w2 = (rng.uniform(-1, 1, net.nodes[n].shape).astype(np.float32) for n in ("W", "W2"))
        net.nodes["W"].d, net.nodes["W2"].d = w, w2
        feed(net.nodes["r"], regions)
        y = _forward(net.nodes["y"])
    expected = np.maximum(regions.reshape(2, 3, 8) @ w, 0) @ w2
    assert y.shape == (2, 3, 4)                        # [4 x 3] per sample, column-major
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_criteria_along_axis_1_as_cntk():
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = _build("""z = Input {4:3} ; l = Input {4:3}
            ce = CrossEntropyWithSoftmax (l, z, axis = 1)
            errs = ClassificationError (l, z, axis = 1)""")
        feed(net.nodes["z"], _ref("z"))
        feed(net.nodes["l"], _ref("labels"))
        ce, errs = _forward(net.nodes["ce"]), _forward(net.nodes["errs"])
    assert ce.shape == (2, 3, 1)                       # [1 x 3]: one value per region
    np.testing.assert_allclose(ce, _ref("ce"), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(errs.ravel(), _ref("errs"), rtol=1e-6)


def test_classification_error_along_an_axis_refuses_top_n():
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match="does not support topN"):
            _build("z = Input {4:3} ; l = Input {4:3} ; e = ClassificationError (l, z, topN = 2, "
                   "axis = 1)")


def test_fast_rcnn_model_builds_on_a_cloned_network():
    # fastrcnn.cntk's model section, on a small stand-in of the AlexNet it clones
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = _build("""
            features = Input {16:16:3}
            conv5_y = ConvolutionalLayer {4, (3:3), pad = true, activation = ReLU} (features)
            pool3 = MaxPoolingLayer {(2:2), stride = 2} (conv5_y)
            h2_d = DenseLayer {8, activation = ReLU} (pool3)
            convLayers = BS.Network.CloneFunction (features, conv5_y, parameters = "constant")
            fcLayers = BS.Network.CloneFunction (pool3, h2_d)
            model (image, rois) = {
                convOut = convLayers (image - 114)
                roiOut = ROIPooling (convOut, rois, (8:8), spatialScale = 1)
                fcOut = fcLayers (roiOut)
                W = ParameterTensor {(5:8), init = "glorotUniform"}
                b = ParameterTensor {5, init = 'zero'}
                z = W * fcOut + b
            }.z
            image = Input {32:24:3} ; rois = Input {4:6} ; roiLabels = Input {5:6}
            z = model (image, rois)
            ce = CrossEntropyWithSoftmax (roiLabels, z, axis = 1)
            errs = ClassificationError (roiLabels, z, axis = 1)""")
        assert net.nodes["z"].shape == (1, 6, 5)       # 5 classes x 6 regions
        assert net.nodes["ce"].shape == (1, 6, 1) and net.nodes["errs"].shape == (1, 1)

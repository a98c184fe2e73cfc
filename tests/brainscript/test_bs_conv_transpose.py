"""BrainScript's raw ``ConvolutionTranspose`` node (CNTK.core.bs:624: a ``Convolution`` node with
``transpose = true``) against CNTK 2.7 (``tests/fixtures/brainscript/conv_transpose.json``,
written by ``refgen_bs_conv_transpose.py``): auto-padding on, off and mixed per axis, strides,
``outputShape``; and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import StadynLibrary, build_network

REFS = json.loads((Path(__file__).parent.parent / "fixtures" / "brainscript" /
                   "conv_transpose.json").read_text())
# refgen_bs_conv_transpose.py's CASES in BrainScript's order (column-major): the input, the
# filter, the output maps, strides, autoPadding, outputShape
CASES = {
    "padded": ("6:5:4", "3:3", 2, "1:1", "true:true:false", None),
    "strided": ("5:4:3", "3:3", 2, "2:2", "true:true:false", None),
    "unpadded": ("5:4:3", "3:2", 2, "1:2", "false:false:false", None),
    "mixed": ("4:4:2", "2:3", 3, "3:2", "true:false:false", None),
    "output_shape": ("5:4:3", "3:3", 2, "2:2", "true:true:false", "10:8:2"),
}


def _bs(dims: str, kernel: str, maps: int, stride: str, pads: str, shape, extra: str = ""):
    channels = dims.split(":")[-1]
    out = "" if shape is None else f", outputShape = ({shape})"
    return f"""{{ x = Input {{{dims}}}
        W = ParameterTensor {{{kernel}:{maps}:{channels}, initValue = 0}}
        y = ConvolutionTranspose (W, x, {kernel}:{maps}, mapDims = {channels},
                                  stride = {stride}, autoPadding = ({pads}){out}{extra}) }}"""


@pytest.mark.parametrize("case", sorted(CASES))
def test_conv_transpose_node_computes_as_cntk(case):
    ref = REFS[case]
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(_bs(*CASES[case]), StadynLibrary())
        sd.get_parameters()["W"].d = np.array(ref["w"], np.float32)
        net.nodes["x"].reset_shape(np.array(ref["x"]).shape, force=True)
        net.nodes["x"].d = np.array(ref["x"], np.float32)
        y = net.nodes["y"]
        y.forward()
        np.testing.assert_allclose(y.d, np.array(ref["y"]), rtol=1e-5, atol=1e-5)


def test_conv_transpose_node_refuses_a_weight_of_other_dimensions_and_explicit_pads():
    with pytest.raises(ConfigError, match=r"weight must be \[3 x 3 x 2 x 4\]"):
        build_network(_bs("6:5:4", "3:3", 2, "1:1", "true", None).replace(
            "{3:3:2:4,", "{3:3:2:3,"), StadynLibrary())
    with pytest.raises(ConfigError, match="explicit lowerPad/upperPad"):
        build_network(_bs("6:5:4", "3:3", 2, "1:1", "false", None, ", lowerPad = 1"),
                      StadynLibrary())

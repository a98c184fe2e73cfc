"""BrainScript's raw ``Convolution`` with ``sharing = false`` (a locally-connected convolution:
a kernel for every output position, CIFAR-10's 05_ConvLocal NDL) against a NumPy reading of
CNTK's ConvolveGeometry (Source/Math/ConvolveGeometry.h): the kernel of output ``(x, y, map)``
is the ``x + outW * (y + outH * map)``-th block of the weight's values, its elements ``kx + kW *
(ky + kH * c)``, whatever shape the weight is declared with (CNTK 2.7's Python API cannot build
this node: its convolution takes the map count from the weight's last axis).  cntk.exe's own
log of 05_ConvLocal lists the parameters the network must have."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import build_network
from stadyn.brainscript._stadyn_library import StadynLibrary
from stadyn.train import feed
from cntk_repo_files import copy_cntk_file
from test_bs_ndl import _baseline, _build, _check_parameters

CIFAR = "Tests/EndToEndTests/Examples/Image/Deprecated/CIFAR-10"


def _reference(x, values, kernel, stride, lower, out, maps):
    """CNTK's reference engine, one multiply-add at a time: ``x`` (N, C, H, W), the weight's
    values in CNTK's (column-major) order, positions outside the input skipped."""
    n_img, channels, height, width = x.shape
    (oh, ow), k = out, kernel
    y = np.zeros((n_img, maps, oh, ow), np.float64)
    for m in range(maps):
        for r in range(oh):
            for q in range(ow):
                block = (q + ow * (r + oh * m)) * k * k * channels
                for c in range(channels):
                    for ky in range(k):
                        for kx in range(k):
                            row, col = r * stride - lower[0] + ky, q * stride - lower[1] + kx
                            if 0 <= row < height and 0 <= col < width:
                                w = values[block + kx + k * (ky + k * c)]
                                y[:, m, r, q] += w * x[:, c, row, col]
    return y


@pytest.mark.parametrize("size, kernel, stride, pad, out, lower", [
    ((5, 5), 3, 1, True, (5, 5), (1, 1)),          # auto-padding, a window of 3
    ((6, 7), 3, 2, True, (3, 4), (1, 1)),          # stride 2: the height padded before only
    ((9, 9), 2, 3, True, (3, 3), (-1, -1)),        # a window of 2 every 3: the first skipped
    ((5, 6), 2, 1, False, (4, 5), (0, 0)),         # no padding
])
def test_unshared_convolution_is_cntks_geometry(size, kernel, stride, pad, out, lower):
    (height, width), channels, maps = size, 2, 3
    count = maps * out[0] * out[1]
    x = np.random.default_rng(4).uniform(-1, 1, (2, channels) + size).astype(np.float32)
    flag = str(pad).lower()
    with sd.parameter_registry(sd.ParameterRegistry()):
        nodes = build_network(
            f"{{ x = Input {{{width}:{height}:{channels}}}\n"
            f"W = Parameter ({count}, {kernel * kernel * channels})\n"
            f"y = Convolution (W, x, ({kernel}:{kernel}:{channels}), mapDims = {maps}, "
            f"stride = ({stride}:{stride}:{channels}), sharing = (false:false:false), "
            f"autoPadding = ({flag}:{flag}:false)) }}", StadynLibrary()).nodes
        values = np.random.default_rng(5).uniform(-1, 1, nodes["W"].size).astype(np.float32)
        nodes["W"].d = values.reshape(nodes["W"].shape)
        feed(nodes["x"], x)
        nodes["y"].forward()
        expected = _reference(x, values, kernel, stride, lower, out, maps)
        np.testing.assert_allclose(nodes["y"].d, expected, rtol=1e-5, atol=1e-5)


def test_unshared_convolution_trains_each_kernel_on_its_own_position():
    # the gradient of the output's sum for a kernel is its own window of the input
    x = np.arange(2 * 1 * 3 * 3, dtype=np.float32).reshape(2, 1, 3, 3)
    with sd.parameter_registry(sd.ParameterRegistry()):
        nodes = build_network("{ x = Input {3:3:1} ; W = Parameter (4, 4)\n"
                              "y = Convolution (W, x, (2:2:1), mapDims = 1, sharing = false, "
                              "autoPadding = false) }", StadynLibrary()).nodes
        feed(nodes["x"], x)
        total = sd.functions.sum(nodes["y"])
        total.forward()
        total.backward()
        grads = nodes["W"].g.reshape(4, 2, 2)         # kernel (x + 2 y), elements (ky, kx)
        for r in range(2):
            for q in range(2):
                np.testing.assert_array_equal(grads[q + 2 * r],
                                              x[:, 0, r:r + 2, q:q + 2].sum(axis=0))


def test_unshared_convolution_weight_size_is_checked():
    with pytest.raises(ConfigError, match=r"sharing = false the weight .* 5 x 5 outputs"):
        build_network("{ x = Input {5:5:2} ; W = Parameter (3, 18)\n"
                      "y = Convolution (W, x, (3:3:2), mapDims = 3, sharing = false) }",
                      StadynLibrary())


def test_cifar_conv_local_ndl_is_cntk_exes(tmp_path):
    # CIFAR-10/05_ConvLocal/baseline.txt: 2832618 parameters in 10, conv3.W [3136 x 576] and
    # conv4.W [1568 x 576]: a 3 x 3 x 64 kernel for each of 7 x 7 positions and 64 or 32 maps
    folder = tmp_path / "05_ConvLocal"
    folder.mkdir()
    copy_cntk_file(tmp_path, f"{CIFAR}/Macros.ndl")
    copy_cntk_file(folder, f"{CIFAR}/05_ConvLocal/05_ConvLocal.ndl")
    config = copy_cntk_file(folder, f"{CIFAR}/05_ConvLocal/05_ConvLocal_ndl_deprecated.cntk")
    net, _, params = _build(config, "Train", [f"RootDir={folder}"])
    _check_parameters(params, _baseline(f"{CIFAR}/05_ConvLocal/baseline.txt"))
    assert net.nodes["conv4.c"].shape[1:] == (32, 7, 7)      # cntk.exe: [7 x 7 x 32]

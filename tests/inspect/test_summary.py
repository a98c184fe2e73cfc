"""``sd.summary``: parameter totals against the registry, multiply-adds against hand computations
and against torch's own FLOP counter, rows by scope."""

from __future__ import annotations

import os

import numpy as np
import pytest
from torch.utils.flop_counter import FlopCounterMode

import stadyn as sd
import stadyn.functions as F
import stadyn.parametric_functions as PF
from stadyn.inspect import MAC_RULES, multiply_adds
from stadyn.ops import CATALOG

LEGACY = os.path.join(os.path.dirname(__file__), "..", "fixtures", "legacy")


def _registry_count(registry) -> int:
    return sum(v.size for _, v in registry.items())


def test_tutorial_cnn_totals_equal_the_registry(tutorial_cnn):
    y, registry = tutorial_cnn
    s = sd.summary(y)
    assert s.total_parameters == _registry_count(registry)
    # running means and variances are the non-trainable ones: 2 x maps per BN layer
    assert s.non_trainable_parameters == 2 * (64 + 10 * 128 + 512)
    assert s.trainable_parameters == sum(v.size for _, v in registry.items() if v.need_grad)
    assert sum(r.parameters for r in s.rows) == s.total_parameters
    assert f"Total params: {s.total_parameters:,}" in str(s)


def test_cntk_convnet_totals(cntk_convnet):
    y, registry = cntk_convnet
    s = sd.summary(y)
    assert s.total_parameters == _registry_count(registry) == 1_195_594
    assert s.trainable_parameters == 1_195_594 and s.non_trainable_parameters == 0
    assert "Total params: 1,195,594" in str(s)


def test_multiply_adds_by_hand(tutorial_cnn, cntk_convnet):
    rows = {(r.scope, r.op): r for r in sd.summary(tutorial_cnn[0]).rows}
    # conv1: 16 images x 64 maps x 8x8 positions, each a 1-channel 3x3 window
    assert rows[("cnn/conv1/conv", "convolution")].macs == 16 * 64 * 8 * 8 * (1 * 3 * 3)
    # conv2: 128 maps over a 64-channel 3x3 window
    assert rows[("cnn/conv2/conv", "convolution")].macs == 16 * 128 * 8 * 8 * (64 * 3 * 3)
    # fc: 16 rows of 512*4*4 features times 1024 outputs
    assert rows[("cnn/fc/affine", "affine")].macs == 16 * (512 * 4 * 4) * 1024
    assert rows[("cnn/conv1/bn", "batch_normalization")].macs == 0
    rows = {(r.scope, r.op): r for r in sd.summary(cntk_convnet[0]).rows}
    # the first dense layer reads 64 maps of 8x8 after two 2-stride poolings of 32x32
    assert rows[("dense", "affine")].macs == 16 * (64 * 8 * 8) * 256
    assert rows[("convolution_1", "convolution")].macs == 16 * 64 * 32 * 32 * (64 * 3 * 3)


def _flops_of(build) -> tuple[int, int]:
    """(torch's FLOP count of running ``build`` dynamically, 2 x Stadyn's multiply-adds)."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        with sd.auto_forward(), FlopCounterMode(display=False) as counter:
            y = build()
        return counter.get_total_flops(), 2 * sd.summary(y).total_macs


@pytest.mark.parametrize("case", ["conv_group_stride", "conv_channel_last", "deconv",
                                  "affine_base_axis", "batch_matmul_t", "dot_matrices",
                                  "dot_nd", "binary_connect_affine", "binary_weight_conv"])
def test_multiply_adds_agree_with_torchs_flop_counter(case):
    rng = np.random.default_rng(0)

    def v(*shape):
        return sd.Variable.from_numpy_array(rng.standard_normal(shape).astype(np.float32))

    builds = {
        "conv_group_stride": lambda: PF.convolution(v(2, 6, 9, 7), 4, (3, 2), stride=(2, 1),
                                                    pad=(1, 0), group=2),
        "conv_channel_last": lambda: PF.convolution(v(2, 7, 7, 3), 5, (3, 3),
                                                    channel_last=True),
        "deconv": lambda: PF.deconvolution(v(2, 4, 5, 5), 3, (3, 3), stride=(2, 2)),
        "affine_base_axis": lambda: PF.affine(v(3, 4, 5), 6, base_axis=2),
        "batch_matmul_t": lambda: F.batch_matmul(v(3, 5, 4), v(3, 5, 2), transpose_a=True),
        "dot_matrices": lambda: F.dot(v(3, 4), v(4, 5)),
        "dot_nd": lambda: F.dot(v(2, 3, 4), v(4, 5)),
        "binary_connect_affine": lambda: PF.binary_connect_affine(v(3, 4), 5),
        "binary_weight_conv": lambda: PF.binary_weight_convolution(v(2, 3, 6, 6), 4, (3, 3)),
    }
    torch_flops, ours = _flops_of(builds[case])
    assert torch_flops > 0 and ours == torch_flops


def test_every_product_op_has_a_multiply_add_rule():
    # the catalog marks its products and convolutions precision="half"
    products = {name for name, spec in CATALOG.items() if spec.precision == "half"}
    assert products <= set(MAC_RULES), sorted(products - set(MAC_RULES))


def test_rows_by_scope_depth(tutorial_cnn):
    s = sd.summary(tutorial_cnn[0], depth=2)
    expected = (["cnn/conv1"] + [f"cnn/conv{i}" for i in range(2, 12)]
                + ["cnn/conv_last", "cnn/fc", "cnn/classifier"])
    assert [r.scope for r in s.rows] == expected
    assert s.rows[0].op == "convolution, batch_normalization, tanh"
    assert s.rows[0].parameters == (64 * 9 + 64) + 4 * 64
    assert s.rows[0].output_shape == (16, 64, 8, 8)
    assert s.rows[-2].output_shape == (16, 1024)
    assert s.total_parameters == sum(r.parameters for r in s.rows)
    assert s.batch_size == 16 and s.total_macs == sum(r.macs for r in s.rows)


@pytest.mark.usefixtures("fresh_parameters")
def test_shared_parameter_is_counted_once():
    x = sd.Variable((2, 3))
    with sd.parameter_scope("shared"):
        h = PF.affine(x, 3)
    with sd.parameter_scope("shared"):
        y = PF.affine(h, 3)          # the same W and b again
    s = sd.summary(y)
    assert s.total_parameters == 3 * 3 + 3
    assert [r.parameters for r in s.rows] == [12, 0]


def test_bad_depth_is_a_clear_error(tutorial_cnn):
    with pytest.raises(sd.StadynError, match="depth"):
        sd.summary(tutorial_cnn[0], depth=0)


def test_legacy_cntk_convnet_file_matches_the_native_model():
    # the ConvNet as CNTK 2.7 itself saved it: the same 1,195,594 parameters, in 14 tensors
    s = sd.summary(os.path.join(LEGACY, "cntk_convnet_cifar10.dnn"))
    assert s.total_parameters == 1_195_594 and len(s.parameters) == 14
    assert s.total_macs is None and "not counted" in str(s)


def test_nnabla_convolutions_count_their_products():
    x = sd.Variable((2, 4, 5, 5))
    dd = F.depthwise_deconvolution(x, sd.Variable((4, 3, 3)), divisor=2)     # (2, 2, 7, 7)
    fc = F.fused_convolution(x, sd.Variable((6, 4, 3, 3)), pad=(1, 1))       # (2, 6, 5, 5)
    dc = F.deformable_convolution(x, sd.Variable((6, 4, 3, 3)), sd.Variable((2, 18, 5, 5)),
                                  pad=(1, 1))
    assert multiply_adds(dd.parent) == 2 * 4 * 5 * 5 * 9      # every input pixel x its kernel
    assert multiply_adds(fc.parent) == 2 * 6 * 5 * 5 * 4 * 9  # output x (C_in x kernel)
    assert multiply_adds(dc.parent) == 2 * 6 * 5 * 5 * 4 * 9


def test_multiply_adds_of_nnabla_adaptive_and_inq_layers():
    """By hand: an adaptive separable convolution sums Kv x Kh terms per output element; the
    INQ layers count as the affine map and convolution they compute."""
    x = sd.Variable((2, 3, 6, 7))
    y = F.adaptive_separable_convolution(x, sd.Variable((2, 3, 4, 6)), sd.Variable((2, 2, 4, 6)))
    assert multiply_adds(y.parent) == (2 * 3 * 4 * 6) * 3 * 2
    with sd.parameter_registry(sd.ParameterRegistry()):
        a = PF.inq_affine(sd.Variable((4, 3)), 5)
        c = PF.inq_convolution(sd.Variable((2, 3, 6, 6)), 4, (3, 3))
    assert multiply_adds(a.parent) == 4 * 3 * 5
    assert multiply_adds(c.parent) == (2 * 4 * 4 * 4) * (3 * 3 * 3)

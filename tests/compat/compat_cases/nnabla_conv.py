"""``nnabla.functions``' and ``nnabla.parametric_functions``' further convolutions:
``depthwise_deconvolution`` (1-D and 2-D, divisor, stride/pad/dilation, bias) and
``deformable_convolution`` (offsets, masks, groups, deformable groups) with their layers;
``fused_convolution`` (padding modes, batch normalisation, residual, activations);
``max_pooling_backward`` (overlapping and padded windows; its gradient w.r.t. ``dy``);
``quantize_linear`` / ``dequantize_linear`` (rounding modes, ranges, the straight-through
gradient).
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_functions import fn_case
from compat_cases.nnabla_parametric import P, pf_case

_F = ["nnabla.functions.depthwise_deconvolution"]

fn_case("depthwise_deconvolution", lambda F, x, w, b: F.depthwise_deconvolution(x, w, b),
        [(2, 3, 4, 4), (3, 3, 3), (3,)], names=_F)
fn_case("depthwise_deconvolution__divisor", lambda F, x, w, b: F.depthwise_deconvolution(
    x, w, b, pad=(1, 0), stride=(2, 1), dilation=(1, 2), divisor=2),
    [(2, 4, 3, 5), (4, 2, 3), (2,)], names=_F)
fn_case("depthwise_deconvolution__1d_base_axis", lambda F, x, w: F.depthwise_deconvolution(
    x, w, base_axis=2, stride=(3,), divisor=3), [(2, 2, 6, 5), (6, 4)], names=_F)

pf_case("PF_depthwise_deconvolution", lambda nn, PF, x: PF.depthwise_deconvolution(x, (3, 3)),
        (2, 3, 4, 4), [P + "depthwise_deconvolution"])
pf_case("PF_depthwise_deconvolution__divisor", lambda nn, PF, x: PF.depthwise_deconvolution(
    x, (2, 3), stride=(2, 2), divisor=2, name="up"), (2, 4, 3, 3), [P + "depthwise_deconvolution"])


# -- quantize_linear / dequantize_linear --------------------------------------------------------
def _const(values, shape=None):
    def make(r, s):
        return np.array(values, np.float32).reshape(s)
    return make


def _halves(r, s):
    return (r.randint(-300, 301, s) * 0.5 + np.where(r.randint(0, 4, s) == 0, 0.0, 0.13)
            ).astype(np.float32)   # exact .5 ties and values past the range


_Q = ["nnabla.functions.quantize_linear"]
_DQ = ["nnabla.functions.dequantize_linear"]
fn_case("quantize_linear", lambda F, x, s, z: F.quantize_linear(x, s, z), [(3, 8), (1, 1), (1, 1)],
        data=[_halves, _const([0.5]), _const([3.4])], grads=[0], names=_Q)
fn_case("quantize_linear__half_to_even_narrow", lambda F, x, s, z: F.quantize_linear(
    x, s, z, round_mode="HALF_TO_EVEN", narrow_range=True), [(2, 3, 4), (1, 3, 1), (1, 3, 1)],
    data=[_halves, _const([1.0, 0.5, 2.0]), _const([-2.5, 0.0, 1.5])], grads=[0], names=_Q)
fn_case("quantize_linear__uint8", lambda F, x, s, z: F.quantize_linear(
    x, s, z, dtype=np.uint8), [(4, 5), (1, 1), (1, 1)],
    data=[_halves, _const([0.25]), _const([128.0])], grads=[0], names=_Q)
fn_case("quantize_linear__uint8_narrow", lambda F, x, s, z: F.quantize_linear(
    x, s, z, dtype=np.uint8, narrow_range=True, round_mode="HALF_TO_EVEN"),
    [(4, 5), (1, 1), (1, 1)], data=[_halves, _const([2.0]), _const([0.0])], grads=[0],
    names=_Q)
fn_case("dequantize_linear", lambda F, q, s, z: F.dequantize_linear(q, s, z),
        [(3, 4), (1, 4), (1, 4)], data=[lambda r, s: r.randint(-128, 128, s).astype(np.float32),
                                        _const([0.5, 1.0, 0.25, 2.0]), _const([1, 0, -3, 7])],
        grads=[0], names=_DQ)


@nnabla_case(names=_Q + _DQ)
def quantize_linear__round_trip(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(2, 6) * 4.0, need_grad=True)
    s = nn.Variable.from_numpy_array(np.array([[0.1]], np.float32))
    z = nn.Variable.from_numpy_array(np.array([[5.0]], np.float32))
    y = F.dequantize_linear(F.quantize_linear(x, s, z), s, z)
    y.forward()
    x.g = 0
    y.backward(r.weights_like(y.d))
    q = nn.Variable.from_numpy_array(np.array([[3, -4]], np.int8))
    d = F.dequantize_linear(q, s, nn.Variable.from_numpy_array(np.array([[1]], np.int8)))
    d.forward()
    return {"out": y.d.copy(), "grad": x.g.copy(), "int8": d.d.copy()}


# -- deformable_convolution -----------------------------------------------------------------
def _offsets(r, s):
    return (r.randn(*s) * 0.8).astype(np.float32)


_DC = ["nnabla.functions.deformable_convolution"]
fn_case("deformable_convolution", lambda F, x, w, o: F.deformable_convolution(x, w, o),
        [(2, 3, 5, 6), (4, 3, 3, 3), (2, 18, 5, 6)], data=[None, None, _offsets], names=_DC,
        tols={"out": (1e-5, 1e-5), "grad0": (1e-5, 1e-5), "grad1": (1e-5, 1e-5),
              "grad2": (1e-4, 1e-5)})
fn_case("deformable_convolution__mask_bias_pad", lambda F, x, w, o, m, b:
        F.deformable_convolution(x, w, o, m, b, pad=(1, 1)),
        [(1, 2, 4, 5), (3, 2, 3, 3), (1, 18, 4, 5), (1, 9, 4, 5), (3,)],
        data=[None, None, _offsets, lambda r, s: r.rand(*s), None], names=_DC,
        tols={"out": (1e-5, 1e-5), "grad0": (1e-5, 1e-5), "grad1": (1e-5, 1e-5),
              "grad2": (1e-4, 1e-5), "grad3": (1e-5, 1e-5)})
fn_case("deformable_convolution__groups_stride_dilation", lambda F, x, w, o, m:
        F.deformable_convolution(x, w, o, m, stride=(2, 1), dilation=(1, 2), pad=(0, 1),
                                 group=2, deformable_group=2),
        [(2, 4, 7, 6), (6, 2, 2, 3), (2, 24, 7, 6), (2, 12, 7, 6)],
        data=[None, None, _offsets, lambda r, s: r.rand(*s)], names=_DC,
        tols={"out": (1e-5, 1e-5), "grad0": (1e-5, 1e-5), "grad1": (1e-5, 1e-5),
              "grad2": (1e-4, 1e-5), "grad3": (1e-5, 1e-5)})


def _pf_offset(nn, shape, seed):
    """need_grad: NNabla 1.39's backward crashes (segmentation fault) when the offset (or the
    mask) of a deformable convolution needs no gradient."""
    return nn.Variable.from_numpy_array(
        (np.random.RandomState(seed).randn(*shape) * 0.8).astype(np.float32), need_grad=True)


pf_case("PF_deformable_convolution", lambda nn, PF, x: PF.deformable_convolution(
    x, 4, (3, 3), _pf_offset(nn, (2, 18, 5, 5), 1), pad=(1, 1)), (2, 3, 5, 5),
    [P + "deformable_convolution"], tols={"grad x": (1e-5, 1e-5),
                                          "grad deformable_conv/W": (1e-4, 1e-5)})
pf_case("PF_deformable_convolution__mask", lambda nn, PF, x: PF.deformable_convolution(
    x, 2, (2, 2), _pf_offset(nn, (1, 16, 4, 4), 2),
    mask=nn.Variable.from_numpy_array(np.random.RandomState(3).rand(1, 8, 4, 4).astype(
        np.float32), need_grad=True), deformable_group=2, with_bias=False, name="dc"), (1, 4, 4, 4),
    [P + "deformable_convolution"])


# -- fused_convolution ----------------------------------------------------------------------
_FC = ["nnabla.functions.fused_convolution"]
_FC_TOLS = {"out": (1e-5, 1e-5), "grad0": (1e-4, 1e-5), "grad1": (1e-4, 1e-5),
            "grad2": (1e-4, 1e-5), "grad3": (1e-4, 1e-5), "grad4": (1e-4, 1e-5),
            "grad5": (1e-4, 1e-5)}


def _positive(r, s):
    return r.rand(*s, low=0.5, high=1.5)


fn_case("fused_convolution", lambda F, x, w, b: F.fused_convolution(x, w, b, pad=(1, 1)),
        [(2, 3, 5, 5), (4, 3, 3, 3), (4,)], names=_FC, tols=_FC_TOLS)
fn_case("fused_convolution__bn_z", lambda F, x, w, be, ga, m, v, z: F.fused_convolution(
    x, w, None, be, ga, m, v, z, stride=(2, 1), batch_stat=False, nonlinearity="tanh"),
    [(2, 3, 5, 4), (2, 3, 3, 2), (1, 2, 1, 1), (1, 2, 1, 1), (1, 2, 1, 1), (1, 2, 1, 1),
     (2, 2, 2, 3)], data=[None, None, None, None, None, _positive, None], grads=[0, 1, 2, 3, 6],
    names=_FC, tols=_FC_TOLS)
fn_case("fused_convolution__reflect_leaky", lambda F, x, w: F.fused_convolution(
    x, w, pad=(1, 2, 0, 1), pad_mode="reflect", nonlinearity="leaky_relu",
    nonlinearity_args=[0.2]), [(1, 2, 4, 5), (3, 2, 2, 2)], names=_FC, tols=_FC_TOLS)
fn_case("fused_convolution__constant_pad_relu6", lambda F, x, w: F.fused_convolution(
    x * 3.0, w, pad=(1, 1), constant_value=0.5, nonlinearity="relu6", group=2),
    [(2, 4, 4, 4), (2, 2, 3, 3)], names=_FC, tols=_FC_TOLS)


@nnabla_case(names=_FC, tols={"out": (1e-5, 1e-5), "mean": (1e-5, 1e-6), "var": (1e-5, 1e-6)})
def fused_convolution__batch_stat(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(4, 2, 4, 4))
    w = nn.Variable.from_numpy_array(r.randn(3, 2, 3, 3))
    be, ga = (nn.Variable.from_numpy_array(r.randn(1, 3, 1, 1)) for _ in range(2))
    m = nn.Variable.from_numpy_array(np.zeros((1, 3, 1, 1), np.float32))
    v = nn.Variable.from_numpy_array(np.ones((1, 3, 1, 1), np.float32))
    y = F.fused_convolution(x, w, None, be, ga, m, v, pad=(1, 1), nonlinearity="elu",
                            nonlinearity_args=[1.0])
    y.forward()
    return {"out": y.d.copy(), "mean": m.d.copy(), "var": v.d.copy()}


# -- max_pooling_backward -------------------------------------------------------------------
def _distinct(r, s):
    return (r.rng.permutation(int(np.prod(s))).reshape(s) * 0.1 - 1.0).astype(np.float32)


_MPB = ["nnabla.functions.max_pooling_backward"]
fn_case("max_pooling_backward", lambda F, dy, x: F.max_pooling_backward(dy, x, (2, 2)),
        [(2, 3, 3, 2), (2, 3, 6, 5)], data=[None, _distinct], grads=[0], names=_MPB)
fn_case("max_pooling_backward__overlap_pad", lambda F, dy, x: F.max_pooling_backward(
    dy, x, (3, 2), stride=(1, 2), pad=(1, 1), ignore_border=False), [(1, 2, 7, 3), (1, 2, 6, 5)],
    data=[None, _distinct], grads=[0], names=_MPB)
fn_case("max_pooling_backward__channel_last", lambda F, dy, x: F.max_pooling_backward(
    dy, x, (2, 2), channel_last=True), [(2, 2, 2, 3), (2, 4, 5, 3)], data=[None, _distinct],
    grads=[0], names=_MPB,
    real=lambda F, dy, x: F.transpose(F.max_pooling_backward(
        F.transpose(dy, (0, 3, 1, 2)), F.transpose(x, (0, 3, 1, 2)), (2, 2)), (0, 2, 3, 1)),
    note="NNabla 1.39's CPU max_pooling_backward refuses channel_last: its reference is the "
         "channel-first one between transposes")

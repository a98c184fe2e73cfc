"""Rules of the binarised-weight layers (``stadyn/ops/_binary.py``): the export computes the
binarised weight from the float one (Greater, Less, Where; times ReduceMean(Abs) per output unit
for Binary Weight Networks) and applies it with MatMul or Conv, which import back one by one
(the binarised copy and scales the op writes are training-time state, not exported).  In
``.nnp`` files they are NNabla's own ``BinaryConnectAffine`` ... ``BinaryWeightConvolution``."""

from __future__ import annotations

from ... import functions as F
from ...ops import ntuple
from ._common import COMPOSITE
from ._nn import _window_export, _window_nnp
from ._nnabla import nnabla
from ._table import Unmapped, register_rules


def _binarised(g, w, attrs, unit_axis=None, ndim=None, like=None):
    """Greater, Less, Where (and Abs, ReduceMean, Mul with ``unit_axis``); ``ndim`` and ``like``
    (a graph tensor of ``w``'s type) where ``w`` is an intermediate."""
    like = like or w
    one, minus_one = g.scalar(1.0, like), g.scalar(-1.0, like)
    zero_to = g.scalar(float(attrs["quantize_zero_to"]), like)
    zero = g.scalar(0.0, like)
    sign = g.op("Where", [g.op("Greater", [w, zero]), one,
                          g.op("Where", [g.op("Less", [w, zero]), minus_one, zero_to])])
    if unit_axis is None:
        return sign
    others = [a for a in range(g.ndim(w) if ndim is None else ndim) if a != unit_axis]
    return g.op("Mul", [sign, g.reduce("ReduceMean", g.op("Abs", [w]), others, True)])


def _affine(g, x, w, ws, b, base):
    """MatMul (after Flatten or Reshape), Add, Reshape back for a multi-axis output"""
    xs = g.shape(x)
    if len(ws) != 2:
        w = g.reshape(w, [ws[0], -1])
    if base == 1:
        h = x if len(xs) == 2 else g.op("Flatten", [x], axis=1)
    else:
        h = x if len(xs) == base + 1 else g.reshape(x, [0] * base + [-1])
    y = g.op("MatMul", [h, w])
    if b:
        y = g.op("Add", [y, g.reshape(b, [-1])])
    if len(ws) != 2:
        y = g.reshape(y, [0] * base + list(ws[1:]))
    return y


def _connect_affine_onnx(g, inputs, attrs):
    """sign(W) by Greater, Less, Where; MatMul, Add"""
    x, w, _, b = inputs
    ws = g.shape(w)
    return _affine(g, x, _binarised(g, w, attrs), ws, b, int(attrs["base_axis"]))


def _weight_affine_onnx(g, inputs, attrs):
    """sign(W) times ReduceMean(Abs(W)) per unit; MatMul, Add"""
    x, w, _, _, b = inputs
    ws = g.shape(w)
    flat = w if len(ws) == 2 else g.reshape(w, [ws[0], -1])
    value = _binarised(g, flat, attrs, unit_axis=1, ndim=2, like=w)
    return _affine(g, x, value, ws, b, int(attrs["base_axis"]))


def _convolution(g, x, w_value, ws, b, attrs):
    if int(attrs["base_axis"]) != 1:
        g.unsupported("channel_last or base_axis != 1 (the binarised layers export with "
                      "base_axis 1)")
    n = len(ws) - 2
    pad, stride = ntuple(attrs["pad"], n, 0), ntuple(attrs["stride"], n, 1)
    dilation = ntuple(attrs["dilation"], n, 1)
    return g.op("Conv", [x, w_value] + ([b] if b else []), kernel_shape=list(ws[2:]),
                pads=list(pad) * 2, strides=list(stride), dilations=list(dilation),
                group=int(attrs["group"]))


def _connect_convolution_onnx(g, inputs, attrs):
    """sign(W) by Greater, Less, Where; Conv"""
    x, w, _, b = inputs
    return _convolution(g, x, _binarised(g, w, attrs), g.shape(w), b, attrs)


def _weight_convolution_onnx(g, inputs, attrs):
    """sign(W) times ReduceMean(Abs(W)) per output channel; Conv"""
    x, w, _, _, b = inputs
    return _convolution(g, x, _binarised(g, w, attrs, unit_axis=0), g.shape(w), b, attrs)


_AFFINE_FIELDS = dict(base_axis=int, quantize_zero_to=float)
_CONV_FIELDS = dict(base_axis=int, pad=tuple, stride=tuple, dilation=tuple, group=int,
                    quantize_zero_to=float)
for _f, _rule, _nnp in (
        (F.binary_connect_affine, _connect_affine_onnx,
         nnabla(F.binary_connect_affine, "BinaryConnectAffine", **_AFFINE_FIELDS)),
        (F.binary_weight_affine, _weight_affine_onnx,
         nnabla(F.binary_weight_affine, "BinaryWeightAffine", **_AFFINE_FIELDS)),
        (F.binary_connect_convolution, _connect_convolution_onnx,
         nnabla(F.binary_connect_convolution, "BinaryConnectConvolution", convert=_window_nnp,
                export=_window_export, **_CONV_FIELDS)),
        (F.binary_weight_convolution, _weight_convolution_onnx,
         nnabla(F.binary_weight_convolution, "BinaryWeightConvolution", convert=_window_nnp,
                export=_window_export, **_CONV_FIELDS))):
    register_rules(_f, onnx_export=_rule, onnx_import=Unmapped(COMPOSITE), nnp_import=_nnp)

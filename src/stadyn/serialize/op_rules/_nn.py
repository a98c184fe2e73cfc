"""Rules of the neural-network ops (``stadyn/ops/_nn.py``): affine, convolutions,
normalisation, dropout, embed, and the ONNX window helpers the pooling rules share
(``_nn_pooling.py``).

NNabla's semantics are translated where ONNX differs: ``affine``'s weight is ``(in, out)`` and
its ``base_axis`` folds leading axes.
"""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ...ops import CNTKStream, ntuple
from ._cntk_read_others import cntk_stream
from ._cntk_rules import convolution_cntk, times_cntk, transpose_times_cntk, v1, V1_WINDOW
from ._cntk_shape_rules import gather_cntk
from ._nnabla import nnabla, shape_or_none, spatial
from ._nnp_batch_norm import (batch_normalization_nnp, batch_normalization_nnp_export,
                              fused_batch_normalization_nnp_export)
from ._table import Unmapped, register_rules


def _affine_onnx(g, inputs, attrs):
    """Gemm (after Flatten), or MatMul + Add"""
    x, w, b = inputs
    base, xs, ws = int(attrs["base_axis"]), g.shape(x), g.shape(w)
    if base == 1 and len(ws) == 2:
        h = x if len(xs) == 2 else g.op("Flatten", [x], axis=1)
        bias = [] if not b else [b if len(g.shape(b)) == 1 else g.reshape(b, [-1])]
        return g.op("Gemm", [h, w] + bias)
    h = x if len(xs) == base + 1 else g.reshape(x, [0] * base + [-1])
    y = g.op("MatMul", [h, w if len(ws) == 2 else g.reshape(w, [ws[0], -1])])
    if b:
        y = g.op("Add", [y, g.reshape(b, [-1])])
    if len(ws) != 2:
        y = g.reshape(y, [0] * base + list(ws[1:]))
    return y


def _import_gemm(node):
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} inputs")
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    a, b = node.var(0), node.var(1)
    if node.attr("transA", 0):
        a = F.transpose(a, (1, 0))
    if node.attr("transB", 0):
        b = F.transpose(b, (1, 0))
    n = b.shape[1]
    c = node.var(2) if node.has(2) else None
    as_bias = (c is not None and alpha == 1.0 and beta == 1.0
               and tuple(c.shape) in ((n,), (1, n)))
    y = F.affine(a, b, c if as_bias else None)
    if alpha != 1.0:
        y = F.mul_scalar(y, alpha)
    if c is not None and not as_bias:
        y = F.add2(y, c if beta == 1.0 else F.mul_scalar(c, beta))
    return y


register_rules(F.affine, onnx_export=_affine_onnx, onnx_import={"Gemm": _import_gemm},
               nnp_import=nnabla(F.affine, "Affine", base_axis=int),
               cntk_import={"Times": times_cntk, "TransposeTimes": transpose_times_cntk},
               cntk_v1_import={"Times": v1(times_cntk, output_rank="outputRank"),
                               "TransposeTimes": transpose_times_cntk})


# -- convolutions -----------------------------------------------------------------------------
def _channel_first_perm(ndim, n):
    return list(range(ndim - n - 1)) + [ndim - 1] + list(range(ndim - n - 1, ndim - 1))


def _channel_last_perm(ndim, n):
    return list(range(ndim - n - 1)) + list(range(ndim - n, ndim)) + [ndim - n - 1]


def _lead_dims(g, x, lead):
    """Sizes of leading axes for a Reshape target (the batch axis stays dynamic)."""
    dims = [int(d) for d in lead]
    if dims and g.batch(x):
        dims[0] = -1
    return dims


def _conv_out(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _same_pads(sizes, kernel, stride, dilation, mode):
    """ONNX auto_pad SAME_UPPER / SAME_LOWER as (begins, ends)."""
    begins, ends = [], []
    for size, k, s, d in zip(sizes, kernel, stride, dilation):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        begins.append(small if mode == "SAME_UPPER" else big)
        ends.append(big if mode == "SAME_UPPER" else small)
    return begins, ends


def _onnx_window(node, n, kernel):
    """(strides, dilations, begins, ends) of an ONNX Conv/pooling node."""
    stride = [int(v) for v in node.attr("strides", [1] * n)]
    dilation = [int(v) for v in node.attr("dilations", [1] * n)]
    auto_pad = node.attr("auto_pad", "NOTSET")
    if isinstance(auto_pad, bytes):
        auto_pad = auto_pad.decode()
    sizes = node.shape(0)[-n:]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begins, ends = _same_pads(sizes, kernel, stride, dilation, auto_pad)
    elif auto_pad == "VALID":
        begins, ends = [0] * n, [0] * n
    else:
        pads = [int(v) for v in node.attr("pads", [0] * (2 * n))]
        begins, ends = pads[:n], pads[n:]
    return stride, dilation, begins, ends


def _pad_spatial(x, n, begins, ends, value=0.0):
    widths = []
    for b, e in zip(begins, ends):
        widths += [b, e]
    return F.pad(x, tuple(widths), constant_value=value)


def _convolution_onnx(g, inputs, attrs):
    """Conv"""
    x, w, b = inputs
    n = g.ndim(w) - 2
    xs, ws = list(g.shape(x)), list(g.shape(w))
    channel_last = bool(attrs["channel_last"])
    if channel_last:
        x = g.op("Transpose", [x], perm=_channel_first_perm(len(xs), n))
        xs = [xs[i] for i in _channel_first_perm(len(xs), n)]
        w = g.op("Transpose", [w], perm=[0, n + 1] + list(range(1, n + 1)))
        ws = [ws[0], ws[-1]] + ws[1:-1]
    base = int(attrs["base_axis"])
    pad, stride = ntuple(attrs["pad"], n, 0), ntuple(attrs["stride"], n, 1)
    dilation = ntuple(attrs["dilation"], n, 1)
    lead = xs[:base]
    h = x if base == 1 else g.reshape(x, [-1] + xs[base:])
    y = g.op("Conv", [h, w] + ([b] if b else []), kernel_shape=ws[2:], pads=list(pad) * 2,
             strides=list(stride), dilations=list(dilation), group=int(attrs["group"]))
    if base != 1:
        out = [_conv_out(s_, k, st, p, d)
               for s_, k, st, p, d in zip(xs[-n:], ws[2:], stride, pad, dilation)]
        y = g.reshape(y, _lead_dims(g, inputs[0], lead) + [ws[0]] + out)
    if channel_last:
        y = g.op("Transpose", [y], perm=_channel_last_perm(len(xs), n))
    return y


def _import_conv(node):
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} inputs")
    ws = node.shape(1)
    n = len(ws) - 2
    kernel = [int(k) for k in node.attr("kernel_shape", ws[2:])]
    stride, dilation, begins, ends = _onnx_window(node, n, kernel)
    x = node.var(0)
    if begins != ends:
        x = _pad_spatial(x, n, begins, ends)
        begins = [0] * n
    return F.convolution(x, node.var(1), node.var(2) if node.has(2) else None,
                         pad=tuple(begins), stride=tuple(stride), dilation=tuple(dilation),
                         group=int(node.attr("group", 1)))


def _window_nnp(node, fields):
    """NNabla's window fields: absent (empty) shapes are the catalog's ``None``; an absent
    ``group`` is 1."""
    out = {k: shape_or_none(v) if isinstance(v, tuple) and k != "kernel" else v
           for k, v in fields.items()}
    if "group" in out:
        out["group"] = out["group"] or 1
    return out


def _window_export(e, inputs, attrs):
    """NNabla's values for the catalog's ``None`` window fields: no padding, stride 1 (pooling:
    the kernel), dilation 1."""
    kernel = attrs.get("kernel")
    n = len(kernel) if kernel is not None else len(e.shape(inputs[1])) - 2
    out = dict(attrs)
    out["pad"] = tuple(attrs["pad"]) if attrs["pad"] is not None else (0,) * n
    default_stride = tuple(kernel) if kernel is not None else (1,) * n
    out["stride"] = tuple(attrs["stride"]) if attrs["stride"] is not None else default_stride
    for key in ("dilation", "output_padding"):
        if key in attrs:
            out[key] = tuple(attrs[key]) if attrs[key] is not None else \
                ((1,) if key == "dilation" else (0,)) * n
    return out


register_rules(F.convolution, onnx_export=_convolution_onnx, onnx_import={"Conv": _import_conv},
               nnp_import=nnabla(F.convolution, "Convolution", convert=_window_nnp,
                                    export=_window_export, base_axis=int,
                                    pad=tuple, stride=tuple, dilation=tuple, group=int,
                                    channel_last=bool),
               cntk_import={"Convolution": convolution_cntk},
               cntk_v1_import={"Convolution": v1(convolution_cntk, **V1_WINDOW)})


def _deconvolution_onnx(g, inputs, attrs):
    """ConvTranspose"""
    x, w, b = inputs
    if attrs["channel_last"] or int(attrs["base_axis"]) != 1:
        g.unsupported("channel_last or base_axis != 1")
    n = g.ndim(w) - 2
    return g.op("ConvTranspose", [x, w] + ([b] if b else []), kernel_shape=list(g.shape(w)[2:]),
                pads=list(ntuple(attrs["pad"], n, 0)) * 2,
                strides=list(ntuple(attrs["stride"], n, 1)),
                dilations=list(ntuple(attrs["dilation"], n, 1)), group=int(attrs["group"]),
                output_padding=list(ntuple(attrs["output_padding"], n, 0)))


def _import_conv_transpose(node):
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} inputs")
    ws, xs = node.shape(1), node.shape(0)
    n = len(ws) - 2
    kernel = [int(k) for k in node.attr("kernel_shape", ws[2:])]
    stride = [int(v) for v in node.attr("strides", [1] * n)]
    dilation = [int(v) for v in node.attr("dilations", [1] * n)]
    out_pad = [int(v) for v in node.attr("output_padding", [0] * n)]
    auto_pad = node.attr("auto_pad", "NOTSET")
    output_shape = node.attr("output_shape")
    if output_shape is None and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        output_shape = [s * st for s, st in zip(xs[-n:], stride)]
    if output_shape is not None:
        output_shape = [int(v) for v in output_shape][-n:]
        begins, ends = [], []
        for i in range(n):
            total = (stride[i] * (xs[2 + i] - 1) + out_pad[i] + (kernel[i] - 1) * dilation[i]
                     + 1 - output_shape[i])
            small, big = total // 2, total - total // 2
            upper = auto_pad == "SAME_UPPER"
            begins.append(small if upper else big)
            ends.append(big if upper else small)
    else:
        pads = [int(v) for v in node.attr("pads", [0] * (2 * n))]
        begins, ends = pads[:n], pads[n:]
    # A negative end pad (output_shape larger than the input gives) is extra output padding.
    out_pad = [op - min(e, 0) for op, e in zip(out_pad, ends)]
    ends = [max(e, 0) for e in ends]
    if any(p < 0 for p in begins):
        node.unsupported("negative padding at the start")
    common = [min(b, e) for b, e in zip(begins, ends)]
    y = F.deconvolution(node.var(0), node.var(1), node.var(2) if node.has(2) else None,
                        pad=tuple(common), stride=tuple(stride), dilation=tuple(dilation),
                        group=int(node.attr("group", 1)), output_padding=tuple(out_pad))
    if begins != ends:  # torch pads symmetrically: crop the rest from the larger side
        full = list(y.shape[2:])
        start = [b - c for b, c in zip(begins, common)]
        stop = [f - (e - c) for f, e, c in zip(full, ends, common)]
        y = F.slice(y, start=tuple(start), stop=tuple(stop), step=(1,) * n)
    return y


register_rules(F.deconvolution, onnx_export=_deconvolution_onnx,
               onnx_import={"ConvTranspose": _import_conv_transpose},
               nnp_import=nnabla(F.deconvolution, "Deconvolution", convert=_window_nnp,
                                    export=_window_export,
                                      base_axis=int, pad=tuple, stride=tuple, dilation=tuple,
                                      group=int, channel_last=bool, output_padding=tuple))


# -- normalisation, dropout, embed ------------------------------------------------------------
def _batch_normalization_onnx(g, inputs, attrs):
    """BatchNormalization (running statistics), or its formula for other axes"""
    x, beta, gamma, mean, var = inputs
    if attrs["output_stat"]:
        g.unsupported("output_stat=True (batch statistics are not an inference output)")
    if not mean or not var:
        g.unsupported("no running statistics")
    xs = g.shape(x)
    nd = len(xs)
    axes = sorted(int(a) % nd for a in attrs["axes"])
    eps = float(attrs["eps"])
    dtype = g.dtype(x)
    if axes == [1] and nd >= 2:
        def vector(p, fill):
            return g.reshape(p, [-1]) if p else g.const(np.full(xs[1], fill, dtype=dtype))
        return g.op("BatchNormalization", [x, vector(gamma, 1.0), vector(beta, 0.0),
                                           vector(mean, 0.0), vector(var, 1.0)], epsilon=eps)
    shape = [xs[i] if i in axes else 1 for i in range(nd)]
    y = g.op("Div", [g.op("Sub", [x, g.reshape(mean, shape)]),
                     g.op("Sqrt", [g.op("Add", [g.reshape(var, shape), g.scalar(eps, x)])])])
    if gamma:
        y = g.op("Mul", [y, g.reshape(gamma, shape)])
    if beta:
        y = g.op("Add", [y, g.reshape(beta, shape)])
    return y


def _import_batch_normalization(node):
    if node.attr("training_mode", 0):
        node.unsupported("training_mode=1 (ONNX updates the running variance with the biased "
                         "batch variance, NNabla with the unbiased one)")
    if node.n_outputs > 1:
        node.unsupported("running-statistics outputs")
    if node.dtype(0).kind != "f" or len({node.dtype(i) for i in range(5)}) != 1:
        node.unsupported("mixed or integer dtypes")
    return F.batch_normalization(node.var(0), node.var(2), node.var(1),
                                 node.var(3, need_grad=False), node.var(4, need_grad=False),
                                 axes=(1,), decay_rate=float(node.attr("momentum", 0.9)),
                                 eps=float(node.attr("epsilon", 1e-5)), batch_stat=None)


register_rules(F.batch_normalization, onnx_export=_batch_normalization_onnx,
               onnx_import={"BatchNormalization": _import_batch_normalization},
               nnp_import={"BatchNormalization": batch_normalization_nnp},
               nnp_export=batch_normalization_nnp_export)


def _dropout_onnx(g, inputs, attrs):
    """Identity (inference)"""
    if attrs["output_mask"]:
        g.unsupported("output_mask=True")
    return g.op("Identity", [inputs[0]])


def _import_dropout(node):
    if node.n_outputs > 1:
        node.unsupported("the mask output")
    if node.opset >= 12:
        ratio = float(np.asarray(node.const(1, 0.5)))
        train = bool(np.asarray(node.const(2, False)))
    else:
        ratio, train = float(node.attr("ratio", 0.5)), not node.attr("is_test", 1)
    if train and ratio > 0.0:
        node.unsupported("training_mode=True (random masks cannot match)")
    return F.dropout(node.var(0), ratio, train_only=True)


def _dropout_nnp_export(e, inputs, attrs):
    """Dropout (Identity for train-only dropout in an inference network)"""
    if attrs["output_mask"]:
        e.unsupported("output_mask=True")
    if attrs["train_only"] and not e.training:
        e.function("Identity", inputs[:1])
    else:
        e.function("Dropout", inputs[:1], {"p": float(attrs["p"]), "seed": int(attrs["seed"])})


def _dropout_cntk(node):
    """CNTK's ``Dropout``: only while training, its mask drawn from the stream of ``rngSeed``
    moved on by ``rngOffset`` (:func:`cntk_stream`)."""
    return F.dropout(node.var(0), float(node.attr("dropoutRate", 0.5)), seed=cntk_stream(node),
                     train_only=True)


def _dropout_v1(node):
    """A v1 (``cntk.exe``) ``Dropout`` node: the file keeps no rate (``cntk.exe``'s SGD sets
    it from its ``dropoutRate`` when it trains), so, as CNTK 2.7 loads it, the rate is 0 (the
    identity) until set (``set_attribute("dropoutRate", ...)``); from version 17 the node's
    ``rng_seed`` and ``rng_offset``: the stream its masks then draw on from, as CNTK 2.7's
    loaded node's do.  An older file keeps no seed (``cntk.exe`` made one per process): the
    masks come from torch's generator."""
    seed = node.attr("rng_seed")
    stream = -1 if seed is None else CNTKStream(int(seed), int(node.attr("rng_offset", 0)))
    return F.dropout(node.var(0), 0.0, seed=stream, train_only=True)


register_rules(F.dropout, onnx_export=_dropout_onnx, onnx_import={"Dropout": _import_dropout},
               nnp_import=nnabla(F.dropout, "Dropout", p=float, seed=int, draws=True),
               nnp_export=_dropout_nnp_export,
               cntk_import={"Dropout": _dropout_cntk},
               cntk_v1_import={"Dropout": _dropout_v1})


def _depthwise_convolution_onnx(g, inputs, attrs):
    """Unsqueeze, Conv (group = channels)"""
    x, w, b = inputs[0], inputs[1], inputs[2]
    if attrs["base_axis"] != 1:
        g.unsupported("channel_last or base_axis != 1")
    n = g.ndim(w) - 1
    pad = ntuple(attrs["pad"], n, 0)
    conv = dict(kernel_shape=list(g.shape(w)[1:]), strides=list(ntuple(attrs["stride"], n, 1)),
                dilations=list(ntuple(attrs["dilation"], n, 1)), pads=list(pad) + list(pad),
                group=int(g.shape(x)[1]))
    return g.op("Conv", [x, g.unsqueeze(w, [1])] + ([b] if b else []), **conv)


register_rules(F.depthwise_convolution, onnx_export=_depthwise_convolution_onnx,
               onnx_import=Unmapped("ONNX's Conv with group = channels imports as convolution"),
               nnp_import=nnabla(F.depthwise_convolution, "DepthwiseConvolution",
                                 defaults={"pad": spatial(0), "stride": spatial(1),
                                           "dilation": spatial(1)}, base_axis=int, pad=tuple,
                                 stride=tuple, dilation=tuple, multiplier=int))


def _embed_onnx(g, inputs, attrs):
    """Gather"""
    ids, w = inputs
    if g.dtype(ids) != np.int64:
        ids = g.cast(ids, np.int64)
    return g.op("Gather", [w, ids], axis=0)


def _import_gather(node):
    """Rows of a table (axis 0, indices that are not negative) import as embed; any other
    Gather as gather."""
    axis = int(node.attr("axis", 0)) % max(len(node.shape(0)), 1)
    if node.dtype(1).kind not in "iu":
        node.unsupported(f"{node.dtype(1)} indices")
    if axis == 0 and not (node.is_const(1) and (np.asarray(node.const(1)) < 0).any()):
        return F.embed(node.var(1), node.var(0))
    return F.gather(node.var(0), node.var(1), axis)


register_rules(F.embed, onnx_export=_embed_onnx, onnx_import={"Gather": _import_gather},
               nnp_import=nnabla(F.embed, "Embed"), cntk_import={"Gather": gather_cntk})


def _fused_batch_normalization_onnx(g, inputs, attrs):
    """BatchNormalization (running statistics), Add, Relu"""
    y = _batch_normalization_onnx(g, inputs[:5], attrs)
    if inputs[5]:
        y = g.op("Add", [y, inputs[5]])
    return g.op("Relu", [y])


register_rules(F.fused_batch_normalization, onnx_export=_fused_batch_normalization_onnx,
               onnx_import=Unmapped("ONNX has no fused form: BatchNormalization, Add and Relu "
                                    "import one by one"),
               nnp_export=fused_batch_normalization_nnp_export,
               nnp_import=nnabla(F.fused_batch_normalization, "FusedBatchNormalization",
                                 axes=list, decay_rate=float, eps=float, batch_stat=bool,
                                 nonlinearity=str, convert=lambda node, v: dict(
                                     v, axes=tuple(v["axes"]) or (1,), rule="nnabla")))

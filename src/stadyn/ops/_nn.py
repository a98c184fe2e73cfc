"""Neural-network layers as ops: affine, convolutions, pooling, normalisation, dropout, embed."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as TF

from ..graph import is_training
from . import _kernels as kernels
from ._registry import op
from ._util import batch_flatten, ntuple

_C = "neural"

_CONV = {1: TF.conv1d, 2: TF.conv2d, 3: TF.conv3d}
_DECONV = {1: TF.conv_transpose1d, 2: TF.conv_transpose2d, 3: TF.conv_transpose3d}
_MAXPOOL = {1: TF.max_pool1d, 2: TF.max_pool2d, 3: TF.max_pool3d}
_AVGPOOL = {1: TF.avg_pool1d, 2: TF.avg_pool2d, 3: TF.avg_pool3d}


# -- ONNX mappings (see OpSpec.onnx / OpSpec.onnx_import) -------------------------------------
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
    from ._arith import add2, mul_scalar
    from ._shape import transpose
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} inputs")
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    a, b = node.var(0), node.var(1)
    if node.attr("transA", 0):
        a = transpose(a, (1, 0))
    if node.attr("transB", 0):
        b = transpose(b, (1, 0))
    n = b.shape[1]
    c = node.var(2) if node.has(2) else None
    as_bias = (c is not None and alpha == 1.0 and beta == 1.0
               and tuple(c.shape) in ((n,), (1, n)))
    y = affine(a, b, c if as_bias else None)
    if alpha != 1.0:
        y = mul_scalar(y, alpha)
    if c is not None and not as_bias:
        y = add2(y, c if beta == 1.0 else mul_scalar(c, beta))
    return y


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
    from ._shape import pad
    widths = []
    for b, e in zip(begins, ends):
        widths += [b, e]
    return pad(x, tuple(widths), constant_value=value)


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
    return convolution(x, node.var(1), node.var(2) if node.has(2) else None, pad=tuple(begins),
                       stride=tuple(stride), dilation=tuple(dilation),
                       group=int(node.attr("group", 1)))


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
    from ._shape import slice as slice_
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
    y = deconvolution(node.var(0), node.var(1), node.var(2) if node.has(2) else None,
                      pad=tuple(common), stride=tuple(stride), dilation=tuple(dilation),
                      group=int(node.attr("group", 1)), output_padding=tuple(out_pad))
    if begins != ends:  # torch pads symmetrically: crop the rest from the larger side
        full = list(y.shape[2:])
        start = [b - c for b, c in zip(begins, common)]
        stop = [f - (e - c) for f, e, c in zip(full, ends, common)]
        y = slice_(y, start=tuple(start), stop=tuple(stop), step=(1,) * n)
    return y


def _pool_prologue(g, x, attrs):
    """Channel-first (N, C, *spatial) input of a pooling op and how to undo the layout."""
    inputs_x = x
    kernel = attrs["kernel"]
    n0 = len(kernel)
    xs = list(g.shape(x))
    layout = None
    if attrs["channel_last"]:
        x = g.op("Transpose", [x], perm=_channel_first_perm(len(xs), n0))
        xs = [xs[i] for i in _channel_first_perm(len(xs), n0)]
        layout = _channel_last_perm(len(xs), n0)
    geometry = _pool_geometry(torch.empty(xs, device="meta"), kernel, attrs["stride"],
                              attrs["ignore_border"], attrs["pad"])
    n = geometry[0]
    lead = None
    if len(xs) != n + 2:  # as the impl: fold the leading axes into (-1, 1, *spatial)
        lead = _lead_dims(g, inputs_x, xs[:-n])
        x = g.reshape(x, [-1, 1] + xs[-n:])
    return x, geometry, lead, layout


def _pool_epilogue(g, y, geometry, lead, layout):
    out = list(geometry[5])
    if lead is not None:
        y = g.reshape(y, lead + out)
    if layout is not None:
        y = g.op("Transpose", [y], perm=layout)
    return y


def _max_pooling_onnx(g, inputs, attrs):
    """MaxPool (after Pad where the windows overhang by a kernel or more)"""
    x, geometry, lead, layout = _pool_prologue(g, inputs[0], attrs)
    n, kernel, stride, pad, sizes, out, extra = geometry
    begins, ends = list(pad), [p + e for p, e in zip(pad, extra)]
    if all(b < k and e < k for b, e, k in zip(begins, ends, kernel)):
        y = g.op("MaxPool", [x], kernel_shape=list(kernel), strides=list(stride),
                 pads=begins + ends)
    else:
        widths = [0, 0] + begins + [0, 0] + ends
        padded = g.op("Pad", [x, g.ints(widths), g.const(np.asarray(-np.inf, np.float32))])
        y = g.op("MaxPool", [padded], kernel_shape=list(kernel), strides=list(stride))
    return _pool_epilogue(g, y, geometry, lead, layout)


def _average_pooling_onnx(g, inputs, attrs):
    """AveragePool (or Pad, AveragePool and Mul by the window sizes)"""
    x, geometry, lead, layout = _pool_prologue(g, inputs[0], attrs)
    n, kernel, stride, pad, sizes, out, extra = geometry
    including_pad = bool(attrs["including_pad"])
    if not any(extra) and all(p < k for p, k in zip(pad, kernel)):
        y = g.op("AveragePool", [x], kernel_shape=list(kernel), strides=list(stride),
                 pads=list(pad) * 2, count_include_pad=int(including_pad))
    else:  # window sums over an explicitly padded input, divided by NNabla's window sizes
        ends = [p + e for p, e in zip(pad, extra)]
        widths = [0, 0] + list(pad) + [0, 0] + ends
        padded = g.op("Pad", [x, g.ints(widths)])
        y = g.op("AveragePool", [padded], kernel_shape=list(kernel), strides=list(stride))
        counts = np.ones((), dtype=np.float64)
        for axis in range(n):
            counts = np.multiply.outer(counts, _window_counts(
                sizes[axis], out[axis], kernel[axis], stride[axis], pad[axis], including_pad))
        scale = (math.prod(kernel) / counts).reshape((1, 1) + tuple(out))
        y = g.op("Mul", [y, g.const(scale.astype(g.dtype(inputs[0])))])
    return _pool_epilogue(g, y, geometry, lead, layout)


def _onnx_pool_geometry(node, n):
    """Kernel, strides, (begins, ends) and the extra end padding an ONNX pooling node needs."""
    kernel = [int(k) for k in node.attr("kernel_shape")]
    stride, dilation, begins, ends = _onnx_window(node, n, kernel)
    if any(d != 1 for d in dilation):
        node.unsupported("dilations (the catalog's pooling has none)")
    sizes = node.shape(0)[-n:]
    extra = []
    for size, k, s, b, e in zip(sizes, kernel, stride, begins, ends):
        span = size + b + e - k
        out = (-(-span // s) if node.attr("ceil_mode", 0) else span // s) + 1
        if node.attr("ceil_mode", 0) and (out - 1) * s >= size + b:
            out -= 1  # the last window would start in the end padding
        extra.append(max(0, (out - 1) * s + k - (size + b + e)))
    return kernel, stride, begins, ends, extra


def _import_max_pool(node):
    if node.n_outputs > 1:
        node.unsupported("the Indices output")
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} input")
    n = len(node.shape(0)) - 2
    kernel, stride, begins, ends, extra = _onnx_pool_geometry(node, n)
    x = node.var(0)
    if not any(extra) and begins == ends:
        return max_pooling(x, tuple(kernel), tuple(stride), True, tuple(begins))
    ends = [e + x_ for e, x_ in zip(ends, extra)]
    x = _pad_spatial(x, n, begins, ends, float("-inf"))
    return max_pooling(x, tuple(kernel), tuple(stride), True)


def _import_average_pool(node):
    from ._arith import div2
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} input")
    n = len(node.shape(0)) - 2
    kernel, stride, begins, ends, extra = _onnx_pool_geometry(node, n)
    x = node.var(0)
    include = bool(node.attr("count_include_pad", 0))
    if not any(extra) and begins == ends:
        return average_pooling(x, tuple(kernel), tuple(stride), True, tuple(begins),
                               including_pad=include)
    # Window sums over the padded input, divided by ONNX's count: the window clipped to the
    # input (count_include_pad=0) or to the input and its pads (count_include_pad=1).
    total_ends = [e + x_ for e, x_ in zip(ends, extra)]
    sums = average_pooling(_pad_spatial(x, n, begins, total_ends), tuple(kernel), tuple(stride),
                           True)
    from ._misc import constant
    ones = constant(1.0, node.shape(0))
    if include:
        inner = _pad_spatial(ones, n, begins, ends, 1.0)
        mask = _pad_spatial(inner, n, [0] * n, extra, 0.0)
    else:
        mask = _pad_spatial(ones, n, begins, total_ends, 0.0)
    counts = average_pooling(mask, tuple(kernel), tuple(stride), True)
    return div2(sums, counts)


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
    return batch_normalization(node.var(0), node.var(2), node.var(1),
                               node.var(3, need_grad=False), node.var(4, need_grad=False),
                               axes=(1,), decay_rate=float(node.attr("momentum", 0.9)),
                               eps=float(node.attr("epsilon", 1e-5)), batch_stat=None)


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
    return dropout(node.var(0), ratio, train_only=True)


def _embed_onnx(g, inputs, attrs):
    """Gather"""
    ids, w = inputs
    if g.dtype(ids) != np.int64:
        ids = g.cast(ids, np.int64)
    return g.op("Gather", [w, ids], axis=0)


def _import_gather(node):
    if node.attr("axis", 0) not in (0, -len(node.shape(0))):
        node.unsupported("axis != 0 (embed selects rows)")
    if node.is_const(1) and (np.asarray(node.const(1)) < 0).any():
        node.unsupported("negative indices")
    return embed(node.var(1), node.var(0))


@op(3, category=_C, onnx=_affine_onnx, onnx_import={"Gemm": _import_gemm}, precision="half")
def affine(x, weight, bias=None, base_axis=1):
    """``y = x W + b`` over the axes from ``base_axis`` on (NNabla's affine).

    ``x`` is read as a matrix of shape ``(prod(x.shape[:base_axis]), prod(x.shape[base_axis:]))``;
    ``weight`` has shape ``(that second size, *out_shape)``; the output shape is
    ``x.shape[:base_axis] + out_shape``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.affine(sd.Variable((16, 512, 4, 4)), sd.Variable((8192, 1024)), sd.Variable((1024,))).shape
        (16, 1024)
    """
    batch = tuple(x.shape[:base_axis])
    out_shape = tuple(weight.shape[1:])
    w = weight.reshape(weight.shape[0], -1)
    b = bias.reshape(-1) if bias is not None else None
    y = kernels.linear(x.reshape(math.prod(batch), -1), w, b)
    return y.reshape(batch + out_shape)


def _to_channel_first(x, channel_last, n):
    if not channel_last:
        return x
    return x.movedim(-1, x.ndim - n - 1)


def _from_channel_first(y, channel_last, n):
    if not channel_last:
        return y
    return y.movedim(y.ndim - n - 1, -1)


@op(3, category=_C, onnx=_convolution_onnx, onnx_import={"Conv": _import_conv}, precision="half")
def convolution(x, weight, bias=None, base_axis=1, pad=None, stride=None, dilation=None, group=1,
                channel_last=False):
    """N-d convolution (cross-correlation) with ``weight`` of shape
    ``(out_channels, in_channels // group, *kernel)``; ``pad``, ``stride`` and ``dilation`` are per
    spatial axis (defaults 0, 1, 1).  Axes before ``base_axis`` are batch axes.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.convolution(sd.Variable((16, 1, 8, 8)), sd.Variable((64, 1, 3, 3)), pad=(1, 1)).shape
        (16, 64, 8, 8)
    """
    n = weight.ndim - 2
    if channel_last:
        weight = weight.movedim(-1, 1)
    x = _to_channel_first(x, channel_last, n)
    x, batch = batch_flatten(x, base_axis)
    y = _CONV[n](x, weight, bias, ntuple(stride, n, 1), ntuple(pad, n, 0), ntuple(dilation, n, 1),
                 group)
    y = y.reshape(tuple(batch) + tuple(y.shape[1:]))
    return _from_channel_first(y, channel_last, n)


@op(3, category=_C, onnx=_deconvolution_onnx,
    onnx_import={"ConvTranspose": _import_conv_transpose}, precision="half")
def deconvolution(x, weight, bias=None, base_axis=1, pad=None, stride=None, dilation=None,
                  group=1, channel_last=False, output_padding=None):
    """Transposed convolution with ``weight`` of shape ``(in_channels, out_channels // group,
    *kernel)``; output size ``(i - 1) * s - 2 p + d (k - 1) + 1 + output_padding``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.deconvolution(sd.Variable((2, 8, 4, 4)), sd.Variable((8, 3, 2, 2)), stride=(2, 2)).shape
        (2, 3, 8, 8)
    """
    n = weight.ndim - 2
    if channel_last:
        weight = weight.movedim(-1, 1)
    x = _to_channel_first(x, channel_last, n)
    x, batch = batch_flatten(x, base_axis)
    y = _DECONV[n](x, weight, bias, ntuple(stride, n, 1), ntuple(pad, n, 0),
                   ntuple(output_padding, n, 0), group, ntuple(dilation, n, 1))
    y = y.reshape(tuple(batch) + tuple(y.shape[1:]))
    return _from_channel_first(y, channel_last, n)


def _pool_geometry(x, kernel, stride, ignore_border, pad):
    n = len(kernel)
    kernel = tuple(int(k) for k in kernel)
    stride = ntuple(stride, n, 0) if stride is not None else kernel
    pad = ntuple(pad, n, 0)
    sizes = tuple(x.shape[-n:])
    if ignore_border:
        out = tuple((s + 2 * p - k) // st + 1 for s, p, k, st in zip(sizes, pad, kernel, stride))
    else:  # NNabla 1.39: every window starts inside the input (one pad on the left only)
        out = tuple((s + p - 1) // st + 1 for s, p, st in zip(sizes, pad, stride))
    # Extra right/bottom padding that makes torch's floor formula give ``out`` windows.
    extra = tuple(max(0, (o - 1) * st + k - (s + 2 * p))
                  for o, st, k, s, p in zip(out, stride, kernel, sizes, pad))
    return n, kernel, stride, pad, sizes, out, extra


def _explicit_pad(x, n, pad, extra, value):
    widths = []
    for p, e in reversed(list(zip(pad, extra))):
        widths += [p, p + e]
    return TF.pad(x, widths, value=value)


@op(1, category=_C, onnx=_max_pooling_onnx, onnx_import={"MaxPool": _import_max_pool})
def max_pooling(x, kernel, stride=None, ignore_border=True, pad=None, channel_last=False):
    """Max over windows of the last ``len(kernel)`` axes (``stride`` defaults to ``kernel``).

    With ``ignore_border`` the output size is ``(W + 2P - K) // S + 1``; without it (NNabla's
    rule) ``(W + P - 1) // S + 1``, and the last windows may hang over the border.  Padding never
    wins the max.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.max_pooling(sd.Variable((1, 1, 7, 7)), (2, 2)).shape, F.max_pooling(sd.Variable((1, 1, 7, 7)), (2, 2), ignore_border=False).shape
        ((1, 1, 3, 3), (1, 1, 4, 4))
    """
    n0 = len(kernel)
    x = _to_channel_first(x, channel_last, n0)
    n, kernel, stride, pad, sizes, out, extra = _pool_geometry(x, kernel, stride, ignore_border,
                                                              pad)
    lead = tuple(x.shape[:-n])
    x3 = x.reshape((-1, 1) + sizes) if x.ndim != n + 2 else x
    if any(extra) or any(2 * p > k for p, k in zip(pad, kernel)):
        x3 = _explicit_pad(x3, n, pad, extra, float("-inf"))
        y = _MAXPOOL[n](x3, kernel, stride, 0)
    else:
        y = _MAXPOOL[n](x3, kernel, stride, pad)
    y = y.reshape(lead + tuple(y.shape[-n:]))
    return _from_channel_first(y, channel_last, n0)


@op(1, category=_C, onnx=_average_pooling_onnx,
    onnx_import={"AveragePool": _import_average_pool})
def average_pooling(x, kernel, stride=None, ignore_border=True, pad=None, channel_last=False,
                    including_pad=True):
    """Mean over windows of the last ``len(kernel)`` axes (sizes as :func:`max_pooling`).

    ``including_pad`` divides by the window clipped to the padded input; otherwise by the part
    inside the input.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.average_pooling(sd.Variable((16, 512, 8, 8)), (2, 2)).shape
        (16, 512, 4, 4)
    """
    n0 = len(kernel)
    x = _to_channel_first(x, channel_last, n0)
    n, kernel, stride, pad, sizes, out, extra = _pool_geometry(x, kernel, stride, ignore_border,
                                                              pad)
    lead = tuple(x.shape[:-n])
    if stride == kernel and not any(pad) and not any(extra):
        y = kernels.average_pool_tiles(x, kernel)
        if y is not None:
            return _from_channel_first(y, channel_last, n0)
    x3 = x.reshape((-1, 1) + sizes) if x.ndim != n + 2 else x
    if not any(extra) and all(2 * p <= k for p, k in zip(pad, kernel)):
        y = _AVGPOOL[n](x3, kernel, stride, pad, False, including_pad)
    else:
        sums = _AVGPOOL[n](_explicit_pad(x3, n, pad, extra, 0.0), kernel, stride, 0, False, True)
        sums = sums * math.prod(kernel)
        counts = np.ones((1,) * 2, dtype=np.float64)
        for axis in range(n):
            c = _window_counts(sizes[axis], out[axis], kernel[axis], stride[axis], pad[axis],
                               including_pad)
            counts = np.multiply.outer(counts, c)
        counts = counts.reshape((1, 1) + out)
        y = sums / torch.as_tensor(counts, dtype=sums.dtype, device=sums.device)
    y = y.reshape(lead + tuple(y.shape[-n:]))
    return _from_channel_first(y, channel_last, n0)


def _global_average_pooling_onnx(g, inputs, attrs):
    """GlobalAveragePool"""
    x = inputs[0]
    return g.op("GlobalAveragePool" if g.ndim(x) > 2 else "Identity", [x])


def _import_global_average_pool(node):
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} input")
    return global_average_pooling(node.var(0))


def _window_counts(size, out, k, s, p, including_pad):
    starts = np.arange(out) * s - p
    ends = np.minimum(starts + k, size + p)
    if not including_pad:
        return (np.minimum(ends, size) - np.maximum(starts, 0)).astype(np.float64)
    return (ends - starts).astype(np.float64)


@op(1, category=_C, onnx=_global_average_pooling_onnx,
    onnx_import={"GlobalAveragePool": _import_global_average_pool})
def global_average_pooling(x):
    """Mean over all spatial axes (from axis 2 on), keeping them with size 1; an ``(N, C)`` input
    has no spatial axes and comes back unchanged.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.global_average_pooling(sd.Variable((2, 8, 5, 5))).shape
        (2, 8, 1, 1)
    """
    spatial = tuple(range(2, x.ndim))
    if not spatial:  # torch reads an empty ``dim`` as "every axis"
        return x.view_as(x)
    return torch.mean(x, dim=spatial, keepdim=True)


def _check_bn_statistics(x, tensors, axes) -> None:
    """One value per normalised channel in beta, gamma, mean and variance.  Checked by the shape
    rule, which runs no kernel; a running kernel has ATen's own check."""
    channels = math.prod(x.shape[int(a) % x.ndim] for a in axes)
    for name, t in zip(("beta", "gamma", "mean", "variance"), tensors):
        if t is not None and t.numel() != channels:
            raise ValueError(f"{name} has {t.numel()} elements for {channels} normalised "
                             f"channel(s) on axes {tuple(int(a) % x.ndim for a in axes)}")


def _bn_shape(x, beta, gamma, mean, variance, axes=(1,), decay_rate=0.9, eps=1e-05,
              batch_stat=True, output_stat=False, time_constant=None):
    # A shape rule (not the kernel on meta tensors): torch refuses one value per channel while
    # training, but a static graph may be built on a placeholder batch of 1.
    _check_bn_statistics(x, (beta, gamma, mean, variance), axes)
    y = torch.empty_like(x)
    if not output_stat:
        return y
    stat = [x.shape[i] if i in [int(a) % x.ndim for a in axes] else 1 for i in range(x.ndim)]
    return y, x.new_empty(stat), x.new_empty(stat)


@op(5, category=_C, shape=_bn_shape, onnx=_batch_normalization_onnx,
    onnx_import={"BatchNormalization": _import_batch_normalization}, precision="mixed")
def batch_normalization(x, beta, gamma, mean, variance, axes=(1,), decay_rate=0.9, eps=1e-05,
                        batch_stat=True, output_stat=False, time_constant=None):
    """Batch normalisation over every axis but ``axes`` (NNabla's argument order).

    ``beta``, ``gamma``, ``mean`` and ``variance`` have size 1 on the reduced axes (``(1, C, 1,
    1)`` for images).  With ``batch_stat`` the batch's statistics normalise and the running ones
    are updated in place: ``r = decay_rate * r + (1 - decay_rate) * batch`` with the unbiased batch
    variance; without it the running statistics are used.  ``output_stat`` also returns the batch
    mean and (biased) variance.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> s = (1, 3, 1, 1)
        >>> F.batch_normalization(sd.Variable((4, 3, 5, 5)), sd.Variable(s), sd.Variable(s), sd.Variable(s), sd.Variable(s)).shape
        (4, 3, 5, 5)
    """
    axes = [int(a) % x.ndim for a in axes]
    if batch_stat is None:
        batch_stat = is_training()
    if time_constant is not None:
        decay_rate = math.exp(-x.shape[0] / time_constant) if time_constant > 0 else 0.0
    if axes != [1]:
        reduce = [a for a in range(x.ndim) if a not in axes]
        perm = reduce + axes
        moved = x.permute(*perm)
        flat = moved.reshape(math.prod(moved.shape[:len(reduce)]), -1)
        y = _bn_core(flat, beta, gamma, mean, variance, decay_rate, eps, batch_stat)
        y = y.reshape(moved.shape).permute(*np.argsort(perm).tolist())
    else:
        y = _bn_core(x, beta, gamma, mean, variance, decay_rate, eps, batch_stat)
    if not output_stat:
        return y
    reduce = [a for a in range(x.ndim) if a not in axes]
    return (y, torch.mean(x, dim=reduce, keepdim=True),
            torch.var(x, dim=reduce, keepdim=True, unbiased=False))


def _bn_core(x, beta, gamma, mean, variance, decay_rate, eps, batch_stat):
    return TF.batch_norm(x, mean.reshape(-1) if mean is not None else None,
                         variance.reshape(-1) if variance is not None else None,
                         gamma.reshape(-1) if gamma is not None else None,
                         beta.reshape(-1) if beta is not None else None,
                         bool(batch_stat), 1.0 - decay_rate, eps)


@op(1, category=_C, onnx=_dropout_onnx, onnx_import={"Dropout": _import_dropout})
def dropout(x, p=0.5, seed=-1, output_mask=False, train_only=False):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    NNabla's dropout always applies; with ``train_only`` (CNTK's Dropout layer) it is the
    identity outside the training phase (:func:`stadyn.training`).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.dropout(sd.Variable((4, 10)), 0.5).shape
        (4, 10)
    """
    if p <= 0.0 or (train_only and not is_training()):
        y = x.view_as(x)  # not ``x`` itself: the output gets its own autograd node
        return (y, torch.ones_like(x)) if output_mask else y
    if output_mask:
        mask = (torch.rand_like(x) >= p).to(x.dtype)
        return x * mask / (1.0 - p), mask
    return TF.dropout(x, p, True)


@op(2, category=_C, onnx=_embed_onnx, onnx_import={"Gather": _import_gather})
def embed(x0, w):
    """Rows of ``w`` selected by the integer ids ``x0``: output ``x0.shape + w.shape[1:]``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.embed(sd.Variable((4, 7)), sd.Variable((100, 16))).shape
        (4, 7, 16)
    """
    return TF.embedding(x0.long(), w.reshape(w.shape[0], -1)).reshape(
        tuple(x0.shape) + tuple(w.shape[1:]))

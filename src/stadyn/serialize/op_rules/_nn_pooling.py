"""Rules of the pooling ops of ``stadyn/ops/_nn.py``: ``max_pooling``, ``average_pooling``,
``global_average_pooling``.

Pooling uses NNabla's window geometry (:func:`stadyn.ops.pool_geometry`, the op's own), with
explicit ``Pad`` where ONNX's pooling would count differently; the ONNX window helpers are the
convolutions' (``_nn.py``).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ... import functions as F
from ...ops import pool_geometry, window_counts
from ._cntk_rules import pooling_cntk, pooling_v1
from ._nn import (_channel_first_perm, _channel_last_perm, _lead_dims, _onnx_window,
                  _pad_spatial, _window_export, _window_nnp)
from ._nnabla import nnabla, reshaped_nnp
from ._table import register_rules


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
    geometry = pool_geometry(torch.empty(xs, device="meta"), kernel, attrs["stride"],
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


def _import_max_pool(node):
    if node.n_outputs > 1:
        node.unsupported("the Indices output")
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} input")
    n = len(node.shape(0)) - 2
    kernel, stride, begins, ends, extra = _onnx_pool_geometry(node, n)
    x = node.var(0)
    if not any(extra) and begins == ends:
        return F.max_pooling(x, tuple(kernel), tuple(stride), True, tuple(begins))
    ends = [e + x_ for e, x_ in zip(ends, extra)]
    x = _pad_spatial(x, n, begins, ends, float("-inf"))
    return F.max_pooling(x, tuple(kernel), tuple(stride), True)


register_rules(F.max_pooling, onnx_export=_max_pooling_onnx,
               onnx_import={"MaxPool": _import_max_pool},
               nnp_import=nnabla(F.max_pooling, "MaxPooling", convert=_window_nnp,
                                    export=_window_export, kernel=tuple,
                                    stride=tuple, ignore_border=bool, pad=tuple,
                                    channel_last=bool),
               cntk_import={"Pooling": pooling_cntk},
               cntk_v1_import={"Pooling": pooling_v1})


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
            counts = np.multiply.outer(counts, window_counts(
                sizes[axis], out[axis], kernel[axis], stride[axis], pad[axis], including_pad))
        scale = (math.prod(kernel) / counts).reshape((1, 1) + tuple(out))
        y = g.op("Mul", [y, g.const(scale.astype(g.dtype(inputs[0])))])
    return _pool_epilogue(g, y, geometry, lead, layout)


def _import_average_pool(node):
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} input")
    n = len(node.shape(0)) - 2
    kernel, stride, begins, ends, extra = _onnx_pool_geometry(node, n)
    x = node.var(0)
    include = bool(node.attr("count_include_pad", 0))
    if not any(extra) and begins == ends:
        return F.average_pooling(x, tuple(kernel), tuple(stride), True, tuple(begins),
                                 including_pad=include)
    # Window sums over the padded input, divided by ONNX's count: the window clipped to the
    # input (count_include_pad=0) or to the input and its pads (count_include_pad=1).
    total_ends = [e + x_ for e, x_ in zip(ends, extra)]
    sums = F.average_pooling(_pad_spatial(x, n, begins, total_ends), tuple(kernel),
                             tuple(stride), True)
    ones = F.constant(1.0, node.shape(0))
    if include:
        inner = _pad_spatial(ones, n, begins, ends, 1.0)
        mask = _pad_spatial(inner, n, [0] * n, extra, 0.0)
    else:
        mask = _pad_spatial(ones, n, begins, total_ends, 0.0)
    counts = F.average_pooling(mask, tuple(kernel), tuple(stride), True)
    return F.div2(sums, counts)


register_rules(F.average_pooling, onnx_export=_average_pooling_onnx,
               onnx_import={"AveragePool": _import_average_pool},
               nnp_import=nnabla(F.average_pooling, "AveragePooling", convert=_window_nnp,
                                        export=_window_export,
                                        kernel=tuple, stride=tuple, ignore_border=bool,
                                        pad=tuple, channel_last=bool, including_pad=bool))


def _global_average_pooling_onnx(g, inputs, attrs):
    """GlobalAveragePool"""
    x = inputs[0]
    return g.op("GlobalAveragePool" if g.ndim(x) > 2 else "Identity", [x])


def _import_global_average_pool(node):
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} input")
    return F.global_average_pooling(node.var(0))


def _global_average_pooling_nnabla(x):
    """NNabla 1.39's GlobalAveragePooling: shaped ``(N, C, 1, 1)`` whatever the input's rank
    (the catalog op keeps the rank)."""
    y = F.global_average_pooling(x)
    shape = tuple(x.shape[:2]) + (1, 1)
    return y if tuple(y.shape) == shape else F.reshape(y, shape)


register_rules(F.global_average_pooling, onnx_export=_global_average_pooling_onnx,
               onnx_import={"GlobalAveragePool": _import_global_average_pool},
               nnp_export=reshaped_nnp("GlobalAveragePooling",
                                       lambda shape, attrs: shape[:2] + (1, 1)),
               nnp_import=nnabla(_global_average_pooling_nnabla, "GlobalAveragePooling"))

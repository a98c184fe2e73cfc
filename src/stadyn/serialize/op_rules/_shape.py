"""Rules of the shape ops (``stadyn/ops/_shape.py``)."""

from __future__ import annotations

import math

import numpy as np

from ... import functions as F
from ...ops import norm_axis
from .._onnx_api import INT64_MAX
from ._common import COMPOSITE, onnx_axis
from ._cntk_shape_rules import (pad_cntk, reshape_cntk, reshape_cntk_v1, slice_cntk,
                                slice_cntk_v1, splice_cntk, splice_cntk_v1,
                                squeeze_cntk, transpose_axes_cntk, transpose_dimensions_cntk_v1)
from ._nnabla import nnabla
from ._cntk_read_others import crop_cntk
from ._table import Unmapped, register_rules


def _reshape_onnx(g, inputs, attrs):
    """Reshape"""
    x = inputs[0]
    xs, target = g.shape(x), [int(s) for s in attrs["shape"]]
    if 0 in target:  # a literal empty axis: ONNX would read 0 as "copy the input's size"
        return g.op("Reshape", [x, g.ints(target)], allowzero=1)
    if g.batch(x) and target and xs:  # keep the batch axis dynamic
        if target[0] == xs[0]:
            target[0] = 0
        elif -1 not in target and xs[0] and target[0] % xs[0] == 0:
            target[0] = -1
    return g.reshape(x, target)


def _import_reshape(node):
    xs = node.shape(0)
    target = [int(v) for v in np.asarray(node.const(1)).reshape(-1)]
    if not node.attr("allowzero", 0):
        target = [xs[i] if t == 0 else t for i, t in enumerate(target)]
    return F.reshape(node.var(0), tuple(target))


def _import_flatten(node):
    xs = node.shape(0)
    axis = int(node.attr("axis", 1))
    axis = axis + len(xs) if axis < 0 else axis
    return F.reshape(node.var(0), (math.prod(xs[:axis]), math.prod(xs[axis:])))


def _axes_of(node, ndim, default=None):
    """The ``axes`` of Squeeze/Unsqueeze/Reduce*/Pad: an attribute or (later opsets) input 1."""
    if "axes" in node.attrs:
        axes = node.attr("axes")
    elif node.n_inputs > 1 and node.has(1):
        axes = np.asarray(node.const(1)).reshape(-1).tolist()
    else:
        return default
    return [int(a) % ndim if ndim else 0 for a in axes]


def _import_squeeze(node):
    xs = node.shape(0)
    axes = _axes_of(node, len(xs), [i for i, d in enumerate(xs) if d == 1])
    return F.reshape(node.var(0), tuple(d for i, d in enumerate(xs) if i not in axes))


def _import_unsqueeze(node):
    xs = list(node.shape(0))
    out_ndim = len(xs) + len(_axes_of(node, 1, []))
    axes = sorted(_axes_of(node, out_ndim, []))
    shape = xs[:]
    for a in axes:
        shape.insert(a, 1)
    return F.reshape(node.var(0), tuple(shape))


def _reshape_nnp(node):
    """NNabla's ``Reshape``: a first size ``-1`` (the batch axis) is the batch size the network
    is built with (the loader puts it in), as NNabla's loaders do; any other size is as written
    (at another batch size than the file's, a ``Reshape`` written with the file's fails, as in
    NNabla's reshape.cpp)."""
    return F.reshape(node.var(0), node.field("shape", tuple),
                     inplace=node.field("inplace", bool))


register_rules(F.reshape, onnx_export=_reshape_onnx,
               onnx_import={"Reshape": _import_reshape, "Flatten": _import_flatten,
                            "Squeeze": _import_squeeze, "Unsqueeze": _import_unsqueeze},
               nnp_import={"Reshape": _reshape_nnp},
               nnp_export=lambda e, inputs, attrs: e.function(
                   "Reshape", inputs[:1], {"shape": e.shape(e.outputs[0]),
                                           "inplace": bool(attrs["inplace"])}),
               cntk_import={"Reshape": reshape_cntk, "Squeeze": squeeze_cntk},
               cntk_v1_import={"Reshape": reshape_cntk_v1})


def _transpose_onnx(g, inputs, attrs):
    """Transpose"""
    return g.op("Transpose", [inputs[0]], perm=[int(a) for a in attrs["axes"]])


def _import_transpose(node):
    perm = node.attr("perm")
    if perm is None:
        perm = list(range(len(node.shape(0))))[::-1]
    return F.transpose(node.var(0), tuple(int(a) for a in perm))


register_rules(F.transpose, onnx_export=_transpose_onnx,
               onnx_import={"Transpose": _import_transpose},
               nnp_import=nnabla(F.transpose, "Transpose", axes=list,
                                     convert=lambda node, f: {"axes": tuple(f["axes"])}),
               cntk_import={"TransposeAxes": transpose_axes_cntk},
               cntk_v1_import={"TransposeDimensions": transpose_dimensions_cntk_v1})


def _concatenate_onnx(g, inputs, attrs):
    """Concat"""
    n = g.ndim(inputs[0])
    return g.op("Concat", list(inputs), axis=norm_axis(n - 1 if attrs["axis"] is None else
                                                        attrs["axis"], n))


def _import_concat(node):
    args = [node.var(i) for i in range(node.n_inputs) if node.has(i)]
    return F.concatenate(*args, axis=onnx_axis(node.attr("axis"), len(node.shape(0))))


register_rules(F.concatenate, onnx_export=_concatenate_onnx,
               onnx_import={"Concat": _import_concat},
               nnp_import=nnabla(F.concatenate, "Concatenate", axis=int),
               cntk_import={"Splice": splice_cntk}, cntk_v1_import={"RowStack": splice_cntk_v1})


def _stack_onnx(g, inputs, attrs):
    """Unsqueeze, Concat"""
    axis = norm_axis(attrs["axis"], g.ndim(inputs[0]) + 1)
    return g.op("Concat", [g.unsqueeze(x, [axis]) for x in inputs], axis=axis)


register_rules(F.stack, onnx_export=_stack_onnx, onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.stack, "Stack", axis=int))


def _split_onnx(g, inputs, attrs):
    """Split, Squeeze"""
    x = inputs[0]
    axis = norm_axis(attrs["axis"], g.ndim(x))
    n = g.shape(x)[axis]
    if n == 1:
        return [g.squeeze(x, [axis])]
    parts = g.op("Split", [x, g.ints([1] * n)], n_outputs=n, axis=axis)
    return [g.squeeze(p, [axis]) for p in parts]


register_rules(F.split, onnx_export=_split_onnx,
               onnx_import=Unmapped("ONNX's Split keeps the axis: it imports as slice, "
                                    "Squeeze as reshape"),
               nnp_import=nnabla(F.split, "Split", axis=int))


def _slice_onnx(g, inputs, attrs):
    """Slice"""
    x = inputs[0]
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    n = len(start if start is not None else stop if stop is not None else step or ())
    if n == 0:
        return g.op("Identity", [x])
    start = list(start) if start is not None else [None] * n
    stop = list(stop) if stop is not None else [None] * n
    step = list(step) if step is not None else [1] * n
    if any(c is not None and int(c) < 0 for c in step):
        g.unsupported("negative steps")
    nd = g.ndim(x)
    return g.op("Slice", [x, g.ints([0 if a is None else a for a in start]),
                          g.ints([INT64_MAX if b is None else b for b in stop]),
                          g.ints(range(nd - n, nd)),
                          g.ints([1 if c is None else c for c in step])])


def _import_slice(node):
    xs = node.shape(0)
    nd = len(xs)
    if node.opset < 10:
        starts, ends = node.attr("starts"), node.attr("ends")
        axes, steps = node.attr("axes"), None
    else:
        starts, ends = node.const(1), node.const(2)
        axes = node.const(3) if node.n_inputs > 3 and node.has(3) else None
        steps = node.const(4) if node.n_inputs > 4 and node.has(4) else None
    starts = np.asarray(starts).reshape(-1).tolist()
    ends = np.asarray(ends).reshape(-1).tolist()
    axes = list(range(len(starts))) if axes is None else np.asarray(axes).reshape(-1).tolist()
    steps = [1] * len(starts) if steps is None else np.asarray(steps).reshape(-1).tolist()
    start, stop, step = [None] * nd, [None] * nd, [1] * nd
    for a, b, e, c in zip(axes, starts, ends, steps):
        if c < 0:
            node.unsupported("negative steps (torch slicing has none)")
        a = int(a) % nd
        start[a], stop[a], step[a] = int(b), int(min(e, INT64_MAX)), int(c)
    return F.slice(node.var(0), start=tuple(start), stop=tuple(stop), step=tuple(step))


def _import_split(node):
    xs = node.shape(0)
    axis = onnx_axis(node.attr("axis", 0), len(xs))
    size = xs[axis]
    if node.attr("split") is not None:
        sizes = [int(v) for v in node.attr("split")]
    elif node.opset >= 13 and node.n_inputs > 1 and node.has(1):
        sizes = np.asarray(node.const(1)).reshape(-1).tolist()
    else:
        parts = int(node.attr("num_outputs", node.n_outputs))
        chunk = -(-size // parts)
        sizes = [min(chunk, size - k * chunk) for k in range(parts)]
    x = node.var(0)
    outs, begin = [], 0
    for k in sizes:
        start, stop = [None] * len(xs), [None] * len(xs)
        start[axis], stop[axis] = begin, begin + int(k)
        outs.append(F.slice(x, start=tuple(start), stop=tuple(stop), step=(1,) * len(xs)))
        begin += int(k)
    return tuple(outs)


register_rules(F.slice, onnx_export=_slice_onnx,
               onnx_import={"Slice": _import_slice, "Split": _import_split},
               nnp_import=nnabla(F.slice, "Slice", start=list, stop=list, step=list,
                                 convert=lambda node, f: {k: tuple(v) for k, v in f.items()}),
               cntk_import={"Slice": slice_cntk, "Crop": crop_cntk},
               cntk_v1_import={"Slice": slice_cntk_v1})


def _reshape_trailing_onnx(g, inputs, attrs):
    """Reshape"""
    x = inputs[0]
    base, target = int(attrs["base_axis"]), [int(s) for s in attrs["shape"]]
    if 0 in target:  # a literal empty axis: the leading sizes written out, 0 read as 0
        lead = [int(s) for s in g.shape(x)[:base]]
        return g.op("Reshape", [x, g.ints(lead + target)], allowzero=1)
    return g.reshape(x, [0] * base + target)    # 0: the input's size, whatever it is


register_rules(F.reshape_trailing, onnx_export=_reshape_trailing_onnx,
               onnx_import=Unmapped("ONNX's Reshape (0 copying a size) imports as reshape"))


def _flatten_onnx(g, inputs, attrs):
    """Reshape"""
    x = inputs[0]
    nd = g.ndim(x)
    axis = norm_axis(attrs["axis"], nd) if nd else 0
    return g.reshape(x, [0] * axis + [-1])


def _flatten_nnp(e, inputs, attrs):
    """NNabla 1.39 has no flatten function: a ``Reshape`` to the output's shape"""
    e.function("Reshape", inputs[:1], {"shape": tuple(e.shape(e.outputs[0])), "inplace": True})


register_rules(F.flatten, onnx_export=_flatten_onnx,
               onnx_import=Unmapped("ONNX's Flatten makes a matrix whatever the rank: it "
                                    "imports as reshape"),
               nnp_export=_flatten_nnp,
               nnp_import=Unmapped("NNabla has no flatten function: the export (Reshape) "
                                   "imports as reshape"))


def _broadcast_onnx(g, inputs, attrs):
    """Expand"""
    x = inputs[0]
    target = [int(s) for s in attrs["shape"]]
    xs = [1] * (len(target) - g.ndim(x)) + list(g.shape(x))
    lead = len(target) - g.ndim(x)
    keep = [1 if i >= lead and xs[i] == t else t for i, t in enumerate(target)]
    return g.op("Expand", [x, g.ints(keep)])


def _import_expand(node):
    shape = np.broadcast_shapes(tuple(node.shape(0)),
                                tuple(int(v) for v in np.asarray(node.const(1)).reshape(-1)))
    return F.broadcast(node.var(0), tuple(shape))


register_rules(F.broadcast, onnx_export=_broadcast_onnx, onnx_import={"Expand": _import_expand},
               nnp_import=nnabla(F.broadcast, "Broadcast", shape=tuple))

_PAD_MODES = {"constant": "constant", "reflect": "reflect", "repeat": "edge"}


def _pad_onnx(g, inputs, attrs):
    """Pad"""
    x = inputs[0]
    nd = g.ndim(x)
    widths = [int(v) for v in attrs["pad_width"]]
    k = len(widths) // 2
    begins = [0] * (nd - k) + widths[0::2]
    ends = [0] * (nd - k) + widths[1::2]
    mode = attrs["mode"]
    if mode not in _PAD_MODES:
        g.unsupported(f"mode {mode!r}")
    if mode == "reflect":
        for axis, (n, b, e) in enumerate(zip(g.shape(x), begins, ends)):
            if max(b, e) > n - 1:
                g.unsupported(f"reflect padding of ({b}, {e}) along axis {axis} of length {n}: "
                              f"ONNX's Pad (mode reflect) pads at most length - 1 = {n - 1} "
                              "on each side of an axis")
    args = [x, g.ints(begins + ends)]
    if mode == "constant":
        args.append(g.scalar(attrs["constant_value"], x))
    return g.op("Pad", args, mode=_PAD_MODES[mode])


def _import_pad(node):
    xs = node.shape(0)
    nd = len(xs)
    mode = node.attr("mode", "constant")
    modes = {v: k for k, v in _PAD_MODES.items()}
    if mode not in modes:
        node.unsupported(f"mode {mode!r}")
    if node.opset < 11:
        pads, value = node.attr("pads"), node.attr("value", 0.0)
        axes = list(range(nd))
    else:
        pads = np.asarray(node.const(1)).reshape(-1).tolist()
        value = node.const(2, 0.0) if node.n_inputs > 2 and node.has(2) else 0.0
        axes = list(range(nd))
        if node.n_inputs > 3 and node.has(3):
            axes = [int(a) % nd for a in np.asarray(node.const(3)).reshape(-1)]
    n = len(axes)
    begins, ends = [0] * nd, [0] * nd
    for a, b, e in zip(axes, pads[:n], pads[n:]):
        begins[a], ends[a] = int(b), int(e)
    if any(v < 0 for v in begins + ends):
        node.unsupported("negative pads (cropping)")
    first = next((i for i in range(nd) if begins[i] or ends[i]), nd)
    if modes[mode] != "constant" and nd - first > 3:
        node.unsupported(f"{mode} padding of more than the last 3 axes")
    if modes[mode] == "constant" and node.dtype(0).kind != "f" and float(
            np.asarray(value)) != int(np.asarray(value)):
        node.unsupported("a fractional pad value for an integer tensor")
    widths = []
    for i in range(first, nd):
        widths += [begins[i], ends[i]]
    if not widths:
        return F.identity(node.var(0))
    return F.pad(node.var(0), tuple(widths), modes[mode], float(np.asarray(value)))


def _pad_nnp(node, fields):
    """NNabla's ``Pad``: proto3 leaves out the default mode ``constant``."""
    return {"pad_width": tuple(fields["pad_width"]), "mode": fields["mode"] or "constant",
            "constant_value": fields["constant_value"]}


register_rules(F.pad, onnx_export=_pad_onnx, onnx_import={"Pad": _import_pad},
               nnp_import=nnabla(F.pad, "Pad", pad_width=list, mode=str, constant_value=float,
                               convert=_pad_nnp),
               cntk_import={"Pad": pad_cntk})

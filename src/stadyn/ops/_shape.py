"""Shape ops: reshape, transpose, concatenate, split, slice, flatten, broadcast, stack, pad."""

from __future__ import annotations

import builtins
import math

import numpy as np
import torch
import torch.nn.functional as TF

from ._registry import op
from ._util import norm_axis, onnx_axis

_C = "shape"
_INT64_MAX = 2 ** 63 - 1


# -- ONNX mappings (see OpSpec.onnx / OpSpec.onnx_import) -------------------------------------
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
    return reshape(node.var(0), tuple(target))


def _import_flatten(node):
    xs = node.shape(0)
    axis = int(node.attr("axis", 1))
    axis = axis + len(xs) if axis < 0 else axis
    return reshape(node.var(0), (math.prod(xs[:axis]), math.prod(xs[axis:])))


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
    return reshape(node.var(0), tuple(d for i, d in enumerate(xs) if i not in axes))


def _import_unsqueeze(node):
    xs = list(node.shape(0))
    out_ndim = len(xs) + len(_axes_of(node, 1, []))
    axes = sorted(_axes_of(node, out_ndim, []))
    shape = xs[:]
    for a in axes:
        shape.insert(a, 1)
    return reshape(node.var(0), tuple(shape))


def _transpose_onnx(g, inputs, attrs):
    """Transpose"""
    return g.op("Transpose", [inputs[0]], perm=[int(a) for a in attrs["axes"]])


def _import_transpose(node):
    perm = node.attr("perm")
    if perm is None:
        perm = list(range(len(node.shape(0))))[::-1]
    return transpose(node.var(0), tuple(int(a) for a in perm))


def _concatenate_onnx(g, inputs, attrs):
    """Concat"""
    n = g.ndim(inputs[0])
    return g.op("Concat", list(inputs), axis=norm_axis(n - 1 if attrs["axis"] is None else
                                                        attrs["axis"], n))


def _import_concat(node):
    args = [node.var(i) for i in range(node.n_inputs) if node.has(i)]
    return concatenate(*args, axis=onnx_axis(node.attr("axis"), len(node.shape(0))))


def _stack_onnx(g, inputs, attrs):
    """Unsqueeze, Concat"""
    axis = norm_axis(attrs["axis"], g.ndim(inputs[0]) + 1)
    return g.op("Concat", [g.unsqueeze(x, [axis]) for x in inputs], axis=axis)


def _split_onnx(g, inputs, attrs):
    """Split, Squeeze"""
    x = inputs[0]
    axis = norm_axis(attrs["axis"], g.ndim(x))
    n = g.shape(x)[axis]
    if n == 1:
        return [g.squeeze(x, [axis])]
    parts = g.op("Split", [x, g.ints([1] * n)], n_outputs=n, axis=axis)
    return [g.squeeze(p, [axis]) for p in parts]


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
                          g.ints([_INT64_MAX if b is None else b for b in stop]),
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
        start[a], stop[a], step[a] = int(b), int(min(e, _INT64_MAX)), int(c)
    return slice(node.var(0), start=tuple(start), stop=tuple(stop), step=tuple(step))


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
        outs.append(slice(x, start=tuple(start), stop=tuple(stop), step=(1,) * len(xs)))
        begin += int(k)
    return tuple(outs)


def _flatten_onnx(g, inputs, attrs):
    """Reshape"""
    x = inputs[0]
    nd = g.ndim(x)
    axis = norm_axis(attrs["axis"], nd) if nd else 0
    return g.reshape(x, [0] * axis + [-1])


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
    return broadcast(node.var(0), tuple(shape))


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
        from ._misc import identity
        return identity(node.var(0))
    return pad(node.var(0), tuple(widths), modes[mode], float(np.asarray(value)))


@op(1, category=_C, onnx=_reshape_onnx,
    onnx_import={"Reshape": _import_reshape, "Flatten": _import_flatten,
                 "Squeeze": _import_squeeze, "Unsqueeze": _import_unsqueeze})
def reshape(x, shape, inplace=True):
    """View ``x`` with another shape (one entry may be -1).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.reshape(sd.Variable((2, 3)), (3, -1)).shape
        (3, 2)
    """
    return torch.reshape(x, tuple(int(s) for s in shape))


@op(1, category=_C, onnx=_transpose_onnx, onnx_import={"Transpose": _import_transpose})
def transpose(x, axes):
    """Permute the axes: output axis ``i`` is input axis ``axes[i]``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.transpose(sd.Variable((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    return x.permute(*[int(a) for a in axes])


@op(category=_C, onnx=_concatenate_onnx, onnx_import={"Concat": _import_concat})
def concatenate(*x, axis=None):
    """Join arrays along ``axis`` (default: the last axis).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.concatenate(sd.Variable((2, 3)), sd.Variable((2, 1)), axis=1).shape
        (2, 4)
    """
    ndim = x[0].ndim
    return torch.cat(x, dim=norm_axis(ndim - 1 if axis is None else axis, ndim))


@op(category=_C, onnx=_stack_onnx)
def stack(*x, axis=0):
    """Stack arrays of equal shape along a new ``axis``.  Example: ``F.stack(a, b, axis=0)``."""
    return torch.stack(x, dim=norm_axis(axis, x[0].ndim + 1))


@op(1, category=_C, onnx=_split_onnx)
def split(x, axis=0):
    """Split along ``axis`` into ``x.shape[axis]`` arrays with that axis removed (NNabla's split).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> [v.shape for v in F.split(sd.Variable((3, 2)), axis=0)]
        [(2,), (2,), (2,)]
    """
    return tuple(torch.unbind(x, dim=norm_axis(axis, x.ndim)))


@op(1, category=_C, onnx=_slice_onnx, onnx_import={"Slice": _import_slice, "Split": _import_split})
def slice(x, start=None, stop=None, step=None):  # noqa: A001 - NNabla's name
    """Basic slicing: ``start``/``stop``/``step`` are lists, one entry per axis; shorter lists
    apply to the trailing axes (NNabla fills the leading ones with the whole axis).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.slice(sd.Variable((4, 6)), start=(1, 0), stop=(3, 6), step=(1, 2)).shape
        (2, 3)
        >>> F.slice(sd.Variable((4, 6)), start=(1,), stop=(3,)).shape
        (4, 2)
    """
    n = len(start if start is not None else stop if stop is not None else step or ())
    start = list(start) if start is not None else [None] * n
    stop = list(stop) if stop is not None else [None] * n
    step = list(step) if step is not None else [1] * n
    whole = (builtins.slice(None),) * (x.ndim - n)
    index = whole + tuple(builtins.slice(a, b, c) for a, b, c in zip(start, stop, step))
    return x[index]


@op(1, category=_C, onnx=_flatten_onnx)
def flatten(x, axis=1):
    """Keep the axes before ``axis`` and merge the rest into one.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.flatten(sd.Variable((2, 3, 4))).shape
        (2, 12)
    """
    axis = norm_axis(axis, x.ndim) if x.ndim else 0
    return torch.reshape(x, tuple(x.shape[:axis]) + (-1,))


@op(1, category=_C, onnx=_broadcast_onnx, onnx_import={"Expand": _import_expand})
def broadcast(x, shape):
    """Broadcast axes of size 1 to ``shape``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.broadcast(sd.Variable((1, 3)), (4, 3)).shape
        (4, 3)
    """
    return x.expand(*[int(s) for s in shape])


@op(1, category=_C, onnx=_pad_onnx, onnx_import={"Pad": _import_pad})
def pad(x, pad_width, mode="constant", constant_value=0.0):
    """Pad the trailing axes: ``pad_width`` is ``(before_1, after_1, before_2, after_2, ...)``
    for the last ``len(pad_width)//2`` axes, first axis first (NNabla's order).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.pad(sd.Variable((1, 2, 3)), (1, 1, 2, 2)).shape
        (1, 4, 7)
    """
    pairs = [tuple(pad_width[i:i + 2]) for i in range(0, len(pad_width), 2)]
    torch_pad = [int(v) for pair in reversed(pairs) for v in pair]
    if mode == "constant":
        return TF.pad(x, torch_pad, mode="constant", value=constant_value)
    # torch pads k trailing axes in these modes only for a (batch, *k axes) layout: fold the rest.
    k = len(pairs)
    lead = tuple(x.shape[:x.ndim - k])
    folded = x.reshape((-1,) + tuple(x.shape[x.ndim - k:]))
    y = TF.pad(folded, torch_pad, mode={"reflect": "reflect", "repeat": "replicate"}[mode])
    return y.reshape(lead + tuple(y.shape[1:]))

"""Rules of grids and warping (``stadyn/ops/_grid.py``): ``warp_by_grid`` is ONNX's GridSample
(both ways), ``shift`` a Gather of the positions the op reads (:func:`stadyn.ops.shift_index`),
``meshgrid`` Reshape and Where, ``affine_grid`` a MatMul of the output's normalised positions
by the transposed maps (ONNX's AffineGrid needs opset 20)."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ...ops import shift_index
from ._common import COMPOSITE
from ._nnabla import nnabla
from ._table import Unmapped, register_rules


def _shift_onnx(g, inputs, attrs):
    """Gather (Identity without shifts)"""
    x = inputs[0]
    shape = g.shape(x)
    shifts = tuple(int(s) for s in (attrs["shifts"] or ()))
    y = x
    for axis, s in zip(range(len(shape) - len(shifts), len(shape)), shifts):
        if not s:
            continue
        if axis == 0 and g.batch(x):
            g.unsupported("a shift along the batch axis")
        index = shift_index(shape[axis], s, attrs["border_mode"]).numpy()
        y = g.op("Gather", [y, g.ints(index)], axis=axis)
    return y if y != x else g.op("Identity", [x])


register_rules(F.shift, onnx_export=_shift_onnx, onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.shift, "Shift",
                                 defaults={"shifts": lambda e, i, a: [0] * len(e.shape(i[0]))},
                                 shifts=list, border_mode=str))


def _meshgrid_onnx(g, inputs, attrs):
    """Reshape, Where (one output per input)"""
    sizes = [g.shape(v)[0] for v in inputs]
    order = list(range(len(inputs)))
    if not attrs["ij_indexing"] and len(inputs) >= 2:
        order[0], order[1] = 1, 0              # "xy": the first two axes swap
    full = [sizes[k] for k in order]
    everywhere = g.const(np.ones(full, dtype=bool))
    outs = []
    for i, v in enumerate(inputs):
        shape = [1] * len(inputs)
        shape[order.index(i)] = -1
        column = g.reshape(v, shape)
        outs.append(g.op("Where", [everywhere, column, column]))
    return outs


register_rules(F.meshgrid, onnx_export=_meshgrid_onnx, onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.meshgrid, "Meshgrid", ij_indexing=bool))


def _affine_grid_onnx(g, inputs, attrs):
    """Transpose, MatMul, Reshape"""
    theta = inputs[0]
    size = [int(s) for s in attrs["size"]]
    axes = []
    for n in size:
        pos = np.linspace(-1.0, 1.0, n)
        axes.append(pos if attrs["align_corners"] else pos * (n - 1) / n)
    mesh = np.meshgrid(*axes, indexing="ij")
    base = np.stack(list(reversed(mesh)) + [np.ones_like(mesh[0])], axis=-1)
    base = base.reshape(-1, len(size) + 1).astype(g.dtype(theta))
    out = g.op("MatMul", [g.const(base), g.op("Transpose", [theta], perm=[0, 2, 1])])
    return g.reshape(out, [-1] + size + [len(size)])


register_rules(F.affine_grid, onnx_export=_affine_grid_onnx, onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.affine_grid, "AffineGrid", size=list, align_corners=bool))

_PADDING = {"zero": "zeros", "repeat": "border", "reflect": "reflection"}


def _warp_by_grid_onnx(g, inputs, attrs):
    """GridSample (Transpose around it for channel_last)"""
    x, grid = inputs
    n = g.ndim(x)
    if n != 4 and g.opset < 20:
        g.unsupported(f"a {n}-d input before opset 20 (GridSample was 2-d only)")
    if attrs["channel_last"]:
        x = g.op("Transpose", [x], perm=[0, n - 1] + list(range(1, n - 1)))
    if attrs["mode"] == "linear":
        mode = "linear" if g.opset >= 20 else "bilinear"
    else:
        mode = "nearest"
    y = g.op("GridSample", [x, grid], mode=mode, padding_mode=_PADDING[attrs["padding_mode"]],
             align_corners=int(bool(attrs["align_corners"])))
    if attrs["channel_last"]:
        y = g.op("Transpose", [y], perm=[0] + list(range(2, n)) + [1])
    return y


_MODES = {"bilinear": "linear", "linear": "linear", "nearest": "nearest"}
_PADDING_BACK = {v: k for k, v in _PADDING.items()}


def _import_grid_sample(node):
    mode = node.attr("mode", "bilinear")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    padding = node.attr("padding_mode", "zeros")
    padding = padding.decode() if isinstance(padding, bytes) else padding
    if mode not in _MODES:
        node.unsupported(f"mode {mode!r} (warp_by_grid interpolates linearly or nearest)")
    if padding not in _PADDING_BACK:
        node.unsupported(f"padding_mode {padding!r}")
    if node.dtype(0).kind != "f" or len(node.shape(0)) not in (4, 5):
        node.unsupported(f"a {len(node.shape(0))}-d {node.dtype(0)} input (warp_by_grid "
                         "samples float images, (N, C, H, W) or (N, C, D, H, W))")
    return F.warp_by_grid(node.var(0), node.var(1), mode=_MODES[mode],
                          padding_mode=_PADDING_BACK[padding],
                          align_corners=bool(node.attr("align_corners", 0)))


register_rules(F.warp_by_grid, onnx_export=_warp_by_grid_onnx,
               onnx_import={"GridSample": _import_grid_sample},
               nnp_import=nnabla(F.warp_by_grid, "WarpByGrid", mode=str, padding_mode=str,
                                 align_corners=bool, channel_last=bool))

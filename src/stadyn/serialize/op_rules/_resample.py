"""Rules of resampling and repetition (``stadyn/ops/_resample.py``)."""

from __future__ import annotations

import numpy as np

from ... import cntk_semantics, functions as F
from ...ops import interpolation_source, interpolation_size
from ._common import COMPOSITE
from ._nnabla import nnabla
from ._table import Unmapped, register_rules

def _interpolate_onnx(g, inputs, attrs):
    """Gather, Sub, Mul, Add (per spatial axis: the two neighbours and their weights, computed
    here with the op's own coordinate rule)"""
    x = inputs[0]
    shape = list(g.shape(x))
    size = interpolation_size(tuple(shape), attrs["scale"], attrs["output_size"],
                          attrs["channel_last"])
    first = len(shape) - len(size) - (1 if attrs["channel_last"] else 0)
    nearest = attrs["mode"] == "nearest"
    y = x
    for k, n_out in enumerate(size):
        axis = first + k
        src = interpolation_source(shape[axis], n_out, attrs["align_corners"],
                                 attrs["half_pixel"], nearest, attrs["half_pixel_for_nn"])
        low = np.floor(src).astype(np.int64)
        a = g.op("Gather", [y, g.const(low)], axis=axis)
        if not nearest:
            b = g.op("Gather", [y, g.const(np.minimum(low + 1, shape[axis] - 1))], axis=axis)
            w = (src - low).astype(g.dtype(x)).reshape([n_out] + [1] * (len(shape) - axis - 1))
            a = g.op("Add", [a, g.op("Mul", [g.op("Sub", [b, a]), g.const(w)])])
        y = a
    return y


def _output_size(e, inputs, attrs) -> list:
    # NNabla's Interpolate holds output sizes only: a scale is written as the sizes it gave
    shape = e.shape(e.outputs[0])
    n = len(shape) - 2
    return list(shape[1:1 + n] if attrs["channel_last"] else shape[-n:])


register_rules(F.interpolate, onnx_export=_interpolate_onnx,
               onnx_import=Unmapped("ONNX's Resize is not mapped yet: the export (Gather, Sub, "
                                    "Mul, Add) imports op by op"),
               nnp_import=nnabla(F.interpolate, "Interpolate",
                                 defaults={"output_size": _output_size},
                                 export=lambda e, i, a: dict(
                                     a, output_size=_output_size(e, i, a)),
                                 output_size=list, mode=str, align_corners=bool,
                                 half_pixel=bool, half_pixel_for_nn=bool, channel_last=bool))


def _unpooling_onnx(g, inputs, attrs):
    """Reshape, Expand, Reshape"""
    x = inputs[0]
    shape = list(g.shape(x))
    kernel = [int(k) for k in attrs["kernel"]]
    first = len(shape) - len(kernel) - (1 if attrs["channel_last"] else 0)
    spread, target, merged = [0] * first, [1] * first, [0] * first
    for k, r in enumerate(kernel):
        spread += [shape[first + k], 1]
        target += [1, r]
        merged.append(shape[first + k] * r)
    tail = shape[first + len(kernel):]
    spread, target, merged = spread + [0] * len(tail), target + [1] * len(tail), merged + tail
    expanded = g.op("Expand", [g.reshape(x, spread), g.ints(target)])
    return g.reshape(expanded, merged)


def _unpooling_cntk(node):
    """CNTK's ``Unpooling(x, pooling_input)`` (``MaxUnpooling``) of a batch of images: each
    value of ``x`` back where the maximum of its window was in ``pooling_input`` (the first in
    row-major order; where overlapping windows have theirs at one place, the last window's),
    zeros elsewhere, with the window, strides and automatic padding of its attributes (one
    entry standing for every axis), as the compat layer's ``unpooling``
    (:func:`stadyn.cntk_semantics.max_unpooling`)."""
    window = tuple(int(k) for k in node.attr("unpoolingWindowShape"))
    n = len(window)

    def per_axis(values, default):
        values = list(values or [default])
        return tuple(values * n if len(values) == 1 else values[-n:])
    strides = per_axis(node.attr("strides"), 1)
    auto = per_axis(node.attr("autoPadding"), False)
    if int(node.attr("poolingType", 0)) != 0 or node.lead(0) != 1 or node.lead(1) != 1 or \
            any(per_axis(node.attr("lowerPad"), 0)) or any(per_axis(node.attr("upperPad"), 0)):
        node.unsupported(f"unpooling of {window} windows with strides {strides}, lowerPad "
                         f"{node.attr('lowerPad')}, upperPad {node.attr('upperPad')}: max "
                         "unpooling of a batch of images with automatic padding is read")
    return cntk_semantics.max_unpooling(node.var(0), node.var(1), window, strides,
                                        tuple(bool(a) for a in auto))


register_rules(F.unpooling, onnx_export=_unpooling_onnx, onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.unpooling, "Unpooling", kernel=tuple, channel_last=bool),
               cntk_import={"Unpooling": _unpooling_cntk})


def _tile_onnx(g, inputs, attrs):
    """Tile (after Unsqueeze where reps has more axes than the input)"""
    x = inputs[0]
    reps = attrs["reps"]
    reps = [int(reps)] if isinstance(reps, (int, np.integer)) else [int(r) for r in reps]
    shape = list(g.shape(x))
    if len(reps) > len(shape):
        x = g.unsqueeze(x, list(range(len(reps) - len(shape))))
    reps = [1] * (len(shape) - len(reps)) + reps
    return g.op("Tile", [x, g.ints(reps)])


def _import_tile(node):
    return F.tile(node.var(0), [int(r) for r in np.asarray(node.const(1)).ravel()])


register_rules(F.tile, onnx_export=_tile_onnx, onnx_import={"Tile": _import_tile},
               nnp_import=nnabla(F.tile, "Tile", export=lambda e, i, a: {
                   "reps": [a["reps"]] if isinstance(a["reps"], int) else list(a["reps"])},
                   reps=list))

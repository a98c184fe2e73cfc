"""Rules of resampling and repetition (``stadyn/ops/_resample.py``)."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ._common import COMPOSITE
from ._table import Unmapped, register_rules

register_rules(F.interpolate,
               onnx_export=Unmapped("ONNX's Resize is not mapped yet (NNabla's coordinate "
                                    "rules map to its coordinate_transformation_mode)"),
               onnx_import=Unmapped("ONNX's Resize is not mapped yet"))


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


register_rules(F.unpooling, onnx_export=_unpooling_onnx, onnx_import=Unmapped(COMPOSITE))


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


register_rules(F.tile, onnx_export=_tile_onnx, onnx_import={"Tile": _import_tile})

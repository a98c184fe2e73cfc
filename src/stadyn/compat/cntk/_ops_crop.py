"""CNTK's region ops: ``crop_manual`` (a window of a feature map, of another one's spatial
size) and ``roipooling`` (max pooling over regions of interest, Fast R-CNN's).

Spatial axes are a sample's last two (row-major ``(C, H, W)``: ``x`` is the last axis, ``y``
the one before).  Both are Stadyn ops (a slice; the regions' bins and the op
``cntk_bin_max_pooling``), so they run in static graphs and have gradients.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x, ref = C.input_variable((1, 4, 4)), C.input_variable((1, 2, 3))
    >>> C.crop_manual(x, ref, 1, 2).shape
    (1, 2, 3)
"""

from __future__ import annotations

from ... import cntk_semantics
from . import _graph as G
from ._adapt import batched, float_arrays, named, one_op, operand as _as_operand, sample_shape, wrap
from ._ops_nn import MAX_POOLING
from ._seq_axes import free_shown, free_steps

__all__ = ["crop_manual", "roipooling"]


@float_arrays("node_input", "node_referent")
def crop_manual(node_input, node_referent, offset_x: int, offset_y: int, name: str = ""):
    """``node_input`` cropped along its spatial axes (the last two) to the spatial size of
    ``node_referent``, starting ``offset_x`` pixels from the left and ``offset_y`` from the
    top.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x, ref = C.input_variable((1, 3, 3)), C.input_variable((1, 2, 2))
        >>> img = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
        >>> C.crop_manual(x, ref, 1, 0).eval({x: img, ref: np.zeros((1, 1, 2, 2))}).tolist()
        [[[[1.0, 2.0], [4.0, 5.0]]]]
    """
    v = _as_operand(node_input)
    shape, ref = sample_shape(node_input), sample_shape(node_referent)
    if len(shape) < 2 or len(ref) < 2:
        raise ValueError(f"crop_manual: both operands need two spatial axes; shapes {shape} "
                         f"and {ref}")
    referent = _as_operand(node_referent)
    free = free_steps(referent)
    if any(a >= referent.ndim - 2 for a in free):
        # the window's size would be written in at the length the graph was built with
        raise ValueError(f"crop_manual: the referent's spatial axes "
                         f"{free_shown(referent.shape, free)[-2:]} hold a free "
                         "dimension (-3), whose length is each run's; Stadyn's compat crops "
                         "to a fixed size only")
    h, w = int(ref[-2]), int(ref[-1])
    ox, oy = int(offset_x), int(offset_y)
    if ox < 0 or oy < 0 or oy + h > shape[-2] or ox + w > shape[-1]:
        raise ValueError(f"crop_manual: a {h}x{w} window at offset (x={ox}, y={oy}) does not "
                         f"fit in the input's {shape[-2]}x{shape[-1]}")
    return named(wrap(cntk_semantics.crop(v, referent, ox, oy,
                                          "crop_manual")), name, "Crop")


def roipooling(operand, rois, pooling_type, roi_output_shape, spatial_scale: float,
               name: str = ""):
    """Max pooling of ``operand`` (``(C, H, W)`` per sample) over each region of ``rois``
    (``(R, 4)`` per sample: ``x1, y1, x2, y2`` in the original image's pixels, which
    ``spatial_scale`` maps onto the feature map) into a ``roi_output_shape`` (``(h, w)``) grid:
    ``(R, C, h, w)`` per sample, as CNTK 2.7 computes it and as a loaded CNTK file's
    ``ROIPooling`` does (both are :func:`stadyn.cntk_semantics.roi_pooling`): region corners
    rounded, neighbouring bins may share a row or column, NaN passed by, an empty bin gives 0;
    its memory is the map's and the output's, so a Fast R-CNN head's 2000 regions fit.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> fm, rois = C.input_variable((1, 4, 4)), C.input_variable((1, 4))
        >>> f = C.roipooling(fm, rois, C.MAX_POOLING, (2, 2), 1.0)
        >>> data = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
        >>> f.eval({fm: data, rois: [[[0, 0, 3, 3]]]}).reshape(2, 2).tolist()
        [[5.0, 7.0], [13.0, 15.0]]
    """
    if pooling_type != MAX_POOLING:
        raise ValueError("Unsupported pooling type, ROIPooling support only MAX pooling.")
    if not batched(operand) or not batched(rois):
        raise ValueError("roipooling: the feature map and the regions need the batch axis")
    shape, rshape = sample_shape(operand), sample_shape(rois)
    if len(shape) != 3 or len(rshape) != 2 or rshape[-1] != 4:
        raise ValueError(f"roipooling: a (C, H, W) feature map and (R, 4) regions per sample "
                         f"are needed, got {shape} and {rshape}")
    out = cntk_semantics.roi_pooling(_as_operand(operand), _as_operand(rois), roi_output_shape,
                                     spatial_scale)                    # (B, R, C, h, w)
    # one op reading the feature map and the regions, in this order (CNTK 2.7's inputs, and so
    # Function.arguments and a clone's placeholders); its values read the regions first
    one_op(out, operand, rois)
    G.show_operands_in_order(out, (_as_operand(operand), _as_operand(rois)))
    return named(wrap(out), name, "ROIPooling")

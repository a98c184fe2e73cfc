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
from ... import functions as F
from ...graph import widen_free_dimensions
from . import _graph as G
from ._adapt import (batched, float_arrays, lead_axes, named, one_op, operand as _as_operand,
                     sample_shape, wrap)
from ._ops_nn import MAX_POOLING
from ._run_checks import InvalidAtRunError, check_each_run, refuse_when_run, shape_at_run
from ._seq_axes import free_steps, mark_free_axes

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
    h, w = int(ref[-2]), int(ref[-1])
    ox, oy = int(offset_x), int(offset_y)
    if ox < 0 or oy < 0:            # (CNTK 2.7's offsets are unsigned: its SWIG refusal)
        raise NotImplementedError(
            "Wrong number or type of arguments for overloaded function 'crop'.\n"
            f"crop_manual: the offsets (x={ox}, y={oy}) must not be negative")
    sized_at_run = [a for a in (-2, -1) if referent.ndim + a in free_steps(referent)]
    if sized_at_run:        # (a referent's free dimension: the window is each run's)
        out = crop_to_run_size(v, referent, ox, oy, sized_at_run)
        return named(wrap(out), name, "Crop")
    free = free_steps(v)
    spatial_free = any(a >= v.ndim - 2 for a in free)
    if spatial_free:
        # an input's free dimension, not fed yet: a stand-in long enough for the window
        widen_free_dimensions([v], lambda: oy + h <= v.shape[-2] and ox + w <= v.shape[-1])
    out = _crop_or_refuse(v, referent, ox, oy, (h, w))
    lead = lead_axes(node_input)
    kept = [-1 if a in free else int(v.shape[a]) for a in range(lead, v.ndim - 2)]
    if spatial_free and kept.count(-1) <= 1:
        # a run whose input is smaller than the window fails (the window's size, fixed, is
        # asked of the crop: CNTK 2.7's "Input is small to be cropped" is a RuntimeError)
        out = one_op(F.reshape_trailing(out, tuple(kept) + (h, w), base_axis=lead), v)
    if spatial_free:
        # (an input's lengths, and those of values computed from it, are known once a
        # run's data are fed: CNTK's error then)
        check_each_run(out, _window_fits(v, ox, oy, (h, w)))
    return named(wrap(out), name, "Crop")


def crop_to_run_size(v, referent, ox: int, oy: int, axes: list):
    """The crop of ``v`` at ``(ox, oy)`` to ``referent``'s spatial size where its spatial
    ``axes`` (``-2``: ``y``, ``-1``: ``x``) are free dimensions: CNTK 2.7 crops to the
    lengths each run gives them (the output's axes shown ``-3``); a window that does not fit
    the run's input is its RuntimeError when the graph runs.  Along a free axis the crop
    gathers the rows (columns) ``offset + 0 .. offset + length - 1``, their count taken from
    the referent's value in the run (a static plan infers it anew for each length)."""
    out = v
    for a, offset in ((-2, oy), (-1, ox)):
        if a in axes:
            out = F.gather(out, _positions(referent, a, offset), axis=v.ndim + a)
        else:
            lead, rest = [None] * (v.ndim + a), [None] * (-a - 1)
            out = F.slice(out, lead + [offset] + rest,
                          lead + [offset + int(referent.shape[a])] + rest)
    out = _reading(out, v, referent)
    mark_free_axes(out, [out.ndim + a for a in axes])
    check_each_run(out, _referent_fits(v, referent, ox, oy))
    return out


def _positions(referent, axis: int, offset: int):
    """``offset, offset + 1, ...`` as many as ``referent`` has along ``axis`` in a run (a
    vector computed from its shape alone, not its values)."""
    others = [k for k in range(referent.ndim) if k != referent.ndim + axis]
    line = F.sum(cntk_semantics.constant_like(referent, 0.0), axis=others)
    return F.add_scalar(F.cumsum(cntk_semantics.constant_like(line, 1.0), axis=0),
                        float(offset - 1))


def _referent_fits(v, referent, ox: int, oy: int):
    """The check, at each run, that a window of ``referent``'s spatial size in the run at
    ``(ox, oy)`` fits ``v``'s (CNTK 2.7's RuntimeError, the ``x`` axis first)."""
    shape_of, window_of = shape_at_run(v), shape_at_run(referent)

    def check():
        shape, window = shape_of(), window_of()
        if shape is None or window is None:
            return
        _refuse_short(shape, ox, oy, (int(window[-2]), int(window[-1])))
    return check


def _refuse_short(shape: tuple, ox: int, oy: int, window: tuple) -> None:
    """CNTK 2.7's RuntimeError where a ``window`` at ``(ox, oy)`` does not fit a run's value
    of ``shape`` (the ``x`` axis first)."""
    h, w = window
    for along, need, size in (("x", ox + w, shape[-1]), ("y", oy + h, shape[-2])):
        if need > int(size):
            raise RuntimeError(f"Input is small to be cropped along {along} dimension in "
                               f"crop node.\ncrop_manual: a {h}x{w} window at offset "
                               f"(x={ox}, y={oy}) does not fit in this run's "
                               f"{shape[-2]}x{shape[-1]}")


def _window_fits(v, ox: int, oy: int, window: tuple):
    """The check, at each run, that the crop window at ``(ox, oy)`` fits the spatial size of
    ``v`` in the run (an input's as fed, a value's computed from it: CNTK 2.7's RuntimeError,
    the ``x`` axis first)."""
    shape_of = shape_at_run(v)

    def check():
        shape = shape_of()
        if shape is not None:
            _refuse_short(shape, ox, oy, window)
    return check


def unrunnable_crop(v, referent, message: str):
    """A crop of ``v`` to ``referent``'s spatial size that CNTK 2.7 builds but refuses when
    it runs (its offsets cannot be found): shaped as the crop, every run of a graph holding it
    a RuntimeError with ``message``."""
    out = _crop_or_refuse(v, referent, 0, 0, tuple(int(d) for d in referent.shape[-2:]))
    refuse_when_run(out, message, InvalidAtRunError)
    return out


def _crop_or_refuse(v, referent, ox: int, oy: int, window: tuple):
    """The crop of ``v`` at ``(ox, oy)``; where the window does not fit ``v``'s spatial size,
    CNTK 2.7 builds the crop (shaped as the window) and refuses to run it: ``v`` padded to fit,
    every run refused (CNTK's words: "Input is small to be cropped along ... dimension")."""
    h, w = window
    short = (max(0, oy + h - int(v.shape[-2])), max(0, ox + w - int(v.shape[-1])))
    if short == (0, 0):
        return _reading(cntk_semantics.crop(v, referent, ox, oy, "crop_manual"), v, referent)
    out = _reading(cntk_semantics.crop(F.pad(v, (0, short[0], 0, short[1])), referent, ox, oy,
                                       "crop_manual"), v, referent)
    along = "x" if short[1] else "y"
    refuse_when_run(out, f"Input is small to be cropped along {along} dimension in crop node."
                    f"\ncrop_manual: a {h}x{w} window at offset (x={ox}, y={oy}) does not fit "
                    f"in the input's {v.shape[-2]}x{v.shape[-1]}", InvalidAtRunError)
    return out


def _reading(out, v, referent):
    """The crop ``out`` of ``v`` as one op reading ``v`` and ``referent``, in this order (CNTK
    2.7's inputs: the referent is among a Function's arguments, a run wants its data), its
    values ``v``'s alone: ``referent``'s shape is all it gives (no value, no gradient)."""
    out = one_op(F.add2(out, F.sum(cntk_semantics.constant_like(referent, 0.0))), v, referent)
    G.show_operands_in_order(out, (v, referent))
    return out


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

"""CNTK's automatic crops: ``crop_automatic`` and ``crop_automatic_with_ancestors`` find the
offsets of :func:`crop_manual` from the graph, as CNTK 2.7's ``CropNode`` does
(:func:`stadyn.cntk_semantics.crop_offsets`, which BrainScript's ``Crop`` node uses too: each
op between a crop input and the common ancestor maps its output pixels to its input's; the
composed maps of the two inputs must differ by a non-negative shift, the offset).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.input_variable((1, 7, 7))
    >>> w = C.parameter((1, 1, 3, 3), init=1.0)
    >>> y = C.convolution(w, x, auto_padding=[False])                # 5 x 5
    >>> img = np.arange(49, dtype=np.float32).reshape(1, 1, 7, 7)
    >>> C.crop_automatic(x, y).eval({x: img})[0, 0, 0].tolist()      # starts at (1, 1)
    [8.0, 9.0, 10.0, 11.0, 12.0]
"""

from __future__ import annotations

from ... import cntk_semantics
from ..._errors import ShapeError
from ._adapt import float_arrays, named, operand, wrap
from ._ops_crop import crop_manual, unrunnable_crop

__all__ = ["crop_automatic", "crop_automatic_with_ancestors"]


@float_arrays("node_input", "node_referent")
def crop_automatic(node_input, node_referent, name: str = ""):
    """``node_input`` cropped to the spatial size of ``node_referent`` at the offsets that
    align both with their common ancestor (see the module docstring).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable((1, 9, 9))
        >>> y = C.pooling(x, C.MAX_POOLING, (5, 5))          # 5 x 5, centred 2 pixels in
        >>> C.crop_automatic(x, y).shape
        (1, 5, 5)
    """
    try:
        ox, oy = cntk_semantics.crop_offsets(operand(node_input), operand(node_referent),
                                             what="crop_automatic")
    except ShapeError as exc:
        return _refused_when_run(node_input, node_referent, exc, name)
    return crop_manual(node_input, node_referent, ox, oy, name)


@float_arrays("node_input", "node_referent", "ancestor_input", "ancestor_referent")
def crop_automatic_with_ancestors(node_input, node_referent, ancestor_input,
                                  ancestor_referent, name: str = ""):
    """As :func:`crop_automatic`, where the two inputs have no common ancestor:
    ``ancestor_input`` (above ``node_input``) and ``ancestor_referent`` (above
    ``node_referent``) are taken to be one node.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> a, b = C.input_variable((1, 9, 9)), C.input_variable((1, 9, 9))
        >>> y = C.pooling(b, C.MAX_POOLING, (3, 3))
        >>> C.crop_automatic_with_ancestors(a, y, a, b).shape
        (1, 7, 7)
    """
    equivalent = (operand(ancestor_input), operand(ancestor_referent))
    try:
        ox, oy = cntk_semantics.crop_offsets(operand(node_input), operand(node_referent),
                                             equivalent, what="crop_automatic_with_ancestors")
    except ShapeError as exc:
        return _refused_when_run(node_input, node_referent, exc, name)
    return crop_manual(node_input, node_referent, ox, oy, name)


def _refused_when_run(node_input, node_referent, exc: ShapeError, name: str):
    """CNTK 2.7 builds an automatic crop whose offsets it cannot find and refuses it when it
    runs (its RuntimeError "Connected path between crop inputs not found" where the inputs
    have no common ancestor)."""
    said = str(exc)
    if "no common ancestor" in said:
        said = ("Connected path between crop inputs not found. Unable to compute crop "
                "offsets.\n" + said)
    out = unrunnable_crop(operand(node_input), operand(node_referent), said)
    return named(wrap(out), name, "Crop")

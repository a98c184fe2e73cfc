"""CNTK's automatic crops: ``crop_automatic`` and ``crop_automatic_with_ancestors`` find the
offsets of :func:`crop_manual` from the graph, as CNTK 2.7's ``CropNode`` does.

Each op between a crop input and an ancestor maps an output pixel ``o`` to the centre of what it
reads in its input, per spatial axis: ``s * o + t``.  A convolution or pooling has ``s`` its
stride and ``t = (kernel - 1) // 2 - lower padding`` (an explicit ``pad`` op before it:
``t = -before``); a transposed convolution the inverse of its filter's map; an op whose input
has the output's spatial size (element-wise ops, activations, batch normalisation, ...) the
identity; a ``slice`` (how a padded transposed convolution trims its output) ``s`` its step
and ``t`` its start.  Composing them gives, for each crop input, the map from its pixels to
the common ancestor's (the first node both reach; with ancestors given, those two nodes stand
for one another).  The map from the referent's pixels to the input's must be a shift (equal
scales) by a non-negative amount: that shift, truncated to an integer, is the crop offset.

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

from fractions import Fraction

from ..._errors import ShapeError
from ._adapt import float_arrays, operand
from ._ops_crop import crop_manual

__all__ = ["crop_automatic", "crop_automatic_with_ancestors"]

# a map from a crop input's pixels to a node's: per axis (y, x), coordinate -> a * u + b
_IDENTITY = ((Fraction(1), Fraction(0)), (Fraction(1), Fraction(0)))


def _spatial(shape) -> tuple:
    return tuple(int(d) for d in shape[-2:])


def _filter(node, kernel) -> list[tuple[Fraction, Fraction]]:
    """``(s, t)`` per spatial axis of a convolution or pooling node."""
    a = node.attrs
    dilation = a.get("dilation") or (1, 1)
    stride, pad = a["stride"], a.get("pad") or (0, 0)
    out = []
    for k, s, p, d in zip(kernel[-2:], stride[-2:], pad[-2:], dilation[-2:]):
        span = int(d) * (int(k) - 1) + 1
        out.append((Fraction(int(s)), Fraction((span - 1) // 2 - int(p))))
    return out


def _edges(v) -> list:
    """``[(input, [(s, t) per axis])]``: the inputs of ``v``'s op that a crop path goes
    through, and how an output pixel maps to each."""
    node = v.parent
    if node is None or len(v.shape) < 3:
        return []
    name = node.spec.name
    if name == "convolution":
        return [(node.inputs[0], _filter(node, node.inputs[1].shape))]
    if name in ("max_pooling", "average_pooling"):
        return [(node.inputs[0], _filter(node, node.attrs["kernel"]))]
    if name == "deconvolution":
        return [(node.inputs[0], [(1 / s, -t / s) for s, t in
                                  _filter(node, node.inputs[1].shape)])]
    if name == "slice":                   # a padded transposed convolution's trim
        start, step = node.attrs["start"], node.attrs["step"]
        return [(node.inputs[0], [(Fraction(int(step[i] or 1)), Fraction(int(start[i] or 0)))
                                  for i in (-2, -1)])]
    if name == "pad":
        width = tuple(node.attrs["pad_width"])
        if len(width) >= 4 and node.attrs.get("mode", "constant") == "constant":
            return [(node.inputs[0], [(Fraction(1), Fraction(-int(width[-4]))),
                                      (Fraction(1), Fraction(-int(width[-2])))])]
        return []
    return [(i, [(Fraction(1), Fraction(0))] * 2) for i in node.inputs
            if i is not None and len(i.shape) == len(v.shape)
            and _spatial(i.shape) == _spatial(v.shape)]


def _compose(m, edge):
    """The map to the input of an edge, from the map ``m`` to the edge's output."""
    return tuple((s * a, s * b + t) for (a, b), (s, t) in zip(m, edge))


def _maps(start, stop=None):
    """Depth-first from ``start`` (CNTK's order): yields ``(node, map)`` for every node
    reached, each once."""
    seen = {id(start): (start, _IDENTITY)}
    stack = [start]
    yield start, _IDENTITY
    while stack:
        v = stack.pop()
        for source, edge in _edges(v):
            m = _compose(seen[id(v)][1], edge)
            if id(source) not in seen:
                seen[id(source)] = (source, m)
                yield source, m
                stack.append(source)


def _offsets(x, ref, equivalent=None):
    first = {id(v): m for v, m in _maps(x)}
    for v, m1 in _maps(ref):
        m0 = first.get(id(v))
        if m0 is None and equivalent is not None and v is equivalent[1]:
            m0 = first.get(id(equivalent[0]))
        if m0 is None:
            continue
        offsets = []
        for (a0, b0), (a1, b1) in zip(m0, m1):
            if a0 != a1:
                raise ShapeError("crop_automatic: the two inputs are at different scales of "
                                 "their common ancestor (a stride or pooling on one path "
                                 "only); crop needs one scale")
            shift = (b1 - b0) / a0
            if shift < 0:
                raise ShapeError("crop_automatic: the referent starts before the input (a "
                                 "negative offset)")
            offsets.append(int(shift))
        return offsets[1], offsets[0]                      # (x, y)
    raise ShapeError("crop_automatic: the two inputs have no common ancestor through "
                     "convolutions, pooling and ops that keep the spatial size; give "
                     "crop_automatic_with_ancestors the nodes that correspond")


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
    ox, oy = _offsets(operand(node_input), operand(node_referent))
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
    ox, oy = _offsets(operand(node_input), operand(node_referent), equivalent)
    return crop_manual(node_input, node_referent, ox, oy, name)

"""CNTK's ``Crop``: a window of a feature map of another one's spatial size (:func:`crop`), at
offsets that CNTK's ``CropNode`` finds from the graph when none are given (:func:`crop_offsets`;
the compat's ``crop_automatic`` and BrainScript's ``Crop`` node).

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
    >>> import stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable((1, 1, 7, 7))
    >>> y = F.max_pooling(x, (3, 3), (1, 1))                          # 5 x 5
    >>> crop_offsets(x, y), crop(x, y, *crop_offsets(x, y)).shape     # starts at (1, 1)
    ((1, 1), (1, 1, 5, 5))
"""

from __future__ import annotations

from fractions import Fraction

from .. import functions as F
from .._errors import ShapeError
from ..graph import Variable

__all__ = ["crop", "crop_offsets"]


def crop(x: Variable, referent: Variable, offset_x: int, offset_y: int,
         what: str = "crop") -> Variable:
    """``x`` cut along its last two (spatial: ``y``, ``x``) axes to ``referent``'s size there,
    from ``offset_x`` columns and ``offset_y`` rows in; a ``ShapeError`` naming ``what`` where
    that window does not fit.

    Example:
        >>> import stadyn as sd
        >>> crop(sd.Variable((2, 1, 4, 4)), sd.Variable((2, 1, 2, 3)), 1, 2).shape
        (2, 1, 2, 3)
    """
    shape, ref = tuple(x.shape), tuple(referent.shape)
    if len(shape) < 2 or len(ref) < 2:
        raise ShapeError(f"{what}: both operands need two spatial axes; shapes {shape} and "
                         f"{ref}")
    h, w = int(ref[-2]), int(ref[-1])
    ox, oy = int(offset_x), int(offset_y)
    if ox < 0 or oy < 0 or oy + h > shape[-2] or ox + w > shape[-1]:
        raise ShapeError(f"{what}: a {h}x{w} window at offset (x={ox}, y={oy}) does not fit "
                         f"in the input's {shape[-2]}x{shape[-1]}")
    n = x.ndim
    return F.slice(x, [None] * (n - 2) + [oy, ox], [None] * (n - 2) + [oy + h, ox + w], [1] * n)


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


def crop_offsets(x: Variable, referent: Variable,
                 equivalent: tuple[Variable, Variable] | None = None,
                 what: str = "crop") -> tuple[int, int]:
    """The offsets ``(x, y)`` at which CNTK's automatic ``Crop`` cuts ``x`` to ``referent``'s
    spatial size (the module docstring); ``equivalent``: two nodes, above ``x`` and above
    ``referent``, that stand for one another.  A ``ShapeError`` names ``what``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((1, 1, 9, 9))
        >>> crop_offsets(x, F.max_pooling(x, (5, 5), (1, 1)))     # windows centred 2 in
        (2, 2)
    """
    ref = referent
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
                raise ShapeError(f"{what}: the two inputs are at different scales of "
                                 "their common ancestor (a stride or pooling on one path "
                                 "only); crop needs one scale")
            shift = (b1 - b0) / a0
            if shift < 0:
                raise ShapeError(f"{what}: the referent starts before the input (a "
                                 "negative offset)")
            offsets.append(int(shift))
        return offsets[1], offsets[0]                      # (x, y)
    raise ShapeError(f"{what}: the two inputs have no common ancestor through "
                     "convolutions, pooling and ops that keep the spatial size; give "
                     "it the nodes that correspond")

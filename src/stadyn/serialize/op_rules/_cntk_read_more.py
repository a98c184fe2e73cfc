"""``cntk_import`` rules of CNTK 2.7 ops the first rules did not read: ``Cast``,
``CosDistance``, ``CosDistanceWithNegativeSamples`` (``tests/fixtures/cntk_cos_negative/``),
``ConstantOp`` (``zeros_like``, ``ones_like``), ``Clip`` with bounds that
are tensors or computed values; checked against CNTK 2.7's outputs of the model file
``tests/fixtures/cntk_read_more/read_more.model`` (written by CNTK 2.7, with its
``make_model.py``); and ``StraightThrough``, against CNTK 2.7's outputs of
``tests/fixtures/cntk_write_forms/cntk_more.model``.

Example:
    >>> CAST_TYPES[2]
    'float64'
"""

from __future__ import annotations

from ... import cntk_semantics, functions as F
from ._cntk_rules import cntk_elementwise

__all__ = ["CAST_TYPES", "cast_cntk", "cos_distance_cntk", "constant_op_cntk", "clip_cntk",
           "straight_through_cntk", "cos_negative_samples_cntk"]

#: CNTK's DataType ids (``newDataType``) -> Stadyn's type names
CAST_TYPES = {1: "float32", 2: "float64", 4: "float16"}


def cast_cntk(node):
    """CNTK's ``Cast`` to ``newDataType`` (1 float, 2 double, 4 float16)."""
    name = CAST_TYPES.get(int(node.attr("newDataType", 0)))
    if name is None:
        node.unsupported(f"a cast to CNTK data type {node.attr('newDataType')}")
    return F.cast(node.var(0), name)


def _sample_axes(node, i: int) -> tuple:
    return tuple(range(node.lead(i), len(node.shape(i))))


def cos_distance_cntk(node):
    """CNTK's ``CosDistance(a, b)``: per sample, ``sum(a * b)`` times the inverse norms over
    all the sample's axes, one value (CNTK's CosDistanceNode, the inverse norms clamped at
    1/1e-30, so a zero vector gives 0: :func:`stadyn.cntk_semantics.cos_distance`)."""
    if node.shape(0) != node.shape(1):
        node.unsupported(f"cosine distance of shapes {node.shape(0)} and {node.shape(1)}")
    axes = _sample_axes(node, 0)
    if not axes:
        node.unsupported("cosine distance of scalars")
    return cntk_semantics.cos_distance(node.var(0), node.var(1), axes)


def cos_negative_samples_cntk(node):
    """CNTK's ``CosDistanceWithNegativeSamples(x, y, shift, count)``
    (``C.cosine_distance_with_negative_samples``; ``shift`` and ``count`` the scalar
    Constants CNTK 2.7 stores after the operands): per column of the minibatch its cosine
    with ``y``'s, then with ``count`` shifted columns,
    :func:`stadyn.cntk_semantics.cosine_with_negative_samples`."""
    if node.n_inputs != 4:
        node.unsupported(f"a CosDistanceWithNegativeSamples of {node.n_inputs} inputs")
    lead = node.lead(0)
    if lead not in (1, 2) or node.lead(1) != lead or node.shape(0) != node.shape(1):
        node.unsupported(f"a CosDistanceWithNegativeSamples of {node.shape(0)} and "
                         f"{node.shape(1)} (two batches of samples of one shape)")
    shift, count = (node.const(i) for i in (2, 3))
    if shift.size != 1 or count.size != 1:
        node.unsupported("a CosDistanceWithNegativeSamples whose shift or count is no scalar")
    return cntk_semantics.cosine_with_negative_samples(
        node.var(0), node.var(1), int(shift.reshape(())), int(count.reshape(())), lead)


def constant_op_cntk(node):
    """CNTK's ``ConstantOp`` (``zeros_like``, ``ones_like``): ``fillValue`` everywhere in the
    input's shape, whatever its values (NaN and infinities too: the input is only compared
    with itself, which gives 0 or 1)."""
    return cntk_semantics.constant_like(node.var(0), float(node.attr("fillValue", 0.0)))


def clip_cntk(node):
    """CNTK's ``Clip(x, min, max)``, bounds that are constants (scalars or tensors), computed
    values or inputs, element-wise with CNTK's broadcasting and CNTK's rule
    (Source/Math/TensorOps.h:347, ``x < min ? min : (x > max ? max : x)``: ``min`` wins where
    the bounds cross, NaN stays NaN) and CNTK's gradient (ClipNode, Source/
    ComputationNetworkLib/NonlinearityNodes.h:670: to ``x`` where the output equals it, bounds
    included, NaN not; never to the bounds).  The bounds stay inputs of the graph, so the
    loaded function shows them as CNTK does (``Clip(x, Constant, Constant)``; before, scalar
    constant bounds were folded into ``clip_by_value_scalar`` and left out of ``inputs`` and
    ``constants``)."""
    x, low, high = cntk_elementwise(lambda *xs: xs)(node)
    low, high = F.stop_gradient(low), F.stop_gradient(high)
    clipped = F.where(F.less(x, low), low, F.where(F.greater(x, high), high, x))
    return F.where(F.equal(clipped, x), x, F.stop_gradient(clipped))



class _InputsReordered:
    """A node whose inputs are read in another ``order`` (the rest as the node's)."""

    def __init__(self, node, order):
        self._node, self._order = node, list(order)

    @property
    def n_inputs(self) -> int:
        return len(self._order)

    def var(self, i):
        return self._node.var(self._order[i])

    def shape(self, i):
        return self._node.shape(self._order[i])

    def batched(self, i):
        return self._node.batched(self._order[i])

    def lead(self, i):
        return self._node.lead(self._order[i])

    def __getattr__(self, name):
        return getattr(self._node, name)


def clip_cntk_v1(node):
    """A v1 ``Clip`` node, whose inputs are ``(min, max, x)`` (CNTK's ``ClipNode``): as CNTK
    2's ``Clip(x, min, max)``."""
    if node.n_inputs != 3:
        node.unsupported(f"a clip of {node.n_inputs} inputs")
    return clip_cntk(_InputsReordered(node, (2, 0, 1)))

def straight_through_cntk(node):
    """CNTK's ``StraightThrough`` (``straight_through_impl``): ``1`` where ``x > 0``, else
    ``-1`` (CNTK 2.7 gives -1 for 0 and NaN), with the gradient of ``clip(x, -1, 1)`` (what
    passes where ``|x| <= 1``, 0 for NaN): the sign plus the clipped input less itself held, as
    ``stadyn.compat.cntk.straight_through_impl`` computes it
    (:func:`stadyn.cntk_semantics.straight_through`)."""
    return cntk_semantics.straight_through(node.var(0))

"""CNTK.core.bs's criteria of a classifier, ``CrossEntropyWithSoftmax`` and
``ClassificationError`` (``ErrorPrediction``), for :class:`~._stadyn_library.StadynLibrary` (a
mixin: it uses the library's ``_value``, ``_node``, ``_lead``, ``_scalar``, ``path``,
``Constant``, ``Minus`` and the reductions).

Each gives one value per sample (the trainer sums over the minibatch), or, given ``axis = k``
(1-based, column-major), one per position of the other axes, as CNTK.core.bs composes it;
labels whose sample shape differs from the output's only in trailing 1s are read in the
output's shape, as cntk.exe's criteria read them.

Example:
    >>> import stadyn as sd
    >>> from stadyn.brainscript import StadynLibrary, build_network
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     net = build_network('''{ x = Input{3} ; y = Input{3}
    ...         ce = CrossEntropyWithSoftmax (y, x) ; err = ClassificationError (y, x)
    ...         outputNodes = (ce : err) }''', StadynLibrary())
    ...     [v.shape for v in net.output_nodes]
    [(1, 1), (1, 1)]
"""

from __future__ import annotations

from typing import Any

from .. import cntk_semantics as cntk
from .. import functions as F
from .. import sequence as S
from .._errors import ConfigError
from ..graph import Variable
from ._library import without_unit_axes

__all__ = ["ClassifierFunctions"]


class ClassifierFunctions:
    """``CrossEntropyWithSoftmax`` and ``ClassificationError`` (registered by the library)."""

    def _like(self, labels: Variable, z: Variable) -> Variable:
        """``labels`` in ``z``'s sample shape where the two differ only in trailing 1s (CNTK's
        ``[132]`` against ``[132 x 1]``): cntk.exe's criteria take such shapes as the same
        (TensorShape::IsElementwiseCompatibleWith: a dimension one shape lacks is 1)."""
        la, lz = self._lead(labels), self._lead(z)
        mine, theirs = tuple(labels.shape[la:]), tuple(z.shape[lz:])
        if mine != theirs and la == lz and mine and theirs and \
                without_unit_axes(mine) == without_unit_axes(theirs):
            return S.reshape_samples(labels, la, theirs)
        return labels

    def CrossEntropyWithSoftmax(self, labelSequence, outProbVectorSequence, axis=0, tag=""):
        """``-sum(labels * log softmax(z))`` per sample (the trainer sums over the minibatch);
        ``axis = k`` (1-based, column-major): along that axis, one value per position of the
        others, ``ReduceLogSum (z, axis) - ReduceSum (labels .* z, axis)`` as CNTK.core.bs
        composes it (Fast R-CNN's ``axis = 1`` over ``classes:regions``)."""
        labels = self._value(labelSequence, "CrossEntropyWithSoftmax")
        z = self._value(outProbVectorSequence, "CrossEntropyWithSoftmax")
        labels = self._like(labels, z)
        if _along(axis, "CrossEntropyWithSoftmax"):
            return self.Minus(self.ReduceLogSum(z, axis=axis),
                              self.ReduceSum(F.mul2(labels, z), axis=axis), tag=tag)
        return self._node(F.cross_entropy_with_softmax(z, labels, axis=_axis(axis, z)),
                          "CrossEntropyWithSoftmax", tag)

    def ClassificationError(self, labelSequence, outVectorSequence, topN=1, axis=0, tag=""):
        """1 per sample whose label is not among the ``topN`` highest outputs, else 0;
        ``axis = k`` (1-based, column-major): the fraction of the positions of the other axes
        whose maxima along that axis (all of them, where several tie) miss the label, as
        CNTK.core.bs composes it (``topN`` must then be 1)."""
        labels = self._value(labelSequence, "ClassificationError")
        z = self._value(outVectorSequence, "ClassificationError")
        labels = self._like(labels, z)
        if _along(axis, "ClassificationError"):
            if topN != 1:
                raise ConfigError("ClassificationError() along a specific axis does not support "
                                  "topN.")
            top = self.ReduceMax(z, axis=axis)
            predicted = F.greater_equal_scalar(F.sub2(z, top), 0.0)       # z == its maximum
            wrong = self.ReduceSum(F.not_equal(labels, predicted), axis=axis)
            return self.ReduceMean(F.greater_equal_scalar(wrong, 1.0), tag=tag)
        given = topN if isinstance(topN, Variable) else None    # (NDL's Constant node)
        if given is not None and self._scalar(given) is not None:
            topN = int(self._scalar(given))
        if isinstance(topN, bool) or not isinstance(topN, int) or topN < 1:
            raise ConfigError(f"ClassificationError: topN must be a positive integer, got {topN!r}")
        error = F.classification_error(z, labels, axis=_axis(axis, z), topN=topN)
        n = given                       # NDL: the node reads the network's own Constant
        if given is None and topN != 1:
            # CNTK.core.bs:507 gives the node a third input, Constant (topN), made inside its
            # own record (new ComputationNode): the item of the argument inputs of _AsNodes
            # at its member inputs (ConvNet_CIFAR10's log: inputs.inputs[2], [1 x 1])
            with self._at_path("inputs.inputs[2]"):
                n = self._value(self.Constant(topN), "ClassificationError")
        if n is not None:
            # the node reads its topN once, when validated (EvaluationNodes.h:81, m_topK);
            # here the graph reads the constant too (adding 0 times it), so that a model file
            # holds it as cntk.exe's does
            error = F.add2(error, F.mul_scalar(F.stop_gradient(n), 0.0))
        return self._node(error, "ClassificationError", tag)


def _along(axis: Any, what: str) -> bool:
    """Whether a criterion's ``axis`` names one axis (CNTK.core.bs's ``axis != 0``: 1-based,
    column-major) rather than the whole sample (0)."""
    if isinstance(axis, bool) or not isinstance(axis, int) or axis < 0:
        raise ConfigError(f"{what}: axis must be 0 (the whole sample) or a 1-based static "
                          f"axis, got {axis!r}")
    return axis != 0


def _axis(axis: Any, z: Variable) -> int:
    """CNTK's static axis ``axis`` (0 = the first, column-major) as a Stadyn axis."""
    if isinstance(axis, bool) or not isinstance(axis, int) or not 0 <= axis < z.ndim - 1:
        raise ConfigError(f"axis must be a static axis 0..{z.ndim - 2}, got {axis!r}")
    return cntk.static_axis(axis, z.ndim, batched=True, column_major=True)

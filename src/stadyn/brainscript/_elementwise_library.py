"""CNTK.core.bs's element-wise nodes beyond the basic ones (``Floor``, trigonometry,
``ElementDivide``, ``Clip``, ``LogPlus``, ``ColumnElementTimes``, ``KhatriRaoProduct``) and
its simple per-sample criteria (``SquareError``, ``CrossEntropy``, ``Logistic``,
``CosDistance``, ``SumColumnElements``), for :class:`~._stadyn_library.StadynLibrary` (a mixin:
it uses the library's ``_value``, ``_node``, ``_scalar``, ``_aligned``, ``_lead`` and
``ReduceSum``).

Each keeps CNTK.core.bs's parameter names and order (``Clip (minValue, maxValue, x)``) and
computes what cntk.exe's node computes (``Round`` and ``Ceil`` are not nodes but CNTK.core.bs's
composites of ``Floor``, in ``sequences.bs``): ``ElementDivide`` is ``ElementTimes (_,
Reciprocal (y))`` (CNTK.core.bs:460; cntk.exe's ``Reciprocal`` is 0 at 0, so a finite
dividend over 0 gives 0, an infinite one NaN), ``Cosine`` is the cosine, ``LogPlus`` is CNTK
2.7's ``LogAdd`` (``cntk_semantics.log_add_exp``, as ``C.log_add_exp``),
``ColumnElementTimes`` is cntk.exe's ``ElementTimes`` node (ComputationNetworkBuilder.cpp), and
``KhatriRaoProduct`` (``ColumnwiseCrossProduct``) is each sample's outer product flattened, the
left operand's index running fastest (CPUMatrix::AssignKhatriRaoProductOf).
cntk.exe's criterion nodes sum over the minibatch; here each gives one value per sample (all
of a sample's elements: cntk.exe's column), which the trainer sums, as for
``CrossEntropyWithSoftmax``.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from .. import cntk_semantics as cntk
from .. import functions as F
from .._errors import ConfigError
from ..graph import Variable
from ..sequence import reshape_samples

__all__ = ["ElementwiseFunctions"]

# CNTK.core.bs's name -> Stadyn's element-wise function
_UNARY = {
    "Sin": F.sin, "Cosine": F.cos, "Sinh": F.sinh,
    "Cosh": F.cosh, "Asin": F.asin, "Acos": F.acos, "Asinh": F.asinh, "Atanh": F.atanh,
}


class ElementwiseFunctions:
    """``Floor``, ``Sin``, ``Cosine``, ``Sinh``, ``Cosh``, ``Asin``,
    ``Acos``, ``Asinh``, ``Atanh``, ``ElementDivide``, ``Clip``, ``LogPlus``,
    ``ColumnElementTimes``, ``KhatriRaoProduct`` and the simple criteria."""

    def _init_elementwise(self) -> dict[str, Any]:
        functions: dict[str, Any] = {name: self._unary(name) for name in _UNARY}
        functions.update({"Floor": self.Floor, "ElementDivide": self.ElementDivide,
                          "Clip": self.Clip, "SquareError": self.SquareError,
                          "CrossEntropy": self.CrossEntropy, "Logistic": self.Logistic,
                          "CosDistance": self.CosDistance,
                          "SumColumnElements": self.SumColumnElements,
                          "LogPlus": self.LogPlus, "KhatriRaoProduct": self.KhatriRaoProduct,
                          "ColumnwiseCrossProduct": self.KhatriRaoProduct,
                          "ColumnElementTimes": self.ColumnElementTimes})
        return functions

    def _unary(self, name: str) -> Any:
        op = _UNARY[name]
        if name == "Sin":
            # CNTK.core.bs:683 names Sin's input ``z`` (the others ``x``): an argument's
            # node path adds that name
            def node(z, tag=""):
                return self._node(op(self._value(z, name)), name, tag)
        else:
            def node(x, tag=""):
                return self._node(op(self._value(x, name)), name, tag)
        node.__name__ = name
        return node

    def Floor(self, _, tag=""):
        """The largest integer not above ``_``, element-wise (CNTK's ``FloorNode``; its
        input is named ``_`` as CNTK.core.bs:463 names it: an argument's path adds it, and
        ``Round`` and ``Ceil`` are BrainScript composites of it, ``sequences.bs``)."""
        return self._node(F.floor(self._value(_, "Floor")), "Floor", tag)

    def ElementDivide(self, aMatrix, anotherMatrix, tag=""):
        """``ElementTimes (aMatrix, Reciprocal (anotherMatrix))``, as CNTK.core.bs:460
        defines it: 0 where the divisor is 0 (cntk.exe's ``Reciprocal``), NaN for an infinite
        dividend there; a number on either side is a ``Constant``.  The ``Reciprocal`` node
        is named at the call's path plus ``.y`` (``ElementTimes``'s argument), the product at
        the call's path, as cntk.exe names them."""
        path = self.path
        self.path = f"{path}.y" if path else ""
        try:
            r = self.Reciprocal(anotherMatrix)
            self.after_apply(self.Reciprocal, [anotherMatrix], {}, r)
        finally:
            self.path = path
        y = self.ElementTimes(aMatrix, r, tag=tag)
        self.after_apply(self.ElementTimes, [aMatrix, r], {}, y)
        return y

    def Clip(self, minValue, maxValue, x, tag=""):
        """``x`` limited to ``[minValue, maxValue]`` (numbers or nodes that broadcast to it):
        ``x < minValue ? minValue : (x > maxValue ? maxValue : x)``, as CNTK's ``ClipNode``;
        the gradient reaches ``x`` only.  A number is a ``Constant`` node, as CNTK.core.bs's
        ``_AsNodes`` makes it (:meth:`_as_nodes`)."""
        lo, hi, v = self._as_nodes((minValue, maxValue, x), "Clip")
        v, lo_v = self._aligned(v, lo)
        v, hi_v = self._aligned(v, hi)
        lo_v, hi_v = F.stop_gradient(lo_v), F.stop_gradient(hi_v)
        clipped = F.where(F.less(v, lo_v), lo_v, F.where(F.greater(v, hi_v), hi_v, v))
        return self._node(clipped, "Clip", tag)

    def _as_nodes(self, values: tuple, what: str) -> list[Variable]:
        """The inputs of a CNTK.core.bs node made through ``_AsNodes (a : b : ...)``: a number
        (a boolean: 1 or 0) becomes ``Constant {val}`` (``[1 x 1]``), made inside the node's
        own record (``new ComputationNode`` names from scratch) at ``_AsNodes``'s
        ``arr[i].res`` of its member ``inputs``: ``inputs.arr[i].res`` (BrainScriptEvaluator.cpp
        581, 703, 768-789: the record, argument and array-item paths), nodes as they are."""
        return [self._value(v, what) for v in self._number_nodes(values)]

    def _number_nodes(self, values: tuple) -> list[Any]:
        """``values`` with each number (a boolean: 1 or 0) made ``Constant {val}`` as
        :meth:`_as_nodes` makes it, the others as they are (a pending delay too)."""
        nodes = []
        for i, v in enumerate(values):
            if isinstance(v, numbers.Real) and not isinstance(v, Variable):
                with self._at_path(f"inputs.arr[{i}].res"):
                    v = self.Constant(float(v))
            nodes.append(v)
        return nodes

    def LogPlus(self, leftMatrix, rightMatrix, tag=""):
        """``log (exp (leftMatrix) + exp (rightMatrix))`` element-wise, with broadcasting
        (CNTK's ``LogPlusNode``: CNTK 2.7's ``LogAdd``, ``cntk_semantics.log_add_exp``)."""
        a, b = self._aligned(*self._as_nodes((leftMatrix, rightMatrix), "LogPlus"))
        return self._node(cntk.log_add_exp(a, b), "LogPlus", tag)

    def ColumnElementTimes(self, aVectorSequence, anotherVectorSequence, tag=""):
        """cntk.exe's deprecated name of ``ElementTimes`` (the same node)."""
        return self.ElementTimes(aVectorSequence, anotherVectorSequence, tag=tag)

    def KhatriRaoProduct(self, leftMatrix, rightMatrix, tag=""):
        """Each sample's (column's) Kronecker product of the two: element ``j * rows (left) +
        i`` of the ``[rows (left) * rows (right)]`` result is ``left[i] * right[j]`` (CNTK's
        ``KhatriRaoProductNode``, each operand's sample read as one column of all its
        elements).  Both must hold the same samples (both data, or both not)."""
        a, b = (self._value(v, "KhatriRaoProduct") for v in (leftMatrix, rightMatrix))
        lead = self._lead(a)
        if self._lead(b) != lead or a.shape[:lead] != b.shape[:lead]:
            raise ConfigError(f"KhatriRaoProduct: the two operands must have the same columns "
                              f"(samples), got shapes {a.shape} and {b.shape}")
        na, nb = math.prod(a.shape[lead:]), math.prod(b.shape[lead:])
        # (row-major NumPy of a column-major sample: its elements in cntk.exe's column order)
        left = reshape_samples(a, lead, (1, na))
        right = reshape_samples(b, lead, (nb, 1))
        return self._node(reshape_samples(F.mul2(right, left), lead, (nb * na,)),
                          "KhatriRaoProduct", tag)

    def _pair(self, a: Any, b: Any, op: str) -> tuple[Variable, Variable]:
        return self._aligned(self._value(a, op), self._value(b, op))

    def _sample_sum(self, v: Variable) -> Variable:
        return self._value(self.ReduceSum(v), "ReduceSum")

    def CrossEntropy(self, refProbVectorSequence, outProbVectorSequence, tag=""):
        """``-sum (ref .* log (out))`` per sample (CNTK's ``CrossEntropyNode``: the log of the
        probabilities as given, no softmax; CNTK's log, -85.1 below 1e-37, so a zero
        probability gives a finite number: ``F.cntk_log``)."""
        ref, out = self._pair(refProbVectorSequence, outProbVectorSequence, "CrossEntropy")
        y = F.mul_scalar(self._sample_sum(F.mul2(ref, F.cntk_log(out))), -1.0)
        return self._node(y, "CrossEntropy", tag)

    def Logistic(self, label, probability, tag=""):
        """``-sum (log (y p + (1 - y) (1 - p)))`` per sample, with ``y`` the labels (0 or 1) and
        ``p`` the probabilities of class 1 (CNTK's ``LogisticNode``, which takes the log of
        ``2 y p + (1 - y) - p``, with CNTK's log: -85.1 below 1e-37)."""
        y, p = self._pair(label, probability, "Logistic")
        inner = F.sub2(F.add2(F.mul_scalar(F.mul2(y, p), 2.0), F.r_sub_scalar(y, 1.0)), p)
        return self._node(F.mul_scalar(self._sample_sum(F.cntk_log(inner)), -1.0), "Logistic",
                          tag)

    def CosDistance(self, aVectorSequence, anotherVectorSequence, tag=""):
        """The cosine of the angle between the two, per sample: ``a . b / (|a| |b|)`` (CNTK's
        ``CosDistanceNode``, a similarity despite its name), computed as the node computes it:
        the dot product times each inverse norm, clamped at 1/1e-30, so a zero vector gives 0
        (:func:`stadyn.cntk_semantics.inverse_norm`; LinearAlgebraNodes.h:1453-1467)."""
        a, b = self._pair(aVectorSequence, anotherVectorSequence, "CosDistance")
        dot = self._sample_sum(F.mul2(a, b))

        def inverse_norm(v):        # (the sample's sum of squares, as _sample_sum keeps it)
            return cntk.inverse_norm(self._sample_sum(F.mul2(v, v)), (), squares=True)
        return self._node(cntk.cos_distance_of(dot, inverse_norm(a), inverse_norm(b)),
                          "CosDistance", tag)

    def SumColumnElements(self, z, tag=""):
        """The sum of each sample's elements (CNTK's deprecated ``SumColumnElements``: each
        column of the minibatch)."""
        v = self._value(z, "SumColumnElements")
        return self._node(self._sample_sum(v), "SumColumnElements", tag)

    def SquareError(self, aMatrix, anotherMatrix, tag=""):
        """Per sample the sum of ``(aMatrix - anotherMatrix)^2`` (cntk.exe's node sums it over
        the minibatch too; the trainer sums the samples, so the logged averages are the
        same)."""
        d = self.Minus(aMatrix, anotherMatrix)
        return self._node(self._sample_sum(self.ElementTimes(d, d)), "SquareError", tag)

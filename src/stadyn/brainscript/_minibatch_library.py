"""CNTK.core.bs's minibatch-level terms for :class:`~._stadyn_library.StadynLibrary` (a mixin:
it uses the library's ``_value``, ``_node``, ``_lead``, ``_batched`` and ``operation_of``).

cntk.exe's criterion nodes (``CrossEntropyWithSoftmax``, ``SquareError``, ``Logistic``, ...) are
one number for the minibatch: the sum over its samples.  Stadyn keeps those one value per
sample, which the trainer sums (the same total and gradients).  A few nodes cannot be split per
sample, and are one number for the minibatch here too, as ``SumElements`` is (``[1]``, no batch
axis; the trainer counts the network's samples for such a criterion, as cntk.exe's SGD does):

- ``MatrixL1Reg (matrix)``: the sum of ``|matrix|`` over all its elements (every sample of the
  minibatch, every real step of a sequence), with the gradient ``sign (matrix)`` (CNTK's
  ``MatrixL1RegNode``, TrainingNodes.h);
- ``MatrixL2Reg (matrix)``: the Frobenius norm ``sqrt (sum (matrix^2))``, with cntk.exe's
  gradient ``matrix / (norm + 1e-30)`` (``MatrixL2RegNode``: ``EPS_IN_INVERSE``);
- ``WeightedLogistic (label, probability, instanceWeight)``: CNTK's ``LogisticNode`` with its
  third input, ``-N sum (w l) / sum (w)`` with ``l = log (2 y p + 1 - y - p)`` and ``N`` the
  minibatch's samples (over sequences, every column of CNTK's packed minibatch, gaps too:
  ``cntk_semantics.sequence_columns``), and its gradient (for ``probability`` only) that of
  ``-sum (w l)`` (``cntk_semantics.logistic``, which ``C.weighted_binary_cross_entropy`` uses).

How such a number reaches the trainer: as a criterion of its own, or added to a per-sample
criterion (``ce + 0.001 * MatrixL1Reg (W)``): where ``Plus`` or ``Minus`` meets a value with no
batch axis and a per-sample criterion (a node cntk.exe's criterion nodes make, or a sum or
scaling of them, or their ``Negate``, ``Pass`` or ``Trace``: ``SUM_KEEPING``), the criterion
is summed over the minibatch first (:meth:`_minibatch_total`), as cntk.exe adds two ``[1]``
values; the sum of per-sample values and one number would otherwise count that number once per
sample.

The same holds where the criterion meets per-sample data that is not a criterion (``ce + x``,
``ce .* x``): cntk.exe's ``[1]`` broadcasts to each sample of ``x``, and a criterion node of
such a node (it has the minibatch layout) is summed over the samples by the SGD
(``CriterionAccumulator``; ``Backprop`` seeds every sample's gradient with 1): ``N ce + sum x``,
not ``ce + sum x``.  So the criterion is summed first there too (:meth:`_minibatch_total`,
:meth:`_minibatch_factors`); two per-sample criteria added stay per sample (the same sum).

Any other node of a per-sample criterion applies to the minibatch's sum, as cntk.exe's node
applies to the ``[1]`` (:meth:`_criterion_operand`, which the library's ``_value`` calls for
every operation but those of ``_TAKES_PER_SAMPLE``): ``Exp (se * 0.1)`` is ``exp (0.1 sum
se)``, not ``sum exp (0.1 se)``; ``Abs``, ``Log``, ``Sqrt``, ``Sigmoid``, ``1 / se``, ``Times
(C, se)``, ``ElementDivide (se, cr)`` likewise; ``se .* cr`` of two criteria, or of a criterion
and a value with no batch axis, is the product of the sums.  The result is one number with no
batch axis, which a regulariser is then added to once, and which the trainer divides by the
network's samples, as cntk.exe's ``CriterionAccumulator`` does for a criterion node with no
MBLayout (``ce = total / N * N`` in the epoch's line).
"""

from __future__ import annotations

import math
from typing import Any

from .. import cntk_semantics as cntk
from .. import functions as F
from .. import sequence as S
from ..graph import Variable

__all__ = ["MinibatchFunctions", "PER_SAMPLE_CRITERIA", "SUM_KEEPING"]

# the operations that are one number for the minibatch in cntk.exe (its sum over the samples)
# and one value per sample in Stadyn
PER_SAMPLE_CRITERIA = frozenset((
    "CrossEntropyWithSoftmax", "ClassificationError", "SquareError", "CrossEntropy",
    "Logistic", "ClassBasedCrossEntropyWithSoftmax"))

# the one-input element-wise operations whose value summed over the samples is the operation
# of the sum (linear): of a per-sample criterion, each is a per-sample criterion still
SUM_KEEPING = frozenset(("Negate", "Pass", "Trace"))

# the operations that take a per-sample criterion as it is (their own rules: the sum, a scaling
# of it, SUM_KEEPING); every other operation takes its minibatch total (_criterion_operand)
_TAKES_PER_SAMPLE = SUM_KEEPING | {"Plus", "Minus", "ElementTimes"}


class MinibatchFunctions:
    """``MatrixL1Reg``, ``MatrixL2Reg`` and ``WeightedLogistic``."""

    def _init_minibatch(self) -> dict[str, Any]:
        self._per_sample_sums: dict[int, Variable] = {}
        # each per-sample criterion's minibatch total, made once (by the criterion's id)
        self._totals: dict[int, tuple[Variable, Variable]] = {}
        return {"MatrixL1Reg": self.MatrixL1Reg, "MatrixL2Reg": self.MatrixL2Reg,
                "WeightedLogistic": self.WeightedLogistic}

    def _whole(self, v: Variable) -> Variable:
        """The sum of all of ``v``'s elements (a sequence's real steps only: a padded step adds
        nothing) as ``[1]``, with no batch axis (no MBLayout: not one value a sample); the value
        of ``SumElements``."""
        if v.sequence_lengths is not None:
            v = S.reduce_sum(v)
        total = F.reshape(F.sum(v), (1,))
        self._batched.unmark(total)
        return total

    def _total(self, v: Variable) -> Variable:
        """The per-sample criterion ``v``'s minibatch total (:meth:`_whole`), made once."""
        entry = self._totals.get(id(v))
        if entry is None or entry[0] is not v:
            entry = self._totals[id(v)] = (v, self._whole(v))
        return entry[1]

    def MatrixL1Reg(self, matrix, tag=""):
        """``sum (|matrix|)`` over the minibatch: one number (the module's description)."""
        x = self._value(matrix, "MatrixL1Reg")
        return self._node(self._whole(F.abs(x)), "MatrixL1Reg", tag)

    def MatrixL2Reg(self, matrix, tag=""):
        """``sqrt (sum (matrix^2))`` over the minibatch: one number, with cntk.exe's gradient
        (the module's description)."""
        x = self._value(matrix, "MatrixL2Reg")
        norm = F.stop_gradient(F.sqrt(self._whole(F.mul2(x, x))))
        # the value is the norm; the gradient x / (norm + 1e-30), cntk.exe's
        pull = self._whole(F.mul2(x, F.stop_gradient(x)))
        step = F.div2(F.sub2(pull, F.stop_gradient(pull)), F.add_scalar(norm, 1e-30))
        return self._node(F.add2(norm, step), "MatrixL2Reg", tag)

    def WeightedLogistic(self, label, probability, instanceWeight, tag=""):
        """CNTK's weighted ``Logistic``: one number for the minibatch (the module's
        description)."""
        y, p, w = (self._value(v, "WeightedLogistic")
                   for v in (label, probability, instanceWeight))
        lead = self._lead(p)
        if p.sequence_lengths is not None:      # padded steps: weight 0, probability 1/2
            # N is every column of CNTK's packed minibatch, its gaps too (LogisticNode's
            # ones.GetNumCols())
            columns = cntk.sequence_columns(p)
            per_sample = math.prod(columns.shape[1:])
            parts = []
            for v, fill in ((y, 0.0), (p, 0.5), (w, 0.0)):
                parts.append(S.unpack(v, padding_value=fill)[0] if v.sequence_lengths
                             is not None else v)
            y, p, w = parts
        else:
            columns = w
            per_sample = math.prod(w.shape[lead:]) if lead else 1
        samples = F.mul_scalar(F.sum(cntk.constant_like(columns, 1.0)), 1.0 / per_sample)
        y, p = self._aligned(y, p)
        p, w = self._aligned(p, w)
        total = F.reshape(cntk.logistic(p, y, w, samples=samples), (1,))
        self._batched.unmark(total)
        return self._node(total, "Logistic", tag)

    # ---- a per-sample criterion meeting one number -------------------------------------
    def _note_per_sample_sum(self, v: Variable, *operands: Any) -> Variable:
        """Mark ``v`` as a per-sample criterion where it is one of cntk.exe's criterion nodes
        or ``operands`` (its Plus/Minus/scaling operands) hold one."""
        if self.operation_of(v) in PER_SAMPLE_CRITERIA or \
                any(self._is_per_sample_sum(o) for o in operands):
            self._per_sample_sums[id(v)] = v
        return v

    def _keep_per_sample_sum(self, v: Variable, operation: str) -> None:
        """Mark ``v``, made by a ``SUM_KEEPING`` operation, where its one input is a per-sample
        criterion (cntk.exe's ``Negate`` of the ``[1]`` is minus the sum)."""
        if operation in SUM_KEEPING and v.parent is not None and len(v.parent.inputs) == 1:
            self._note_per_sample_sum(v, v.parent.inputs[0])

    def _is_per_sample_sum(self, v: Any) -> bool:
        if not isinstance(v, Variable) or not self.has_batch_axis(v):
            return False
        return self.operation_of(v) in PER_SAMPLE_CRITERIA or \
            self._per_sample_sums.get(id(v)) is v

    def _criterion_operand(self, v: Variable, operation: str) -> Variable:
        """``v`` as ``operation`` reads it: a per-sample criterion's minibatch total (``[1]``,
        no batch axis) where ``operation`` is not one of ``_TAKES_PER_SAMPLE`` (cntk.exe's
        ``Exp``, ``Log``, ``ElementDivide``, ``Times``, ... of a criterion node apply to its
        ``[1]``: ``exp (sum se)``, not ``sum exp (se)``), else ``v`` itself."""
        if operation in _TAKES_PER_SAMPLE or not self._is_per_sample_sum(v):
            return v
        return self._total(v)

    def _minibatch_total(self, a: Any, b: Any) -> tuple[Any, Any]:
        """``a`` and ``b`` of ``Plus``/``Minus``, a per-sample criterion among them summed over
        the minibatch where the other is a number or a node with no batch axis (cntk.exe adds
        two ``[1]``) or per-sample data that is not a criterion (cntk.exe adds the ``[1]`` to each
        sample of it)."""
        def other(v: Any) -> bool:       # a number is a Constant node in cntk.exe
            return self._scalar(v) is not None or \
                (isinstance(v, Variable) and not self._is_per_sample_sum(v))
        if self._is_per_sample_sum(a) and other(b):
            return self._total(a), b
        if self._is_per_sample_sum(b) and other(a):
            return a, self._total(b)
        return a, b

    def _minibatch_factors(self, a: Any, b: Any) -> tuple[Any, Any]:
        """``a`` and ``b`` of ``ElementTimes``, a per-sample criterion among them summed over
        the minibatch unless the other is a number or a 1-element ``Constant`` (which scales
        the per-sample values: they sum to the same): cntk.exe multiplies the ``[1]`` into each
        sample of per-sample data, and by another criterion's ``[1]`` or any other value."""
        if self._is_per_sample_sum(a) and self._scalar(b) is None:
            a = self._total(a)
        if self._is_per_sample_sum(b) and self._scalar(a) is None:
            b = self._total(b)
        return a, b

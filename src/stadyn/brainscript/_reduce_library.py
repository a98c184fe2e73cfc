"""CNTK's reductions, ``Scale`` and deprecated aliases for :class:`~._stadyn_library.StadynLibrary`
(a mixin: it uses the library's ``_value``, ``_node`` and ``has_batch_axis``).

``ReduceSum``, ``ReduceMean``, ``ReduceMax``, ``ReduceMin`` and ``ReduceLogSum`` are CNTK's
``ReduceElements`` node: ``axis`` (1-based, column-major) is reduced to a dimension of 1, the
rank kept; no ``axis`` (CNTK's ``axis = 0``) reduces the whole sample to one value.  The batch
and sequence axes are never reduced (CNTK's static axes only).
"""

from __future__ import annotations

import numbers
from typing import Any

from .. import functions as F
from .._errors import ConfigError
from ..graph import Variable
from ..cntk_semantics import reshape_sample

__all__ = ["ReduceFunctions"]


class ReduceFunctions:
    """``ReduceSum`` & co., ``RectifiedLinear`` (CNTK's deprecated name of ``ReLU``),
    ``Scale`` and ``EpochAccumulator``."""

    def _init_reductions(self) -> dict[str, Any]:
        return {"ReduceSum": self.ReduceSum, "ReduceMean": self.ReduceMean,
                "ReduceMax": self.ReduceMax, "ReduceMin": self.ReduceMin,
                "ReduceLogSum": self.ReduceLogSum, "RectifiedLinear": self.ReLU,
                "Scale": self.Scale, "EpochAccumulator": self.EpochAccumulator}

    def Scale(self, scalarScalingFactor, matrix, tag=""):
        """``matrix`` times a scalar: CNTK built it as an ``ElementTimes`` of its two inputs
        (its logs validate ``Scale (features, featScale)`` as ``ElementTimes (features,
        featScale)``), so either argument may be the scalar."""
        return self.ElementTimes(scalarScalingFactor, matrix, tag)

    def _sample_axes(self, x: Variable, axis: Any, what: str) -> tuple[int, ...]:
        lead = 2 if x.sequence_lengths is not None else int(self.has_batch_axis(x))
        rank = x.ndim - lead
        if axis is None or (isinstance(axis, numbers.Integral) and not isinstance(axis, bool)
                            and axis == 0):
            return tuple(range(lead, x.ndim))
        if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or \
                not 1 <= axis <= rank:
            raise ConfigError(f"{what}: axis must be 1 .. {rank} (column-major; none or 0: all "
                              f"axes), got {axis!r}")
        return (lead + rank - int(axis),)

    def _reduce(self, x: Any, axis: Any, tag: str, what: str, fn: Any) -> Variable:
        v = self._value(x, what)
        axes = self._sample_axes(v, axis, what)
        out = fn(v, axes)
        if axis is None or axis == 0:      # the whole sample: one value per sample
            lead = v.ndim - len(axes)
            out = reshape_sample(out, (1,), lead > 0, sequence=lead == 2)
        return self._node(out, "ReduceElements", tag)

    def EpochAccumulator(self, input, tag=""):  # noqa: A002 - CNTK's name
        """CNTK's ``EpochAccumulator`` node (``new ComputationNode [operation =
        'EpochAccumulator' ; inputs = x]``, Image/FCN's mean IoU): the mean of every sample of
        ``input`` since the epoch began (``F.cntk_epoch_accumulator``; the runner resets it at
        each epoch and each evaluation), one value for the minibatch; of a sequence, the mean
        of every real step (cntk.exe masks the gaps and counts the actual samples)."""
        what = "EpochAccumulator"
        x = self._value(input, what)
        if x.sequence_lengths is not None:
            out = F.cntk_epoch_accumulator(x, x.sequence_lengths)
        elif self.has_batch_axis(x):
            out = F.cntk_epoch_accumulator(x)
        else:
            raise ConfigError(f"{what}: the input must be a minibatch of samples or of "
                              "sequences (not a parameter)")
        self._batched.unmark(out)          # one value for the minibatch
        return self._node(out, what, tag)

    def ReduceSum(self, _, axis=None, tag=""):
        return self._reduce(_, axis, tag, "ReduceSum", lambda v, a: F.sum(v, a, keepdims=True))

    def ReduceMean(self, _, axis=None, tag=""):
        return self._reduce(_, axis, tag, "ReduceMean", lambda v, a: F.mean(v, a, keepdims=True))

    def ReduceMax(self, _, axis=None, tag=""):
        return self._reduce(_, axis, tag, "ReduceMax", lambda v, a: F.max(v, a, keepdims=True,
                                                                      rule="cntk"))

    def ReduceMin(self, _, axis=None, tag=""):
        return self._reduce(_, axis, tag, "ReduceMin", lambda v, a: F.min(v, a, keepdims=True,
                                                                      rule="cntk"))

    def ReduceLogSum(self, _, axis=None, tag=""):
        """``log (sum (exp x))`` over the axis, computed from its maximum (no overflow)."""
        def log_sum(v, a):
            top = F.max(v, a, keepdims=True)
            return F.add2(F.log(F.sum(F.exp(F.sub2(v, top)), a, keepdims=True)), top)
        return self._reduce(_, axis, tag, "ReduceLogSum", log_sum)

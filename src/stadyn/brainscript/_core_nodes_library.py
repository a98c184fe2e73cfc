"""CNTK.core.bs's last node functions, for :class:`~._stadyn_library.StadynLibrary` (a mixin:
it uses the library's ``_value``, ``_node``, ``_scalar``, ``_lead``, ``_seq``, ``_batched``,
``has_batch_axis``, ``ParameterTensor``, ``batch_norm_parameters``, ``path`` and the sequence
functions' ``_where_conditions``).

* ``BatchNormalization`` (CNTK.core.bs:639): the raw node on the user's own scale, bias and
  running statistics, cntk.exe's ``BatchNormalizationNode`` (``F.cntk_batch_normalization``,
  as NDL's ``BatchNormalization`` and the ``BatchNormalizationLayer``);
* ``CosDistanceWithNegativeSamples`` (CNTK.core.bs:653): ``cntk_semantics``'s
  ``cosine_with_negative_samples``, CNTK 2.7's ``C.cosine_distance_with_negative_samples``;
* ``PackedIndex``, ``GatherPacked`` and ``ScatterPacked`` (CNTK.core.bs:670, 659, 682): a
  ``GatherPacked`` from a source without a dynamic axis (``Embedding``'s matrix) takes the
  source's columns the index's values name; from a sequence, and ``ScatterPacked``, they take
  an index ``PackedIndex (x, Where (cond))`` made (ReshapingNodes.h:1470-1503: "PackedIndex must
  have been created with PackedIndex() node, and is otherwise opaque to users"), and are
  CNTK.core.bs:896-897's ``Gather``/``Scatter`` of ``cond``;
* ``EnvironmentInput`` (CNTK.core.bs:579): ``F.cntk_environment_input``, the phase (1 while
  training, else 0) read each time the network runs;
* ``GMMLogLikelihood`` and ``QuantizedTimes`` are refused with cntk.exe's reasons (the first
  is compiled out of cntk.exe, the second fails on every BrainScript use).

(``Embedding``, CNTK.core.bs:759, is BrainScript in ``sequences.bs``, over ``GatherPacked``.)
"""

from __future__ import annotations

import math
from typing import Any

from .. import cntk_semantics as cntk
from .. import functions as F
from .. import sequence as S
from .._errors import ConfigError
from ..graph import Variable
from ..ops import check_environment_property
from ..sequence import reshape_samples
from ._parameter_library import PendingParameter
from ._sequence_library import _is_none

__all__ = ["CoreNodeFunctions"]


class CoreNodeFunctions:
    """``BatchNormalization``, ``CosDistanceWithNegativeSamples``, ``PackedIndex``,
    ``GatherPacked``, ``ScatterPacked``, and the refused ``GMMLogLikelihood`` and
    ``QuantizedTimes``."""

    def _init_core_nodes(self) -> dict[str, Any]:
        # PackedIndex's results, by id: (the index node, the node whose layout it packs for,
        # Where's condition)
        self._packed_indices: dict[int, tuple[Variable, Variable, Variable]] = {}
        return {"BatchNormalization": self.BatchNormalization,
                "CosDistanceWithNegativeSamples": self.CosDistanceWithNegativeSamples,
                "PackedIndex": self.PackedIndex, "GatherPacked": self.GatherPacked,
                "ScatterPacked": self.ScatterPacked, "GMMLogLikelihood": self.GMMLogLikelihood,
                "QuantizedTimes": self.QuantizedTimes, "_SampleDim": self._SampleDim,
                "EnvironmentInput": self.EnvironmentInput}

    def EnvironmentInput(self, propertyName, tag=""):  # noqa: N803 - CNTK.core.bs's name
        """cntk.exe's ``EnvironmentInputNode`` (CNTK.core.bs:579, InputAndParamNodes.h:480-555):
        a ``[1]`` value without a batch axis read each time the network runs; ``isTraining``
        (the one property cntk.exe has) is 1 while training and 0 in validation, test and eval
        (``F.cntk_environment_input``); another name is refused as cntk.exe's Validate refuses
        it, "There is no environment property ..." (:516)."""
        name = str(propertyName)
        check_environment_property(name, ConfigError)
        return self._node(F.cntk_environment_input(name), "EnvironmentInput", tag)

    def _SampleDim(self, x):
        """A node's ``dim`` as cntk.exe's BrainScript reads it, the number of elements a sample
        (ComputationNodeScripting.cpp:39; ``Embedding``'s default ``inputDim = input.dim``)."""
        v = self._value(x, "dim")
        return math.prod(int(d) for d in v.shape[self._lead(v):])

    # ---- batch normalization ----------------------------------------------------------------
    def BatchNormalization(self, input, scale, bias, runMean, runVariance,  # noqa: A002
                           runCount=None, spatial=False, normalizationTimeConstant=0,
                           blendTimeConstant=0, epsilon=0.00001, useCntkEngine=True,
                           disableRegularization=False, imageLayout="CHW", tag=""):
        """cntk.exe's ``BatchNormalizationNode`` on the given ``scale``, ``bias`` and running
        statistics (CNTK.core.bs:639-647): while training, each minibatch normalised by its own
        mean and variance, the running ones updated with ``normalizationTimeConstant`` (0: this
        minibatch's statistics alone; negative: the corpus-level average, TrainingNodes.h:
        2603-2611); otherwise by the running ones.  Without ``runCount``, CNTK.core.bs
        adds ``ParameterTensor {(1), initValue = 0, learningRateMultiplier = 0}``."""
        what = "BatchNormalization"
        if spatial and str(imageLayout).lower() not in ("chw", "cudnn"):
            raise ConfigError(f"{what}: spatial = true needs imageLayout = \"cudnn\"")
        x = self._value(input, what)
        values = [self._bn_inferred(v, x, bool(spatial))
                  for v in (scale, bias, runMean, runVariance)]
        values = [self._value(v, what) for v in values]
        if runCount is None or _is_none(runCount):
            with self._at_path("inputs.inputs[5]"):
                runCount = self.ParameterTensor((1,), learningRateMultiplier=0, initValue=0)
        count = self._value(runCount, what)
        self._bn_checked(values, count, what)
        return self._node(self.batch_normalization(
            x, values, count, bool(spatial), normalizationTimeConstant, blendTimeConstant,
            epsilon, bool(disableRegularization), what), what, tag)

    def _bn_checked(self, values: list[Variable], count: Variable, what: str) -> None:
        """cntk.exe's checks of a BatchNormalizationNode's parameters (TrainingNodes.h:
        2797-2801, 2845-2849): the running statistics and count are learnable parameters
        (``Parameter``, ``ParameterTensor``, ``Constant``: nodes without inputs, not an
        ``Input``), and the bias and running statistics have the scale's layout."""
        for k, v in enumerate(values[2:] + [count], start=3):
            if v.parent is not None or self._batched(v):
                raise ConfigError(f"{what}: Inputs [3..6] must be learnable parameters "
                                  f"(input {k} is a computed node or an Input)")
        for k, v in enumerate(values[1:], start=2):
            # (a different number of values: batch_normalization's message, naming the input)
            if int(v.size) == int(values[0].size) and tuple(v.shape) != tuple(values[0].shape):
                raise ConfigError(f"{what}: Input[{k}] has a layout different from Input[1]. "
                                  f"All must be identical ({tuple(v.shape)[::-1]} against "
                                  f"{tuple(values[0].shape)[::-1]}, CNTK's order).")

    def _bn_inferred(self, v: Any, x: Variable, spatial: bool) -> Any:
        """A ``[0 x 1]`` parameter (CNTK.core.bs:247's ``normShape = (0:1)``; ``Parameter (0,
        1)``) made ``[n x 1]``, ``n`` the input's channels where ``spatial`` (CNTK's last
        dimension), else its elements a sample, as cntk.exe's BatchNormalizationNode infers
        it (TrainingNodes.h:2805-2813); anything else as it is."""
        if not isinstance(v, PendingParameter) or tuple(v.shape) != (1, 0):
            return v
        lead = self._lead(x)
        total = int(x.shape[lead]) if spatial else math.prod(int(d) for d in x.shape[lead:])
        return v.infer((1, total)) if total > 0 else v

    def batch_normalization(self, x: Variable, values: list[Variable], count: Variable,
                            spatial: bool, time_constant: Any, blend_time_constant: Any,
                            epsilon: Any, disable_regularization: bool,
                            what: str) -> Variable:
        """cntk.exe's ``BatchNormalizationNode`` of ``x`` on ``values`` (scale, bias, running
        mean and variance: one value per element of a sample, or per channel where
        ``spatial``) and the running sample ``count``: BrainScript's and NDL's node.  Its scale
        and bias are exempt from L1/L2 where ``disable_regularization`` or the SGD block's
        ``disableRegInBatchNormalization`` says so (:meth:`unregularized`)."""
        lead = 1 if x.sequence_lengths is None else 2
        size = int(x.shape[lead]) if spatial else math.prod(int(d) for d in x.shape[lead:])
        for v, name in zip(values, ("scale", "bias", "runMean", "runVariance")):
            if int(v.size) != size:
                raise ConfigError(f"{what}: {name} has {int(v.size)} values, the input {size} "
                                  f"{'channels' if spatial else 'elements a sample'}")
        self.batch_norm_parameters(values[:2], disable_regularization)
        return F.cntk_batch_normalization(x, *values, count, x.sequence_lengths, spatial,
                                          float(time_constant), float(blend_time_constant),
                                          float(epsilon))

    # ---- cosine distance with negative samples ----------------------------------------------
    def CosDistanceWithNegativeSamples(self, aVectorSequence, anotherVectorSequence, numShifts,
                                       numNegSamples, tag=""):
        """Per column ``j`` of the minibatch, the cosine similarity of ``a_j`` with ``b_j``,
        then with ``b`` at the columns ``(j + numShifts + k - 1) mod n`` for ``k = 1 ..
        numNegSamples``: ``[1 + numNegSamples]`` a sample (CosDistanceWithNegativeSamplesNode,
        LinearAlgebraNodes.h:1612-1700; CNTK 2.7's ``C.cosine_distance_with_negative_samples``).
        ``numShifts`` and ``numNegSamples`` are numbers or one-element ``Constant`` nodes
        (the node reads each once: ``Get00Element``)."""
        what = "CosDistanceWithNegativeSamples"
        a, b = self._value(aVectorSequence, what), self._value(anotherVectorSequence, what)
        shift = self._count(numShifts, what, "numShifts", 0)
        count = self._count(numNegSamples, what, "numNegSamples", 0)   # (0: no negatives,
        # LinearAlgebraNodes.h:1790-1793 takes it)
        lead = self._lead(a)
        if lead == 0 or self._lead(b) != lead or tuple(a.shape[lead:]) != tuple(b.shape[lead:]):
            raise ConfigError(f"The tensor dimension in the {self.path or what} {what} "
                              "operation does not match.")
        return self._node(cntk.cosine_with_negative_samples(a, b, shift, count, lead), what, tag)

    def _count(self, value: Any, what: str, name: str, least: int) -> int:
        v = self._scalar(value)
        if v is None or not v.is_integer() or v < least:      # (_scalar's float; nan, inf)
            raise ConfigError(f"{what}: {name} must be an integer of at least {least} (a number "
                              f"or a one-element Constant), got {value!r}")
        return int(v)

    # ---- packed indices ---------------------------------------------------------------------
    def PackedIndex(self, nodeWithLayoutToPackFor, indexSequence, tag=""):
        """``indexSequence``'s per-sequence step indices as indices into
        ``nodeWithLayoutToPackFor``'s steps, for ``GatherPacked`` and ``ScatterPacked``
        (PackedIndexNode, ReshapingNodes.h:1470-1503).  Its values are the step indices (the
        index is opaque in cntk.exe: its packed column numbers are the layout's own); the
        index must be a ``Where`` of a condition, as CNTK.core.bs:896-897 make it."""
        what = "PackedIndex"
        layout = self._seq(nodeWithLayoutToPackFor, what)
        index = self._seq(indexSequence, what)
        cond = self._where_conditions.get(id(index))
        if cond is None or cond[0] is not index:
            raise ConfigError(f"{what}: the index sequence must be a Where (cond) (as in "
                              "CNTK.core.bs's Gather and Scatter); an index computed otherwise "
                              "is not supported")
        out = self._node(F.identity(index), what, tag)
        self._packed_indices[id(out)] = (out, layout, cond[1])
        return out

    def _packed(self, index: Any, what: str) -> tuple[Variable, Variable] | None:
        entry = self._packed_indices.get(id(index))
        if entry is None or entry[0] is not index:
            return None
        return entry[1], entry[2]

    def GatherPacked(self, indexSequence, sourceData, tag=""):
        """The samples of ``sourceData`` that ``indexSequence`` names, a sequence on the index's
        axis (GatherPackedNode, ReshapingNodes.cpp:560-622): of a source without a dynamic axis
        (a parameter), its columns (the last dimension) at the index's values, each step's
        sample the source's without that dimension (``[1]`` for a ``[1]``), cntk.exe's
        ``DoGatherColumnsOf`` (``F.cntk_gather_columns``): a negative index is a gap (zeros, no
        gradient), one past the last column cntk.exe's error "DoGatherColumnsOf: Map out of
        bounds. j >= n" at the user's line; a source of rank 1 with more than one element, or of
        rank 3 or more with a middle dimension past 1, is refused (cntk.exe's columns do not
        fit the sample it declares: see below); of a sequence, the steps a ``PackedIndex (x,
        Where (cond))`` names.  The gradient is scattered back (added) to the source."""
        what = "GatherPacked"
        source = self._value(sourceData, what)
        if not self.has_batch_axis(source):
            index = self._seq(indexSequence, what)
            if any(int(d) != 1 for d in index.shape[2:]):
                raise ConfigError(f"{self.path or what} {what} operation requires the first "
                                  "argument (index data) to be a scalar time sequence.")
            if source.ndim == 1 and source.shape[0] != 1:
                # cntk.exe's value of a [n] node without a dynamic axis is one column of n rows
                # (ComputationNode.h:1681-1713): index 0 alone is in range, and it copies the
                # whole column, n values, into an output whose sample Validate declared [1]
                # (ReshapingNodes.cpp:606-616)
                n = int(source.shape[0])
                raise ConfigError(f"{what}: the source is [{n}], which cntk.exe holds as one "
                                  f"column of {n} rows: its one column (index 0) does not fit "
                                  f"the [1] result cntk.exe declares; give the source as "
                                  f"[1 x {n}] ({n} columns of one value)")
            if source.ndim >= 3 and any(int(d) != 1 for d in source.shape[1:-1]):
                # a [a x b x c] node without a dynamic axis is a matrix of a rows and b*c
                # columns (ComputationNode.h:1704-1711): DoGatherColumnsOf gathers columns
                # of a values (any j < b*c) into a result whose sample Validate declares
                # [a x b] (ReshapingNodes.cpp:606-616), and the next node's view of it
                # exceeds its storage (TensorView.cpp:47-52)
                dims = [int(d) for d in reversed(source.shape)]
                a, c, inner = dims[0], dims[-1], math.prod(dims[1:-1])
                shown = " x ".join(map(str, dims))
                declared = " x ".join(map(str, dims[:-1]))
                raise ConfigError(f"{what}: the source is [{shown}], which cntk.exe holds as a "
                                  f"matrix of {a} rows and {inner * c} columns: a column of "
                                  f"{a} values does not fit the [{declared}] result cntk.exe "
                                  f"declares; give the source as [{a * inner} x {c}] (Reshape) "
                                  f"to gather its [{a * inner}] slices")
            # (N, T, 1, rest of a column): a column's elements a step, [1] for a [1]
            picked = F.cntk_gather_columns(source, index)
            rest = tuple(source.shape[1:]) or (1,)
            return self._node(S.to_sequence_like(reshape_samples(picked, 2, rest), index), what,
                              tag)
        packed = self._packed(indexSequence, what)
        if packed is None:
            raise ConfigError(f"{what}: gathering from a sequence needs an index made by "
                              "PackedIndex (x, Where (cond)) (CNTK.core.bs's Gather); another "
                              "index is not supported")
        _, cond = packed
        return self._node(S.gather(self._seq(source, what), cond), what, tag)

    def ScatterPacked(self, cond, indexSequence, sourceData, tag=""):
        """``sourceData``'s steps put at the steps ``indexSequence`` names, on ``cond``'s axis,
        0 elsewhere (ScatterPackedNode, ReshapingNodes.cpp:627-685): the index a ``PackedIndex
        (cond, Where (c))``, as CNTK.core.bs:897's ``Scatter`` makes it."""
        what = "ScatterPacked"
        layout = self._seq(cond, what)
        packed = self._packed(indexSequence, what)
        if packed is None:
            raise ConfigError(f"{what}: needs an index made by PackedIndex (cond, Where (c)) "
                              "(CNTK.core.bs's Scatter); another index is not supported")
        # the result is on the axis of the index's condition, which CNTK.core.bs's Scatter
        # makes from cond itself (cntk.exe takes the result's layout from cond): another cond,
        # whose layout Stadyn cannot match to the index's, is refused rather than ignored
        packed_for, where_cond = packed
        if layout is not where_cond and layout is not packed_for:
            raise ConfigError(f"{what}: cond must be the index's own condition or layout (as "
                              "CNTK.core.bs's Scatter (cond, s) passes it: ScatterPacked (cond, "
                              "PackedIndex (cond, Where (cond)), s)); another cond is not "
                              "supported")
        values = self._seq(sourceData, what)
        return self._node(S.scatter(values, where_cond), what, tag)

    # ---- refused ----------------------------------------------------------------------------
    def GMMLogLikelihood(self, unnormalizedPriorVector, meansAsRows, logStdDevAsRows,
                         dataVectorSequence, tag=""):
        """Refused as cntk.exe refuses it: ``GMMLogLikelihoodNode`` is compiled out
        (``#ifdef COMING_SOON``, SpecialPurposeNodes.h:69-433 and ComputationNetworkBuilder.cpp
        70-71), so ``new ComputationNode [operation = 'GMMLogLikelihood']`` reaches
        ``CreateStandardNode``'s last line (ComputationNetworkBuilder.cpp:154)."""
        raise ConfigError("GMMLogLikelihood: Attempted to instantiate undefined operation "
                          "GMMLogLikelihood. (CNTK.core.bs declares it, but cntk.exe 2.7 has no "
                          "GMMLogLikelihood node: it is compiled out, COMING_SOON)")

    def QuantizedTimes(self, leftMatrix, rightMatrix, bitSmoothingA=1, bitSmoothingB=1,
                       outputRank=1, inferInputRankToMap=-1, tag=""):
        """Refused as cntk.exe fails on it: CNTK.core.bs:702 passes ``bitSmoothingA`` and
        ``bitSmoothingB``, while ``QuantizedTimesNode`` reads ``bitShiftA`` and ``bitShiftB``
        from its config (LinearAlgebraNodes.h:1123-1124: "required parameter 'bitShiftA' not
        found", ScriptableObjects.h:560-565, which looks the names up in the enclosing scopes
        too before failing); the node is also CPU-only and for inference only (no
        gradient: LinearAlgebraNodes.h:1111-1115, 1157-1161)."""
        raise ConfigError("QuantizedTimes: required parameter 'bitShiftA' not found "
                          "(cntk.exe's QuantizedTimes node reads bitShiftA and bitShiftB, which "
                          "CNTK.core.bs's QuantizedTimes passes as bitSmoothingA and "
                          "bitSmoothingB, so cntk.exe fails unless an enclosing scope defines "
                          "bitShiftA/bitShiftB; Stadyn has no 16-bit quantized product)")


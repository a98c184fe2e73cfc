"""CNTK's pre-computed nodes for :class:`~._stadyn_library.StadynLibrary` (a mixin: it uses the
library's ``_value``, ``_node``, ``has_batch_axis``, ``Minus``, ``ElementTimes`` and ``Log``).

``Mean(x)`` and ``InvStdDev(x)`` are values estimated from the training data before the first
epoch (CNTK's ``PreComputeNodes``): each is a non-learnable parameter of ``x``'s sample shape,
not a number (NaN) until the runner's data pass (:mod:`._precompute`) sets it, then saved in the
model files with the other parameters, each with cntk.exe's ``hasComputed`` flag (a model
file written before the pass, by the ``edit`` action, says false: a restart from it computes the
values, as CNTK; a value computed from data holding a NaN is NaN and stays computed, as CNTK's).
A value never computed shows as NaN, never as a silent 0; a model file written before Stadyn
saved the flag is read as before: an all-NaN value is taken for one never computed.
From ``CNTK.core.bs``:

* ``PerDimMeanVarNormalization(x, mean, invStdDev) = (x - mean) .* invStdDev``;
* ``MeanVarNorm(feat) = PerDimMeanVarNormalization(feat, Mean(feat), InvStdDev(feat))`` and
  ``FeatureMVNLayer{}``, the same as a layer;
* ``LogPrior(labels) = Log(Mean(labels))`` (the log of the class frequencies) and
  ``LogPriorLayer{}``;
* ``PerDimMeanVarDeNormalization(x, mean, invStdDev) = x ./ invStdDev + mean`` (its own node in
  CNTK, which refused a gradient through it; Stadyn's passes one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import functions as F
from .._errors import ConfigError
from ..graph import Variable
from ..parametric import current_registry, get_parameter_or_create

__all__ = ["PreComputeFunctions", "PreComputeNode"]


@dataclass
class PreComputeNode:
    """One pre-computed node: its CNTK operation (``Mean`` or ``InvStdDev``), the node whose
    samples it summarises, the parameter that holds its value (named ``name`` in the
    parameter registry and the model files) and, for one made inside ``MeanVarNorm`` or
    ``LogPrior``, the member name CNTK's definition gave it there (``mean``, ``invStdDev``,
    ``_``: the log calls it ``featNorm.mean``); for a copy ``BS.Network.CloneFunction`` or
    ``Edit`` made, the node it copies (the log calls it ``<member>.<the original's name>``)."""

    operation: str
    input: Variable
    value: Variable
    name: str
    member: str | None = None
    original: PreComputeNode | None = None
    #: the expression path it was made at (``featNorm``; ``featNorm.feat`` for the inner one of
    #: ``featNorm = MeanVarNorm (MeanVarNorm (x))``): with ``member``, cntk.exe's node name
    path: str = ""
    #: cntk.exe's ``hasComputed``: set by the data pass and read from a model file that says
    #: (:func:`._model_files.load_model_parameters`); None: not known, the value decides (NaN:
    #: not computed), as for a model file written before Stadyn saved the flag
    has_computed: bool | None = None
    #: the name a Stadyn before cntk.exe's node names gave it (``mean/value``, ``mean_1/value``,
    #: ``invStdDev/value``, numbered in the order made), under which its model files hold it;
    #: None for a node read from a model file
    older_name: str | None = None

    @property
    def computed(self) -> bool:
        """Whether the value has been computed (or read from a model file that holds it)."""
        if self.has_computed is not None:
            return self.has_computed
        return not never_computed(self.value)


def never_computed(value: Variable) -> bool:
    """Whether a pre-computed value is still the not-a-number it is made as (cntk.exe's
    ``hasComputed = false``)."""
    return bool(np.isnan(np.asarray(value.d)).all())


class PreComputeFunctions:
    """``Mean``, ``InvStdDev``, ``MeanVarNorm``, ``PerDimMeanVarNormalization``,
    ``PerDimMeanVarDeNormalization``, ``LogPrior``, ``FeatureMVNLayer``, ``LogPriorLayer``.

    The nodes made are listed, in the order made, in :attr:`precompute_nodes`.  The library
    registers these names itself: its constructor reaches this class's ``__init__`` through
    ``super().__init__(functions)``.
    """

    def __init__(self, functions: dict[str, Any]) -> None:
        self.precompute_nodes: list[PreComputeNode] = []
        super().__init__({**functions, **{
            "Mean": self.Mean, "InvStdDev": self.InvStdDev,
            "PerDimMeanVarNormalization": self.PerDimMeanVarNormalization,
            "PerDimMeanVarDeNormalization": self.PerDimMeanVarDeNormalization,
            "MeanVarNorm": self.MeanVarNorm, "LogPrior": self.LogPrior,
            "FeatureMVNLayer": self.FeatureMVNLayer, "LogPriorLayer": self.LogPriorLayer}})

    def Mean(self, dataVectorSequence, tag=""):
        """The mean of the samples (a sequence's steps) of the training data, per element."""
        return self._precomputed(dataVectorSequence, "Mean", tag)

    def InvStdDev(self, dataVectorSequence, tag=""):
        """``1 / sqrt(var)`` per element over the training data (the variance divided by the
        sample count, floored at 1e-10)."""
        return self._precomputed(dataVectorSequence, "InvStdDev", tag)

    def PerDimMeanVarNormalization(self, x, mean, invStdDev):
        return self.ElementTimes(self.Minus(x, mean), invStdDev)

    def PerDimMeanVarDeNormalization(self, dataVectorSequence, meanVector, invStdDevVector,
                                     tag=""):
        what = "PerDimMeanVarDeNormalization"
        x = self._value(dataVectorSequence, what)
        mean, inv = self._value(meanVector, what), self._value(invStdDevVector, what)
        return self._node(F.add2(F.div2(x, inv), mean), what, tag)

    def MeanVarNorm(self, feat):
        mean = self._precomputed(feat, "Mean", "", "mean")
        inv_std_dev = self._precomputed(feat, "InvStdDev", "", "invStdDev")
        return self.PerDimMeanVarNormalization(feat, mean, inv_std_dev)

    def LogPrior(self, labels):
        return self.Log(self._precomputed(labels, "Mean", "", "_"))

    def FeatureMVNLayer(self):
        return self.MeanVarNorm

    def LogPriorLayer(self):
        return self.LogPrior

    def precomputed_copy(self, node: PreComputeNode, x: Variable) -> Variable:
        """A new pre-computed node like ``node`` over ``x`` (``BS.Network.CloneFunction``'s or
        ``Edit``'s copy of a node the data pass has not computed yet: the pass computes the copy
        from its own input, as CNTK's, where the copy is a new ``Mean``/``InvStdDev`` node)."""
        v = self._precomputed(x, node.operation, "", node.member)
        self.precompute_nodes[-1].original = node
        return v

    def _precomputed(self, x: Any, operation: str, tag: str, member: str | None = None
                     ) -> Variable:
        v = self._value(x, operation)
        if not self.has_batch_axis(v):
            raise ConfigError(f"{operation}: its input must come in minibatches of samples (depend "
                              "on an Input); it is computed from the training data")
        lead = 2 if v.sequence_lengths is not None else 1
        shape = tuple(v.shape[lead:])
        registry = current_registry()
        # (the name a Stadyn before expression paths gave it, kept to read its model files)
        older = registry.claim(operation[0].lower() + operation[1:]) + "/value"
        # cntk.exe's node name: the expression path, plus the member of CNTK.core.bs's
        # definition for one made inside MeanVarNorm or LogPrior (z.featNorm.mean)
        name = f"{self.path}.{member}" if member and self.path else self.path
        if not name or name in registry:
            name = older
        value = get_parameter_or_create(name, shape, np.full(shape, np.nan, np.float32),
                                        need_grad=False)
        self.precompute_nodes.append(PreComputeNode(operation, v, value, name, member,
                                                    path=self.path, older_name=older))
        return self._node(value, operation, tag)

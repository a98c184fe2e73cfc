"""Per-element scaling and layer normalisation for :class:`~._stadyn_library.StadynLibrary` (a
mixin: it uses the library's ``_value``, ``_node``, ``_sample_axes``, ``ElementTimes`` and
``ParameterTensor``), and the identifier ``Inferred``.

CNTK facts followed here:

- ``DiagTimes (diagonalMatrixAsColumnVector, matrix)`` is CNTK's deprecated ``DiagTimesNode``
  (``DeprecatedNodes.h``): each column of ``matrix`` (a sample, all its elements as one
  column) multiplied element-wise by the vector, i.e. ``Diag (d) * x``.  The vector is a
  ``[rows x 1]`` column (``cols != 1`` is an error) whose ``rows`` equal the sample's number
  of elements (for a matrix without a batch axis: its rows, CNTK's first dimension); an
  inferred (0) dimension of it is set from the data.  The gradient of the vector is
  ``sum over the columns of (gradient .* x)``, of the data ``gradient .* d``.
- ``LayerNormalizationLayer {initScale = 1, initBias = 0}`` is CNTK.core.bs's: one scalar
  ``gain`` ``ParameterTensor {(1), initValue = initScale}`` and one scalar ``bias``, made once
  per layer, when it is first applied (the record's members are made when read: a layer never
  applied makes none, as in the Speech/LSTM/Truncated log's network); applied to ``x`` it is
  ``(x - mean) ./ sqrt (mean ((x - mean) .* (x - mean))) .* gain + bias`` with the means
  over the whole sample (``ReduceMean (x)``) and **no epsilon**.
  CNTK 2.7's Python ``layers.LayerNormalization`` differs: a ``scale`` and ``bias`` per
  element, and ``epsilon = 0.00001`` added to the standard deviation.
- ``Inferred = 0``: the dimension a parameter's first use sets.
"""

from __future__ import annotations

import math
from typing import Any

from .. import functions as F
from .. import sequence as S
from .._errors import ConfigError
from ..graph import Variable
from ..parametric import current_registry
from ._cntk_log import cntk_shape_text
from ._loops import PendingState
from ._values import _is_number

__all__ = ["NormFunctions", "is_pending_parameter", "infer_parameter"]


class NormFunctions:
    """``DiagTimes``, ``LayerNormalizationLayer`` and ``Inferred``."""

    def _init_norms(self) -> dict[str, Any]:
        return {"DiagTimes": self.DiagTimes,
                "LayerNormalizationLayer": self.LayerNormalizationLayer,
                "Inferred": 0}

    # ---- DiagTimes -----------------------------------------------------------------------
    def DiagTimes(self, diagonalMatrixAsColumnVector, matrix, tag=""):
        """``Diag (d) * x``: every sample of ``matrix`` times the vector ``d`` element-wise."""
        what = "DiagTimes"
        d = diagonalMatrixAsColumnVector
        if isinstance(matrix, PendingState):
            # a delay inside a loop: its per-step shape is the vector's
            vector = _column(self._value(d, what), what)
            y = self.ElementTimes(vector, matrix)
            return self._node(y, what, tag)
        x = self._value(matrix, what)
        lead = 2 if x.sequence_lengths is not None else int(self.has_batch_axis(x))
        # the rows CNTK sees: a sample's elements, or a matrix's first (column-major) dimension
        sample = tuple(x.shape[lead:]) if lead else tuple(x.shape[-1:])
        rows = math.prod(sample)
        if is_pending_parameter(self, d):
            # CNTK infers the vector's first dimension from the rows, the others are 1
            d = infer_parameter(d, (rows,) + (1,) * (len(d.shape) - 1))
        vector = _column(self._value(d, what), what)
        if vector.shape[0] != rows:
            raise ConfigError(f"{what}: the diagonal has {vector.shape[0]} elements, but the "
                              f"matrix has {rows} rows (its shape is "
                              f"[{cntk_shape_text(x.shape[lead:] if lead else x.shape)}])")
        if self.has_batch_axis(vector):
            raise ConfigError(f"{what}: the diagonal must be a parameter or constant, not data")
        scale = F.reshape(vector, sample) if sample != vector.shape else vector
        return self._node(F.mul2(x, scale), what, tag)

    # ---- LayerNormalizationLayer ---------------------------------------------------------
    def LayerNormalizationLayer(self, initScale=1, initBias=0):
        """CNTK.core.bs's layer normalisation (see the module's description): a function of
        ``x`` with one learned scalar gain and bias."""
        for name, value in (("initScale", initScale), ("initBias", initBias)):
            if not _is_number(value):
                raise ConfigError(f"LayerNormalizationLayer: {name} must be a number, got "
                                  f"{value!r}")
        # CNTK.core.bs's record: its members gain and bias are made when the first
        # application reads them (a layer never applied makes no parameter)
        return _LayerNormalization(self, self.path, initScale, initBias)


class _LayerNormalization:
    """The ``apply`` of one ``LayerNormalizationLayer``: its parameters, made at its first
    use (at the layer's path, gain first: ``xHat .* gain + bias``), shared by every use."""

    def __init__(self, library: Any, path: str, init_scale: float, init_bias: float) -> None:
        self.library, self.path = library, path
        self.init = {"gain": init_scale, "bias": init_bias}
        self.params: dict[str, Variable] = {}

    def _parameter(self, member: str) -> Variable:
        made = self.params.get(member)
        # (one made in a try the evaluator rolled back is no longer registered: made again)
        if made is None or current_registry().get(made.name) is not made:
            lib, path = self.library, self.library.path
            lib.path = f"{self.path}.{member}" if self.path else ""
            try:
                self.params[member] = lib.ParameterTensor((1,), initValue=self.init[member])
            finally:
                lib.path = path
        return self.params[member]

    def __call__(self, x: Any) -> Variable:
        lib, what = self.library, "LayerNormalizationLayer"
        v = lib._value(x, what)
        axes = lib._sample_axes(v, None, what)
        x0 = F.sub2(v, F.mean(v, axes, keepdims=True))
        variance = F.mean(F.mul2(x0, x0), axes, keepdims=True)
        if v.sequence_lengths is not None:
            # a padded step (not data: cntk.exe has none) has variance 1, not 0, so that its
            # 0 / 0 does not put NaN into the gradients of the gain and the bias
            _, real = S.unpack(v)
            padded = F.r_sub_scalar(S.reshape_samples(real, 2, (1,) * len(axes)), 1.0)
            variance = F.add2(variance, padded)
        x_hat = F.div2(x0, F.sqrt(variance))
        gain = self._parameter("gain")
        bias = self._parameter("bias")
        return lib._node(F.add2(F.mul2(x_hat, gain), bias), "Plus")

    def __repr__(self) -> str:
        return "LayerNormalizationLayer"


def is_pending_parameter(library: Any, v: Any) -> bool:
    """Whether ``v`` is a ``Parameter`` whose dimensions are not known yet (the library's
    ``PendingParameter``: a node that is neither a Variable nor a delay)."""
    return library.is_node(v) and not isinstance(v, (Variable, PendingState))


def infer_parameter(pending: Any, cntk_dims: tuple[int, ...]) -> Variable:
    """A pending parameter with its 0 dimensions taken from ``cntk_dims`` (column-major, as
    many as the parameter has): its ``infer`` in CNTK's order."""
    return pending.infer(tuple(reversed(cntk_dims)))


def _column(d: Variable, what: str) -> Variable:
    """The diagonal as a vector ``(rows,)``: CNTK's ``[rows x 1]`` column (Stadyn shape
    ``(1, rows)``) or a ``[rows]`` vector."""
    if d.ndim == 0 or math.prod(d.shape[:-1]) != 1:
        raise ConfigError(f"{what}: the first argument must be a column vector [rows x 1] (the "
                          f"diagonal), got [{cntk_shape_text(d.shape)}]")
    return F.reshape(d, (d.shape[-1],)) if d.ndim != 1 else d

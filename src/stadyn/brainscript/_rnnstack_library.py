"""CNTK's ``OptimizedRNNStack`` for :class:`~._stadyn_library.StadynLibrary` (a mixin: it uses the
library's ``_value`` and ``_node``).

``OptimizedRNNStack (weights, input, hiddenDims, numLayers = 1, bidirectional = false,
recurrentOp = 'lstm', axis = -1)`` is CNTK's ``OptimizedRNNStackNode`` (``RNNNodes.cpp``):
``numLayers`` stacked recurrences over the sequence ``input`` with all their weights in one
parameter in cuDNN's flat layout.  cntk.exe ran it on GPUs only (cuDNN); Stadyn runs it
anywhere with :func:`stadyn.sequence.optimized_rnnstack` (torch's LSTM/GRU/RNN kernels, the
layout and equations cuDNN's).

The weights are usually ``ParameterTensor {0:0, initOutputRank = -1, ...}``: CNTK infers them
as ``[hiddenDims x total / hiddenDims]`` with ``total`` cuDNN's parameter count
(``RnnAttributes::GetNumParameters``: per layer and direction ``G * H * (in + H)`` weights and
``2 * G * H`` biases, ``G`` = 4 gates for ``lstm``, 3 for ``gru``, 1 for ``rnnTanh`` and
``rnnReLU``; the layers after the first read ``D * H`` inputs).  So a 3-layer bidirectional
LSTM of 256 over 33 inputs has ``[256 x 14648]`` weights, as cntk.exe's log of
``Tests/EndToEndTests/Speech/LSTM/FullUtteranceCuDNN5`` says.  The output is ``D * H`` per step
(``D`` = 2 with ``bidirectional``).  ``axis = 2`` (CNTK's spatial recurrence) is refused.
"""

from __future__ import annotations

from typing import Any

from .. import sequence as S
from .._errors import ConfigError, ShapeError
from ..graph import Variable
from ._cntk_log import cntk_shape_text
from ._layer_library import _bool
from ._norm_library import infer_parameter, is_pending_parameter
from ..ops import rnnstack_weight_count

__all__ = ["RNNStackFunctions"]

_OPS = ("lstm", "gru", "rnnTanh", "rnnReLU")


class RNNStackFunctions:
    """``OptimizedRNNStack``."""

    def _init_rnnstacks(self) -> dict[str, Any]:
        return {"OptimizedRNNStack": self.OptimizedRNNStack}

    def OptimizedRNNStack(self, weights, input, hiddenDims, numLayers=1, bidirectional=False,
                          recurrentOp="lstm", axis=-1, tag=""):
        """A stack of ``numLayers`` recurrences over ``input`` (see the module's description)."""
        what = "OptimizedRNNStack"
        hidden, layers = _positive(hiddenDims, "hiddenDims"), _positive(numLayers, "numLayers")
        bidirectional = _bool(bidirectional, f"{what}: bidirectional")
        if recurrentOp not in _OPS:
            raise ConfigError(f"{what}: unknown recurrentOp '{recurrentOp}' (use "
                              f"{', '.join(_OPS)})")
        if axis != -1:
            raise ConfigError(f"{what}: axis = {axis!r} (a spatial recurrence) is not supported; "
                              "only axis = -1, the sequence axis")
        x = self._value(input, what)
        if x.sequence_lengths is None or x.ndim != 3:
            raise ConfigError(f"{what}: the input must be a sequence of vectors, got a value of "
                              f"shape {x.shape}")
        count = rnnstack_weight_count(x.shape[2], hidden, layers, bidirectional, recurrentOp)
        w = _weights(self, weights, hidden, count)
        if w.size != count:
            raise ConfigError(
                f"{what}: the weights hold {w.size} numbers ([{cntk_shape_text(w.shape)}]); a "
                f"{layers}-layer {'bidirectional ' if bidirectional else ''}{recurrentOp} stack "
                f"of {hidden} over inputs of {x.shape[2]} needs {count} "
                f"([{hidden} x {count // hidden}])")
        try:
            y = S.optimized_rnnstack(x, w, hidden, layers, bidirectional, recurrentOp)
        except (ShapeError, ValueError) as err:
            raise ConfigError(f"{what}: {err}") from None
        return self._node(y, what, tag)


def _weights(lib: Any, weights: Any, hidden: int, count: int) -> Variable:
    """The weights; a pending ``ParameterTensor`` of two dimensions is made
    ``[hidden x count / hidden]`` (its 0 dimensions), as CNTK infers it."""
    if not is_pending_parameter(lib, weights):
        return lib._value(weights, "OptimizedRNNStack")
    if weights.variable is None and len(weights.shape) != 2:
        raise ConfigError("OptimizedRNNStack: inferred weights must have two dimensions "
                          "(ParameterTensor {0:0, initOutputRank = -1}), got "
                          f"[{cntk_shape_text(weights.shape)}]")
    return infer_parameter(weights, (hidden, count // hidden))


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"OptimizedRNNStack: {name} must be a positive integer, got {value!r}")
    return value

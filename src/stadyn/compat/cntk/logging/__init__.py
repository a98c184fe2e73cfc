"""``cntk.logging``: CNTK 2.x progress writers, ``log_number_of_parameters``, trace levels
and the graph helpers of :mod:`.graph`.

Example:
    >>> import stadyn.compat.cntk as C
    >>> C.logging.set_trace_level(C.logging.TraceLevel.Info)
    >>> C.logging.get_trace_level() == C.logging.TraceLevel.Info
    True
    >>> C.logging.set_trace_level(C.logging.TraceLevel.Warning)
"""

from __future__ import annotations

import enum
from typing import Any

from ....graph import Variable as _StadynVariable
from ....train.progress import (ProgressPrinter, ProgressWriter, TensorBoardProgressWriter)
from ....train.progress import log_number_of_parameters as _log_number_of_parameters
from .._function import Function
from .._variables import Variable
from ..device import cpu
from . import graph
from .graph import (depth_first_search, find_all_with_name, find_by_name, find_by_uid,
                    get_node_outputs, plot)

__all__ = ["ProgressPrinter", "ProgressWriter", "TensorBoardProgressWriter",
           "TrainingSummaryProgressCallback", "log_number_of_parameters", "TraceLevel",
           "get_trace_level", "set_trace_level", "graph", "depth_first_search",
           "find_all_with_name", "find_by_name", "find_by_uid", "get_node_outputs", "plot",
           "Variable", "cpu"]


class TraceLevel(enum.Enum):
    """How much CNTK logs: ``Error``, ``Warning``, ``Info`` (equal to their numbers)."""

    Error = 0
    Warning = 1
    Info = 2

    def __eq__(self, other) -> bool:
        return self.value == (other.value if isinstance(other, TraceLevel) else other)

    def __ne__(self, other) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self.value)


_trace_level = [TraceLevel.Warning.value]


def set_trace_level(value) -> None:
    """Set the logging verbosity (a :class:`TraceLevel` or its number); kept, Stadyn logs
    through Python's ``logging``."""
    _trace_level[0] = value.value if isinstance(value, TraceLevel) else TraceLevel(int(value)).value


def get_trace_level() -> int:
    """The logging verbosity set last, as its number (1, ``TraceLevel.Warning``, at the
    start)."""
    return _trace_level[0]


class TrainingSummaryProgressCallback(ProgressWriter):
    """A progress writer calling ``callback(epoch_index, epoch_loss, epoch_metric,
    epoch_samples)`` after every training summary (epoch indices from 0; loss and metric are
    the epoch's sums over its samples, as CNTK's)."""

    def __init__(self, epoch_size: int, callback):
        super().__init__()
        self.epoch_size = epoch_size
        self._callback = callback

    def on_training_summary(self, record) -> None:
        self._callback(record.index - 1, record.loss_sum, record.metric_sum, record.samples)


def _outputs(model: Any) -> list[_StadynVariable] | None:
    """The graph outputs ``model`` stands for (a Function, a Variable, or a list or tuple of
    them as ``combine`` gives them), or None for anything else (a list of parameters, a
    Trainer, a layer)."""
    items = list(model) if isinstance(model, (list, tuple)) else [model]
    outputs = []
    for item in items:
        if isinstance(item, Function):
            outputs.extend(item._roots())
        elif isinstance(item, _StadynVariable) and item.parent is not None:
            outputs.append(item)
        else:
            return None
    return outputs or None


def log_number_of_parameters(model: Any, trace_level: int = 0) -> None:
    """Print ``Training {N} parameters in {K} parameter tensors.`` as CNTK 2.7 does, for a
    model output (a Function or Variable, or several as ``combine`` gives them: the
    parameters they depend on, each once, listed last layer first), or anything
    :func:`stadyn.train.log_number_of_parameters` takes (a list of parameters, a layer).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.Dense(4)(C.layers.Dense(5)(C.input_variable(3)))
        >>> log_number_of_parameters(z, trace_level=1)  # doctest: +NORMALIZE_WHITESPACE
        Training 44 parameters in 4 parameter tensors.
        <BLANKLINE>
            (5, 4)
            (4,)
            (3, 5)
            (5,)
    """
    outputs = _outputs(model)
    if outputs is None:
        _log_number_of_parameters(model, trace_level)
        return
    params = Function(outputs[0], outputs).parameters if len(outputs) > 1 else \
        Function(outputs[0]).parameters
    _log_number_of_parameters(params, trace_level)

"""``cntk.logging``: CNTK 2.x progress writers and ``log_number_of_parameters`` (of
:mod:`.progress_print`, also reached as ``C.logging.progress_print``), trace levels and the
graph helpers of :mod:`.graph`.

Example:
    >>> import stadyn.compat.cntk as C
    >>> C.logging.set_trace_level(C.logging.TraceLevel.Info)
    >>> C.logging.get_trace_level() == C.logging.TraceLevel.Info
    True
    >>> C.logging.set_trace_level(C.logging.TraceLevel.Warning)
"""

from __future__ import annotations

import enum

from .._variables import Variable
from ..device import cpu
from . import graph, progress_print
from .graph import (depth_first_search, find_all_with_name, find_by_name, find_by_uid,
                    get_node_outputs, plot)
from .progress_print import (ProgressPrinter, ProgressWriter, TensorBoardProgressWriter,
                             TrainingSummaryProgressCallback, log_number_of_parameters)

__all__ = ["ProgressPrinter", "ProgressWriter", "TensorBoardProgressWriter",
           "TrainingSummaryProgressCallback", "log_number_of_parameters", "TraceLevel",
           "get_trace_level", "set_trace_level", "graph", "progress_print", "depth_first_search",
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

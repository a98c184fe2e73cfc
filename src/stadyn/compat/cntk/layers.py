"""``cntk.layers``."""

from ._layers import *  # noqa: F401,F403
from ._layers import __all__ as _layers_all
from ._recurrent import GRU, LSTM, Fold, Recurrence, RecurrenceFrom, RNNStep  # noqa: F401

__all__ = list(_layers_all) + ["Recurrence", "RecurrenceFrom", "Fold", "LSTM", "GRU", "RNNStep"]

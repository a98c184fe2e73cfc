"""Training: the CNTK-style Trainer, progress writers and checkpoints."""

from ._callbacks import TrainingCallback
from ._checkpoint import read_checkpoint_state
from ._trainer import NonFiniteLossError, Trainer, feed
from .progress import (CSVProgressWriter, ProgressBarWriter, ProgressPrinter, ProgressWriter,
                       TensorBoardProgressWriter, log_number_of_parameters)

__all__ = ["Trainer", "TrainingCallback", "NonFiniteLossError", "feed", "read_checkpoint_state",
           "ProgressWriter", "ProgressPrinter", "ProgressBarWriter", "TensorBoardProgressWriter",
           "CSVProgressWriter", "log_number_of_parameters"]

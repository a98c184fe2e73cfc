"""Training: the CNTK-style Trainer, progress writers and checkpoints."""

from ._trainer import NonFiniteLossError, Trainer, feed
from .progress import (CSVProgressWriter, ProgressBarWriter, ProgressPrinter, ProgressWriter,
                       TensorBoardProgressWriter, log_number_of_parameters)

__all__ = ["Trainer", "NonFiniteLossError", "feed", "ProgressWriter", "ProgressPrinter",
           "ProgressBarWriter", "TensorBoardProgressWriter", "CSVProgressWriter",
           "log_number_of_parameters"]

"""``cntk.logging``: CNTK 2.x progress writers."""

from ...train.progress import (ProgressPrinter, ProgressWriter, TensorBoardProgressWriter,
                               log_number_of_parameters)

__all__ = ["ProgressPrinter", "ProgressWriter", "TensorBoardProgressWriter",
           "log_number_of_parameters"]

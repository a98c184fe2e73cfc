"""Progress writers for training: CNTK's ProgressPrinter lines, TensorBoard scalars, CSV rows and a
terminal progress bar, all driven by the same calls (see :mod:`stadyn.train._progress`).

Example:
    >>> from stadyn.train.progress import ProgressPrinter
    >>> printer = ProgressPrinter(freq=1)
    >>> printer.update(128.0, 64, 16.0)
     Minibatch[   1-   1]: loss = 2.000000 * 64, metric = 25.00% * 64;
"""

from ._csvlog import CSV_COLUMNS, CSVProgressWriter
from ._printer import (ProgressPrinter, format_epoch_line, format_minibatch_line, format_table_row,
                       format_test_summary, log_number_of_parameters)
from ._progress import ProgressBarWriter, ProgressRecord, ProgressWriter, ProgressWriterError
from ._tensorboard import TensorBoardProgressWriter

__all__ = [
    "ProgressWriter",
    "ProgressRecord",
    "ProgressWriterError",
    "ProgressPrinter",
    "ProgressBarWriter",
    "TensorBoardProgressWriter",
    "CSVProgressWriter",
    "CSV_COLUMNS",
    "log_number_of_parameters",
    "format_minibatch_line",
    "format_epoch_line",
    "format_table_row",
    "format_test_summary",
]

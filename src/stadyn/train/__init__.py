"""Training: the CNTK-style Trainer, progress writers and checkpoints."""

from ._callbacks import TrainingCallback
from ._checkpoint import read_checkpoint_state
from ._evaluate import evaluate_sums
from ._monitor import (Monitor, MonitorError, MonitorImage, MonitorImageTile, MonitorSeries,
                       MonitorTimeElapsed, plot_series, plot_time_elapsed, tile_images)
from ._feeding import cntk_value_misfit, feed, fits_sample, stack_samples
from ._trainer import NoMetricError, NonFiniteLossError, Trainer
from .progress import (CSVProgressWriter, ProgressBarWriter, ProgressPrinter, ProgressWriter,
                       TensorBoardProgressWriter, log_number_of_parameters)

__all__ = ["Trainer", "TrainingCallback", "NonFiniteLossError", "NoMetricError",
           "feed", "fits_sample", "stack_samples", "cntk_value_misfit", "evaluate_sums",
           "read_checkpoint_state",
           "ProgressWriter", "ProgressPrinter", "ProgressBarWriter", "TensorBoardProgressWriter",
           "CSVProgressWriter", "log_number_of_parameters", "Monitor", "MonitorError",
           "MonitorSeries", "MonitorTimeElapsed", "MonitorImage", "MonitorImageTile", "tile_images",
           "plot_series", "plot_time_elapsed"]

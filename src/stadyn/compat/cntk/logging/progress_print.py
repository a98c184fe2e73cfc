"""``cntk.logging.progress_print``: CNTK 2.x's progress writers (``ProgressPrinter``,
``TensorBoardProgressWriter``, ``TrainingSummaryProgressCallback``, the ``ProgressWriter`` base
to subclass) and ``log_number_of_parameters``; ``cntk.logging`` gives the same names
(CNTK 208 writes ``C.logging.progress_print.ProgressPrinter``); ``cpu`` is ``cntk.cpu``, which
CNTK's module imports too.

Example:
    >>> import stadyn.compat.cntk as C
    >>> C.logging.progress_print.ProgressPrinter is C.logging.ProgressPrinter
    True
"""

from __future__ import annotations

from typing import Any

from ....graph import Variable as _StadynVariable
from ....train.progress import ProgressWriter as _ProgressWriter
from ....train.progress import TensorBoardProgressWriter as _TensorBoardProgressWriter
from ....train.progress import log_number_of_parameters as _log_number_of_parameters
from .._function import Function
from ..device import cpu
from ._progress_print import ProgressPrinter

__all__ = ["ProgressPrinter", "ProgressWriter", "TensorBoardProgressWriter",
           "TrainingSummaryProgressCallback", "log_number_of_parameters", "cpu"]


class ProgressWriter(_ProgressWriter):
    """Base of a progress writer written as CNTK's: subclass it and override
    ``on_write_training_update(samples, updates, aggregate_loss, aggregate_metric)`` (each a
    ``(start, end)`` pair of the epoch's running totals), ``on_write_test_update(samples,
    updates, aggregate_metric)``, ``on_write_training_summary(samples, updates, summaries,
    aggregate_loss, aggregate_metric, elapsed_milliseconds)`` and
    ``on_write_test_summary(samples, updates, summaries, aggregate_metric,
    elapsed_milliseconds)`` (sums over the epoch), and
    ``on_write_distributed_sync_update(samples, updates, aggregate_metric)``.  The constructor's
    six arguments are CNTK's: ``trainingUpdateWriteFrequency``,
    ``trainingFirstUpdatesToWrite``, ``testUpdateWriteFrequency``, ``testFirstUpdatesToWrite``,
    ``distributedSyncUpdateWriteFrequency``, ``distributedSyncFirstUpdatesToWrite``; the
    frequencies are in minibatches (None: no minibatch records).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> class Sums(C.logging.ProgressWriter):
        ...     def on_write_training_summary(self, samples, updates, summaries, loss, metric,
        ...                                   elapsed_milliseconds):
        ...         print(samples, updates, summaries, round(loss, 3))
        >>> w = Sums()
        >>> w.update(2.0, 4); w.update(1.0, 4)
        >>> _ = w.summarize_training_progress()
        8 2 1 3.0
    """

    def __init__(self, trainingUpdateWriteFrequency=None, trainingFirstUpdatesToWrite=0,
                 testUpdateWriteFrequency=None, testFirstUpdatesToWrite=0,
                 distributedSyncUpdateWriteFrequency=None,
                 distributedSyncFirstUpdatesToWrite=0):
        # (CNTK 2.7's names, which its subclasses pass as keywords; CNTK requires all six)
        super().__init__(freq=_frequency(trainingUpdateWriteFrequency),
                         first=int(trainingFirstUpdatesToWrite),
                         test_freq=_frequency(testUpdateWriteFrequency),
                         test_first=int(testFirstUpdatesToWrite))
        self._sync_schedule(_frequency(distributedSyncUpdateWriteFrequency),
                            int(distributedSyncFirstUpdatesToWrite))

    # Stadyn's hooks, as CNTK's
    def on_training_update(self, record) -> None:
        self.on_write_training_update(*_windows(record, loss=True))

    def on_test_update(self, record) -> None:
        self.on_write_test_update(*_windows(record, loss=False))

    def on_training_summary(self, record) -> None:
        self.on_write_training_summary(record.samples, record.last_minibatch, record.index,
                                       record.loss_sum or 0.0, record.metric_sum or 0.0,
                                       int(record.seconds * 1000))

    def on_test_summary(self, record) -> None:
        self.on_write_test_summary(record.samples, record.last_minibatch, record.index,
                                   record.metric_sum or 0.0, int(record.seconds * 1000))

    def on_distributed_sync_update(self, record) -> None:
        self.on_write_distributed_sync_update(*_windows(record, loss=False))

    # CNTK's hooks: override these
    def on_write_training_update(self, samples, updates, aggregate_loss, aggregate_metric):
        """A window of training minibatches (see the class docstring)."""

    def on_write_test_update(self, samples, updates, aggregate_metric):
        """A window of test minibatches."""

    def on_write_training_summary(self, samples, updates, summaries, aggregate_loss,
                                  aggregate_metric, elapsed_milliseconds):
        """The end of a training epoch."""

    def on_write_test_summary(self, samples, updates, summaries, aggregate_metric,
                              elapsed_milliseconds):
        """The end of an evaluation."""

    def on_write_distributed_sync_update(self, samples, updates, aggregate_metric):
        """A window of the workers' synchronisations (a Trainer of distributed learners on
        several workers): ``(start, end)`` pairs of the samples and synchronisations so far."""


def _frequency(value):
    import sys
    return None if value is None or value >= sys.maxsize else int(value)


def _windows(record, loss: bool) -> tuple:
    """A window record as CNTK's ``(start, end)`` pairs of the epoch's running totals."""
    def pair(total, window):
        total = total or 0.0
        return (total - (window or 0.0), total)
    samples = (record.epoch_samples - record.samples, record.epoch_samples)
    updates = (record.first_minibatch - 1, record.last_minibatch)
    metric = pair(record.epoch_metric_sum, record.metric_sum)
    if loss:
        return samples, updates, pair(record.epoch_loss_sum, record.loss_sum), metric
    return samples, updates, metric


_CNTK_TAGS = ("minibatch/avg_loss", "minibatch/avg_metric", "summary/avg_loss",
              "summary/avg_metric", "minibatch/test_avg_metric", "summary/test_avg_metric")


class TensorBoardProgressWriter(_TensorBoardProgressWriter):
    """Stadyn's TensorBoard writer keeping to CNTK's scalars: what it writes of itself are
    ``minibatch/avg_loss``, ``minibatch/avg_metric``, ``summary/avg_loss``,
    ``summary/avg_metric`` and the test metrics (no learning rate or speed); a user's own
    ``write_value`` is written whatever its name, as CNTK's (its progress_print.py:459-476 hands
    every name to the native writer)."""

    def __init__(self, freq=None, log_dir=".", rank=None, model=None, **options):
        super().__init__(freq, log_dir, rank, model, progress_tags=_CNTK_TAGS, **options)

    def write(self, key: str, value: Any) -> None:
        """Nothing: CNTK's TensorBoard writer leaves ``write`` to the native base, whose
        ``Write(key, value)`` is empty (CNTKLibrary.h:6161), so the learning rates a Trainer
        reports (``Learning rate per minibatch``) reach no event file.

        Example:
            >>> import tempfile, stadyn.compat.cntk as C
            >>> C.logging.TensorBoardProgressWriter(log_dir=tempfile.mkdtemp()).write("k", 1.0)
        """


class TrainingSummaryProgressCallback(ProgressWriter):
    """A progress writer calling ``callback(epoch_index, epoch_loss, epoch_metric,
    epoch_samples)`` after every training summary (epoch indices from 0; loss and metric are
    the epoch's sums over its samples, as CNTK's)."""

    def __init__(self, epoch_size: int, callback):
        super().__init__()
        self.epoch_size = epoch_size
        self._callback = callback

    def on_write_training_summary(self, samples, updates, summaries, aggregate_loss,
                                  aggregate_metric, elapsed_milliseconds) -> None:
        self._callback(summaries - 1, aggregate_loss, aggregate_metric, samples)


def _outputs(model: Any) -> list[_StadynVariable] | None:
    """The graph outputs ``model`` stands for (a Function, a Variable, or a list or tuple of
    them as ``combine`` gives them), or None for anything else (a list of parameters, a
    Trainer, a layer)."""
    items = list(model) if isinstance(model, (list, tuple)) else [model]
    outputs = []
    for item in items:
        if issubclass(type(item), Function):     # (a built one: a layer is no graph yet)
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

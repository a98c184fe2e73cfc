"""TensorBoardProgressWriter: progress as TensorBoard scalars, written with the ``tensorboard``
package's own event-file writer (no TensorFlow, no tensorboardX).

Tags and steps follow CNTK 2.x (the learning-rate and samples-per-second tags are Stadyn's
additions); ``N`` is the number of training minibatches so far:

* ``minibatch/avg_loss``, ``minibatch/avg_metric``, ``minibatch/learning_rate``: the window's mean
  loss and metric and the last learning rate given to ``update``, at ``freq``; step ``N``.
* ``summary/avg_loss``, ``summary/avg_metric``, ``summary/learning_rate``,
  ``summary/samples_per_second``: the epoch's; step = the epoch number.
* ``minibatch/test_avg_metric``: an evaluation's mean metric, step ``N`` (so the test curve lines
  up with the training curves); ``summary/test_avg_metric`` instead, stepped by the evaluation's
  number, when no training minibatch has been seen yet.
* ``{key}``: ``write(key, value)``, step ``N``.

Metrics are written as means (0.25, not 25 %), as CNTK did.  The metric tags appear only when the
Trainer measured a metric, the learning-rate tags only when it passed one.  A writer made with
``progress_tags`` naming some of the tags above writes only those of them itself
(``write_value`` and ``write`` still write any tag).
"""

from __future__ import annotations

import os
import time
from typing import Any, Iterable

from ._progress import Clock, ProgressRecord, ProgressWriter, ProgressWriterError

__all__ = ["TensorBoardProgressWriter"]


class TensorBoardProgressWriter(ProgressWriter):
    """Write training progress to a TensorBoard event file in ``log_dir`` (see the module
    docstring for the tags).

    Args:
        freq: write minibatch scalars after every ``freq`` minibatches (``None``: summaries only;
            ``0``: geometric, as for every writer).
        log_dir: the folder for the ``events.out.tfevents.*`` file (made if missing).
        rank: the distributed worker's rank; only rank 0 (or ``None``) writes, as in CNTK.
        model: accepted for CNTK's signature; the model graph is not drawn.
        flush_secs: how often the background writer flushes (``flush()``/``close()`` always do).
        progress_tags: the tags of the module docstring's list this writer writes of itself;
            ``None``, all of them (CNTK's compat writer keeps to CNTK's).

    Example:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> with TensorBoardProgressWriter(freq=1, log_dir=folder) as tb:
        ...     tb.update(128.0, 64, 16.0)
        ...     _ = tb.summarize_training_progress()
        >>> from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
        >>> events = EventAccumulator(folder); _ = events.Reload()
        >>> [(e.step, e.value) for e in events.Scalars("summary/avg_loss")]
        [(1, 2.0)]
    """

    def __init__(self, freq: int | None = None, log_dir: str | os.PathLike = ".",
                 rank: int | None = None, model: Any = None, *, flush_secs: float = 120,
                 clock: Clock = time.perf_counter, progress_tags: Iterable[str] | None = None):
        super().__init__(freq, 0, None, 0, clock=clock)
        self._progress_tags = None if progress_tags is None else frozenset(progress_tags)
        self.log_dir = os.fspath(log_dir)
        self.rank = rank
        self.model = model
        self._writer = None
        if not rank:
            from .._extras import require
            require("tensorboard", "tensorboard", "TensorBoardProgressWriter")
            from tensorboard.summary.writer.event_file_writer import EventFileWriter
            self._writer = EventFileWriter(self.log_dir, flush_secs=flush_secs)

    def write_value(self, name: str, value: float, step: int) -> None:
        """Record the scalar ``name`` = ``value`` at ``step``."""
        self._check_open()
        if self._writer is None:
            return
        from tensorboard.compat.proto import event_pb2, summary_pb2
        summary = summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag=str(name), simple_value=float(value))])
        self._writer.add_event(event_pb2.Event(wall_time=time.time(), step=int(step),
                                               summary=summary))

    def _write_progress(self, name: str, value: float, step: int) -> None:
        """The hooks' own scalars: those ``progress_tags`` names (all where it is None)."""
        if self._progress_tags is None or name in self._progress_tags:
            self.write_value(name, value, step)

    def write(self, key: str, value: Any) -> None:
        """Record ``value`` under the tag ``key`` at the current training minibatch count."""
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ProgressWriterError(f"TensorBoardProgressWriter.write: {key!r} must be a "
                                      f"number, not {value!r}") from None
        self.write_value(key, number, self.total_training_updates())

    def on_training_update(self, record: ProgressRecord) -> None:
        step = record.total_minibatches
        self._write_progress("minibatch/avg_loss", record.loss, step)
        if record.metric_sum is not None:
            self._write_progress("minibatch/avg_metric", record.metric, step)
        if record.learning_rate is not None:
            self._write_progress("minibatch/learning_rate", record.learning_rate, step)

    def on_training_summary(self, record: ProgressRecord) -> None:
        step = record.index
        self._write_progress("summary/avg_loss", record.loss if record.loss is not None else 0.0,
                             step)
        if record.metric_sum is not None:
            self._write_progress("summary/avg_metric", record.metric, step)
        if record.learning_rate is not None:
            self._write_progress("summary/learning_rate", record.learning_rate, step)
        self._write_progress("summary/samples_per_second", record.samples_per_second, step)
        self.flush()

    def on_test_summary(self, record: ProgressRecord) -> None:
        metric = record.metric or 0.0
        if record.total_minibatches:
            # At the training step, so the test curve lines up with the training curves.
            self._write_progress("minibatch/test_avg_metric", metric, record.total_minibatches)
        else:
            self._write_progress("summary/test_avg_metric", metric, record.index)
        self.flush()

    def flush(self) -> None:
        """Write out buffered events now."""
        self._check_open()
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        if not self.closed and self._writer is not None:
            self._writer.close()
        super().close()

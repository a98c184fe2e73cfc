"""CSVProgressWriter: progress as rows of a CSV file, for spreadsheets and plotting scripts.

Columns (:data:`CSV_COLUMNS`)::

    kind,epoch,minibatch,samples,loss,metric,seconds,samples_per_s,learning_rate,total_minibatches

* ``kind``: ``minibatch`` (a window of training minibatches, at ``freq``), ``epoch`` (a training
  summary), ``test_minibatch`` (at ``test_freq``) or ``test`` (an evaluation summary).
* ``epoch``: the epoch the row belongs to (for test rows: the evaluation's number), from 1.
* ``minibatch``: the last minibatch of the window, counted from 1 in the epoch; for summaries the
  number of minibatches in the epoch (or evaluation).
* ``samples``, ``seconds``, ``samples_per_s``: of the window or the epoch.
* ``loss``, ``metric``: means per sample; the metric as a fraction, not a percentage.  Empty when
  not measured (test rows have no loss).
* ``learning_rate``: the last one given to ``update`` (empty if none); ``total_minibatches``:
  training minibatches since the writer was made.

The file is opened in **append** mode and the header is written only when the file is new or
empty, so a resumed run continues the same log (set ``writer.epochs`` to the number of finished
epochs after restoring a checkpoint so the numbering continues too).  A file that already starts
with another header is refused.  Every row is flushed as it is written.
"""

from __future__ import annotations

import csv
import os
import time

from ._progress import Clock, ProgressRecord, ProgressWriter, ProgressWriterError

__all__ = ["CSVProgressWriter", "CSV_COLUMNS"]

CSV_COLUMNS = ("kind", "epoch", "minibatch", "samples", "loss", "metric", "seconds",
               "samples_per_s", "learning_rate", "total_minibatches")


def _cell(value) -> object:
    return "" if value is None else value


class CSVProgressWriter(ProgressWriter):
    """Append one CSV row per written minibatch window and per summary to ``path`` (see the
    module docstring for the columns).

    Example:
        >>> import csv, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "progress.csv")
        >>> with CSVProgressWriter(path, freq=1) as log:
        ...     log.update(128.0, 64, 16.0, learning_rate=0.01)
        ...     _ = log.summarize_training_progress()
        >>> [(r["kind"], r["epoch"], r["loss"], r["metric"]) for r in csv.DictReader(open(path))]
        [('minibatch', '1', '2.0', '0.25'), ('epoch', '1', '2.0', '0.25')]
    """

    def __init__(self, path: str | os.PathLike, freq: int | None = None, first: int = 0,
                 test_freq: int | None = None, test_first: int = 0, *,
                 clock: Clock = time.perf_counter):
        super().__init__(freq, first, test_freq, test_first, clock=clock)
        self.path = os.fspath(path)
        self._file = open(self.path, "a+", newline="", encoding="utf-8")
        self._writer = csv.writer(self._file, lineterminator="\n")
        try:
            self._file.seek(0)
            head = self._file.readline()
            self._file.seek(0, os.SEEK_END)
            if not head.strip():
                self._writer.writerow(CSV_COLUMNS)
                self._file.flush()
            elif tuple(next(csv.reader([head]))) != CSV_COLUMNS:
                raise ProgressWriterError(
                    f"{self.path}: the file's columns {head.strip()} are not a "
                    f"CSVProgressWriter log ({','.join(CSV_COLUMNS)}); give another path")
        except BaseException:
            self._file.close()
            raise

    def _row(self, record: ProgressRecord, kind: str, minibatch: int) -> None:
        self._writer.writerow([
            kind, record.index, minibatch, record.samples, _cell(record.loss),
            _cell(record.metric), record.seconds, record.samples_per_second,
            _cell(record.learning_rate), record.total_minibatches])
        self._file.flush()

    def on_training_update(self, record: ProgressRecord) -> None:
        self._row(record, "minibatch", record.last_minibatch)

    def on_training_summary(self, record: ProgressRecord) -> None:
        self._row(record, "epoch", record.last_minibatch)

    def on_test_update(self, record: ProgressRecord) -> None:
        self._row(record, "test_minibatch", record.last_minibatch)

    def on_test_summary(self, record: ProgressRecord) -> None:
        self._row(record, "test", record.last_minibatch)

    def flush(self) -> None:
        if not self.closed:
            self._file.flush()

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()

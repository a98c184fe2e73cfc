"""Progress writers: what a training run prints, plots and logs while it goes (CNTK 2.x's model).

**The interface the Trainer drives.**  A :class:`ProgressWriter` is told about every minibatch and
asked for summaries; it never looks at the model::

    writer.update(loss_sum, samples, metric_sum=None, learning_rate=None)  # after train_minibatch
    writer.summarize_training_progress()                                    # end of an epoch
    writer.update_test(metric_sum, samples)                                 # after test_minibatch
    writer.summarize_test_progress()                                        # end of an evaluation
    writer.write(key, value)      # a named value ("Learning rate per 1 samples", 0.0015625)
    writer.log(message)           # free text
    writer.close()                # or use the writer as a context manager

``loss_sum`` and ``metric_sum`` are **sums over the minibatch's samples** (CNTK's Trainer sums the
loss; the metric sum of ``classification_error`` is the number of errors).  Every average a writer
reports is such a sum divided by a sample count, so minibatches weigh by their samples.  A
minibatch of 0 samples is ignored.  Scripts that drive the writer themselves use CNTK's older calls
:meth:`~ProgressWriter.update_with_trainer` and :meth:`~ProgressWriter.epoch_summary`; do not use
them on a writer the Trainer already holds, or every minibatch counts twice.

**Bookkeeping lives in the base class.**  It keeps two trackers (training and test) that count
minibatches, samples and sums since the last write and since the last summary, and time them; a
subclass only turns :class:`ProgressRecord` objects into output by overriding
``on_training_update``, ``on_training_summary``, ``on_test_update`` and ``on_test_summary``.

**When minibatch records are written** (``freq``/``first``, as CNTK's C++ ``ProgressWriter``):

* ``freq=None``: never; only summaries.
* ``freq=0``: a geometric schedule -- after minibatch 1, 3, 7, 15, ... of the epoch, so the windows
  hold 1, 2, 4, 8, ... minibatches.
* ``freq=N``: after every N-th minibatch, and after each of the first ``first`` minibatches.

Minibatch numbers restart at 1 after every summary; ``total_training_updates`` does not.  Time is
read from ``clock`` (``time.perf_counter`` unless given): an epoch runs from the writer's
construction or the previous summary to this summary (CNTK 2.x); an evaluation from its first
reported minibatch to its summary; a minibatch window from the previous write.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

from .._errors import StadynError

__all__ = ["ProgressWriter", "ProgressRecord", "ProgressPrinter", "ProgressBarWriter",
           "ProgressWriterError", "log_number_of_parameters", "format_minibatch_line",
           "format_epoch_line", "format_table_row", "format_test_summary"]

Clock = Callable[[], float]


class ProgressWriterError(StadynError, ValueError):
    """A progress writer was set up or used wrongly (a bad ``freq``, a closed writer, a log file
    with other columns)."""


def _avg(total: float | None, count: float) -> float:
    # CNTK's _avg: 0 rather than a division by zero for an empty window.
    return 0.0 if total is None or count <= 0 else total / count


@dataclass(frozen=True)
class ProgressRecord:
    """One write: a window of minibatches (``kind`` ``"minibatch"``/``"test_minibatch"``) or a
    summary (``"epoch"``/``"test"``).

    ``index`` is the number of the epoch (or evaluation) the record belongs to, from 1;
    ``first_minibatch``..``last_minibatch`` the minibatches it covers, counted from 1 in that
    epoch; ``loss_sum``/``metric_sum`` are sums over its ``samples`` (None when not measured);
    ``seconds`` the wall time it covers.  ``epoch_*`` are the epoch-to-date totals (the "average"
    columns of CNTK's geometric table); ``total_minibatches`` counts every training minibatch
    since the writer was made (TensorBoard's step).
    """

    kind: str
    index: int
    first_minibatch: int
    last_minibatch: int
    samples: int
    loss_sum: float | None
    metric_sum: float | None
    seconds: float
    total_minibatches: int
    learning_rate: float | None = None
    epoch_samples: int = 0
    epoch_loss_sum: float | None = None
    epoch_metric_sum: float | None = None

    @property
    def loss(self) -> float | None:
        """Mean loss per sample (None when no loss was measured)."""
        return None if self.loss_sum is None else _avg(self.loss_sum, self.samples)

    @property
    def metric(self) -> float | None:
        """Mean metric per sample, as a fraction (None when no metric was measured)."""
        return None if self.metric_sum is None else _avg(self.metric_sum, self.samples)

    @property
    def samples_per_second(self) -> float:
        return _avg(self.samples, self.seconds)


def print_line(line: str) -> None:
    """Print ``line`` to ``sys.stdout``; while a ``tqdm`` bar is drawn (a
    :class:`ProgressBarWriter`'s), through ``tqdm.write``, which clears the bar, prints the line
    and draws the bar again below it, so the line does not land on the bar's.

    Example:
        >>> print_line(" Minibatch[   1-   1]: loss = 2.000000 * 64;")
         Minibatch[   1-   1]: loss = 2.000000 * 64;
    """
    tqdm_module = sys.modules.get("tqdm")       # no bar can be drawn before tqdm is imported
    if tqdm_module is not None and getattr(tqdm_module.tqdm, "_instances", None):
        tqdm_module.tqdm.write(line, file=sys.stdout)
        sys.stdout.flush()
    else:
        print(line, flush=True)


def _check_schedule(owner: str, name: str, freq: Any, first: Any) -> None:
    if freq is not None and (isinstance(freq, bool) or not isinstance(freq, int) or freq < 0):
        raise ProgressWriterError(f"{owner}: {name} must be None (no minibatch records), 0 "
                                  f"(geometric) or a positive number of minibatches, not {freq!r}")
    if isinstance(first, bool) or not isinstance(first, int) or first < 0:
        raise ProgressWriterError(f"{owner}: the 'first' count for {name} must be an integer >= 0, "
                                  f"not {first!r}")


class _Tracker:
    """Counts one stream of minibatches (training or test) between summaries; CNTK's
    ``ProgressWriter::Impl``.  Sums are kept per window and per epoch (no differences of running
    totals, so no cancellation)."""

    def __init__(self, update_kind: str, summary_kind: str, freq: int | None, first: int,
                 clock: Clock, lazy: bool = False):
        self.update_kind, self.summary_kind = update_kind, summary_kind
        self.freq, self.first, self.clock = freq, first, clock
        self.lazy = lazy                   # every epoch's clock starts at its first update
        self.total_updates = 0
        self.summaries = 0
        self.learning_rate: float | None = None
        self._new_epoch(None if lazy else clock())

    def _new_epoch(self, now: float | None) -> None:
        self.start = now                   # None: start at the next update
        self.updates = self.samples = 0
        self.loss_sum: float | None = None
        self.metric_sum: float | None = None
        self._new_window(now)

    def _new_window(self, now: float | None) -> None:
        self.w_start = now
        self.w_first = self.updates + 1
        self.w_samples = 0
        self.w_loss: float | None = None
        self.w_metric: float | None = None

    def due(self, update: int) -> bool:
        if self.freq is None:
            return False
        if self.freq == 0:
            return (update + 1) & update == 0
        return update % self.freq == 0 or update <= self.first

    def add(self, samples: int, loss_sum: float | None, metric_sum: float | None,
            learning_rate: float | None) -> ProgressRecord | None:
        if self.start is None:
            self.start = self.w_start = self.clock()
        self.updates += 1
        self.total_updates += 1
        self.samples += samples
        self.w_samples += samples
        if learning_rate is not None:
            self.learning_rate = float(learning_rate)
        if loss_sum is not None:
            self.loss_sum = (self.loss_sum or 0.0) + loss_sum
            self.w_loss = (self.w_loss or 0.0) + loss_sum
        if metric_sum is not None:
            self.metric_sum = (self.metric_sum or 0.0) + metric_sum
            self.w_metric = (self.w_metric or 0.0) + metric_sum
        if not self.due(self.updates):
            return None
        now = self.clock()
        record = ProgressRecord(
            self.update_kind, self.summaries + 1, self.w_first, self.updates, self.w_samples,
            self.w_loss, self.w_metric, now - self.w_start, self.total_updates,
            self.learning_rate, self.samples, self.loss_sum, self.metric_sum)
        self._new_window(now)
        return record

    def summarize(self, with_metric: bool | None) -> ProgressRecord:
        now = self.clock()
        metric = self.metric_sum
        if with_metric is False:
            metric = None
        elif with_metric and metric is None:
            metric = 0.0
        self.summaries += 1
        seconds = 0.0 if self.start is None else now - self.start
        record = ProgressRecord(
            self.summary_kind, self.summaries, 1, self.updates, self.samples, self.loss_sum,
            metric, seconds, self.total_updates, self.learning_rate, self.samples,
            self.loss_sum, metric)
        self._new_epoch(None if self.lazy else now)
        return record


class ProgressWriter:
    """Base of every progress writer: the bookkeeping and the schedule (see the module docstring).

    Subclasses override the ``on_*`` hooks (each gets a :class:`ProgressRecord`), ``write``,
    ``log``, ``flush`` and ``close``.  The base class alone collects and forgets.

    Example:
        >>> class Losses(ProgressWriter):
        ...     def on_training_summary(self, record):
        ...         print(record.index, record.loss, record.samples)
        >>> w = Losses()
        >>> w.update(128.0, 64); w.update(64.0, 64)
        >>> _ = w.summarize_training_progress()
        1 1.5 128
    """

    def __init__(self, freq: int | None = None, first: int = 0, test_freq: int | None = None,
                 test_first: int = 0, *, clock: Clock = time.perf_counter):
        owner = type(self).__name__
        _check_schedule(owner, "freq", freq, first)
        _check_schedule(owner, "test_freq", test_freq, test_first)
        self.freq, self.first = freq, first
        self.test_freq, self.test_first = test_freq, test_first
        self.clock = clock
        self.closed = False
        self._training = _Tracker("minibatch", "epoch", freq, first, clock)
        # An evaluation is timed from its first minibatch, not from the end of the last one.
        self._test = _Tracker("test_minibatch", "test", test_freq, test_first, clock, lazy=True)

    # -- counters -------------------------------------------------------------------------------
    @property
    def epochs(self) -> int:
        """Training summaries written so far.  Set it after restoring a checkpoint so the next
        summary is numbered ``epochs + 1``."""
        return self._training.summaries

    @epochs.setter
    def epochs(self, value: int) -> None:
        self._training.summaries = int(value)

    def total_training_updates(self) -> int:
        """Training minibatches seen since the writer was made."""
        return self._training.total_updates

    def total_test_updates(self) -> int:
        return self._test.total_updates

    # -- what the Trainer calls -----------------------------------------------------------------
    def update(self, loss_sum: float, samples: int, metric_sum: float | None = None,
               learning_rate: float | None = None) -> None:
        """Account for one training minibatch of ``samples`` samples whose summed loss is
        ``loss_sum`` (and summed metric ``metric_sum``, e.g. its number of errors)."""
        self._check_open()
        samples = int(samples)
        if samples <= 0:
            return
        record = self._training.add(samples, float(loss_sum),
                                    None if metric_sum is None else float(metric_sum),
                                    learning_rate)
        if record is not None:
            self.on_training_update(record)

    def update_with_trainer(self, trainer: Any, with_metric: bool = False) -> None:
        """:meth:`update` from a trainer's ``previous_minibatch_loss_average``,
        ``previous_minibatch_evaluation_average`` (only when ``with_metric``) and
        ``previous_minibatch_sample_count`` (and ``learning_rate()`` when it has one)."""
        if trainer is None:
            return
        samples = int(trainer.previous_minibatch_sample_count)
        if samples == 0:
            return
        metric = trainer.previous_minibatch_evaluation_average if with_metric else None
        lr = getattr(trainer, "learning_rate", None)
        lr = lr() if callable(lr) else lr
        self.update(float(trainer.previous_minibatch_loss_average) * samples, samples,
                    None if metric is None else float(metric) * samples, lr)

    def summarize_training_progress(self) -> ProgressRecord:
        """Write the summary of the epoch (everything since the last summary) and start the next;
        the metric is part of it when any minibatch of the epoch had one."""
        return self._summarize_training(None)

    def epoch_summary(self, with_metric: bool = False) -> ProgressRecord:
        """CNTK's older :meth:`summarize_training_progress`: the metric only when
        ``with_metric``."""
        return self._summarize_training(bool(with_metric))

    def _summarize_training(self, with_metric: bool | None) -> ProgressRecord:
        self._check_open()
        record = self._training.summarize(with_metric)
        self.on_training_summary(record)
        return record

    def update_test(self, metric_sum: float, samples: int) -> None:
        """Account for one evaluated minibatch with summed metric ``metric_sum``."""
        self._check_open()
        samples = int(samples)
        if samples <= 0:
            return
        record = self._test.add(samples, None, float(metric_sum), None)
        if record is not None:
            self.on_test_update(replace(record, total_minibatches=self._training.total_updates))

    def summarize_test_progress(self) -> ProgressRecord:
        """Write the summary of the evaluation since the last one and start the next."""
        self._check_open()
        record = replace(self._test.summarize(True),
                         total_minibatches=self._training.total_updates)
        self.on_test_summary(record)
        return record

    def write(self, key: str, value: Any) -> None:
        """Record a named value (CNTK's learners report ``Learning rate per 1 samples``)."""

    def log(self, message: str) -> None:
        """Record a free-text message."""

    def flush(self) -> None:
        """Push out anything buffered."""

    def close(self) -> None:
        """Finish; using the writer afterwards is an error.  Closing twice is harmless."""
        self.closed = True

    def __enter__(self) -> ProgressWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_open(self) -> None:
        if self.closed:
            raise ProgressWriterError(f"{type(self).__name__} is closed")

    # -- hooks ----------------------------------------------------------------------------------
    def on_training_update(self, record: ProgressRecord) -> None:
        """A window of training minibatches is due (``freq``)."""

    def on_training_summary(self, record: ProgressRecord) -> None:
        """An epoch ended."""

    def on_test_update(self, record: ProgressRecord) -> None:
        """A window of test minibatches is due (``test_freq``)."""

    def on_test_summary(self, record: ProgressRecord) -> None:
        """An evaluation ended."""


# ---------------------------------------------------------------------------------------------
# ProgressPrinter: CNTK's text lines
# ---------------------------------------------------------------------------------------------
_STYLES = ("2.x", "2017")
_TABLE_HEADER = (" average      since    average      since      examples",
                 "    loss       last     metric       last              ",
                 " ------------------------------------------------------")


def _metric_text(mean: float, pct: bool, style: str) -> str:
    if style == "2017":
        return f"{mean * 100:0.1f}%" if pct else f"{mean:0.1f}"
    return f"{mean * 100:0.2f}%" if pct else f"{mean:0.6f}"


def format_minibatch_line(record: ProgressRecord, *, metric_is_pct: bool = True,
                          style: str = "2.x", name: str = "") -> str:
    """`` Minibatch[   1-  10]: loss = 1.500000 * 640, metric = 25.00% * 640;``"""
    fields = []
    if record.loss_sum is not None:
        fields.append(f"loss = {record.loss:0.6f} * {record.samples:d}")
    if record.metric_sum is not None:
        fields.append(f"metric = {_metric_text(record.metric, metric_is_pct, style)} * "
                      f"{record.samples:d}")
    end = "" if style == "2017" else ";"
    return (f" {name}Minibatch[{record.first_minibatch:4d}-{record.last_minibatch:4d}]: "
            + ", ".join(fields) + end)


def format_table_row(record: ProgressRecord) -> str:
    """A row of the geometric (``freq=0``) table: averages since the epoch start and since the
    last row, for loss and metric (a fraction, never scaled), then the samples so far."""
    def pair(epoch_sum: float | None, window_sum: float | None) -> str:
        if window_sum is None:
            return f"{'':8s}   {'':8s}   "
        return (f"{_avg(epoch_sum, record.epoch_samples):8.3g}   "
                f"{_avg(window_sum, record.samples):8.3g}   ")
    return (" " + pair(record.epoch_loss_sum, record.loss_sum)
            + pair(record.epoch_metric_sum, record.metric_sum) + f" {record.epoch_samples:10d}")


def format_epoch_line(record: ProgressRecord, *, tag: str = "", num_epochs: int | None = None,
                      metric_is_pct: bool = True, style: str = "2.x") -> str:
    """``Finished Epoch[1 of 10]: [Training] loss = ... 15.380s (3250.9 samples/s);``"""
    tag = f"[{tag}] " if tag else ""
    metric = ""
    if record.metric_sum is not None:
        text = _metric_text(record.metric, metric_is_pct, style)
        metric = f", metric = {text} * {record.samples}"
    body = f"{tag}loss = {_avg(record.loss_sum, record.samples):0.6f} * {record.samples}{metric}"
    if style == "2017":
        return (f"Finished Epoch [{record.index}]: {body} {record.seconds:0.3f}s "
                f"({record.samples_per_second:5.1f} samples per second)")
    of = f" of {num_epochs}" if num_epochs is not None else ""
    return (f"Finished Epoch[{record.index}{of}]: {body} {record.seconds:0.3f}s "
            f"({record.samples_per_second:5.1f} samples/s);")


def format_test_summary(record: ProgressRecord, *, metric_is_pct: bool = True) -> str:
    """``Finished Evaluation [1]: Minibatch[1-625]: metric = 13.86% * 10000;``"""
    metric = _metric_text(_avg(record.metric_sum, record.samples), metric_is_pct, "2.x")
    return (f"Finished Evaluation [{record.index}]: Minibatch[1-{record.last_minibatch}]: "
            f"metric = {metric} * {record.samples};")


class ProgressPrinter(ProgressWriter):
    """Print training and evaluation progress in CNTK's exact words.

    Lines (``style="2.x"``, CNTK 2.x; the epoch line is one line)::

         Minibatch[   1-  10]: loss = 1.500000 * 640, metric = 25.00% * 640;
        Finished Epoch[1 of 10]: [Training] loss = 1.500000 * 50000, metric = 25.00% * 50000
            15.380s (3251.0 samples/s);
         Evaluation Minibatch[   1-  10]: metric = 12.50% * 160;
        Finished Evaluation [1]: Minibatch[1-625]: metric = 13.86% * 10000;

    ``style="2017"`` prints the 2017 betas' wording (``Finished Epoch [1]: [Training] loss =
    2.012469 * 50000, metric = 75.1% * 50000 15.380s (3250.9 samples per second)``: a space
    before ``[``, no ``of N``, one decimal for the metric, ``samples per second``, no ``;``; the
    minibatch lines likewise have one decimal and no ``;``) and times its first epoch from the
    first minibatch, as the betas did.

    Args:
        freq, first: when minibatch lines are printed (module docstring).  ``freq=0`` prints
            CNTK's geometric table instead of minibatch lines (a header at construction, then a
            row after minibatch 1, 3, 7, ...) and -- as CNTK did -- no ``Finished Epoch`` lines.
        tag: shown as ``[tag]`` in the epoch line.
        log_to_file: print to this file instead of stdout.  As in CNTK the file is started afresh
            (its name, then ``CNTKCommandTrainInfo``/``CNTKCommandTrainBegin`` lines), stdout gets
            ``Redirecting log to file ...``, and every later line is appended and flushed.
        rank: the distributed worker's rank; it only makes the log file ``{log_to_file}rank{rank}``.
            Every rank prints (to stdout all ranks' lines interleave), as in CNTK.
        gen_heartbeat: print ``PROGRESS: 0.00%`` to stdout at most every 10 s of training.
        num_epochs: shown as ``of N`` in the epoch line when given.
        test_freq, test_first: like ``freq``/``first`` for ``Evaluation Minibatch`` lines.
        metric_is_pct: print the metric as a percentage (``25.00%``); otherwise the mean itself
            (``0.250000``).
        distributed_freq, distributed_first: accepted for CNTK's signature; Stadyn reports no
            distributed synchronisations.
        style: ``"2.x"`` or ``"2017"``.
        clock: the time source (seconds), ``time.perf_counter`` unless given.

    The learning rate passed to :meth:`update` is not printed (CNTK printed it only when a
    learner reported it through :meth:`write`: ``Learning rate per 1 samples: 0.0015625``).

    Example:
        >>> p = ProgressPrinter(freq=2, tag="Training", num_epochs=3)
        >>> for loss_sum, errors in [(128.0, 16), (64.0, 8), (32.0, 0)]:
        ...     p.update(loss_sum, 64, errors)
         Minibatch[   1-   2]: loss = 1.500000 * 128, metric = 18.75% * 128;
        >>> _ = p.summarize_training_progress()  # doctest: +ELLIPSIS
        Finished Epoch[1 of 3]: [Training] loss = 1.166667 * 192, metric = 12.50% * 192 ...
    """

    def __init__(self, freq: int | None = None, first: int = 0, tag: str = "",
                 log_to_file: str | None = None, rank: int | None = None,
                 gen_heartbeat: bool = False, num_epochs: int | None = None,
                 test_freq: int | None = None, test_first: int = 0, metric_is_pct: bool = True,
                 distributed_freq: int | None = None, distributed_first: int = 0, *,
                 style: str = "2.x", clock: Clock = time.perf_counter):
        if style not in _STYLES:
            raise ProgressWriterError(f"ProgressPrinter: style must be one of {_STYLES}, "
                                      f"not {style!r}")
        super().__init__(freq, first, test_freq, test_first, clock=clock)
        _check_schedule("ProgressPrinter", "distributed_freq", distributed_freq, distributed_first)
        self.tag = tag or ""
        self.num_epochs = num_epochs
        self.metric_is_pct = bool(metric_is_pct)
        self.style = style
        self.gen_heartbeat = bool(gen_heartbeat)
        self.distributed_freq, self.distributed_first = distributed_freq, distributed_first
        self.rank = rank
        self._last_heartbeat = -math.inf
        if style == "2017":
            # The betas started the first epoch's clock at its first minibatch (later epochs run
            # from the previous summary).
            self._training._new_epoch(None)
        self.log_to_file = log_to_file
        self.logfilename: str | None = None
        if log_to_file is not None:
            self.logfilename = str(log_to_file) + (f"rank{rank}" if rank is not None else "")
            print("Redirecting log to file " + self.logfilename)
            with open(self.logfilename, "w", encoding="utf-8") as f:
                f.write(self.logfilename + "\n")
            if style == "2.x":
                total = num_epochs if num_epochs is not None else 300
                self._emit(f"CNTKCommandTrainInfo: train : {total}")
                self._emit(f"CNTKCommandTrainInfo: CNTKNoMoreCommands_Total : {total}")
                self._emit("CNTKCommandTrainBegin: train")
        if freq == 0:
            for line in _TABLE_HEADER:
                self._emit(line)

    def _emit(self, line: str) -> None:
        if self.logfilename is None:
            print_line(line)
        else:
            with open(self.logfilename, "a", encoding="utf-8") as f:
                f.write(line + "\n")

    def update(self, loss_sum: float, samples: int, metric_sum: float | None = None,
               learning_rate: float | None = None) -> None:
        super().update(loss_sum, samples, metric_sum, learning_rate)
        if self.gen_heartbeat:
            now = self.clock()
            if now - self._last_heartbeat > 10:
                print_line("PROGRESS: 0.00%")
                self._last_heartbeat = now

    def on_training_update(self, record: ProgressRecord) -> None:
        if self.freq == 0:
            self._emit(format_table_row(record))
        else:
            self._emit(format_minibatch_line(record, metric_is_pct=self.metric_is_pct,
                                             style=self.style))

    def on_training_summary(self, record: ProgressRecord) -> None:
        if self.freq == 0:
            return      # CNTK printed epoch lines only on an arithmetic schedule
        self._emit(format_epoch_line(record, tag=self.tag, num_epochs=self.num_epochs,
                                     metric_is_pct=self.metric_is_pct, style=self.style))

    def on_test_update(self, record: ProgressRecord) -> None:
        if self.test_freq == 0:
            self._emit(format_table_row(record))
        else:
            self._emit(format_minibatch_line(record, metric_is_pct=self.metric_is_pct,
                                             name="Evaluation "))

    def on_test_summary(self, record: ProgressRecord) -> None:
        self._emit(format_test_summary(record, metric_is_pct=self.metric_is_pct))

    def write(self, key: str, value: Any) -> None:
        """Print ``key: value`` (CNTK: ``Learning rate per 1 samples: 0.0015625``)."""
        self._emit(f"{key}: {value}")

    def log(self, message: str) -> None:
        """Print ``message`` as it is."""
        self._emit(str(message))

    def end_progress_print(self, msg: str = "") -> None:
        """Print ``CNTKCommandTrainEnd: train`` (and ``msg`` when logging to a file)."""
        self._emit("CNTKCommandTrainEnd: train")
        if msg and self.logfilename is not None:
            self._emit(msg)


# ---------------------------------------------------------------------------------------------
# ProgressBarWriter: a tqdm bar per epoch, on terminals only
# ---------------------------------------------------------------------------------------------
class ProgressBarWriter(ProgressWriter):
    """A ``tqdm`` bar per epoch with the epoch's running loss and metric.

    The bar is drawn only when its stream (``sys.stderr`` unless ``file`` is given) is a terminal,
    so redirected logs and CI output stay clean; ``enabled=True``/``False`` overrides the check.
    ``num_samples_per_epoch`` is the bar's total in samples (unknown when None).  Add it next to a
    :class:`ProgressPrinter`: the bar shows where the epoch is, the printer keeps the record.

    Example:
        >>> import io
        >>> bar = ProgressBarWriter(num_samples_per_epoch=128, file=io.StringIO())  # not a tty
        >>> bar.update(64.0, 64, 8.0)
        >>> bar.bar is None
        True
    """

    def __init__(self, num_samples_per_epoch: int | None = None, tag: str = "",
                 metric_is_pct: bool = True, *, file=None, enabled: bool | None = None,
                 clock: Clock = time.perf_counter):
        super().__init__(None, 0, None, 0, clock=clock)
        self.num_samples_per_epoch = num_samples_per_epoch
        self.tag = tag or ""
        self.metric_is_pct = bool(metric_is_pct)
        self.file = file
        self.enabled = enabled
        self.bar = None

    def _stream(self):
        return self.file if self.file is not None else sys.stderr

    def _active(self) -> bool:
        if self.enabled is not None:
            return bool(self.enabled)
        isatty = getattr(self._stream(), "isatty", None)
        try:
            return bool(isatty and isatty())
        except ValueError:       # a closed stream
            return False

    def _postfix(self) -> str:
        t = self._training
        text = f"loss={_avg(t.loss_sum, t.samples):.4f}"
        if t.metric_sum is not None:
            m = _avg(t.metric_sum, t.samples)
            text += f", metric={m * 100:.2f}%" if self.metric_is_pct else f", metric={m:.4f}"
        return text

    def update(self, loss_sum: float, samples: int, metric_sum: float | None = None,
               learning_rate: float | None = None) -> None:
        super().update(loss_sum, samples, metric_sum, learning_rate)
        if int(samples) <= 0:
            return
        if self.bar is None:
            if not self._active():
                return
            from tqdm import tqdm
            desc = f"{self.tag} epoch {self.epochs + 1}".strip()
            self.bar = tqdm(total=self.num_samples_per_epoch, desc=desc, unit="samples",
                            file=self._stream(), leave=True, dynamic_ncols=True)
        self.bar.update(int(samples))
        self.bar.set_postfix_str(self._postfix(), refresh=False)

    def on_training_summary(self, record: ProgressRecord) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def _summarize_training(self, with_metric: bool | None) -> ProgressRecord:
        if self.bar is not None:
            self.bar.set_postfix_str(self._postfix(), refresh=True)
        return super()._summarize_training(with_metric)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        super().close()


# ---------------------------------------------------------------------------------------------
# log_number_of_parameters
# ---------------------------------------------------------------------------------------------
def _parameter_list(model: Any) -> list:
    if isinstance(model, dict):
        return list(model.values())
    if isinstance(model, (list, tuple)):
        return list(model)
    if not hasattr(model, "parameters"):
        raise TypeError("log_number_of_parameters: give a model with .parameters, a list of "
                        f"parameters or a dict of them, not {type(model).__name__}")
    params = model.parameters
    params = params() if callable(params) else params
    return list(params.values()) if isinstance(params, dict) else list(params)


def _shape_of(param: Any) -> tuple:
    shape = getattr(param, "shape", None)
    if shape is None:
        size = getattr(param, "size", None)
        size = size() if callable(size) else size
        if size is None:
            raise TypeError(f"log_number_of_parameters: a {type(param).__name__} has neither "
                            ".shape nor .size")
        return tuple(size) if isinstance(size, Iterable) else (int(size),)
    return tuple(None if d is None else int(d) for d in shape)


def log_number_of_parameters(model: Any, trace_level: int = 0) -> None:
    """Print ``Training {N} parameters in {K} parameter tensors.`` (CNTK's words).

    ``model`` is anything with ``.parameters`` (a Stadyn layer or Trainer, a CNTK-compat
    Function, a torch module), a list of parameters or a dict of them; each parameter needs a
    ``.shape`` (or ``.size``).  With ``trace_level > 0`` each parameter's shape follows.  A shape
    that is not known yet (a ``None`` or negative dimension) makes the count
    ``so far unspecified number of``.

    Example:
        >>> import numpy as np
        >>> params = [np.zeros((3, 3, 3, 64)), np.zeros(64)]
        >>> log_number_of_parameters(params, trace_level=1)  # doctest: +NORMALIZE_WHITESPACE
        Training 1792 parameters in 2 parameter tensors.
        <BLANKLINE>
            (3, 3, 3, 64)
            (64,)
    """
    params = _parameter_list(model)
    shapes = [_shape_of(p) for p in params]
    if any(d is None or d < 0 for shape in shapes for d in shape):
        total: Any = "so far unspecified number of"
    else:
        total = sum(math.prod(shape) for shape in shapes)
    print(f"Training {total} parameters in {len(params)} parameter tensors.")
    if trace_level > 0:
        print()
        for shape in shapes:
            print(f"\t{shape}")

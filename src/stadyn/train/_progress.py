"""Progress writers: what a training run prints, plots and logs while it goes (CNTK 2.x's model).

**The interface the Trainer drives.**  A :class:`ProgressWriter` is told about every minibatch and
asked for summaries; it never looks at the model::

    writer.update_training(loss_sum, samples, metric_sum=None, learning_rate=None)
                                                  # after train_minibatch
    writer.summarize_training_progress(with_metric=None)      # end of an epoch
    writer.update_test(metric_sum, samples)       # after test_minibatch
    writer.summarize_test_progress()              # end of an evaluation
    writer.write(key, value)      # a named value ("Learning rate per 1 samples", 0.0015625)
    writer.log(message)           # free text
    writer.close()                # or use the writer as a context manager

``loss_sum`` and ``metric_sum`` are **sums over the minibatch's samples** (CNTK's Trainer sums the
loss; the metric sum of ``classification_error`` is the number of errors).  Every average a writer
reports is such a sum divided by a sample count, so minibatches weigh by their samples.  A
minibatch of 0 samples is ignored.  A script that drives a writer itself calls ``update`` (the
same as ``update_training``) or CNTK's older calls :meth:`~ProgressWriter.update_with_trainer` and
:meth:`~ProgressWriter.epoch_summary`; do not use them on a writer the Trainer already holds, or
every minibatch counts twice.  (The Trainer calls ``update_training``, never ``update``, so a
front end may give ``update`` other arguments: CNTK's ``ProgressPrinter.update`` takes averages,
``stadyn.compat.cntk.logging.ProgressPrinter``'s does too.)

**Bookkeeping lives in the base class.**  It keeps two trackers (training and test) that count
minibatches, samples and sums since the last write and since the last summary, and time them; a
subclass only turns :class:`ProgressRecord` objects into output by overriding
``on_training_update``, ``on_training_summary``, ``on_test_update`` and ``on_test_summary``.

**When minibatch records are written** (``freq``/``first``, as CNTK's C++ ``ProgressWriter``):

* ``freq=None``: only after each of the first ``first`` minibatches (none by default), and
  summaries (CNTK's Python writers read None as ``sys.maxsize``).
* ``freq=0``: a geometric schedule -- after minibatch 1, 3, 7, 15, ... of the epoch, so the windows
  hold 1, 2, 4, 8, ... minibatches.
* ``freq=N``: after every N-th minibatch, and after each of the first ``first`` minibatches.

Minibatch numbers restart at 1 after every summary; ``total_training_updates`` does not.  Time is
read from ``clock`` (``time.perf_counter`` unless given): an epoch runs from the writer's
construction or the previous summary to this summary (CNTK 2.x); an evaluation from its first
reported minibatch to its summary; a minibatch window from the previous write.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from .._errors import StadynError

__all__ = ["ProgressWriter", "ProgressRecord", "ProgressBarWriter", "ProgressWriterError"]

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
        if self.freq is None:         # CNTK's sys.maxsize: the first ones only
            return update <= self.first
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
        # the workers' synchronisations (CNTK's third schedule; only the first ones by default)
        self._sync = _Tracker("distributed_sync", "", None, 0, clock)

    def _sync_schedule(self, freq: int | None, first: int) -> None:
        """Write every ``freq``-th distributed synchronisation and the ``first`` ones (CNTK's
        ``distributed_freq``/``distributed_first``)."""
        _check_schedule(type(self).__name__, "distributed_freq", freq, first)
        self._sync.freq, self._sync.first = freq, first

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
    def update_training(self, loss_sum: float, samples: int, metric_sum: float | None = None,
                        learning_rate: float | None = None) -> None:
        """Account for one training minibatch of ``samples`` samples whose summed loss is
        ``loss_sum`` (and summed metric ``metric_sum``, e.g. its number of errors).  The
        Trainer calls this; a subclass that acts on every minibatch overrides it."""
        self._check_open()
        samples = int(samples)
        if samples <= 0:
            return
        record = self._training.add(samples, float(loss_sum),
                                    None if metric_sum is None else float(metric_sum),
                                    learning_rate)
        if record is not None:
            self.on_training_update(record)

    def update(self, loss_sum: float, samples: int, metric_sum: float | None = None,
               learning_rate: float | None = None) -> None:
        """:meth:`update_training`, the name a script calls it by."""
        self.update_training(loss_sum, samples, metric_sum, learning_rate)

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
        self.update_training(float(trainer.previous_minibatch_loss_average) * samples, samples,
                             None if metric is None else float(metric) * samples, lr)

    def summarize_training_progress(self, with_metric: bool | None = None) -> ProgressRecord:
        """Write the summary of the epoch (everything since the last summary) and start the next;
        the metric is part of it when any minibatch of the epoch had one, or (``with_metric``,
        as the Trainer says: whether it has a metric) as told -- an epoch without minibatches
        then shows ``metric = 0.00% * 0``, as CNTK's."""
        return self._summarize_training(with_metric)

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

    def update_distributed_sync(self, samples: int) -> None:
        """Account for one synchronisation of the workers covering ``samples`` samples (all
        workers' since the previous one); the Trainer of a distributed learner calls this
        before the minibatch's :meth:`update_training`, as CNTK's."""
        self._check_open()
        samples = int(samples)
        if samples <= 0:
            return
        record = self._sync.add(samples, None, None, None)
        if record is not None:
            self.on_distributed_sync_update(record)

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

    def on_distributed_sync_update(self, record: ProgressRecord) -> None:
        """A window of the workers' synchronisations is due (``distributed_freq``):
        ``record.first_minibatch``..``last_minibatch`` count the synchronisations, ``samples``
        the samples they covered."""


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

    def update_training(self, loss_sum: float, samples: int, metric_sum: float | None = None,
                        learning_rate: float | None = None) -> None:
        super().update_training(loss_sum, samples, metric_sum, learning_rate)
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

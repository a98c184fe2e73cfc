"""CNTK 2.7's ``ProgressPrinter``: Stadyn's printer (what a Trainer holding it prints) with
CNTK's deprecated calls for a script that drives the printer by hand.

CNTK keeps two sets of counts in one printer.  A Trainer holding it reports each minibatch to
the native writer (Stadyn: ``update_training``, summarised by the Trainer's
``summarize_training_progress``).  ``update(loss, minibatch_size, metric)``,
``update_with_trainer`` and ``epoch_summary`` are CNTK's older Python calls: ``update`` takes
the minibatch's **averages** (Stadyn's native ``update`` takes sums), they add to
accumulators of their own (``loss_since_start``, ``samples_since_last``, ...), number their
epochs themselves (``epochs``), and ``epoch_summary`` returns ``(average loss, average
metric, samples)`` since the previous one.  The lines are the native printer's.
"""

from __future__ import annotations

import sys
import warnings

from ....train.progress import ProgressPrinter as _ProgressPrinter
from ....train.progress import ProgressRecord

__all__ = ["ProgressPrinter"]


def _deprecated(message: str = "The method was deprecated.") -> None:
    warnings.warn("DEPRECATED: " + message, DeprecationWarning, stacklevel=2)


def _avg(total: float, count: float) -> float:
    return total / count if count > 0 else 0.0


class ProgressPrinter(_ProgressPrinter):
    """``cntk.logging.ProgressPrinter(freq=None, first=0, tag='', log_to_file=None, rank=None,
    gen_heartbeat=False, num_epochs=None, test_freq=None, test_first=0, metric_is_pct=True,
    distributed_freq=None, distributed_first=0)``: what a Trainer holding it prints is
    :class:`stadyn.train.progress.ProgressPrinter`'s; the calls a script makes by hand are
    CNTK's (see the module docstring).

    Example -- ConvNet_CIFAR10_DataAug.py's evaluation, minibatch averages in, a tuple out:
        >>> import stadyn.compat.cntk as C
        >>> printer = C.logging.ProgressPrinter(tag='Evaluation', num_epochs=1)
        >>> printer.update(0, 16, 0.5); printer.update(0, 16, 0.25)
        >>> loss, metric, samples = printer.epoch_summary(with_metric=True)  # doctest: +ELLIPSIS
        Finished Epoch[1 of 1]: [Evaluation] loss = 0.000000 * 32, metric = 37.50% * 32 ...
        >>> loss, metric, samples
        (0.0, 0.375, 32)
    """

    def __init__(self, freq=None, first=0, tag='', log_to_file=None, rank=None,
                 gen_heartbeat=False, num_epochs=None, test_freq=None, test_first=0,
                 metric_is_pct=True, distributed_freq=None, distributed_first=0, **kwargs):
        super().__init__(freq, first, tag, log_to_file, rank, gen_heartbeat, num_epochs,
                         test_freq, test_first, metric_is_pct, distributed_freq,
                         distributed_first, **kwargs)
        # CNTK's accumulators of the by-hand calls (its attribute names)
        self.loss_since_start = self.metric_since_start = 0.0
        self.samples_since_start = self.updates_since_start = 0
        self.loss_since_last = self.metric_since_last = 0.0
        self.samples_since_last = 0
        self.total_updates = 0
        self._epochs = 0
        # the 2017 betas timed the first epoch from its first minibatch
        self.epoch_start_time = None if self.style == "2017" else self.clock()

    @property
    def epochs(self) -> int:
        """The epochs :meth:`epoch_summary` has summarised (CNTK's count; the Trainer's
        summaries are numbered apart)."""
        return self._epochs

    @epochs.setter
    def epochs(self, value: int) -> None:
        self._epochs = int(value)

    # -- CNTK's deprecated calls ----------------------------------------------------------------
    def update(self, loss, minibatch_size, metric=None) -> None:
        """Add a minibatch of ``minibatch_size`` samples whose **average** loss is ``loss``
        (and average metric ``metric``; None: not measured), printing its line when ``freq``
        says so (CNTK's numbering: a minibatch printed on its own among the ``first`` shows as
        ``[n+1-n]``)."""
        if self.total_updates == 0:
            _deprecated()
        if minibatch_size == 0:
            return
        if self.epoch_start_time is None:
            self.epoch_start_time = self.clock()
        self.samples_since_start += minibatch_size
        self.samples_since_last += minibatch_size
        self.loss_since_start += loss * minibatch_size
        self.loss_since_last += loss * minibatch_size
        self.updates_since_start += 1
        self.total_updates += 1
        if metric is not None:
            self.metric_since_start += metric * minibatch_size
            self.metric_since_last += metric * minibatch_size
        self._heartbeat()
        n = self.updates_since_start
        freq = sys.maxsize if self.freq is None else self.freq     # None: only the first ones
        if freq == 0 and (n + 1) & n != 0 or freq > 0 and n % freq != 0 and n > self.first:
            return
        first = n if n <= self.first else max(n - freq, self.first)
        self.on_training_update(ProgressRecord(
            "minibatch", self._epochs + 1, first + 1, n, self.samples_since_last,
            self.loss_since_last, self.metric_since_last if metric is not None else None,
            0.0, self.total_updates, None, self.samples_since_start, self.loss_since_start,
            self.metric_since_start))
        self.reset_last()

    def update_with_trainer(self, trainer, with_metric=False) -> None:
        """:meth:`update` with the trainer's ``previous_minibatch_loss_average``,
        ``previous_minibatch_sample_count`` and (``with_metric``)
        ``previous_minibatch_evaluation_average``; nothing for an empty minibatch."""
        if self.total_updates == 0:
            _deprecated("Inefficient. Please pass an instance of ProgressPrinter to Trainer "
                        "upon construction.")
        if trainer is not None and trainer.previous_minibatch_sample_count != 0:
            self.update(trainer.previous_minibatch_loss_average,
                        trainer.previous_minibatch_sample_count,
                        trainer.previous_minibatch_evaluation_average if with_metric else None)

    def epoch_summary(self, with_metric=False):
        """Print the ``Finished Epoch`` line of everything :meth:`update` added since the last
        summary (the metric only ``with_metric``) and return ``(average loss, average metric,
        samples)`` (then start afresh); with ``freq=0`` nothing is printed or started afresh
        and None is returned, as in CNTK."""
        _deprecated()
        self._epochs += 1
        now = self.clock()
        seconds = now - (now if self.epoch_start_time is None else self.epoch_start_time)
        self.epoch_start_time = now
        self.on_training_summary(ProgressRecord(
            "epoch", self._epochs, 1, self.updates_since_start, self.samples_since_start,
            self.loss_since_start, self.metric_since_start if with_metric else None, seconds,
            self.total_updates, None, self.samples_since_start, self.loss_since_start,
            self.metric_since_start if with_metric else None))
        if self.freq is None or self.freq > 0:
            return self.reset_start()
        return None

    def avg_loss_since_start(self) -> float:
        """The average loss of what :meth:`update` added since the last epoch summary."""
        _deprecated()
        return _avg(self.loss_since_start, self.samples_since_start)

    def avg_metric_since_start(self) -> float:
        """The average metric since the last epoch summary."""
        _deprecated()
        return _avg(self.metric_since_start, self.samples_since_start)

    def avg_loss_since_last(self) -> float:
        """The average loss since the last printed minibatch line."""
        _deprecated()
        return _avg(self.loss_since_last, self.samples_since_last)

    def avg_metric_since_last(self) -> float:
        """The average metric since the last printed minibatch line."""
        _deprecated()
        return _avg(self.metric_since_last, self.samples_since_last)

    def reset_start(self) -> tuple:
        """``(average loss, average metric, samples)`` since the last epoch summary; starts
        those counts afresh."""
        _deprecated()
        result = (self.avg_loss_since_start(), self.avg_metric_since_start(),
                  self.samples_since_start)
        self.loss_since_start = self.metric_since_start = 0.0
        self.samples_since_start = self.updates_since_start = 0
        return result

    def reset_last(self) -> tuple:
        """``(average loss, average metric, samples)`` since the last minibatch line; starts
        those counts afresh."""
        if self.total_updates == 0:
            _deprecated()
        result = (self.avg_loss_since_last(), self.avg_metric_since_last(),
                  self.samples_since_last)
        self.loss_since_last = self.metric_since_last = 0.0
        self.samples_since_last = 0
        return result

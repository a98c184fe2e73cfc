"""CNTK's text lines for training progress: :class:`ProgressPrinter` (CNTK 2.x's and the 2017
beta's wording), the functions that format each kind of line, and
:func:`log_number_of_parameters`.  The writer interface they implement is :mod:`._progress`.
"""

from __future__ import annotations

import math
import time
from typing import Any, Iterable

from ._progress import (Clock, ProgressRecord, ProgressWriter, ProgressWriterError, _avg,
                        _check_schedule, print_line)

__all__ = ["ProgressPrinter", "log_number_of_parameters", "format_minibatch_line",
           "format_epoch_line", "format_table_row", "format_test_summary"]


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
        distributed_freq, distributed_first: like ``freq``/``first`` for the workers'
            synchronisations of a Trainer of distributed learners (``Distributed training:
            #Syncs elapsed = 2, #Samples elapsed = 24``); None: only the ``first`` ones.
        style: ``"2.x"`` or ``"2017"``.
        clock: the time source (seconds), ``time.perf_counter`` unless given.

    The learning rate passed to :meth:`update_training` is not printed (CNTK printed it only when a
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
        self._sync_schedule(distributed_freq, distributed_first)
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

    def update_training(self, loss_sum: float, samples: int, metric_sum: float | None = None,
                        learning_rate: float | None = None) -> None:
        super().update_training(loss_sum, samples, metric_sum, learning_rate)
        self._heartbeat()

    def _heartbeat(self) -> None:
        """``PROGRESS: 0.00%`` on stdout, at most every 10 s, with ``gen_heartbeat``."""
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

    def on_distributed_sync_update(self, record: ProgressRecord) -> None:
        self._emit(f"Distributed training: #Syncs elapsed = "
                   f"{record.last_minibatch - record.first_minibatch + 1}, #Samples elapsed = "
                   f"{record.samples}")

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

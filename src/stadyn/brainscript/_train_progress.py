"""The ``train`` command's side of :meth:`stadyn.train.Trainer.fit`: one
:class:`~stadyn.train.TrainingCallback` that does, at fit's hooks, what CNTK's SGD loop did around
each epoch and minibatch.

* **Epoch start**: seed the random masks per epoch (CNTK's ``SetIRngUserSeed``: the
  ``Dropout`` nodes' engines, :meth:`StadynLibrary.seed_random_nodes`, so a resumed run
  draws the masks an uninterrupted one drew), set the epoch's dropout rate and batch
  normalisation time constants (``batchNormalizationTimeConstant``,
  ``batchNormalizationBlendTimeConstant``), print ``Starting Epoch ...``.
* **Minibatch**: add the criterion, the first evaluation node (fit's loss and metric sums) and
  the other evaluation nodes (fit's extra ``outputs``) to the epoch's totals; print a
  ``Minibatch[...]`` line every ``numMBsToShowResult`` minibatches, and after it stop on a NaN
  criterion, as CNTK did (so the minibatch that made it has been applied and logged).
* **Epoch end**: print ``Finished Epoch[...]``, stop on a NaN criterion or an empty epoch,
  evaluate the ``cvReader`` set, apply the ``AutoAdjust`` learning-rate control
  (:mod:`._autoadjust`: a rollback raises :class:`RepeatEpoch`, the end of training
  :class:`TrainingComplete`, which the runner catches), write the model file and its checkpoint
  (:func:`._model_files.save_epoch`), wait for the other workers, and call the runner's
  ``epoch_callback``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import schedules as SC
from .._errors import StadynError
from .._random import seed_torch
from ..train import TrainingCallback
from ._accumulators import counted_once, logged_so_far
from ._autoadjust import AutoAdjust, LRState, after_epoch
from ._blocks import SGDConfig, per_epoch
from ._cntk_log import (CNTKLog, data_parallel_init_line, epoch_line, minibatch_line,
                        minibatch_loop_line)
from ._model_files import epoch_model, roll_back, save_epoch, save_model
from ._sgd import EpochClock
from ._sgd_rates import cntk_learning_rate, cntk_momentum, effective_minibatch_size

__all__ = ["EpochResult", "CNTKProgress", "RepeatEpoch", "TrainingComplete"]

_SIZE_MAX = float(2 ** 64 - 1)        # CNTK's requestDataSize


@dataclass
class EpochResult:
    """One trained epoch: 1-based ``epoch``, samples, and the average of each logged node."""

    epoch: int
    samples: int
    criterion: dict[str, float]
    evaluation: dict[str, float]
    learning_rate_per_sample: float
    seconds: float
    validation: dict[str, float] | None = None    # the cvReader set's averages, if any
    rolled_back: bool = False       # AutoAdjust rolled this epoch back (it is trained again)


class RepeatEpoch(Exception):
    """AutoAdjust rolled back: training goes on at 0-based ``epoch``."""

    def __init__(self, epoch: int):
        super().__init__(epoch)
        self.epoch = epoch


class TrainingComplete(Exception):
    """Training ends before ``maxEpochs`` (the learning rate fell below
    ``minLearningRatePerSample``, or AutoAdjust's ``continueReduce`` finished)."""


@dataclass
class TrainSetting:
    """What the callback needs of a train command: its SGD block and names, where it saves."""

    name: str                       # the command's name (for ``epoch_callback``)
    sgd: SGDConfig
    names: list[str]                # the criterion's name, then the evaluation nodes'
    trace_level: int
    seed_offset: int                # randomSeedOffset
    model_path: str
    keep_checkpoints: bool          # keepCheckPointFiles
    auto_adjust: AutoAdjust | None = None    # SGD.AutoAdjust (adjustAfterEpoch)
    min_lr: float = float(np.float32(1e-9))  # minLearningRatePerSample
    # per name: the node holds an accumulated result (EpochAccumulator; logged as its value
    # counted once, not summed over the minibatches)
    accumulated: Sequence[bool] = ()


class CNTKProgress(TrainingCallback):
    """CNTK's log, checks and model files around :meth:`~stadyn.train.Trainer.fit` (see the
    module docstring).  ``results`` collects an :class:`EpochResult` per epoch trained.

    ``library`` sets the dropout rate (:meth:`StadynLibrary.set_dropout_rate`); ``source`` is the
    reader whose position goes into each checkpoint; ``model_parts`` is what the model file holds
    (:meth:`_Network.model_file_parts`); ``parallel`` is the runner's place in a data-parallel job
    (``is_main``, ``barrier()``; with a ``size`` over 1, ``reader_states(state)``).

    Example — the lines of one 2-minibatch epoch (``time = ...`` varies):
        >>> import io, re
        >>> from stadyn.brainscript._cntk_log import CNTKLog
        >>> out = io.StringIO()
        >>> sgd = SGDConfig(1, epoch_size=4, minibatch_size=(2,), learning_rates_per_sample=(0.5,),
        ...                 momentum_as_time_constant=(0,), num_mbs_to_show_result=2)
        >>> setting = TrainSetting("train", sgd, ["ce"], 1, 0, "unused", False)
        >>> class Worker:          # a data-parallel worker but rank 0's: it writes no model files
        ...     is_main = False
        ...     @staticmethod
        ...     def barrier(): pass
        >>> progress = CNTKProgress(setting, CNTKLog(out, None, False), None, None, None, Worker)
        >>> class T: total_number_of_samples_seen = 4
        >>> progress.on_epoch_begin(T, 0)
        >>> for loss in (3.0, 1.0):
        ...     progress.on_minibatch_end(T, {"samples": 2, "loss_sum": loss,
        ...                                  "metric_sum": None, "outputs": []})
        >>> progress.on_epoch_end(T, {})
        >>> text = re.sub(r"time = .*|epochTime=.*", "...", out.getvalue())
        >>> text = text.replace("  momentum as", "\\n  momentum as")
        >>> print(text.replace("; total", ";\\n  total"))
        <BLANKLINE>
        Starting Epoch 1: learning rate per sample = 0.500000  effective momentum = 0.000000
          momentum as time constant = 0.0 samples
        <BLANKLINE>
        Starting minibatch loop.
         Epoch[ 1 of 1]-Minibatch[   1-   2, 100.00%]: ce = 1.00000000 * 4; ...
        Finished Epoch[ 1 of 1]: [Training] ce = 1.00000000 * 4;
          totalSamplesSeen = 4; learningRatePerSample = 0.5; ...
        <BLANKLINE>
        >>> progress.results[0].criterion
        {'ce': 1.0}
    """

    def __init__(self, setting: TrainSetting, log: CNTKLog, library, source,
                 model_parts: tuple[dict, dict, dict] | None, parallel,
                 epoch_callback: Callable[[str, int], None] | None = None, *,
                 validate: Callable[[int], dict[str, float]] | None = None,
                 batch_norms: Sequence[Any] = (), criterion: Any = None,
                 clock: EpochClock | None = None,
                 data_parallel: tuple[list[int] | None, bool] = (None, False)):
        self.setting, self.log, self.library = setting, log, library
        # DataParallelSGD's gradientBits per epoch (None without it) and whether each worker
        # reads its share (cntk.exe's log lines: _sgd.data_parallel_bits, distributed_reading)
        self.dp_bits, self.dp_reading = data_parallel
        self.dp_bits_now: int | None = None       # the bits of the epoch before (logged)
        self.clock = clock        # the learners' momenta follow it (make_learners)
        # the criterion node, whose Dropout nodes are seeded per epoch (SetIRngUserSeed)
        self.criterion = criterion
        # the batch normalisations the criterion depends on (their op calls), and the time
        # constants last set on them (cntk.exe's prev...TimeConstant, 0 at the start)
        self.batch_norms, self.bn_constants = list(batch_norms), (0.0, 0.0)
        self.validate = validate      # the cvReader set, evaluated after each epoch
        self.source, self.model_parts, self.parallel = source, model_parts, parallel
        self.epoch_callback = epoch_callback
        sgd = setting.sgd
        # CNTK estimates an unsized epoch from the first epoch's log windows
        self.max_computed = float(sgd.epoch_size) if sgd.epoch_size else _SIZE_MAX
        self.dropout = 0.0        # the rate last set (and logged); a resumed run logs it again
        self.results: list[EpochResult] = []
        self.lr_state: LRState | None = None     # AutoAdjust's (the runner sets the first)
        rates = sgd.learning_rates_per_sample or sgd.learning_rates_per_mb or ()
        self.fixed_epochs = len(rates)           # epochs with an explicit learning rate

    # -- epoch start --------------------------------------------------------------------------
    def on_epoch_begin(self, trainer, epoch: int) -> None:
        setting, sgd, log = self.setting, self.setting.sgd, self.log
        self.begin = time.perf_counter()
        if self.dp_bits is not None:
            # SGD.cpp:524-529: set up again (with its line) where an epoch's bits change; the
            # first epoch's was set up before the pre-computation (the runner's line)
            bits = per_epoch(self.dp_bits, epoch)
            if self.dp_bits_now is not None and bits != self.dp_bits_now and \
                    setting.trace_level > 0:
                log.raw(data_parallel_init_line(bits))
            self.dp_bits_now = bits
        # (CNTK's size_t arithmetic wraps: so does this, where torch takes 64 bits.)
        seed_torch((setting.seed_offset * sgd.max_epochs + epoch) % 2 ** 64)
        if self.criterion is not None:
            # SGD.cpp: randSeedBase = parallelWorkerIdx * maxEpochs + epoch (the rank once
            # parallel training has started: at the first epoch, parallelizationStartEpoch 1)
            worker = self.parallel.rank if self.parallel.size > 1 else 0
            self.library.seed_random_nodes(self.criterion, worker * sgd.max_epochs + epoch)
        rate = per_epoch(sgd.dropout_rate, epoch)
        if rate != self.dropout:
            log.raw(f"Setting dropout rate to {rate:.8g}.")
            if self.library.set_dropout_rate(rate) == 0 and rate > 0:
                log.raw("WARNING: Attempting to set dropout rate, but there is no dropout "
                        "node in the network.")
            self.dropout = rate
        self._set_batch_norm_time_constants(epoch)
        self.epoch = epoch
        if self.clock is not None:
            self.clock.epoch = epoch
        self.mb_size = per_epoch(sgd.minibatch_size, epoch)
        rows = None if self.clock is None or self.clock.reader_parallel is None else \
            self.clock.reader_parallel()
        if rows is not None:    # the reader's parallel sequences now (EpochClock)
            sgd = dataclasses.replace(sgd, parallel_sequences=rows)
        self.lr = cntk_learning_rate(sgd, epoch)
        adjusted = setting.auto_adjust is not None and epoch >= self.fixed_epochs
        if adjusted:
            self.lr = self.lr_state.lr              # the rate AutoAdjust carried on
        learners = getattr(trainer, "parameter_learners", ())
        rates = self.library.learning_rate_multipliers if learners else {}
        for learner in learners:
            # (a learner's parameters share one learningRateMultiplier: make_learners)
            first = learner.parameters[0] if learner.parameters else None
            multiplier = rates[id(first)][1] if id(first) in rates else 1.0
            # cntk.exe sets each epoch's rate at its start; a learner's schedule counts the
            # trainer's samples, which are not the reader's where a sequence has one label
            # (the epoch is epochSize rows): it is then set to the epoch's rate here
            if adjusted or not math.isclose(learner.learning_rate(), self.lr * multiplier,
                                            rel_tol=1e-6):
                learner.reset_learning_rate(
                    SC.learning_parameter_schedule_per_sample(self.lr * multiplier))
        if self.lr < setting.min_lr:
            log(f"Learn Rate Per Sample for Epoch[{epoch + 1}] = {self.lr:.8g} is less than "
                f"minLearningRatePerSample {setting.min_lr:.8g}. Training complete.")
            if setting.auto_adjust is not None:      # (one process: see _adjust)
                save_model(setting.model_path, *self.model_parts)
            raise TrainingComplete()
        m = cntk_momentum(sgd, epoch)       # (cntk.exe's error where it is per minibatch)
        if rows is not None:
            self.clock.momentum = m         # (the learners' momentum: _sgd._EpochEntries)
        if setting.trace_level > 0:
            tc = 0.0 if m == 0.0 or m >= 1.0 else -1.0 / math.log(m)
            log.raw()
            # (not a legacy reader: the minibatch size as it is, SGD.cpp:622-627)
            effective = m ** (self.mb_size if rows is not None else
                              effective_minibatch_size(sgd, epoch, rates=False))
            log(f"Starting Epoch {epoch + 1}: learning rate per sample = {self.lr:f}  effective "
                f"momentum = {effective:f}  momentum as time constant = {tc:.1f} samples")
            log.raw()
            log(minibatch_loop_line(None if self.dp_bits is None else (
                self.parallel.rank, self.parallel.size, per_epoch(self.dp_bits, epoch)),
                self.dp_reading and self.parallel.size > 1))
        self.totals = [[0.0, 0] for _ in setting.names]
        self.logged = [[0.0, 0] for _ in setting.names]
        self.mbs = self.mbs_logged = 0
        self.since = time.perf_counter()

    def _set_batch_norm_time_constants(self, epoch: int) -> None:
        """cntk.exe's ``SetBatchNormalizationTimeConstants`` (ComputationNetwork.cpp): a time
        constant of the SGD block that differs from the one set before is set on every batch
        normalisation of the criterion (``BatchNormalizationNode::SetNormalizationTimeConstants``
        changes only the one that changed), with its line."""
        sgd, log = self.setting.sgd, self.log
        new = (per_epoch(sgd.batch_norm_time_constant, epoch),
               per_epoch(sgd.batch_norm_blend_time_constant, epoch))
        if new == self.bn_constants:
            return
        changed = [a != b for a, b in zip(new, self.bn_constants)]
        if changed[0]:
            log.raw(f"Setting batch normalization time constant to {new[0]:.8g}.")
        if changed[1]:
            log.raw(f"Setting batch normalization blend time constant to {new[1]:.8g}.")
        if not self.batch_norms:
            log.raw("WARNING: there is no batch normalization node.")
        for node in self.batch_norms:
            for name, value, change in zip(("time_constant", "blend_time_constant"), new,
                                           changed):
                if change and node.attrs[name] != value:
                    node.set_attribute(name, float(value))
        self.bn_constants = new

    # -- minibatch ----------------------------------------------------------------------------
    def on_minibatch_end(self, trainer, record: dict[str, Any]) -> None:
        count = record["samples"]                   # of all workers together
        metric = record["metric_sum"]
        values = [record["loss_sum"]] + ([metric] if metric is not None else []) + \
            list(record["outputs"])
        # an accumulated result's value is the epoch's so far (cntk.exe: * 1)
        summed = [[t + v, c + count] for (t, c), v in zip(self.totals, values)]
        self.totals = counted_once(summed, values, self._accumulated()) + \
            self.totals[len(summed):]
        self.mbs += 1
        sgd, mbs = self.setting.sgd, self.mbs
        if mbs <= sgd.first_mbs_to_show_result or (
                sgd.num_mbs_to_show_result and mbs % sgd.num_mbs_to_show_result == 0):
            self._minibatch_line()

    def _minibatch_line(self) -> None:
        totals, logged, mbs, mbs_logged = self.totals, self.logged, self.mbs, self.mbs_logged
        since_samples = totals[0][1] - logged[0][1]
        precision, progress = 2, None
        if self.epoch > 0 or self.setting.sgd.epoch_size:
            if self.max_computed != 0:
                # cntk.exe's: epochSize over the minibatch size, both counted as the reader
                # counts (a sequence's rows), whatever the trainer counts (SGD.cpp)
                per_epoch_mbs = self.max_computed / max(self.mb_size, 1e-9)
                progress = mbs / per_epoch_mbs
                precision = max(math.ceil(math.log10(per_epoch_mbs / (mbs - mbs_logged))) - 2,
                                2)
            else:
                progress = 0.0
        else:  # CNTK estimates the epoch size from the first epoch's log windows
            self.max_computed = mbs * since_samples // (mbs - mbs_logged)
        if self.setting.trace_level > 0:
            self.log(minibatch_line(self.epoch, self.setting.sgd.max_epochs, mbs_logged + 1, mbs,
                                    progress, precision, self.setting.names, totals, logged,
                                    time.perf_counter() - self.since, since_samples))
        if not math.isfinite(totals[0][0]):
            raise StadynError("The training criterion is not a number (NAN).")
        # an accumulated result is logged whole each time (cntk.exe resets its last logged)
        self.logged = logged_so_far(totals, self._accumulated())
        self.mbs_logged = mbs
        self.since = time.perf_counter()

    def _accumulated(self) -> list[bool]:
        flags = list(self.setting.accumulated)
        return flags + [False] * (len(self.setting.names) - len(flags))

    # -- epoch end ----------------------------------------------------------------------------
    def on_epoch_end(self, trainer, record: dict[str, Any]) -> None:
        setting, epoch, totals = self.setting, self.epoch, self.totals
        max_epochs = setting.sgd.max_epochs
        seconds = time.perf_counter() - self.begin
        samples = totals[0][1]
        self.log(epoch_line(epoch, max_epochs, setting.names, totals,
                            trainer.total_number_of_samples_seen, self.lr, seconds))
        if samples == 0 or not math.isfinite(totals[0][0]):
            raise StadynError("The training criterion is not a number (NAN)."
                              if samples else "the reader delivered no samples")
        validation = None
        if self.validate is not None and self.parallel.is_main:   # CNTK: before the model file
            validation = self.validate(epoch)
        names = setting.names
        result = EpochResult(
            epoch + 1, samples, {names[0]: totals[0][0] / samples},
            {n: t / max(c, 1) for n, (t, c) in zip(names[1:], totals[1:])}, self.lr, seconds,
            validation)
        recorded, drop, late = None, None, ()
        if setting.auto_adjust is not None:
            recorded, drop, late = self._adjust(trainer, epoch, validation, result)
        # (on several workers the checkpoint keeps each one's reader position: a restart reads
        # on from each, as the uninterrupted run does)
        readers = None
        if getattr(self.parallel, "size", 1) > 1:
            readers = self.parallel.reader_states(self.source.get_checkpoint_state())
        if self.parallel.is_main:
            extra = recorded if readers is None else {**(recorded or {}), "readers": readers}
            save_epoch(self.log, setting.model_path, epoch, max_epochs, trainer, self.source,
                       self.model_parts, setting.keep_checkpoints, setting.trace_level,
                       extra, drop)
        for line in late:
            self.log(line)
        self.parallel.barrier()
        self.results.append(result)
        if self.epoch_callback is not None:
            self.epoch_callback(setting.name, epoch + 1)

    def _control_criterion(self, validation: dict[str, float] | None) -> float:
        """The loss AutoAdjust compares (CNTK's ``lrControlCriterion``)."""
        adjust, names, totals = self.setting.auto_adjust, self.setting.names, self.totals
        use_eval = adjust.use_eval_criterion and len(names) > 1
        criterion = totals[1][0] / max(totals[1][1], 1) if use_eval else \
            totals[0][0] / totals[0][1]
        if validation is not None and adjust.use_cv_set:
            criterion = validation[names[1] if use_eval else names[0]]
        return criterion

    def _adjust(self, trainer, epoch: int, validation, result: EpochResult):
        """AutoAdjust after ``epoch``: log its decision and carry it out; returns what the
        epoch's checkpoint records and which checkpoints go, and the lines after the save.
        (AutoAdjust runs in one process only: the runner refuses it in a data-parallel job, so
        this process writes the files and waits for no other.)"""
        setting, log = self.setting, self.log
        adjust, max_epochs = setting.auto_adjust, setting.sgd.max_epochs
        step = after_epoch(adjust, self.lr_state, epoch, self.lr,
                           self._control_criterion(validation), self.fixed_epochs,
                           lambda e: epoch_model(setting.model_path, e, max_epochs))
        self.lr_state = step.state
        for line in step.lines:
            (log if line else log.raw)(line)
        if step.rollback_to is not None:
            info = {"auto_adjust": list(step.state.saved[step.rollback_to])}
            roll_back(setting.model_path, step.rollback_to, max_epochs, trainer, self.source,
                      step.removed, None if step.stop else info, True)
            result.rolled_back = not step.stop
        if step.stop:
            save_model(setting.model_path, *self.model_parts)
            self.results.append(result)
            raise TrainingComplete()
        if step.rollback_to is not None:
            for line in step.late_lines:
                log(line)
            self.results.append(result)
            raise RepeatEpoch(step.next_epoch)
        drop = step.drop_checkpoints if adjust.load_best_model else None
        return {"auto_adjust": list(step.state.saved[epoch])}, drop, step.late_lines

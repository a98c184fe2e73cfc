"""CNTK's training loop (``training_session`` with its configs) and
``minibatch_size_schedule``, on Stadyn's Trainer and minibatch sources (``Function.train``,
``Function.test`` and the ``Evaluator``: :mod:`._function_training`).

The session follows CNTK 2.7's loop: restore from the checkpoint if asked, then train on
minibatches of the scheduled size until ``max_samples`` (or the end of the source), summarising
progress every ``progress_frequency``, cross-validating every ``cv_config.frequency``,
checkpointing every ``checkpoint_config.frequency`` (frequencies in samples, minibatches or
sweeps: :class:`DataUnit`), and finally summarising, cross-validating, checkpointing (when the
frequency is "at the end") and testing.
"""

from __future__ import annotations

import enum
import os
import sys
import numpy as np

from ._worker_sums import cross_validate_on_workers, evaluate_tests_on_workers
from .io._sources import CNTK_POSITION

__all__ = ["DataUnit", "CheckpointConfig", "CrossValidationConfig", "TestConfig",
           "TrainingSession", "training_session", "minibatch_size_schedule"]


_CNTK_SOURCE_KEY = "TrainingMinibatchSource"


def _is_user_source(source) -> bool:
    """Whether ``source`` is a ``UserMinibatchSource`` (whose checkpoint state is the user's
    own dict, in CNTK 2.7 as here)."""
    from .io import UserMinibatchSource
    return isinstance(source, UserMinibatchSource)


def _is_reader(source) -> bool:
    """Whether ``source`` is compat.cntk's ``MinibatchSource`` over deserializers (whose
    checkpoint state CNTK 2.7 keeps as ``{'minibatchSourcePosition': samples}``)."""
    from .io import MinibatchSource
    return isinstance(source, MinibatchSource)


def _is_data_source(state) -> bool:
    """Whether ``state`` is the state of Stadyn's in-memory source (``MinibatchSourceFromData``:
    its absolute ``position`` and ``samples`` read, its ``sweep_length``)."""
    return isinstance(state, dict) and {"position", "samples", "sweep_length"} <= set(state)


def _cntk_source_state(source, state):
    """The source's state as CNTK 2.7 keeps it, or None where it has no CNTK form here: a user
    source's own dict; a reader's ``minibatchSourcePosition`` (samples read or stepped over);
    ``MinibatchSourceFromData``'s ``cursor`` (within the sweep) and
    ``total_num_samples`` (CNTK's ``cntk/io/__init__.py`` MinibatchSourceFromData)."""
    if _is_user_source(source):
        return state
    if _is_reader(source) and isinstance(state, dict) and CNTK_POSITION in state:
        return {CNTK_POSITION: int(state[CNTK_POSITION])}
    if _is_data_source(state):
        sweep = state["sweep_length"]
        return {"cursor": int(state["position"] % sweep if sweep else state["position"]),
                "total_num_samples": int(state["samples"])}
    return None


def _source_state_of_cntk(source, theirs, filename):
    """The source's state from the one CNTK 2.7's session kept (see
    :func:`_cntk_source_state`); None, with a warning, where it cannot be read here (the
    source then starts from its beginning)."""
    if _is_user_source(source):
        return theirs
    if _is_reader(source) and isinstance(theirs, dict) and CNTK_POSITION in theirs:
        return {CNTK_POSITION: int(theirs[CNTK_POSITION])}
    mine = source.get_checkpoint_state() if hasattr(source, "get_checkpoint_state") else None
    if _is_data_source(mine) and isinstance(theirs, dict) and \
            {"cursor", "total_num_samples"} <= set(theirs):
        total = int(theirs["total_num_samples"])
        return dict(mine, position=total, samples=total)
    import warnings
    warnings.warn(f"{filename}: the minibatch source's position CNTK 2.7 saved ({theirs!r}) "
                  "is not read by this source: it starts from its beginning", UserWarning,
                  stacklevel=4)
    return None


class DataUnit(enum.IntEnum):
    """What a frequency counts: samples, minibatches or sweeps."""

    sample = 1
    minibatch = 2
    sweep = 0


def _frequency(frequency) -> tuple[int | None, DataUnit]:
    if frequency is None:
        return None, DataUnit.sample
    if isinstance(frequency, (int, np.integer)):
        return int(frequency), DataUnit.sample
    if isinstance(frequency, tuple) and len(frequency) == 2 and isinstance(frequency[1], DataUnit):
        return int(frequency[0]), frequency[1]
    raise ValueError(f"unsupported frequency {frequency!r}: give an int (samples) or "
                     "(n, DataUnit.sample|minibatch|sweep)")


class minibatch_size_schedule:  # noqa: N801 - CNTK's name
    """Minibatch sizes by samples seen: one size, a list of sizes each for ``epoch_size``
    samples (the last one for ever), or ``[(count, size), ...]`` pairs.

    Example:
        >>> s = minibatch_size_schedule([(2, 32), (1, 64)], 100)
        >>> s[0], s[199], s[200], s[5000]
        (32, 32, 64, 64)
    """

    def __init__(self, schedule, epoch_size: int = 1):
        if isinstance(schedule, (int, np.integer)):
            self._steps = [(1, int(schedule))]
        else:
            items = list(schedule)
            self._steps = [(int(c), int(v)) for c, v in items] if items and isinstance(
                items[0], tuple) else [(1, int(v)) for v in items]
        self.epoch_size = int(epoch_size)

    def __getitem__(self, samples: int) -> int:
        limit = 0
        for count, value in self._steps:
            limit += count * self.epoch_size
            if samples < limit:
                return value
        return self._steps[-1][1]


def _schedule(size) -> minibatch_size_schedule:
    return size if isinstance(size, minibatch_size_schedule) else minibatch_size_schedule(size)


class CheckpointConfig:
    """Checkpoints: ``filename``, every ``frequency`` (None: once at the end), restored from at
    the start when ``restore``; ``preserve_all`` keeps every one (``filename`` + index)."""

    def __init__(self, filename, frequency=None, restore: bool = True,
                 preserve_all: bool = False):
        self.frequency, self.frequency_unit = _frequency(frequency)
        if filename is None:
            if self.frequency:
                raise ValueError("Checkpoint frequency cannot be specified without "
                                 "checkpoint_filename")
            self.frequency, filename = 0, ""
        if self.frequency is None:
            self.frequency = sys.maxsize
        self.filename = os.fspath(filename)
        self.restore = bool(restore)
        self.preserve_all = bool(preserve_all)


class CrossValidationConfig:
    """Cross-validation on ``minibatch_source`` every ``frequency`` (None: once at the end),
    over ``max_samples`` (None: until the source ends); ``callback(index, average_error,
    samples, minibatches)`` returning False stops training."""

    def __init__(self, minibatch_source=None, frequency=None, minibatch_size=32, callback=None,
                 max_samples=None, model_inputs_to_streams=None, criterion=None, source=None,
                 mb_size=None):
        minibatch_source = source if source is not None else minibatch_source
        minibatch_size = mb_size if mb_size is not None else minibatch_size
        self.callback = callback
        self.frequency, self.frequency_unit = _frequency(frequency)
        if minibatch_source is None and callback is None:
            if self.frequency:
                raise ValueError("Either minibatch_source of callback should be specified.")
            self.frequency = 0
        if self.frequency is None:
            self.frequency = sys.maxsize
        self.schedule = _schedule(minibatch_size)
        self.max_samples = sys.maxsize if max_samples is None else int(max_samples)
        self.source, self.input_map = _source(minibatch_source, model_inputs_to_streams,
                                              criterion, repeat=False)


class TestConfig:
    """Testing on ``minibatch_source`` (until it ends) after training."""

    def __init__(self, minibatch_source=None, minibatch_size=32, model_inputs_to_streams=None,
                 criterion=None, source=None, mb_size=None):
        minibatch_source = source if source is not None else minibatch_source
        minibatch_size = mb_size if mb_size is not None else minibatch_size
        self.schedule = _schedule(minibatch_size)
        self.source, self.input_map = _source(minibatch_source, model_inputs_to_streams,
                                              criterion, repeat=False)


def _source(source, input_map, criterion, repeat: bool):
    """A minibatch source for ``source``: itself, or one over NumPy arrays given in the order of
    the criterion's arguments."""
    if source is None or hasattr(source, "next_minibatch"):
        return source, input_map
    from .io import INFINITELY_REPEAT, MinibatchSourceFromData
    args = source if isinstance(source, tuple) else (source,)
    if criterion is None:
        raise ValueError("when passing data directly in place of a minibatch source, criterion "
                         "must be given")
    params = criterion.arguments
    if len(params) != len(args):
        raise ValueError(f"to pass data directly in place of a minibatch source, pass a tuple of "
                         f"{len(params)} arrays, in the order of the criterion's arguments; you "
                         f"passed {len(args)}")
    if input_map is not None:
        raise ValueError("mapping must not be provided when data is passed directly")
    names = [p.name or f"stream_{i}" for i, p in enumerate(params)]
    if len(set(names)) != len(names):
        names = [f"stream_{i}" for i in range(len(params))]
    src = MinibatchSourceFromData(dict(zip(names, args)),
                                  max_samples=INFINITELY_REPEAT if repeat else len(args[0]))
    return src, {p: src.streams[n] for p, n in zip(params, names)}


class _Counter:
    """When a frequency in samples, minibatches or sweeps comes due."""

    def __init__(self, frequency: int, unit: DataUnit):
        self.frequency, self.unit = frequency, unit
        self.index = 0
        self.last = 0       # the count when it was last due (CNTK's unitCountWhenLastCalled)

    def active(self) -> bool:
        return 0 < self.frequency < sys.maxsize

    def due(self, samples: int, minibatches: int, sweeps: int) -> bool:
        done = {DataUnit.sample: samples, DataUnit.minibatch: minibatches,
                DataUnit.sweep: sweeps}[self.unit]
        if not self.active() or done // self.frequency <= self.index:
            return False
        self.index, self.last = done // self.frequency, done
        return True

    def count(self, samples: int, minibatches: int, sweeps: int) -> int:
        """The count of this frequency's unit."""
        return {DataUnit.sample: samples, DataUnit.minibatch: minibatches,
                DataUnit.sweep: sweeps}[self.unit]

    def left_over(self, samples: int, minibatches: int, sweeps: int) -> bool:
        """Whether it is due at the end for the count since it was last due (CNTK 2.7's
        TrainingSession::Train after its loop: a count not a multiple of the frequency and
        not the one it was last due at)."""
        if not self.frequency:
            return False
        done = {DataUnit.sample: samples, DataUnit.minibatch: minibatches,
                DataUnit.sweep: sweeps}[self.unit]
        return done % self.frequency != 0 and done != self.last


def _unit_counts(trainer, samples: int, minibatches: int, sweeps: int) -> tuple:
    """The counts a frequency comes due by: CNTK 2.7's TrainingSession counts by the
    Trainer's first learner (``Trainer::TotalNumberOfUnitsSeen``), and a distributed learner
    (data parallel, block momentum) counts samples only -- its minibatches and sweeps stay 0,
    so an action every so many minibatches or sweeps never comes due with one."""
    if trainer.__dict__.get("_distributed"):
        return samples, 0, 0
    return samples, minibatches, sweeps


class TrainingSession:
    """Made by :func:`training_session`; ``train()`` runs the loop (see the module docstring)."""

    def __init__(self, trainer, mb_source, mb_size, model_inputs_to_streams, max_samples,
                 progress_frequency, checkpoint_config, cv_config, test_config):
        if trainer is None:
            raise ValueError("Trainer must not be None.")
        if mb_source is None:
            raise ValueError("Training minibatch source must not be None.")
        self.trainer = trainer
        self.source, self.input_map = _source(mb_source, model_inputs_to_streams,
                                              trainer.loss_function, repeat=True)
        if not self.input_map:
            raise ValueError("Mapping between input vars and streams should not be empty.")
        self.schedule = _schedule(mb_size)
        self.max_samples = sys.maxsize if max_samples is None else int(max_samples)
        freq, unit = _frequency(progress_frequency)
        self.progress = _Counter(sys.maxsize if freq is None else freq, unit)
        self.checkpoint = checkpoint_config
        self.cv = cv_config
        self.test_config = test_config
        self.cv_callback = cv_config.callback if cv_config is not None else None

    # -- the loop ------------------------------------------------------------------------------
    def train(self, device=None) -> None:
        """Train (see the module docstring)."""
        trainer = self.trainer
        blocks = trainer._block_learner() if hasattr(trainer, "_block_learner") else None
        if blocks is not None:
            return self._train_blocks(blocks)
        ckpt = _Counter(self.checkpoint.frequency, self.checkpoint.frequency_unit) \
            if self.checkpoint is not None and self.checkpoint.filename else None
        cv = _Counter(self.cv.frequency, self.cv.frequency_unit) \
            if self.cv is not None and self.cv.frequency else None
        samples, minibatches, sweeps = self._restore()
        for counter in (self.progress, ckpt, cv):
            if counter is not None and counter.active():
                counter.due(*_unit_counts(trainer, samples, minibatches, sweeps))
        self._cv_start = (self.cv.source.get_checkpoint_state()
                          if self.cv is not None and self.cv.source is not None
                          and hasattr(self.cv.source, "get_checkpoint_state") else None)
        since_summary = since_cv = 0
        workers = trainer.__dict__.get("_workers")
        while samples < self.max_samples or workers is not None:
            size = min(self.schedule[samples], self.max_samples - samples) \
                if samples < self.max_samples else 0
            if workers is None:
                mb = self.source.next_minibatch(size, input_map=self.input_map)
                if not mb:
                    break
                trainer.train_minibatch(mb)
            else:
                # each worker reads its share; one with none (or after the end) still takes
                # its part in the sums; the loop ends when no worker had samples (CNTK 2.7's
                # TrainingSession::Train and GetTrainingMinibatch)
                after = samples >= workers.parallel_after()
                mb = self.source.next_minibatch(
                    size, input_map=self.input_map,
                    num_data_partitions=workers.size if after else 1,
                    partition_index=workers.rank if after else 0) if size else {}
                if not trainer.train_minibatch(mb):
                    break
            samples += trainer.previous_minibatch_sample_count
            minibatches += 1
            since_summary += 1
            if any(getattr(d, "end_of_sweep", False) for d in mb.values()):
                sweeps += 1
            since_cv += 1
            counts = _unit_counts(trainer, samples, minibatches, sweeps)
            if self.progress.due(*counts):
                trainer.summarize_training_progress()
                since_summary = 0
            if cv is not None and cv.due(*counts):
                since_cv = 0
                if not self._cross_validate(cv.index - 1):
                    break
            if ckpt is not None and ckpt.due(*counts):
                self._save(ckpt.index - 1, samples, minibatches, sweeps)
        # (what a count of 0 in its unit -- no sweep ended, or a distributed learner's
        # minibatches -- never comes due for, at the end either: 0 is a multiple of it)
        end = _unit_counts(trainer, samples, minibatches, sweeps)
        if since_summary and self.progress.count(*end):
            trainer.summarize_training_progress()
        if cv is not None and (since_cv or not cv.active()) and cv.count(*end):
            self._cross_validate(cv.index if cv.active() else 0)
        if ckpt is not None and self.checkpoint.frequency == sys.maxsize:
            self._save(0, samples, minibatches, sweeps)
        elif ckpt is not None and ckpt.active() and ckpt.left_over(*end):
            # (not at a count the frequency divides: its checkpoint was saved when due;
            # Source/CNTKv2LibraryDll/TrainingSession.cpp:242-251)
            self._save(ckpt.index, samples, minibatches, sweeps)
        if ckpt is not None:
            self._save_final(samples, minibatches, sweeps)
        if self.test_config is not None and self.test_config.source is not None:
            self._test()

    def _train_blocks(self, blocks) -> None:
        """The loop of block momentum learners (``blocks``: the first), as CNTK 2.7's: each
        worker reads its share of minibatches of ``mb_size`` times the workers (a whole
        minibatch each) up to ``max_samples`` of the Trainer's count (all workers' as of the
        last block's end, this worker's since), an empty one once it is out of data, until
        every worker is and the last merge is done; the actions (progress, cross-validation,
        checkpoints) come due by the Trainer's counts, and at the end for a count they were
        not due at (TrainingSession::Train)."""
        trainer = self.trainer
        counters = [_Counter(self.checkpoint.frequency, self.checkpoint.frequency_unit)
                    if self.checkpoint is not None and self.checkpoint.filename else None,
                    self.progress,
                    _Counter(self.cv.frequency, self.cv.frequency_unit)
                    if self.cv is not None and self.cv.frequency else None]
        self._restore()
        restored = seen = trainer.total_number_of_samples_seen
        counts = (seen, trainer.total_number_of_units_seen(DataUnit.minibatch),
                  trainer.total_number_of_units_seen(DataUnit.sweep))
        for counter in counters:
            if counter is not None and counter.active():
                counter.due(*counts)
                done = counts[[DataUnit.sample, DataUnit.minibatch, DataUnit.sweep].index(
                    counter.unit)]
                counter.last = done - done % counter.frequency
        self._cv_start = (self.cv.source.get_checkpoint_state()
                          if self.cv is not None and self.cv.source is not None
                          and hasattr(self.cv.source, "get_checkpoint_state") else None)
        workers, rank = blocks.minibatch_size_scale_factor(), blocks.communicator().rank()
        early = False
        actions = [(counters[0], self._save_due), (counters[1], self._summarize_due),
                   (counters[2], self._cross_validate_due)]
        while True:
            seen = trainer.total_number_of_samples_seen
            shared = seen >= blocks.parallelization_after()
            size = 0 if early or seen >= self.max_samples else \
                min(self.schedule[seen] * (workers if shared else 1), self.max_samples - seen)
            mb = self.source.next_minibatch(
                size, input_map=self.input_map, num_data_partitions=workers if shared else 1,
                partition_index=rank if shared else 0) if size else {}
            going = trainer.train_minibatch(mb)
            counts = (trainer.total_number_of_samples_seen,
                      trainer.total_number_of_units_seen(DataUnit.minibatch),
                      trainer.total_number_of_units_seen(DataUnit.sweep))
            for counter, action in actions:
                if counter is not None and counter.active():
                    index = counter.index
                    if counter.due(*counts):
                        early = not action(index, counts) or early
            if not going:
                break
        if restored != counts[0]:
            for counter, action in actions:
                if counter is not None and counter.left_over(*counts):
                    action(counter.index, counts)
        if counters[0] is not None:
            self._save_final(*counts)
        if self.test_config is not None and self.test_config.source is not None:
            self._test()

    def _save_due(self, index: int, counts) -> bool:
        self._save(index, *counts)
        return True

    def _summarize_due(self, index: int, counts) -> bool:
        self.trainer.summarize_training_progress()
        return True

    def _cross_validate_due(self, index: int, counts) -> bool:
        return self._cross_validate(index)

    def _cross_validate(self, index: int) -> bool:
        """One pass over the cross-validation source (from its start, every time), until it
        ends (every sweep it gives) or ``max_samples``, as CNTK 2.7's
        TrainingSession::CrossValidate; an endless source without ``max_samples`` is its
        ValueError."""
        source = self.cv.source
        if self._cv_start is not None:
            source.restore_from_checkpoint(self._cv_start)
        # CNTK 2.7 restores the training source after, from its state before (so a truncated
        # source's slots start empty: TrainingSession.cpp, CrossValidate)
        training = self.source.get_checkpoint_state() \
            if hasattr(self.source, "get_checkpoint_state") else None
        total = samples = batches = 0
        if source is not None and self.cv.max_samples == sys.maxsize and \
                hasattr(source, "is_infinite") and source.is_infinite():
            raise ValueError("Cross validation minibatch source must have a limited number of "
                             "samples or sweeps.")
        workers = self.trainer.__dict__.get("_test_workers")
        if workers is not None:
            total, samples, batches = cross_validate_on_workers(
                self.trainer, self.cv, source, self.cv.input_map or self.input_map)
        while source is not None and workers is None and samples < self.cv.max_samples:
            size = min(self.cv.schedule[samples], self.cv.max_samples - samples)
            mb = source.next_minibatch(size, input_map=self.cv.input_map or self.input_map)
            if not mb:
                break
            average = self.trainer.test_minibatch(mb)
            n = self.trainer.previous_test_sample_count      # the metric's samples (CNTK's)
            total += average * n
            samples += n
            batches += 1
        if training is not None:
            self.source.restore_from_checkpoint(training)
        if samples:
            self.trainer.summarize_test_progress()
        average = total / samples if samples else 0.0
        keep_going = self.on_cross_validation_end(index, average, samples, batches)
        return keep_going is not False

    def _test(self) -> None:
        """The test config's pass: the source read until it ends (every sweep it gives, not
        only the first: CNTK 2.7's TrainingSession::Test), which an endless source cannot
        (its ValueError, after training, as CNTK's)."""
        cfg = self.test_config
        samples = 0
        if hasattr(cfg.source, "is_infinite") and cfg.source.is_infinite():
            raise ValueError("Test minibatch source must have a limited number of samples or "
                             "sweeps.")
        if self.trainer.__dict__.get("_test_workers") is not None:
            return evaluate_tests_on_workers(self.trainer, cfg, cfg.input_map or self.input_map)
        while True:
            mb = cfg.source.next_minibatch(cfg.schedule[samples],
                                           input_map=cfg.input_map or self.input_map)
            if not mb:
                break
            self.trainer.test_minibatch(mb)
            samples += self.trainer.previous_test_sample_count
        if samples:
            self.trainer.summarize_test_progress()

    def _path(self, index: int) -> str:
        name = self.checkpoint.filename
        return f"{name}{index}" if self.checkpoint.preserve_all else name

    def _save_final(self, samples: int, minibatches: int, sweeps: int) -> None:
        """Where every checkpoint is kept (``preserve_all``: ``filename`` + index), CNTK 2.7's
        session also saves the last one as ``filename`` when there is none of that name
        (TrainingSession::SaveFinalCheckpoint)."""
        if self.checkpoint.frequency and self.checkpoint.preserve_all and \
                not os.path.exists(self.checkpoint.filename):
            self._save(-1, samples, minibatches, sweeps, final=True)

    def _save(self, index: int, samples: int, minibatches: int, sweeps: int,
              final: bool = False) -> None:
        state = {"samples": samples, "minibatches": minibatches, "sweeps": sweeps}
        if hasattr(self.source, "get_checkpoint_state"):
            state["source"] = self.source.get_checkpoint_state()
            theirs = _cntk_source_state(self.source, state["source"])
            if theirs is not None:
                # CNTK 2.7's training_session keeps the source's state under this key
                # (TrainingSession.cpp:405-412)
                state[_CNTK_SOURCE_KEY] = theirs
        path = self.checkpoint.filename if final else self._path(index)
        # CNTK 2.7 makes the checkpoint's folder (Examples/1stSteps/MNIST_Complex_Training.py
        # checkpoints to a Models/ that is not there)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.trainer.save_checkpoint(path, state)

    def _restore(self) -> tuple[int, int, int]:
        cfg = self.checkpoint
        path = _restore_file(cfg.filename) if cfg is not None and cfg.filename and \
            cfg.restore else None
        if path is None:
            return 0, 0, 0
        # (CNTK 2.7 notes it on stderr: TrainingSession.cpp:498)
        print(f"Restoring training session from the checkpoint '{path}'", file=sys.stderr)
        state = self.trainer.restore_from_checkpoint(path)
        source = state.get("source")
        if source is None and _CNTK_SOURCE_KEY in state:     # CNTK 2.7's session wrote it
            source = _source_state_of_cntk(self.source, state[_CNTK_SOURCE_KEY],
                                           cfg.filename)
        if source is not None and hasattr(self.source, "restore_from_checkpoint"):
            self.source.restore_from_checkpoint(source)
        if "samples" not in state:
            # CNTK 2.7's session keeps no counts of its own: they are the trainer's
            t = self.trainer
            return (int(t.total_number_of_samples_seen), int(t.minibatches_seen),
                    int(t.total_number_of_units_seen(0)) if hasattr(
                        t, "total_number_of_units_seen") else 0)
        return int(state.get("samples", 0)), int(state.get("minibatches", 0)), \
            int(state.get("sweeps", 0))

    def on_cross_validation_end(self, index: int, average_error: float, num_samples: int,
                                num_minibatches: int) -> bool:
        """Called after each cross-validation; False stops training."""
        if self.cv_callback is not None:
            return self.cv_callback(index, average_error, num_samples, num_minibatches)
        return True


def _restore_file(filename: str) -> "str | None":
    """The checkpoint CNTK 2.7's session restores from (TrainingSession.cpp:440-493):
    ``filename`` where it exists, else the kept one (``preserve_all``) of the highest index
    -- ``filename`` + a number, its ``.ckp`` beside it -- shown as ``folder/name`` (``.``
    for a bare name), or None."""
    if os.path.exists(filename):
        return filename
    cut = max(filename.rfind("/"), filename.rfind("\\"))
    parent, base = (filename[:cut], filename[cut + 1:]) if cut >= 0 else (".", filename)
    best, found = -1, None
    names = os.listdir(parent) if os.path.isdir(parent) else []
    for name in names:
        suffix = name[len(base):]
        if not name.startswith(base) or not suffix.isdigit() or \
                not os.path.exists(os.path.join(parent, name + ".ckp")):
            continue
        if int(suffix) > best:
            best, found = int(suffix), f"{parent}/{name}"
    return found


def training_session(trainer, mb_source, mb_size, model_inputs_to_streams=None,
                     progress_frequency=None, max_samples=None, checkpoint_config=None,
                     cv_config=None, test_config=None) -> TrainingSession:
    """A training session: ``training_session(trainer, source, 32, {x: source.streams.f, ...},
    max_samples=..., progress_frequency=..., checkpoint_config=CheckpointConfig(...),
    cv_config=..., test_config=...).train()``; ``mb_source`` may also be a tuple of arrays in
    the order of the loss's arguments.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x, y = C.input_variable(2, name="x"), C.input_variable(2, name="y")
        >>> z = C.layers.Dense(2)(x)
        >>> loss = C.cross_entropy_with_softmax(z, y)
        >>> trainer = C.Trainer(z, loss, C.sgd(z.parameters, C.learning_parameter_schedule(0.1)))
        >>> data = (np.eye(2, dtype=np.float32)[[0, 1] * 8],) * 2
        >>> C.training_session(trainer, data, 4, max_samples=32).train()
        >>> trainer.total_number_of_samples_seen
        32
    """
    return TrainingSession(trainer, mb_source, mb_size, model_inputs_to_streams, max_samples,
                           progress_frequency, checkpoint_config, cv_config, test_config)

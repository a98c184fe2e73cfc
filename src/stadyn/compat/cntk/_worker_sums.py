"""A compat.cntk Trainer (and training session) of distributed learners on several workers:
what CNTK 2.7 sums over the workers.

CNTK 2.7's Trainer of distributed learners reports each minibatch's sample count, loss and
metric summed over the workers (Trainer.cpp TrainDistributedMinibatch), a worker without
samples still taking its part; its training session has each worker read its share of every
minibatch and stops when no worker had any (TrainingSession.cpp Train, GetTrainingMinibatch);
cross-validation and test minibatches are shared and summed the same way (CrossValidate, Test,
a distributed Evaluator::TestMinibatch).  The sums themselves are
``compat.cntk.train.distributed``'s (found on the learners' class: that module is not
imported here).
"""

from __future__ import annotations

import numpy as np

from ... import io as _io
from ..._errors import EmptySequenceError
from ._sequence_begin import split_flags

__all__ = ["WorkerSums", "aggregation", "test_sums", "cross_validate_on_workers",
           "evaluate_tests_on_workers",
           "no_samples", "refuse_empty_sequences", "refuse_no_rows"]


def aggregation(learners):
    """What the workers sum when ``learners`` are distributed ones of several workers (their
    class's ``_trainer_aggregation``), else None."""
    for learner in learners or ():
        make = getattr(type(learner), "_trainer_aggregation", None)
        if make is not None:
            return make(learners)
    return None


def test_sums(learners):
    """What the workers sum of the test and cross-validation minibatches of a training
    session when ``learners`` are distributed ones of several workers (their class's
    ``_trainer_tests``: the aggregation's, or block momentum learners' own), else None."""
    for learner in learners or ():
        make = getattr(type(learner), "_trainer_tests", None)
        if make is not None:
            return make(learners)
    return None


def no_samples(arguments) -> bool:
    """Whether a minibatch has no samples: none given, or a reader's share of none (what a
    worker then trains or tests on is nothing: it takes its part in the sums).  A share of
    ``MinibatchSourceFromData`` counts the whole minibatch's samples, and one of no rows is
    not a share of none: :func:`refuse_no_rows` refuses it, as CNTK 2.7 does."""
    if not arguments:
        return True
    return isinstance(arguments, dict) and all(
        isinstance(v, _io.MinibatchData) and not v.number_of_samples
        for v in arguments.values())


def refuse_empty_sequences(target, sequences: list, what: str) -> None:
    """CNTK 2.7's RuntimeError (``EmptySequenceError``) for a sequence of no step among those
    given to an input (one array per sequence) in a run, a train_minibatch or a
    test_minibatch: its "AddSequence" message when it is the only sequence, its Value-mask
    message when others are given beside it (before or after it)."""
    for k, seq in enumerate(sequences):
        if len(np.shape(seq)) and np.shape(seq)[0] == 0:
            name = getattr(target, "name", "") or getattr(target, "uid", "?")
            said = ("AddSequence: Sequences must be a least one frame long." if len(sequences) == 1
                    else "The first entry of a Value mask must be Valid or SequenceBegin.")
            raise EmptySequenceError(f"{said} ({what}: sequence {k} given to input '{name}' "
                                     "has no step; CNTK 2.7 refuses a sequence of none)")


def refuse_no_rows(arguments, what: str) -> None:
    """CNTK 2.7's RuntimeError for an input given no rows: an array of none, or a worker's
    empty slice of ``MinibatchSourceFromData`` (rows ``begin + rank``, ``begin + rank + W``,
    ... of the whole minibatch: the last one of a sweep may leave a worker none).  CNTK 2.7
    fails the same in a Trainer alone and on several workers (each worker's training session
    over such a source too), where Stadyn trained on the other workers' samples.  A sequence
    of no step among those a list gives is :func:`refuse_empty_sequences`'."""
    for key, value in (arguments.items() if isinstance(arguments, dict) else ()):
        if isinstance(value, list):     # one array per sequence
            refuse_empty_sequences(key, value, what)
            continue
        if isinstance(value, _io.MinibatchData) and value.lengths is None:
            rows = value.shape[0] if len(value.shape) else 1
        elif isinstance(value, np.ndarray) and value.ndim:
            rows = value.shape[0]
        else:
            continue
        if rows == 0:
            uid = getattr(key, "uid", "?")
            name = getattr(key, "name", "") or uid
            shared = " (a worker's slice of MinibatchSourceFromData's minibatch: the " \
                     "minibatch had fewer rows than workers from this one on)" \
                if isinstance(value, _io.MinibatchData) and value.number_of_samples else ""
            raise RuntimeError(
                f"Node '{uid}' (InputValue operation): NarrowTo: Invalid bounds parameter, "
                f"dimensions must be at least one. ({what}: input '{name}' has no rows"
                f"{shared}; CNTK 2.7 runs no minibatch of none)")


class WorkerSums:
    """The compat Trainer's part on several workers (``self._workers``: the aggregation, or
    None on one)."""

    _workers = None
    _test_workers = None
    _distributed: list = []
    _summing_tests = False

    def _writers(self) -> list:
        """Every worker writes its progress (the workers' sums), as each CNTK worker does."""
        return self.progress_writers

    def _block_learner(self):
        """The first learner when the Trainer's are block momentum learners (each worker
        updates alone; their count is the Trainer's), else None."""
        first = self._distributed[0] if self._distributed else None
        return first if callable(getattr(type(first), "_end_of_data", None)) else None

    def _after_step(self, samples: int, finite_only: bool) -> None:
        """A step the workers shared (more samples than this worker's own) goes to the
        progress writers' ``update_distributed_sync`` first: the samples since the previous
        one, all workers' (CNTK 2.7's Trainer::TrainDistributedMinibatch)."""
        blocks = self._block_learner()
        before = self.total_number_of_samples_seen
        # CNTK 2.7's count is its first learner's: a block momentum learner's is all workers'
        # samples as of the last block's end (and this worker's since)
        total = int(blocks.total_number_of_samples_seen) if blocks is not None else \
            before + samples
        local = self._workers.local_samples if self._workers is not None else samples
        self._tell_sync(total - before > local, total)
        super()._after_step(samples, finite_only)
        self.total_number_of_samples_seen = total
        if blocks is not None:
            sums = self.__dict__.get("_summary_sums") or [None, None]
            loss, metric = self.previous_minibatch_loss_sum, \
                self.previous_minibatch_evaluation_sum
            self._summary_sums = [(sums[0] or 0.0) + float(loss),
                                  None if metric is None else (sums[1] or 0.0) + float(metric)]

    def _tell_sync(self, synced: bool, total: int) -> None:
        """Tell the progress writers of a synchronisation (``synced``): all workers' samples
        since the previous one, ``total`` now."""
        if synced:
            samples = total - self.__dict__.get("_synced_samples", 0)
            self._synced_samples = total
            for writer in self._writers():
                writer.update_distributed_sync(samples)

    def _end_of_data(self) -> bool:
        """A minibatch of no samples for block momentum learners: this worker is out of data
        and takes its part in the others' block ends, then in the last merge once every
        worker is out of data; False then (CNTK 2.7's TrainDistributedMinibatch of an empty
        minibatch, ``atEndOfData``)."""
        before = self.total_number_of_samples_seen
        going = False
        for learner in self._distributed:
            going = learner._end_of_data() or going
        total = int(self._block_learner().total_number_of_samples_seen)
        self.previous_minibatch_sample_count = 0
        self._tell_sync(total > before, total)
        self.total_number_of_samples_seen = total
        return going

    def summarize_training_progress(self) -> None:
        """The epoch summaries; block momentum learners' workers first average the loss and
        metric sums since the last summary (each worker's samples stay its own: CNTK 2.7's
        Trainer::SummarizeTrainingProgress, DoAggregateMetricsIfNeeded)."""
        blocks = self._block_learner()
        if blocks is not None:
            loss, metric = self.__dict__.get("_summary_sums") or [None, None]
            self._summary_sums = None
            if self._metric_sum is None:
                metric = None
            averaged = blocks._average_metrics(loss, metric)
            if averaged is not None:
                for writer in self._writers():
                    tracker = getattr(writer, "_training", None)
                    if tracker is not None and averaged[0] is not None:
                        tracker.loss_sum = averaged[0]
                    if tracker is not None and averaged[1] is not None:
                        tracker.metric_sum = averaged[1]
            # (the agreement counted all workers' samples: the Trainer's count is the learner's)
            self.total_number_of_samples_seen = int(blocks.total_number_of_samples_seen)
        super().summarize_training_progress()

    def _train_nothing(self) -> bool:
        """This worker has no share of the minibatch: it still takes its part in summing the
        others' gradients, count, loss and metric and updates with them; False when no worker
        had samples (the native Trainer's step of no samples, through ``self.data_parallel``,
        which is this aggregation)."""
        if super()._train_nothing():
            return True
        self._workers.forget_sums()
        return False

    def _test_sums(self, samples: int, metric_sum: float) -> tuple[int, float]:
        if self._summing_tests:
            return self._test_workers.sum_test(samples, metric_sum)
        return samples, metric_sum

    def _test_on_workers(self, arguments) -> tuple[int, float]:
        """test_minibatch of this worker's share (maybe none) of a minibatch the workers test
        together: ``(samples, metric_sum)`` summed over them, which the progress writers get
        too."""
        self._summing_tests = True
        try:
            if no_samples(split_flags(arguments)[0]):
                samples, metric = self._test_workers.sum_test(0, 0.0)
                self.previous_test_sample_count = samples
                if samples:
                    for writer in self._writers():
                        writer.update_test(metric, samples)
                return samples, metric
            average = self.test_minibatch(arguments)
            return self.previous_test_sample_count, average * self.previous_test_sample_count
        finally:
            self._summing_tests = False


def cross_validate_on_workers(trainer, cv, source, input_map) -> tuple[float, int, int]:
    """One cross-validation pass, each worker testing its share, until no worker has any:
    ``(metric sum, samples, minibatches)`` over the workers."""
    workers = trainer._test_workers
    total = samples = batches = 0
    while source is not None:
        size = min(cv.schedule[samples], cv.max_samples - samples) \
            if samples < cv.max_samples else 0
        mb = source.next_minibatch(size, input_map=input_map, num_data_partitions=workers.size,
                                   partition_index=workers.rank) if size else {}
        n, metric_sum = trainer._test_on_workers(mb)
        if not n:
            break
        total, samples, batches = total + metric_sum, samples + n, batches + 1
    return total, samples, batches


def evaluate_tests_on_workers(trainer, cfg, input_map) -> None:
    """The test config's pass, as :func:`cross_validate_on_workers`, then its summary."""
    workers = trainer._test_workers
    samples = 0
    while True:
        mb = cfg.source.next_minibatch(cfg.schedule[samples], input_map=input_map,
                                       num_data_partitions=workers.size,
                                       partition_index=workers.rank)
        n = trainer._test_on_workers(mb)[0]
        if not n:
            break
        samples += n
    trainer.summarize_test_progress()

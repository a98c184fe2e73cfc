"""``Function.train`` and ``Function.test`` (CNTK 2.7's): a Trainer with a collector run by
a :class:`~._training.TrainingSession` (:func:`train_function`, its
:class:`TrainingSummary`), and CNTK's ``Evaluator`` over one sweep of a source
(:func:`evaluate_function`, its :class:`TestSummary`).  ``_function`` reaches both late
(``Function.train``, ``Function.test``)."""

from __future__ import annotations

from ...train.progress import ProgressWriter
from ._adapt import several_outputs_message
from ._function import Function
from ._late import bind
from ._trainer import Trainer
from ._training import (CheckpointConfig, CrossValidationConfig, TestConfig, TrainingSession,
                        _schedule, _source)
from ._variables import Record

__all__ = ["Evaluator", "evaluate_function", "TestSummary", "train_function", "TrainingSummary"]


class Evaluator(Trainer):
    """Evaluates a metric over minibatches (CNTK's ``Evaluator``): ``test_minibatch`` gives the
    minibatch's average; progress writers get the test summaries.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> z, t = C.input_variable(3), C.input_variable(3)
        >>> ev = C.Evaluator(C.classification_error(z, t))
        >>> ev.test_minibatch({z: np.eye(3, dtype=np.float32), t: np.eye(3, dtype=np.float32)})
        0.0
    """

    _evaluates_only = True

    def __init__(self, eval_function, progress_writers=None):
        if isinstance(eval_function, Function) and len(eval_function.outputs) > 1:
            # (CNTK 2.7's, as its Evaluator takes the Function's one output)
            raise RuntimeError(several_outputs_message(eval_function))
        super().__init__(None, (eval_function, eval_function), [], progress_writers)


class TestSummary(Record):
    """What ``Function.test`` returns: a :class:`Record` (a dict whose items are attributes,
    as CNTK 2.7's) of the average ``metric`` over ``samples``."""

    def __init__(self, metric: float, samples: int):
        super().__init__(metric=float(metric), samples=int(samples))


def evaluate_function(function, source, minibatch_size: int, streams, input_map,
                      callbacks) -> TestSummary:
    """``Function.test``: the criterion (its last output, a metric) averaged over one sweep."""
    outputs = function.outputs
    metric = outputs[-1]
    if input_map is None and streams is not None:
        args = function.arguments
        input_map = {a: s for a, s in zip(args, streams)}
    if not _is_reader(source):             # a tuple of arrays, in the order of the arguments
        source, input_map = _source(source, input_map, function, repeat=False)
    if hasattr(source, "is_infinite") and source.is_infinite():
        raise ValueError("minibatch_source must have a limited number of samples or sweeps.")
    evaluator = Evaluator(metric, callbacks)
    total = samples = 0
    while True:                   # until the source ends (CNTK's loop; not at a sweep's end)
        mb = source.next_minibatch(minibatch_size, input_map=input_map)
        if not mb:
            break
        total += evaluator.test_minibatch(mb) * evaluator.previous_test_sample_count
        samples += evaluator.previous_test_sample_count      # the metric's samples
    evaluator.summarize_test_progress()
    return TestSummary(total / samples if samples else 0.0, samples)


class _Summary(Record):
    """One line of a :class:`TrainingSummary`: the average ``loss`` and ``metric`` over
    ``samples``, a :class:`Record` as CNTK 2.7's (``d["loss"]`` and ``d.loss`` alike)."""

    def __init__(self, loss: float, metric: float, samples: int):
        super().__init__(loss=float(loss), metric=float(metric), samples=int(samples))


class TrainingSummary(Record):
    """What ``Function.train`` returns, a :class:`Record` as CNTK 2.7's: ``updates`` and
    ``epoch_summaries`` (lists of records with ``loss``, ``metric``, ``samples``) and, when a
    ``TestConfig`` was given, ``test_summary`` (``metric``, ``samples``).

    Example:
        >>> s = TrainingSummary([_Summary(0.5, 0.25, 8)], [_Summary(0.5, 0.25, 8)])
        >>> s["epoch_summaries"][-1]["loss"], s.updates[0].samples
        (0.5, 8)
    """

    def __init__(self, epoch_summaries, updates, test_summary=None):
        if test_summary is None:
            super().__init__(updates=updates, epoch_summaries=epoch_summaries)
        else:
            super().__init__(updates=updates, epoch_summaries=epoch_summaries,
                             test_summary=test_summary)


class _Collector(ProgressWriter):
    """Keeps the averages a training session writes (CNTK's ``_ProgressCollector``)."""

    def __init__(self, freq):
        super().__init__(freq=freq)
        self.update_records, self.epoch_records, self.test_records = [], [], []

    @staticmethod
    def _average(total, samples):
        return (total or 0.0) / (samples if samples else 1)

    def on_training_update(self, record) -> None:
        self.update_records.append(_Summary(self._average(record.loss_sum, record.samples),
                                     self._average(record.metric_sum, record.samples),
                                     record.samples))

    def on_training_summary(self, record) -> None:
        self.epoch_records.append(_Summary(self._average(record.loss_sum, record.samples),
                                    self._average(record.metric_sum, record.samples),
                                    record.samples))

    def on_test_summary(self, record) -> None:
        self.test_records.append(TestSummary(self._average(record.metric_sum, record.samples),
                                      record.samples))


def _is_reader(source) -> bool:
    return hasattr(source, "next_minibatch")


def train_function(function, source, minibatch_size=32, streams=None, input_map=None,
                   learners=(), callbacks=(), progress_frequency=None, max_epochs=None,
                   epoch_size=None, max_samples=None, *, model_inputs_to_streams=None,
                   parameter_learners=None) -> TrainingSummary:
    """``Function.train`` (CNTK 2.7's): a Trainer on ``function`` with the progress writers of
    ``callbacks`` and a collector, run by a :class:`TrainingSession` with the callbacks'
    configs; ``max_epochs`` of ``epoch_size`` samples (default: one pass over the arrays) or
    ``max_samples``.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x, y = C.input_variable(2), C.input_variable(2)
        >>> model = C.layers.Dense(2)
        >>> crit = C.cross_entropy_with_softmax(model(x), y)
        >>> data = np.eye(2, dtype=np.float32)[[0, 1] * 8]
        >>> progress = crit.train((data, data), minibatch_size=4, max_epochs=2,
        ...                       parameter_learners=[C.sgd(model.parameters, 0.1)])
        >>> [s.samples for s in progress.epoch_summaries]
        [16, 16]
    """
    input_map = model_inputs_to_streams if model_inputs_to_streams is not None else input_map
    learners = parameter_learners if parameter_learners is not None else learners
    if minibatch_size is None:
        raise ValueError("minibatch_size must not be None.")
    schedule = _schedule(minibatch_size)
    if max_samples is None:
        if epoch_size is None:
            if _is_reader(source):
                raise ValueError("epoch_size must be specified, unless max_samples is given or "
                                 "input is given as numpy/scipy arrays.")
            first = source[0] if isinstance(source, tuple) else source
            epoch_size = first.shape[0] if hasattr(first, "shape") else len(first)
        max_samples = int((1 if max_epochs is None else max_epochs) * epoch_size)
    elif max_epochs is not None:
        raise ValueError("max_epochs and max_samples are mutually exclusive.")
    writers, configs = [], {CheckpointConfig: None, CrossValidationConfig: None, TestConfig: None}
    for cb in callbacks or ():
        if isinstance(cb, ProgressWriter):
            writers.append(cb)
            continue
        kind = next((k for k in configs if isinstance(cb, k)), None)
        if kind is None:
            raise ValueError("callbacks list can only contain objects of type ProgressWriter, "
                             f"CheckpointConfig, CrossValidationConfig, and TestConfig; got {cb!r}")
        if configs[kind] is not None:
            raise ValueError(f"only one callback of type {kind.__name__} is permitted")
        configs[kind] = cb
    if progress_frequency is None and epoch_size is not None:
        progress_frequency = epoch_size
    freq = writers[0].freq if writers and writers[0].freq else (
        max(1, progress_frequency // schedule[0]) if progress_frequency is not None else None)
    collector = _Collector(freq)
    trainer = Trainer(None, function, list(learners or ()), writers + [collector])
    if streams:
        if input_map:
            raise ValueError("streams and model_inputs_to_streams are mutually exclusive.")
        input_map = dict(zip(function.arguments, streams))
    TrainingSession(trainer, source, schedule, input_map, max_samples, progress_frequency,
                    configs[CheckpointConfig], configs[CrossValidationConfig],
                    configs[TestConfig]).train()
    # CNTK 2.7: without an epoch's summary both lists are one record of zeros
    epochs, updates = collector.epoch_records, collector.update_records
    if not epochs:
        epochs, updates = [_Summary(0, 0, 0)], [_Summary(0, 0, 0)]
    test = collector.test_records[-1] if configs[TestConfig] is not None and \
        collector.test_records else None
    return TrainingSummary(epochs, updates, test)


bind(evaluate_function=evaluate_function,     # Function.test (_function)
     train_function=train_function)           # Function.train (_function)

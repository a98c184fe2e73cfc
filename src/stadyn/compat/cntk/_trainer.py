"""CNTK's ``Trainer`` over CNTK Functions (``cntk.train.Trainer``)."""

from __future__ import annotations

import sys

import numpy as np

from ... import io as _io
from ...learners import Learner as _Learner
from ...train import NoMetricError, Trainer as _Trainer
from ._adapt import unwrap, wrap
from ._checked_mode import CheckedLatch
from ._fed_data import refuse_layouts_that_differ
from ._deferred_reads import as_built
from ._deferred_runs import not_provided, unbound_placeholders
from ._function import Function
from ._function_runs import refuse_function_keys
from ._graph import BATCH, is_splice_leaf
from ._run_checks import RunnableCheck
from ._sparse_gradients import tell_row_sparse
from ._sequence_begin import SequenceBeginError, SequenceBegins, carrying, split_flags
from ._trainer_data import plain_minibatch, sequence_count, truncated_flags, truncated_slots
from ._previous_averages import PreviousAverages
from ._trainer_checkpoint import TrainerCheckpoints
from ._values import output_value
from ._trainer_samples import (counted_variable, given_as_combine, refuse_no_sample_count,
                               tested_variable, uncounted_inputs)
from ._worker_sums import WorkerSums, aggregation, no_samples, refuse_no_rows, test_sums

__all__ = ["Trainer", "counted_variable"]


def _as_function(slot: str, doc: str) -> property:
    """An attribute the native Trainer sets to a Variable, read as a CNTK Function."""
    def get(self):
        return wrap(getattr(self, slot))

    def set_(self, value) -> None:
        setattr(self, slot, value)
    return property(get, set_, doc=doc)


def _distributed_learners(learners) -> list:
    """The distributed learners among a Trainer's ``learners``, as CNTK 2.7 takes them: all
    of them or none (ValueError); a lone one is marked as the metric aggregator, of several
    one must be (``set_as_metric_aggregator``) or each train_minibatch fails after updating
    (checked there)."""
    learners = list(learners or ())
    found = [x for x in learners if callable(getattr(type(x), "set_as_metric_aggregator",
                                                      None))]
    if found and len(found) != len(learners):
        raise ValueError("Cannot use a non-distributed learner for some parameters together "
                         "with a distributed learner for other parameters, in a single Trainer.")
    if len(found) == 1:
        found[0].set_as_metric_aggregator()
    return found


def _refuse_untyped_metric(metric) -> None:
    """A metric in the learners' place (the betas' ``Trainer(model, loss, metric, learners)``)
    must be a graph: a layer not applied yet or an untyped ``@C.Function`` is refused, as
    CNTK 2.7 refuses the call (a RuntimeError; it slices the loss there)."""
    if issubclass(type(metric), Function) or any(     # (typed: a @C.Function's, a layer's)
            getattr(metric, k, None) is not None for k in ("_typed", "_signature")):
        return
    raise RuntimeError(
        "Trainer(model, loss, metric, learners): the metric %r is a Function not typed yet "
        "(a layer not applied, or a @C.Function whose arguments have no types): give the "
        "criterion as (loss, metric) Functions built on the model's inputs"
        % (getattr(metric, "name", "") or getattr(metric, "kind", "") or type(metric).__name__))


def _waits(function) -> bool:
    """Whether ``function`` is a Function over placeholders of unknown shape that Stadyn holds
    no graph of yet (a layer not applied, an untyped ``@C.Function``)."""
    return function is not None and not issubclass(type(function), Function) and any(
        getattr(a, "is_placeholder", False) and a.shape == (-2,)
        for a in getattr(function, "arguments", ()))


def _parameters_of(function) -> tuple:
    """``function``'s parameters; none for an untyped ``@C.Function`` never applied (its
    layers' are known once it is)."""
    try:
        return tuple(function.parameters)
    except ValueError:
        return ()


def _parameter_ids(function) -> set:
    """The ids of the Stadyn parameters ``function`` (a Function, or a Trainer's) reads."""
    return {id(unwrap(p)) for p in _parameters_of(wrap(function))}


def _refuse_shared_parameters(learners) -> None:
    """CNTK 2.7's ValueError where two learners update the same parameter, raised as its
    Learners are made, before the Trainer looks at the model (Utils.cpp:1016-1022, called
    from Trainer.cpp:42): ``Parameter 'Parameter('W', [], [3 x 4])' is covered by 2
    different learners``."""
    seen = set()
    for learner in learners if isinstance(learners, (list, tuple)) else ():
        named = getattr(unwrap(learner), "named_parameters", None)   # (as the native Trainer
        for p in (named().values() if named is not None else ()):    # reads them)
            if id(p) in seen:
                raise ValueError(f"Parameter '{wrap(p)!r}' is covered by 2 different learners")
            seen.add(id(p))


def _parameters_outside(learned, reached: set, model, loss) -> "str | None":
    """Why a Trainer cannot train, where its learners update parameters the loss is not
    computed from (a model other than the one the loss was built on, and the learners given
    its parameters; a parameter only the metric reads; ``reached``: the ids of the loss's,
    :func:`_parameter_ids`): CNTK 2.7 makes such a Trainer (it
    tests and evaluates) and crashes in its first ``train_minibatch`` (a segmentation fault),
    where Stadyn trained on, leaving them as they were.  (A parameter none of the model, the
    loss and the metric reads is refused as the Trainer is made, as CNTK 2.7 refuses it.)
    None where every one is the loss's (a model that is another Function over the loss's
    graph: its root, an inner layer, a clone).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x, y = C.input_variable(3, name="x"), C.input_variable(2, name="y")
        >>> z, other = C.layers.Dense(2)(x), C.layers.Dense(2, name="o")(x)
        >>> loss = C.cross_entropy_with_softmax(z, y)
        >>> reached = _parameter_ids(loss)
        >>> print(_parameters_outside(other.parameters, reached, other, loss).split(":")[1])
         the learners update parameters the loss is not computed from (W, b)
        >>> _parameters_outside(z.parameters, reached, z, loss) is None
        True
    """
    outside = [p for p in learned if id(unwrap(p)) not in reached]
    if not outside:
        return None
    names = ", ".join(wrap(unwrap(p)).name or wrap(unwrap(p)).uid for p in outside)
    return (f"Trainer: the learners update parameters the loss is not computed from ({names}): "
            f"the model is {model!r}, the loss {loss!r}.  CNTK 2.7 crashes training such a "
            "Trainer (a segmentation fault in its first train_minibatch); give the learners the "
            "loss's parameters (loss.parameters), and the Trainer the model the loss is computed "
            "from")


class _Shown(str):
    """An output of CNTK 2.7's Trainer that Stadyn has no object for, as its ``repr``."""

    def __repr__(self) -> str:
        return str(self)


_AGGREGATE_LOSS = _Shown("Output('aggregateLoss', [], [])")
_AGGREGATE_METRIC = _Shown("Output('aggregateEvalMetric', [], [???])")


def _refuse_waiting(trainer, outputs: "list | None") -> None:
    """CNTK 2.7's ValueError for a run of a Trainer whose model waits for its placeholders'
    shapes (they are unbound), or whose metric does (they are arguments no data can be given
    for; naming the outputs it asked for:
    training (``outputs``: those the user asked for) its loss and metric sums and the loss,
    testing (``outputs`` None) its metric sum and the metric)."""
    model = trainer._waiting_model
    if model is not None:       # (CNTK 2.7 runs the model with the criterion: it is unbound)
        raise unbound_placeholders(list(model.placeholders))
    metric = trainer._waiting_metric
    if metric is None:
        return
    if outputs is None:
        asked = [_AGGREGATE_METRIC, *metric.outputs]
    else:
        asked = [_AGGREGATE_LOSS, trainer.loss_function.output, _AGGREGATE_METRIC, *outputs]
    raise not_provided(list(metric.placeholders), asked)


class Trainer(TrainerCheckpoints, WorkerSums, PreviousAverages, _Trainer):
    """``cntk.Trainer(model, (loss, metric), learners, progress_writers)`` -- or
    ``(model, loss, learners)`` without a metric -- or the 2017 betas'
    ``cntk.Trainer(model, loss, metric, learner)``; takes and gives CNTK Functions.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x, y = C.input_variable(3), C.input_variable(2)
        >>> z = C.layers.Dense(2)(x)
        >>> loss = C.cross_entropy_with_softmax(z, y)
        >>> trainer = C.Trainer(z, loss, [C.learners.sgd(z.parameters,
        ...                                         C.learning_parameter_schedule(0.1))])
        >>> trainer.train_minibatch({x: np.ones((4, 3), np.float32), y: np.eye(2)[[0, 1, 0, 1]]})
        True
        >>> trainer.loss_function.shape, trainer.evaluation_function is None
        ((1,), True)
    """

    # CNTK 2.7's progress writers get a metric of 0 from a Trainer without one ("0  0" in the
    # table, "metric = 0.00% * 20" in the lines; Manual_How_to_feed_data)
    _metric_without_one = 0.0
    # an Evaluator (a Trainer of its metric alone, without learners) neither refuses a metric
    # without a Variable to count a loss's samples on nor writes the Trainer ctor's note on
    # parameters no learner covers: CNTK 2.7's Evaluator does neither (Evaluator.cpp:17-50)
    _evaluates_only = False

    def __init__(self, model, criterion, parameter_learners=None, progress_writers=None, *args,
                 **kwargs):
        # (a layer or waiting Function given its types by update_signature: the Function it
        # built, as CNTK 2.7's update_signature makes the layer that Function in place)
        # (a (loss, metric) pair: each of them)
        model, criterion = as_built((model, criterion))
        if isinstance(criterion, Function) and len(criterion.outputs) == 2:
            criterion = tuple(criterion.outputs)     # a (loss, metric)-valued Function
        if not isinstance(criterion, (tuple, list)):
            if isinstance(parameter_learners, Function):   # the betas: loss, metric, learner
                _refuse_untyped_metric(parameter_learners)
                criterion = (criterion, parameter_learners)
                parameter_learners = progress_writers
                progress_writers, args = (args[0], args[1:]) if args else (None, args)
            else:
                criterion = (criterion,)
        _refuse_shared_parameters(parameter_learners)
        # a model or metric over placeholders of unknown shape (a layer not applied, an untyped
        # @C.Function) is taken as CNTK 2.7 takes it: kept as it is, each run refused
        waiting_model = model if _waits(model) else None
        waiting_metric = criterion[1] if len(criterion) > 1 and _waits(criterion[1]) else None
        criterion = tuple(criterion)[:1] if waiting_metric is not None else criterion
        super().__init__(unwrap(None if waiting_model is not None else model),
                         tuple(unwrap(c) for c in criterion),
                         unwrap(parameter_learners), unwrap(progress_writers), *unwrap(args),
                         **kwargs)
        self._waiting_metric, self._waiting_model = waiting_metric, waiting_model
        # (how a test minibatch counts the metric as given, a Variable or a Combine:
        # _test_counted; a waiting metric, cut from the criterion, is refused before any test)
        self._metric_combined = given_as_combine(criterion[1] if len(criterion) > 1 else None)
        if waiting_metric is not None:
            self._metric = waiting_metric
        if waiting_model is not None:
            self._model = waiting_model
        # (a model or loss over placeholders of unknown shape has no graph to count on yet; an
        # Evaluator's metric is counted by its own rule as it is tested: tested_variable)
        trainable = waiting_model is None and not _waits(criterion[0])
        if trainable and not self._evaluates_only:
            refuse_no_sample_count(self._loss, self._counted(self._loss))
        self._uncounted = uncounted_inputs(self.arguments)
        if isinstance(model, Function) and (not isinstance(self.model, Function)
                                            or len(model.outputs) > 1):
            # a Combine of a leaf (C.combine([x])), or of several outputs (a multi-task
            # model, combine([cls, reg])): the model is that Function, as CNTK's
            self._model = model
        model = self.model
        # the model's carried states live as long as the Trainer, as in CNTK, where
        # ``trainer.model`` is one Function: each ``trainer.model`` here is a new Function over
        # the same outputs, which shares the state this holds
        self._model_runs = model._run_state() if model is not None and \
            waiting_model is None else None
        # (the ids of the parameters the loss reads, and those the model, the loss and the
        # metric read)
        reached = _parameter_ids(self.loss_function)
        read = reached.union(*(_parameter_ids(f) for f in (self.model, self.evaluation_function)
                               if f is not None))
        self._refuse_parameters_of_no_function(read)
        if not self._evaluates_only:
            self._note_uncovered_parameters(read)
        # (refused when it trains: CNTK 2.7 makes, tests and evaluates such a Trainer; a
        # parameter only the metric reads, or those of a model the loss is not built on)
        self._untrainable = _parameters_outside(
            self.parameters, reached, model, self.loss_function) if trainable else None
        self._distributed = _distributed_learners(self.parameter_learners)
        # distributed learners of several workers: the counts, losses and metrics are the
        # workers' sums, as CNTK 2.7's (the native Trainer's data_parallel hook)
        self._workers = aggregation(self.parameter_learners)
        if self._workers is not None:
            self.data_parallel = self._workers
        # (a training session's test and cross-validation minibatches: summed over the workers
        # by either kind of distributed learner)
        self._test_workers = test_sums(self.parameter_learners)

    def _refuse_parameters_of_no_function(self, read: set) -> None:
        """CNTK 2.7's ValueError where the learners update a parameter that none of the model,
        the loss and the metric reads (the ids ``read``: ``Trainer ctor: 1 of the learner
        parameters 'Parameter('extra', [], [3])' are not part of the model specified``)."""
        if self._waiting_model is not None or self._waiting_metric is not None:
            return          # (their parameters are not known yet)
        outside = [p for p in self.parameters if id(unwrap(p)) not in read]
        if outside:
            shown = ", ".join(repr(wrap(unwrap(p))) for p in outside)
            raise ValueError(f"Trainer ctor: {len(outside)} of the learner parameters "
                             f"'{shown}' are not part of the model specified")

    def _note_uncovered_parameters(self, read: set) -> None:
        """CNTK 2.7's Trainer ctor notes on stderr how many parameters of the model, loss
        and metric (the ids ``read``) no learner updates (they stay as they are)."""
        learned = {id(unwrap(p)) for p in self.parameters}
        left = len(read - learned)
        if left:
            print(f"[Note:] Trainer ctor: {left} of the model parameters are not covered by any "
                  "of the specified Learners; these parameters will not be learned",
                  file=sys.stderr)

    def train_minibatch(self, arguments, outputs=None, device=None, is_sweep_end=None):
        """Train on one minibatch (``{input: data}``; CNTK's ``(N, 1, ...)`` minibatch data
        too; or ``({input: data}, flags)``: CNTK's sequence-begin flags, one per sequence, a
        False one continuing that sequence from the previous minibatch, see
        :mod:`._sequence_begin`).  A learning rate not reported yet (at the start, and after a
        change) goes to the progress writers first, as CNTK's ``Learning rate per 1 samples:
        0.1``.  A reader's minibatch that ends a sweep (else ``is_sweep_end``) moves schedules
        given per sweep on."""
        _refuse_waiting(self, list(outputs or ()))
        if getattr(self, "_untrainable", None) is not None:
            raise ValueError(self._untrainable)
        arguments, flags = split_flags(arguments)
        refuse_function_keys(arguments)     # (CNTK 2.7's sanitize_var_map: Variables only)
        if self._workers is not None and no_samples(arguments):
            return self._train_nothing()
        if self._block_learner() is not None and no_samples(arguments):
            return self._end_of_data()      # (block momentum: this worker is out of data)
        refuse_no_rows(arguments, "train_minibatch")
        flags = truncated_flags(arguments, flags)
        self._runnable("train", self._outputs)
        if arguments and self._has_float16_parameters():
            halves = [wrap(p) for p in self.parameters if np.dtype(p.dtype) == np.float16]
            raise RuntimeError(
                f"train_minibatch: the float16 parameters {halves[:3]} are not trained on a "
                "CPU (CNTK 2.7: Unsupported data format; eval, forward, backward and grad run "
                "in float16): give the parameters dtype=np.float32")
        if arguments and self.progress_writers:
            self._report_learning_rates()
        if isinstance(arguments, dict):
            ends = [v.end_of_sweep for v in arguments.values()
                    if isinstance(v, _io.MinibatchData)]
            is_sweep_end = any(ends) if ends else is_sweep_end
        if flags is not None and not all(flags) and not self.__dict__.get("_trained"):
            # CNTK 2.7 builds the network it trains with at the first train_minibatch: test
            # minibatches before it leave it no previous minibatch to go on from
            raise SequenceBeginError(
                f"train_minibatch: sequence-begin flags {flags} continue {len(flags)} "
                "sequences from the previous minibatch, which had no minibatch: this is the "
                "Trainer's first train_minibatch, and test_minibatch calls before it do not "
                "count (CNTK 2.7: No matching sequence found in the saved previous MBLayout)")
        begins = self._begins(arguments, flags, "train_minibatch")
        mine = list(outputs or ())
        carried = begins.wanted() if begins is not None else []      # the states' values
        with carrying(begins), self._checked("train").run(backward=True):
            data = plain_minibatch(arguments, self._uncounted)
            updated, values = self._train_minibatch(data, mine, is_sweep_end, carried)
        self._trained = bool(arguments) or self.__dict__.get("_trained", False)
        if arguments and is_sweep_end:
            self._sweeps_seen = self.__dict__.get("_sweeps_seen", 0) + 1
        if arguments and len(self._distributed) > 1 and \
                not any(x.is_metric_aggregator() for x in self._distributed):
            # (CNTK 2.7 raises after the update: the parameters and counts have moved on)
            raise RuntimeError("Update failed: Metric aggregation did not happen, none of the "
                               "learners was marked as metric aggregator.")
        # (as CNTK 2.7's Trainer, through eval's conversion: a sequence output one array per
        # sequence, its steps only, the sequences never padded to the longest)
        return (updated, {o: output_value(unwrap(o), values[o]) for o in mine}) \
            if mine and updated else updated

    def _step_learners(self, samples: int) -> None:
        # CNTK 2.7's learners update only the rows a sparse input touched of a weight it
        # multiplies (see _sparse_gradients); a worker's rows are its own: not told there
        if self.data_parallel is None:
            tell_row_sparse(self)
        super()._step_learners(samples)

    def total_number_of_units_seen(self, unit=1) -> int:
        """The samples (by default, as CNTK 2.7's ``DataUnit.sample``), minibatches or sweeps
        (``DataUnit``) trained on so far (a sweep: a minibatch ending one, by its reader or
        ``is_sweep_end``).

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> x, y = C.input_variable(3), C.input_variable(2)
            >>> z = C.layers.Dense(2)(x)
            >>> trainer = C.Trainer(z, C.cross_entropy_with_softmax(z, y),
            ...                     [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
            >>> _ = trainer.train_minibatch({x: np.ones((2, 3)), y: np.eye(2)}, is_sweep_end=True)
            >>> [trainer.total_number_of_units_seen(u) for u in C.DataUnit]
            [2, 1, 1]
        """
        counts = {1: self.total_number_of_samples_seen, 2: self.minibatches_seen,  # DataUnit's
                  0: self.__dict__.get("_sweeps_seen", 0)}     # sample, minibatch, sweep
        if self.__dict__.get("_distributed"):
            # (CNTK 2.7 counts by the first learner: a distributed one -- data parallel or
            # block momentum, of one worker or several -- counts samples only, its minibatches
            # and sweeps stay 0; measured under mpiexec)
            counts[0] = counts[2] = 0
        if int(unit) not in counts:
            raise ValueError(f"total_number_of_units_seen: {unit!r} is no DataUnit")
        return counts[int(unit)]

    def print_node_timing(self) -> None:
        """Accepted for compatibility: Stadyn keeps no per-node timings."""

    def _runnable(self, run: str, roots) -> None:
        """Raise where CNTK 2.7 refuses to run the graph of ``roots`` (see :mod:`._run_checks`;
        checked at the first ``run`` and again only where the graph could have changed)."""
        checks = self.__dict__.setdefault("_runnable_checks", {})
        check = checks.get(run)
        if check is None:
            check = checks[run] = RunnableCheck()
        check(roots, each_run=False)    # (before the minibatch is fed: see _feed)

    def _feed(self, arguments, needed, what: str) -> int:
        """The native Trainer's feeding, then the checks of the minibatch's data CNTK 2.7
        makes before it runs (a slice's range against a free dimension's length:
        :func:`._run_checks.check_each_run`).  Sequences of different layouts on the same
        axes are refused first, named in the order of the Trainer's arguments as CNTK 2.7
        names them."""
        refuse_layouts_that_differ(arguments, self.arguments)
        samples = super()._feed(arguments, needed, what)
        check = self.__dict__.get("_runnable_checks", {}).get(
            "train" if what == "train_minibatch" else "test")
        if check is not None:
            check.check_data()
        return samples

    def _checked(self, run: str) -> CheckedLatch:
        """Whether the ``run`` (``train``, ``test``) minibatches are checked for NaN: CNTK's
        checked mode as it was at the first of them, when CNTK 2.7 builds the network it
        runs (see :mod:`._checked_mode`)."""
        latches = self.__dict__.setdefault("_checked_latches", {})
        latch = latches.get(run)
        if latch is None:
            latch = latches[run] = CheckedLatch()
        return latch

    def _has_float16_parameters(self) -> bool:
        """Whether a learner updates a float16 parameter (CNTK 2.7 trains none on a CPU);
        looked up once, as the learners' parameters are fixed."""
        has = self.__dict__.get("_float16_parameters")
        if has is None:
            has = self._float16_parameters = any(np.dtype(p.dtype) == np.float16
                                                 for p in self.parameters)
        return has

    def _begins(self, arguments, flags, what: str):
        """The recurrences' states set for a minibatch with sequence-begin ``flags``, or None
        where the graph has no recurrence.  Made at the Trainer's first minibatch and kept
        through every minibatch, flagged or not, as CNTK keeps them: a False flag goes on
        from the previous minibatch whether it came with flags or not."""
        begins = self.__dict__.get("_sequence_begins")
        if begins is None:
            begins = self._sequence_begins = SequenceBegins(self._outputs)
        if not begins.carries or not arguments:
            return None
        if what == "test_minibatch":      # the metric's recurrences: those its graph runs
            part = self.__dict__.get("_metric_begins")
            if part is None:
                part = self._metric_begins = begins.within([self._metric_sum])
            begins = part
            if not begins.carries:
                return None
        if flags is not None and len(flags) != sequence_count(arguments):
            raise ValueError(f"{what}: {len(flags)} sequence-begin flags for a "
                             f"minibatch of {sequence_count(arguments)} sequences")
        begins.begin(flags, what, truncated_slots(arguments) if flags is not None else None)
        return begins

    def _report_learning_rates(self) -> None:
        """CNTK's learners write their learning rate when it changes, and momentum_sgd its
        momentum (``Momentum per minibatch: 0.9``; not nesterov, adam or fsadagrad; a
        distributed learner's momentum is not written)."""
        from .learners import _learning_rate_unit as learning_rate_unit
        reported = self.__dict__.setdefault("_reported_rates", {})
        for learner in self.parameter_learners:
            unit = learning_rate_unit(learner)
            if unit is None:
                continue
            lines = [(id(learner), unit, learner.learning_rate())]
            if isinstance(learner, _Learner) and learner.name == "momentum_sgd":
                momentum, per = learner.schedule_value("momentum")
                lines.append(((id(learner), "momentum"), "Momentum per minibatch" if per == 0
                              else f"Momentum per {per} samples", momentum))
            for key, name, value in lines:
                if reported.get(key) != (name, value):
                    reported[key] = (name, value)
                    for writer in self.progress_writers:
                        writer.write(name, value)

    @staticmethod
    def _get_loss_metric(criterion) -> tuple:
        """``(loss, metric)`` Functions of a criterion (a Function of one or two outputs, or a
        tuple), the metric None when there is none: CNTK's private helper, which CNTK's
        ``Sequence2Sequence.py`` and ``ConvNet_CIFAR10_DataAug.py`` call to build an evaluator.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> x = C.input_variable(2)
            >>> loss, metric = C.Trainer._get_loss_metric(C.combine([x * 2.0, x + 1.0]))
            >>> loss.shape, metric.shape
            ((2,), (2,))
        """
        if isinstance(criterion, Function):
            criterion = criterion.outputs
        criterion = tuple(c if isinstance(c, Function) else wrap(unwrap(c)) for c in criterion)
        if len(criterion) == 1:
            return criterion + (None,)
        if len(criterion) != 2:
            raise ValueError("criterion parameter must be a singleton or a tuple of 2 elements")
        return criterion

    def test_minibatch(self, arguments, device=None):
        """The metric's average over one minibatch (``{input: data}``, or with CNTK's
        sequence-begin flags ``({input: data}, flags)``: a False one continues that sequence
        from where the Trainer's previous minibatch, trained or tested, left it, as
        :meth:`train_minibatch` does)."""
        _refuse_waiting(self, None)
        arguments, flags = split_flags(arguments)
        refuse_function_keys(arguments)     # (CNTK 2.7's sanitize_var_map: Variables only)
        refuse_no_rows(arguments, "test_minibatch")
        flags = truncated_flags(arguments, flags)
        if self._metric_sum is None:     # (the data checked first, its layouts after: CNTK's)
            plain_minibatch(arguments, None)
            raise NoMetricError(
                "Evaluator::TestMinibatch: Cannot test when no evaluation function was "
                "specified during construction.\n(this Trainer was made without a metric: give "
                "Trainer(model, (loss, metric), ...) to test)")
        self._runnable("test", [self._metric_sum])
        begins = self._begins(arguments, flags, "test_minibatch")
        with self._checked("test").run():
            if begins is None:
                return super().test_minibatch(plain_minibatch(arguments, self._uncounted), device)
            with carrying(begins):
                return self._test(plain_minibatch(arguments, self._uncounted), begins.wanted())

    def _minibatch_data(self, arguments):
        return plain_minibatch(arguments, self._uncounted)

    def _fed(self, leaf):
        # the leaves sequence-begin flags splice into a recurrence (where a Function of the
        # model ran with flags before this Trainer was made) are set by the runs, not fed
        return not is_splice_leaf(leaf)

    def _test_counted(self):
        # CNTK 2.7 counts a test minibatch on the metric, or where it is one number on its root
        # function's first input (Evaluator.cpp:38-46), not by the loss's rule (no walk)
        return tested_variable(self._metric_output, self._metric_combined)

    def _test_sample_count(self, counted, fed: int) -> int:
        # (Evaluator::GetSampleCount, Evaluator.cpp:67-76: the value's size past the
        # Variable's own axes: one for a Variable without dynamic axes)
        if BATCH(counted) or counted.sequence_lengths is not None:
            return super()._test_sample_count(counted, fed)
        return 1

    def _counted(self, criterion):
        cache = self.__dict__.setdefault("_counted_variables", {})
        key = id(criterion)
        if key not in cache:
            cache[key] = (criterion, counted_variable(criterion))
        return cache[key][1]

    @property
    def parameter_learners(self) -> tuple:
        """The learners, a tuple (as CNTK 2.7's)."""
        return tuple(self.__dict__["_parameter_learners"])

    @parameter_learners.setter
    def parameter_learners(self, learners) -> None:
        self.__dict__["_parameter_learners"] = list(learners)

    # The native Trainer keeps Stadyn Variables; CNTK code gets Functions.
    model = _as_function("_model", "The model Function given to the Trainer.")
    loss_function = _as_function("_loss", "The loss Function (one value per sample).")
    evaluation_function = _as_function("_metric", "The metric Function, or None.")

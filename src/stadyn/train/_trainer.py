"""CNTK's Trainer: summed-loss minibatch training of a static graph with learners.

``Trainer(model, (loss, metric), learners, progress_writers)`` (or the 2017 beta's
``Trainer(model, loss, metric, learner)``).  ``train_minibatch`` feeds the inputs, runs the static
graph of ``sum(loss)`` (and ``sum(metric)``) forward and backward, and lets each learner update
its parameters from the **summed** gradient of the minibatch and its sample count, as CNTK does.
``test_minibatch`` evaluates the metric in the inference phase (dropout off, batch normalisation
on running statistics) and returns the mean per sample.
"""

from __future__ import annotations

import math
import os
from typing import Mapping, Sequence

import torch

from .. import functions as F
from .._errors import StadynError
from ..graph import (Subgraph, Variable, data_of, check_numerics, forward_all, is_lengths,
                     numerics_enabled, training)
from ..solvers import Optimizer
from ._checkpoint import read_checkpoint, write_checkpoint
from ._evaluate import evaluate_sums
from ._feeding import (FeedingPlans, _class_id_inputs, count_roots, feed_minibatch, loss_axis,
                       sample_count)
from ._feeding import unwrap_input as _unwrap
from ._fit import NonFiniteLossError, _NonFiniteLoss, fit

__all__ = ["Trainer", "NonFiniteLossError", "NoMetricError"]


class NoMetricError(StadynError, ValueError):
    """``test_minibatch`` or ``evaluate`` of a Trainer made without a metric (an evaluation
    function): there is nothing to test.  A ``ValueError`` too, as CNTK 2.7 raises."""


def _total(v: Variable) -> Variable:
    """The sum of a loss or metric over the minibatch (over each sequence's real steps)."""
    if v.sequence_lengths is not None:
        v = F.sequence_reduce_sum(v, v.sequence_lengths)
    return F.sum(v)


class Trainer:
    """Train a model with learners on minibatches, CNTK style (see the module docstring).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F, stadyn.layers as L
        >>> from stadyn.train import Trainer
        >>> import stadyn.solvers as S
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     x, y = sd.Variable((4, 3)), sd.Variable((4, 2))
        ...     z = L.Dense(2)(x)
        ...     loss = F.cross_entropy_with_softmax(z, y)
        ...     err = F.classification_error(z, y)
        ...     solver = S.Sgd(lr=0.1); solver.set_parameters(sd.get_parameters())
        ...     trainer = Trainer(z, (loss, err), [solver])
        ...     trainer.train_minibatch({x: np.ones((4, 3)), y: np.eye(2)[[0, 1, 0, 1]]})
        True
        >>> trainer.previous_minibatch_sample_count
        4
    """

    # the metric the progress writers get from a trainer without one: None (no metric column);
    # compat.cntk's Trainer says 0.0, as CNTK 2.7's native Trainer reports it
    _metric_without_one: float | None = None
    # the ids of inputs that hold no samples, fed as they are and not counted (a front end's
    # inputs without a batch axis: compat.cntk's ``dynamic_axes=[]``)
    _uncounted: frozenset = frozenset()

    def __init__(self, model: Variable | None, criterion, parameter_learners=None,
                 progress_writers=None, *args, data_parallel=None, compile: bool | str = False,
                 check_numerics: bool = False):
        if not isinstance(criterion, (tuple, list)) and not _are_learners(parameter_learners):
            # The 2017 beta: Trainer(model, loss, metric, learner); CNTK 2.x's
            # Trainer(model, loss, learners) is read as such when learners are given third.
            metric, learners = parameter_learners, progress_writers
            progress_writers = args[0] if args else None
            criterion = (criterion, metric)
            parameter_learners = learners
        elif not isinstance(criterion, (tuple, list)):
            criterion = (criterion,)
        loss, metric = (tuple(criterion) + (None,))[:2]
        self.model = model
        self.loss_function: Variable = loss
        self.evaluation_function: Variable | None = metric
        self._metric_output = metric        # (a front end may read evaluation_function wrapped)
        if parameter_learners is None:
            raise StadynError("Trainer: give at least one learner")
        self.parameter_learners: list[Optimizer] = list(parameter_learners) if isinstance(
            parameter_learners, (list, tuple)) else [parameter_learners]
        for k, learner in enumerate(self.parameter_learners):
            if not isinstance(learner, Optimizer):
                raise StadynError(f"Trainer: learner {k + 1} is a {type(learner).__name__}, not "
                                  "an optimizer (a stadyn.learners learner, a stadyn.solvers "
                                  "solver or a ScheduledSolver)")
        writers = progress_writers or []
        self.progress_writers = list(writers) if isinstance(writers, (list, tuple)) else [writers]
        self._loss_sum = _total(loss)
        self._metric_sum = _total(metric) if metric is not None else None
        self._outputs = [self._loss_sum] + ([self._metric_sum] if metric is not None else [])
        params = {id(p) for p in self.parameters}
        graph = Subgraph(self._outputs)
        self._class_id_inputs = _class_id_inputs(graph.nodes)
        self.arguments: list[Variable] = [v for v in graph.inputs if id(v) not in params
                                          and not is_lengths(v)    # fed with their sequences
                                          and self._fed(v)]
        metric_leaves = {id(v) for v in Subgraph([self._metric_sum]).leaves} \
            if self._metric_sum is not None else set()
        self._metric_arguments = [v for v in self.arguments if id(v) in metric_leaves]
        self.total_number_of_samples_seen = 0
        self.previous_minibatch_sample_count = 0
        self.previous_test_sample_count = 0     # the metric's samples in the last test_minibatch
        # The last minibatch's loss and metric sums (over every worker's samples when training
        # data-parallel): floats, or 0-d tensors read on first use (the previous_minibatch_*
        # properties), so a step nobody reads the loss of does not wait for the device.
        self._loss_value: float | torch.Tensor = float("nan")
        self._metric_value: float | torch.Tensor | None = None
        self.minibatches_seen = 0
        # per set of input keys: the feeding plan, checked once, and the loss's sequence axis
        self._feed_plans = FeedingPlans(
            self._class_id_inputs, self._missing_message,
            lambda plan: loss_axis(self._counted(_unwrap(self.loss_function)), plan))
        self._count_loss_steps = False   # the loss's steps are computed (see _feed)
        # Data-parallel training (stadyn.distributed): the object broadcasts the parameters now,
        # sums gradients and sample counts over the workers after each backward, and says whether
        # this process is the one that writes progress.
        self.data_parallel = data_parallel
        if data_parallel is not None:
            data_parallel.broadcast_parameters(self._named_parameters())
        # compile=True: forward + backward + update as one program compiled by torch.compile;
        # compile="program": the same program without torch.compile (no compile time).
        self._step = None
        self._steps: dict = {}      # compiled steps by the extra outputs they compute
        # check_numerics=True: every step runs under sd.check_numerics(), so the first op that
        # makes a NaN or an infinity raises NumericsError naming it (a compiled program has no
        # ops to name: the two do not go together).
        self.check_numerics = bool(check_numerics)
        if compile and self.check_numerics:
            raise StadynError("Trainer(check_numerics=True) names the op that made a NaN, which "
                              "a compiled program cannot; use compile=False while hunting it")
        if compile:
            if len(self.parameter_learners) != 1 or data_parallel is not None:
                raise StadynError("Trainer(compile=...) needs exactly one learner and no "
                                  "data-parallel synchronisation between backward and update")
            from ..compile import compile_step
            extra = [self._metric_sum] if self._metric_sum is not None else []
            self._step = self._steps[()] = compile_step(
                self._loss_sum, self.parameter_learners[0], extra, compile=compile is True)

    # -- minibatches ----------------------------------------------------------------------------
    def _feed(self, arguments, needed: Sequence[Variable], what: str) -> int:
        if isinstance(arguments, Mapping):
            keys, values = list(arguments), arguments.values()
        else:
            values = list(arguments) if isinstance(arguments, (list, tuple)) else [arguments]
            if len(values) != len(self.arguments):
                raise StadynError(f"Trainer: {len(values)} arrays given for "
                                  f"{len(self.arguments)} inputs")
            keys = self.arguments
        plan, axis = self._feed_plans.plan(keys, needed, what)
        # CNTK counts the loss's samples: a loss per step counts its steps, those of the input
        # its sequence axis comes from (counted again once the loss is computed where its
        # lengths are computed: a slice of the labels); a loss per sequence its sequences
        lengths = self._counted(_unwrap(self.loss_function)).sequence_lengths
        self._count_loss_steps = lengths is not None and axis is not lengths
        return feed_minibatch(plan, values, axis, self._uncounted)

    def _missing_message(self, missing: list[Variable], what: str) -> str:
        """The error for inputs left out of ``Trainer.<what>``'s data (an input left out would
        silently keep the previous minibatch's data)."""
        left_out = {id(v) for v in missing}
        named = [f"input {k + 1} of {len(self.arguments)} {v!r}"
                 for k, v in enumerate(self.arguments) if id(v) in left_out]
        return (f"Trainer.{what}: no data for {', '.join(named)}; give a value for every "
                f"input it reads")

    def train_minibatch(self, arguments, outputs: Sequence[Variable] | None = None,
                        device=None, is_sweep_end: bool | None = None):
        """One training step on ``arguments`` (``{input: data}`` or a list in the order of
        :attr:`arguments`).  Returns False (doing nothing) for an empty minibatch, else True;
        with ``outputs`` (Variables of the graph, computed with the step, before the update) the
        pair ``(True, {output: array})``, as CNTK's.  A minibatch that ends a data sweep (a
        reader's ``end_of_sweep``; for arrays, ``is_sweep_end``) moves the learners' schedules
        given per sweep on (:meth:`stadyn.learners.Learner.end_sweep`)."""
        outputs = list(outputs or ())
        updated, values = self._train_minibatch(arguments, outputs, is_sweep_end)
        return (updated, values) if outputs and updated else updated

    def _train_minibatch(self, arguments, outputs: Sequence[Variable],
                         is_sweep_end: bool | None = None,
                         computed: Sequence[Variable] = ()) -> tuple[bool, dict]:
        """:meth:`train_minibatch` with one kind of result whatever was asked for, for front
        ends that ask for outputs of their own: ``(updated, {output: array})``, the dict empty
        when ``outputs`` is (or the minibatch was, when nothing is updated); ``computed``:
        Variables computed with the step too, their values left in their ``.d`` (not
        copied)."""
        if not arguments:
            return False, {}
        self._train(arguments, list(outputs) + list(computed), finite_only=False)
        if _ends_sweep(arguments, is_sweep_end):
            for learner in self.parameter_learners:
                learner.end_sweep()
        return True, {o: _unwrap(o).d.copy() for o in outputs}

    def _train(self, arguments, outputs: Sequence[Variable], finite_only: bool) -> None:
        """The step; with ``finite_only`` a NaN or infinite loss raises :class:`_NonFiniteLoss`
        before the learners update (a compiled step has updated by then)."""
        if self.check_numerics and not numerics_enabled():
            with check_numerics():
                return self._train(arguments, outputs, finite_only)
        samples = self._feed(arguments, self.arguments, "train_minibatch")
        extra = [_unwrap(o) for o in outputs]
        if self._step is not None:
            with training(True):
                self._compiled(extra)(samples)
            self._after_step(samples, finite_only)
            return
        for learner in self.parameter_learners:
            learner.zero_grad()
        steps = [self._counted(_unwrap(self.loss_function)).sequence_lengths] \
            if self._count_loss_steps else []
        with training(True):
            forward_all(self._outputs + extra + steps, clear_no_need_grad=True)
            self._loss_sum.backward(clear_buffer=True)
        if steps:
            samples = int(steps[0].d.sum())
        # detached: a dynamic-mode loss needs grad, and float() of one warns
        self._loss_value, self._metric_value = data_of(self._loss_sum).detach(), (
            data_of(self._metric_sum).detach() if self._metric_sum is not None else None)
        if self.data_parallel is not None:
            # The global minibatch is the sum of the workers' minibatches (CNTK): learners get
            # the summed gradient and the global sample count, so per-sample rates keep meaning.
            samples, self._loss_value, self._metric_value = self.data_parallel.synchronize(
                self.parameters, samples, float(self._loss_value),
                None if self._metric_value is None else float(self._metric_value))
        if finite_only and not math.isfinite(self.previous_minibatch_loss_sum):
            raise _NonFiniteLoss(self.previous_minibatch_loss_sum)
        self._step_learners(samples)
        self._after_step(samples, False)

    def _train_nothing(self) -> bool:
        """This worker's share of the minibatch is empty (CNTK's randomizer deals whole chunks
        to the workers, so a small file can leave one without data): it still takes its part
        in summing the other workers' gradients, sample count, loss and metric, and updates with
        them, as a cntk.exe worker does; False (nothing trained) when no worker had samples."""
        for learner in self.parameter_learners:
            learner.zero_grad()
        samples, loss, metric = self.data_parallel.synchronize(
            self.parameters, 0, 0.0, None if self._metric_sum is None else 0.0)
        if not samples:
            self.previous_minibatch_sample_count = 0
            return False
        self._loss_value, self._metric_value = loss, metric
        self._step_learners(samples)
        self._after_step(samples, False)
        return True

    def _step_learners(self, samples: int) -> None:
        """The learners' update for a minibatch of ``samples`` (all workers'); a
        ``data_parallel`` hook with ``step_learners`` (block momentum's: each worker updates
        alone, by its own samples) does it itself."""
        step = getattr(self.data_parallel, "step_learners", None)
        if step is not None:
            return step(self.parameter_learners, samples)
        for learner in self.parameter_learners:
            # (through its class: a learner subclass's own attribute of that name, a CNTK
            # UserLearner's ``self.step = 0.02``, is the user's, not the update)
            type(learner).step(learner, samples)

    def _compiled(self, outputs: list[Variable]):
        """The compiled step that also computes ``outputs`` (one per set of outputs asked
        for; each is traced, and compiled, the first time it is asked for)."""
        key = tuple(map(id, outputs))
        step = self._steps.get(key)
        if step is None:
            from ..compile import compile_step
            base = self._steps[()]
            step = self._steps[key] = compile_step(
                self._loss_sum, base.solver, base.outputs + outputs, compile=base.compile)
        return step

    def _after_step(self, samples: int, finite_only: bool) -> None:
        """Count the step and tell the progress writers.  The loss and metric stay tensors
        (read when someone reads them: the writers, ``finite_only``, the properties); a
        compiled step's may be overwritten by its next replay, so those are copied."""
        if self._step is not None:
            self._loss_value = data_of(self._loss_sum).detach().clone()
            self._metric_value = (data_of(self._metric_sum).detach().clone()
                                  if self._metric_sum is not None else None)
            if finite_only and not math.isfinite(self.previous_minibatch_loss_sum):
                raise _NonFiniteLoss(self.previous_minibatch_loss_sum)
        self.previous_minibatch_sample_count = samples
        self.total_number_of_samples_seen += samples
        self.minibatches_seen += 1
        writers = self._writers()
        if writers:
            lr = self.learning_rate()
            loss_sum, metric_sum = (self.previous_minibatch_loss_sum,
                                    self.previous_minibatch_evaluation_sum)
            if metric_sum is None:
                metric_sum = self._metric_without_one
            for writer in writers:
                writer.update_training(loss_sum, samples, metric_sum, lr)

    # -- the last minibatch's figures (read lazily) ---------------------------------------------
    @property
    def previous_minibatch_loss_sum(self) -> float:
        """The loss summed over the last minibatch's samples (NaN before the first)."""
        if isinstance(self._loss_value, torch.Tensor):
            self._loss_value = float(self._loss_value)      # the wait for the device, if any
        return self._loss_value

    @property
    def previous_minibatch_evaluation_sum(self) -> float | None:
        """The metric summed over the last minibatch's samples (None without a metric)."""
        if isinstance(self._metric_value, torch.Tensor):
            self._metric_value = float(self._metric_value)
        return self._metric_value

    @property
    def previous_minibatch_loss_average(self) -> float:
        """The mean loss per sample of the last minibatch (CNTK's)."""
        loss, samples = self.previous_minibatch_loss_sum, self.previous_minibatch_sample_count
        return loss / samples if samples else float("nan")

    @property
    def previous_minibatch_evaluation_average(self) -> float | None:
        """The mean metric per sample of the last minibatch (None without a metric)."""
        metric = self.previous_minibatch_evaluation_sum
        if metric is None or not self.previous_minibatch_sample_count:
            return metric
        return metric / self.previous_minibatch_sample_count

    def _writers(self) -> list:
        """Only the main process writes progress when training data-parallel."""
        if self.data_parallel is not None and not self.data_parallel.is_main:
            return []
        return self.progress_writers

    def test_minibatch(self, arguments, device=None) -> float:
        """The mean metric per sample on ``arguments``, in the inference phase.  The samples
        are the metric's (CNTK's rule): a sequence classifier's sequences, a tagger's steps;
        their number is kept in ``previous_test_sample_count``."""
        return self._test(arguments, ())

    def _test(self, arguments, outputs: Sequence[Variable]) -> float:
        """:meth:`test_minibatch`, computing ``outputs`` (Variables of the metric's graph)
        too: their values are in their ``.d`` afterwards."""
        if self._metric_sum is None:
            raise NoMetricError("Trainer.test_minibatch: this Trainer was made without an "
                                "evaluation function (a metric), so there is nothing to test "
                                "(give Trainer(model, (loss, metric), ...))")
        samples = self._feed(arguments, self._metric_arguments, "test_minibatch")
        metric = self._test_counted()
        with training(False), torch.no_grad():
            forward_all([self._metric_sum] + count_roots(metric) + list(outputs),
                        clear_buffer=True)
        samples, metric_sum = self._test_sums(self._test_sample_count(metric, samples),
                                              float(self._metric_sum.d))
        self.previous_test_sample_count = samples
        for writer in self._writers():
            writer.update_test(metric_sum, samples)
        return metric_sum / samples

    def _test_sums(self, samples: int, metric_sum: float) -> tuple[int, float]:
        """A test minibatch's ``(samples, metric_sum)`` as reported: this process's here (a
        front end whose workers test together sums them over the workers)."""
        return samples, metric_sum

    def learning_rate(self) -> float:
        """The first learner's current learning rate (in its own unit)."""
        return float(self.parameter_learners[0].learning_rate())

    def summarize_training_progress(self) -> None:
        """The progress writers' epoch summaries (with the metric where the trainer has
        one)."""
        for writer in self._writers():
            writer.summarize_training_progress(self._metric_sum is not None
                                               or self._metric_without_one is not None)

    def summarize_test_progress(self) -> None:
        for writer in self._writers():
            writer.summarize_test_progress()

    @property
    def parameters(self) -> list[Variable]:
        """The parameters the learners update."""
        return [p for learner in self.parameter_learners
                for p in learner.named_parameters().values()]

    # -- one call: epochs over a reader ---------------------------------------------------------
    fit = fit       # the epoch loop: train/_fit.py

    def evaluate(self, source, input_map: Mapping | None = None,
                 minibatch_size: int = 256) -> float:
        """The mean metric per sample over one sweep of ``source`` (inference phase; each
        minibatch counted and reported to the progress writers as :meth:`test_minibatch` does:
        by the metric's samples).  The loop
        is :func:`~stadyn.train.evaluate_sums`."""
        if self._metric_sum is None:
            raise NoMetricError("Trainer.evaluate: this Trainer was made without an evaluation "
                                "function (a metric), so there is nothing to evaluate "
                                "(give Trainer(model, (loss, metric), ...))")
        input_map = self._input_map(source, input_map)
        writers = self._writers()

        def report(record: dict) -> None:
            for writer in writers:
                writer.update_test(record["sums"][0], record["samples"])
        result = evaluate_sums([self._metric_sum], source, input_map,
                               minibatch_size=minibatch_size, on_minibatch=report,
                               convert=self._minibatch_data,
                               count=self._test_counted(),
                               count_samples=self._test_sample_count)
        self.summarize_test_progress()
        return result["sums"][0] / max(result["samples"], 1)

    def _fed(self, leaf: Variable) -> bool:
        """Whether a leaf of the criteria (not a parameter) is an input the minibatches feed:
        every one.  A front end whose runs set some leaves themselves overrides it (the CNTK
        layer: the leaves sequence-begin flags splice into a recurrence)."""
        return True

    def _counted(self, criterion: Variable) -> Variable:
        """The Variable whose samples a minibatch counts for ``criterion`` (the loss or the
        metric): the criterion itself.  A front end whose criteria may be one number for the
        whole minibatch overrides it (the CNTK layer: CNTK's rule for those)."""
        return criterion

    def _test_counted(self) -> Variable:
        """The Variable whose samples a test minibatch counts: the metric's
        (:meth:`_counted`).  A front end that counts a test otherwise overrides it (the CNTK
        layer: CNTK's Evaluator's rule for a metric that is one number)."""
        return self._counted(self._metric_output)

    def _test_sample_count(self, counted: Variable, fed: int) -> int:
        """The samples of a test minibatch, ``counted`` (:meth:`_test_counted`) just computed
        and ``fed`` samples fed: :func:`sample_count`'s.  A front end whose Variables may
        hold no samples overrides it (the CNTK layer: one without dynamic axes is one)."""
        return sample_count(counted, fed)

    def _minibatch_data(self, arguments):
        """Minibatch data as given to train/test_minibatch, as this Trainer feeds it (a front
        end's Trainer may reshape it: the CNTK layer's)."""
        return arguments

    def _input_map(self, source, input_map: Mapping | None) -> Mapping:
        if input_map is None:
            raise StadynError("Trainer.fit/evaluate: give input_map={input: source.streams.name, "
                              "...} mapping each model input to a stream of the source")
        return input_map

    # -- checkpoints ----------------------------------------------------------------------------
    def save_checkpoint(self, filename: str | os.PathLike, external_state: Mapping | None = None
                        ) -> None:
        """Write parameters, learner states, the trainer's counters, the random generators'
        states and ``external_state`` (a JSON-able mapping: reader position, epoch, ...) to one
        file, atomically (see :mod:`stadyn.train._checkpoint`)."""
        write_checkpoint(self, filename, external_state)

    def restore_from_checkpoint(self, filename: str | os.PathLike) -> dict:
        """Restore what :meth:`save_checkpoint` wrote; returns the external state.  Every part
        is checked before anything is restored; a problem is one
        :class:`~stadyn.ModelFileError` naming the file, and the trainer is left as it was."""
        return read_checkpoint(self, filename)

    def _named_parameters(self) -> dict[str, Variable]:
        """Every parameter the trainer touches, trainable or not (running statistics too)."""
        named: dict[str, Variable] = {}
        for p in self.parameters:
            named[p.graph_name or f"#{len(named)}"] = p
        for v in Subgraph(self._outputs).parameters:
            named.setdefault(v.graph_name, v)
        return named


def _are_learners(value) -> bool:
    """Whether ``value`` is an optimizer or a non-empty list of them (CNTK 2.x's third
    argument, as opposed to the 2017 beta's metric)."""
    if isinstance(value, (list, tuple)):
        return bool(value) and all(isinstance(v, Optimizer) for v in value)
    return isinstance(value, Optimizer)


def _ends_sweep(arguments, is_sweep_end: bool | None) -> bool:
    """Whether a minibatch ends a data sweep: a reader's data says so (``is_sweep_end`` is then
    ignored, as CNTK ignores it); arrays have ``is_sweep_end``."""
    values = list(arguments.values() if isinstance(arguments, Mapping) else arguments)
    said = [v.end_of_sweep for v in values if hasattr(v, "end_of_sweep")]
    return any(said) if said else bool(is_sweep_end)

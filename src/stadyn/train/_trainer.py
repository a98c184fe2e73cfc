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
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from .. import functions as F
from .._errors import DataError, StadynError
from ..graph import (Subgraph, Variable, check_numerics, forward_all, is_lengths,
                     numerics_enabled, training)
from ..solvers import Optimizer
from ._checkpoint import read_checkpoint, write_checkpoint
from ._fit import NonFiniteLossError, _NonFiniteLoss, fit

__all__ = ["Trainer", "NonFiniteLossError"]


def _as_array(value: Any) -> np.ndarray | torch.Tensor:
    """Minibatch data (a reader's MinibatchData, a NumPy array, a tensor) as an array."""
    if isinstance(value, torch.Tensor):
        return value
    if hasattr(value, "asarray") and callable(value.asarray):
        return np.asarray(value.asarray())
    if hasattr(value, "data") and not isinstance(value, np.ndarray):
        return np.asarray(value.data)
    return np.asarray(value)


def _loss_axis(loss: Variable, axes: dict) -> int | None:
    """The id of the input lengths (among ``axes``) that the loss's sequence axis comes from
    (the loss's own lengths, or those they are computed from: a slice of the labels)."""
    stack, seen = [loss.sequence_lengths], set()
    while stack:
        v = stack.pop()
        if v is None or id(v) in seen:
            continue
        seen.add(id(v))
        if id(v) in axes:
            return id(v)
        if v.parent is not None:
            stack.extend(i for i in v.parent.inputs if i.dtype == v.dtype)
    return None


def _feed_sequences(var: Variable, value: Any) -> int:
    """Feed a sequence input: a list of arrays (one per sequence), a reader's sequence stream
    (padded data with lengths) or an array of equal-length sequences; returns the steps."""
    lengths = getattr(value, "lengths", None)
    if lengths is not None and not isinstance(value, (list, tuple)):
        value = value.as_sequences()
    elif not isinstance(value, (list, tuple)):
        value = list(_as_array(value))
    var.d = list(value)
    return int(var.sequence_lengths.d.sum())


def _total(v: Variable) -> Variable:
    """The sum of a loss or metric over the minibatch (over each sequence's real steps)."""
    if v.sequence_lengths is not None:
        v = F.sequence_reduce_sum(v, v.sequence_lengths)
    return F.sum(v)


def feed(var: Variable, value: Any) -> int:
    """Put ``value`` into the input ``var`` (reallocating when the batch size changes); returns
    the number of samples (the first axis; a sequence input's steps).  A reader's sequence
    stream whose sequences are all one step long feeds a plain input (a label per sequence)."""
    if var.sequence_lengths is not None:
        return _feed_sequences(var, value)
    lengths = getattr(value, "lengths", None)
    if lengths is not None and (np.asarray(lengths) == 1).all():
        value = np.asarray(value.data)[:, 0]
    arr = _as_array(value)
    if not var.data.dtype.is_floating_point and var.data.dtype != torch.bool:
        _check_whole_numbers(var, arr)
    if tuple(arr.shape) == var.shape:
        var.d = arr
    else:
        if tuple(arr.shape[1:]) != var.shape[1:]:
            raise StadynError(f"input {var.name or ''}: a minibatch of shape {tuple(arr.shape)} "
                              f"does not fit an input of per-sample shape {var.shape[1:]}")
        t = arr if isinstance(arr, torch.Tensor) else torch.from_numpy(
            np.ascontiguousarray(arr))
        # a copy: the input's buffer is written in place by the next minibatch of this size,
        # which must not write into the caller's array
        var.data = t.to(var.data.device, var.data.dtype, copy=True)
    return int(arr.shape[0]) if len(arr.shape) else 1


# ops whose second input holds class ids (converted to integers, so a fraction is truncated)
_CLASS_ID_OPS = ("softmax_cross_entropy", "categorical_cross_entropy", "top_n_error")


def _class_id_inputs(nodes) -> set[int]:
    """The ids of the leaf Variables the graph reads as class ids."""
    found = set()
    for node in nodes:
        if node.spec.name in _CLASS_ID_OPS:
            inputs = node.spec.split_arguments(node.args, node.kwargs)[0]
            target = inputs[1] if len(inputs) > 1 else None
            if isinstance(target, Variable) and target.parent is None:
                found.add(id(target))
    return found


def _check_whole_numbers(var: Variable, arr) -> None:
    """Float data for class ids (an integer input, or the target of a class-id loss) would be
    truncated: refuse it unless it holds whole numbers (checked on the host, where the
    minibatch is; the op checks again on the CPU)."""
    if isinstance(arr, torch.Tensor):
        fractional = arr.is_floating_point() and not bool(torch.all(arr == torch.trunc(arr)))
    else:
        fractional = arr.dtype.kind in "fc" and not np.all(arr == np.trunc(arr))
    if fractional:
        raise DataError(f"input {var!r} holds class ids: the minibatch holds numbers that "
                        f"are not whole; they would be truncated")


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
                                          and not is_lengths(v)]   # fed with their sequences
        metric_leaves = {id(v) for v in Subgraph([self._metric_sum]).leaves} \
            if self._metric_sum is not None else set()
        self._metric_arguments = [v for v in self.arguments if id(v) in metric_leaves]
        self.total_number_of_samples_seen = 0
        self.previous_minibatch_sample_count = 0
        self.previous_minibatch_loss_average = float("nan")
        self.previous_minibatch_evaluation_average: float | None = None
        # the sums themselves (over every worker's samples when training data-parallel)
        self.previous_minibatch_loss_sum = float("nan")
        self.previous_minibatch_evaluation_sum: float | None = None
        self.minibatches_seen = 0
        # Data-parallel training (stadyn.distributed): the object broadcasts the parameters now,
        # sums gradients and sample counts over the workers after each backward, and says whether
        # this process is the one that writes progress.
        self.data_parallel = data_parallel
        if data_parallel is not None:
            data_parallel.broadcast_parameters(self._named_parameters())
        # compile=True: forward + backward + update as one program compiled by torch.compile;
        # compile="program": the same program without torch.compile (no compile time).
        self._step = None
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
            self._step = compile_step(self._loss_sum, self.parameter_learners[0], extra,
                                      compile=compile is True)

    # -- minibatches ----------------------------------------------------------------------------
    def _feed(self, arguments, needed: Sequence[Variable], what: str) -> int:
        if isinstance(arguments, Mapping):
            items = list(arguments.items())
            given = {id(_unwrap(var)) for var, _ in items}
            wanted = {id(v) for v in needed}
            missing = [f"input {k + 1} of {len(self.arguments)} {v!r}"
                       for k, v in enumerate(self.arguments)
                       if id(v) in wanted and id(v) not in given]
            if missing:
                # an input left out would silently keep the previous minibatch's data
                raise StadynError(f"Trainer.{what}: no data for {', '.join(missing)}; give a "
                                  f"value for every input it reads")
        else:
            values = list(arguments) if isinstance(arguments, (list, tuple)) else [arguments]
            if len(values) != len(self.arguments):
                raise StadynError(f"Trainer: {len(values)} arrays given for "
                                  f"{len(self.arguments)} inputs")
            items = list(zip(self.arguments, values))
        for var, value in items:
            if id(_unwrap(var)) in self._class_id_inputs:
                _check_whole_numbers(_unwrap(var), _as_array(value))
        # CNTK counts the labels' samples: sequences where some input is per sequence, steps
        # where every input is a sequence
        plain, steps, by_axis = set(), set(), {}
        for var, value in items:
            v = _unwrap(var)
            count = feed(v, value)
            (steps if v.sequence_lengths is not None else plain).add(count)
            if v.sequence_lengths is not None:
                by_axis[id(v.sequence_lengths)] = count
        self._count_loss_steps = False
        if len(steps) > 1 and not plain:      # sequences on several axes: the loss's steps
            count = by_axis.get(_loss_axis(_unwrap(self.loss_function), by_axis))
            if count is not None:
                self._count_loss_steps = True   # (counted again once the loss is computed)
                return count
        for counts in (plain, steps):
            if len(counts) > 1:
                raise StadynError(f"Trainer: inputs with different sample counts "
                                  f"{sorted(counts)}")
        return (plain or steps).pop()

    def train_minibatch(self, arguments, outputs: Sequence[Variable] | None = None,
                        device=None, is_sweep_end: bool | None = None) -> bool:
        """One training step on ``arguments`` (``{input: data}`` or a list in the order of
        :attr:`arguments`).  Returns False (doing nothing) for an empty minibatch."""
        if not arguments:
            return False
        return self._train(arguments, outputs, finite_only=False)

    def _train(self, arguments, outputs: Sequence[Variable] | None, finite_only: bool) -> bool:
        """The step; with ``finite_only`` a NaN or infinite loss raises :class:`_NonFiniteLoss`
        before the learners update (a compiled step has updated by then)."""
        if self.check_numerics and not numerics_enabled():
            with check_numerics():
                return self._train(arguments, outputs, finite_only)
        samples = self._feed(arguments, self.arguments, "train_minibatch")
        if self._step is not None:
            with training(True):
                self._step(samples)
            loss_sum = float(self._loss_sum.d)
            if finite_only and not math.isfinite(loss_sum):
                raise _NonFiniteLoss(loss_sum)
            return self._after_step(samples, loss_sum,
                                    float(self._metric_sum.d) if self._metric_sum is not None
                                    else None)
        for learner in self.parameter_learners:
            learner.zero_grad()
        steps = [_unwrap(self.loss_function).sequence_lengths] \
            if getattr(self, "_count_loss_steps", False) else []
        with training(True):
            forward_all(self._outputs + list(outputs or ()) + steps, clear_no_need_grad=True)
            self._loss_sum.backward(clear_buffer=True)
        loss_sum = float(self._loss_sum.d)       # the step's one wait for the device
        metric_sum = float(self._metric_sum.d) if self._metric_sum is not None else None
        if steps:
            samples = int(steps[0].d.sum())
        if self.data_parallel is not None:
            # The global minibatch is the sum of the workers' minibatches (CNTK): learners get
            # the summed gradient and the global sample count, so per-sample rates keep meaning.
            samples, loss_sum, metric_sum = self.data_parallel.synchronize(
                self.parameters, samples, loss_sum, metric_sum)
        if finite_only and not math.isfinite(loss_sum):
            raise _NonFiniteLoss(loss_sum)
        for learner in self.parameter_learners:
            learner.step(samples)
        return self._after_step(samples, loss_sum, metric_sum)

    def _after_step(self, samples: int, loss_sum: float, metric_sum: float | None) -> bool:
        self.previous_minibatch_sample_count = samples
        self.previous_minibatch_loss_sum, self.previous_minibatch_evaluation_sum = \
            loss_sum, metric_sum
        self.previous_minibatch_loss_average = loss_sum / samples
        self.previous_minibatch_evaluation_average = (
            metric_sum / samples if metric_sum is not None else None)
        self.total_number_of_samples_seen += samples
        self.minibatches_seen += 1
        lr = self.learning_rate()
        for writer in self._writers():
            writer.update(loss_sum, samples, metric_sum, lr)
        return True

    def _writers(self) -> list:
        """Only the main process writes progress when training data-parallel."""
        if self.data_parallel is not None and not self.data_parallel.is_main:
            return []
        return self.progress_writers

    def test_minibatch(self, arguments, device=None) -> float:
        """The mean metric per sample on ``arguments``, in the inference phase."""
        if self._metric_sum is None:
            raise StadynError("Trainer.test_minibatch needs an evaluation function")
        samples = self._feed(arguments, self._metric_arguments, "test_minibatch")
        with training(False), torch.no_grad():
            self._metric_sum.forward(clear_buffer=True)
        metric_sum = float(self._metric_sum.d)
        for writer in self._writers():
            writer.update_test(metric_sum, samples)
        return metric_sum / samples

    def learning_rate(self) -> float:
        """The first learner's current learning rate (in its own unit)."""
        return float(self.parameter_learners[0].learning_rate())

    def summarize_training_progress(self) -> None:
        for writer in self._writers():
            writer.summarize_training_progress()

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
        """The mean metric per sample over one sweep of ``source`` (inference phase)."""
        input_map = self._input_map(source, input_map)
        total, count = 0.0, 0
        remaining = source.sweep_size
        while remaining > 0:
            data = source.next_minibatch(min(minibatch_size, remaining), input_map=input_map)
            if not data:
                break
            n = next(iter(data.values())).num_samples
            total += self.test_minibatch(data) * n
            count += n
            remaining -= n
        self.summarize_test_progress()
        return total / max(count, 1)

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
            named[p.name or f"#{len(named)}"] = p
        for v in Subgraph(self._outputs).parameters:
            named.setdefault(v.name, v)
        return named


def _are_learners(value) -> bool:
    """Whether ``value`` is an optimizer or a non-empty list of them (CNTK 2.x's third
    argument, as opposed to the 2017 beta's metric)."""
    if isinstance(value, (list, tuple)):
        return bool(value) and all(isinstance(v, Optimizer) for v in value)
    return isinstance(value, Optimizer)


def _unwrap(var) -> Variable:
    """Inputs may be given as CNTK-compat wrappers around Variables."""
    return var if isinstance(var, Variable) else getattr(var, "variable", var)


"""CNTK's Trainer: summed-loss minibatch training of a static graph with learners.

``Trainer(model, (loss, metric), learners, progress_writers)`` (or the 2017 beta's
``Trainer(model, loss, metric, learner)``).  ``train_minibatch`` feeds the inputs, runs the static
graph of ``sum(loss)`` (and ``sum(metric)``) forward and backward, and lets each learner update
its parameters from the **summed** gradient of the minibatch and its sample count, as CNTK does.
``test_minibatch`` evaluates the metric in the inference phase (dropout off, batch normalisation
on running statistics) and returns the mean per sample.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch

from .. import functions as F
from .._errors import ModelFileError, StadynError
from .._fileutil import atomic_write
from ..graph import Subgraph, Variable, forward_all, training

__all__ = ["Trainer"]

_CHECKPOINT_FORMAT = "stadyn-checkpoint"


def _as_array(value: Any) -> np.ndarray | torch.Tensor:
    """Minibatch data (a reader's MinibatchData, a NumPy array, a tensor) as an array."""
    if isinstance(value, torch.Tensor):
        return value
    if hasattr(value, "asarray") and callable(value.asarray):
        return np.asarray(value.asarray())
    if hasattr(value, "data") and not isinstance(value, np.ndarray):
        return np.asarray(value.data)
    return np.asarray(value)


def feed(var: Variable, value: Any) -> int:
    """Put ``value`` into the input ``var`` (reallocating when the batch size changes); returns
    the number of samples (the first axis)."""
    arr = _as_array(value)
    if tuple(arr.shape) == var.shape:
        var.d = arr
    else:
        if tuple(arr.shape[1:]) != var.shape[1:]:
            raise StadynError(f"input {var.name or ''}: a minibatch of shape {tuple(arr.shape)} "
                              f"does not fit an input of per-sample shape {var.shape[1:]}")
        t = arr if isinstance(arr, torch.Tensor) else torch.from_numpy(
            np.ascontiguousarray(arr))
        var.data = t.to(var.data.device, var.data.dtype)
    return int(arr.shape[0]) if len(arr.shape) else 1


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
                 progress_writers=None, *args, data_parallel=None, compile: bool | str = False):
        if not isinstance(criterion, (tuple, list)):
            # The 2017 beta: Trainer(model, loss, metric, learner)
            metric, learners = parameter_learners, progress_writers
            progress_writers = args[0] if args else None
            criterion = (criterion, metric)
            parameter_learners = learners
        loss, metric = (tuple(criterion) + (None,))[:2]
        self.model = model
        self.loss_function: Variable = loss
        self.evaluation_function: Variable | None = metric
        if parameter_learners is None:
            raise StadynError("Trainer: give at least one learner")
        self.parameter_learners = list(parameter_learners) if isinstance(
            parameter_learners, (list, tuple)) else [parameter_learners]
        writers = progress_writers or []
        self.progress_writers = list(writers) if isinstance(writers, (list, tuple)) else [writers]
        self._loss_sum = F.sum(loss)
        self._metric_sum = F.sum(metric) if metric is not None else None
        self._outputs = [self._loss_sum] + ([self._metric_sum] if metric is not None else [])
        params = {id(p) for learner in self.parameter_learners for p in _learner_params(learner)}
        self.arguments: list[Variable] = [v for v in Subgraph(self._outputs).inputs
                                          if id(v) not in params]
        metric_leaves = {id(v) for v in Subgraph([self._metric_sum]).leaves} \
            if self._metric_sum is not None else set()
        self._metric_arguments = [v for v in self.arguments if id(v) in metric_leaves]
        self.total_number_of_samples_seen = 0
        self.previous_minibatch_sample_count = 0
        self.previous_minibatch_loss_average = float("nan")
        self.previous_minibatch_evaluation_average: float | None = None
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
        counts = {feed(_unwrap(var), value) for var, value in items}
        if len(counts) != 1:
            raise StadynError(f"Trainer: inputs with different sample counts {sorted(counts)}")
        return counts.pop()

    def train_minibatch(self, arguments, outputs: Sequence[Variable] | None = None,
                        device=None, is_sweep_end: bool | None = None) -> bool:
        """One training step on ``arguments`` (``{input: data}`` or a list in the order of
        :attr:`arguments`).  Returns False (doing nothing) for an empty minibatch."""
        if not arguments:
            return False
        samples = self._feed(arguments, self.arguments, "train_minibatch")
        if self._step is not None:
            with training(True):
                self._step(samples)
            return self._after_step(samples, float(self._loss_sum.d),
                                    float(self._metric_sum.d) if self._metric_sum is not None
                                    else None)
        for learner in self.parameter_learners:
            _zero_grad(learner)
        with training(True):
            forward_all(self._outputs + list(outputs or ()), clear_no_need_grad=True)
            self._loss_sum.backward(clear_buffer=True)
        loss_sum = float(self._loss_sum.d)
        metric_sum = float(self._metric_sum.d) if self._metric_sum is not None else None
        if self.data_parallel is not None:
            # The global minibatch is the sum of the workers' minibatches (CNTK): learners get
            # the summed gradient and the global sample count, so per-sample rates keep meaning.
            samples, loss_sum, metric_sum = self.data_parallel.synchronize(
                self.parameters, samples, loss_sum, metric_sum)
        for learner in self.parameter_learners:
            _update(learner, samples)
        return self._after_step(samples, loss_sum, metric_sum)

    def _after_step(self, samples: int, loss_sum: float, metric_sum: float | None) -> bool:
        self.previous_minibatch_sample_count = samples
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

    def learning_rate(self) -> float | None:
        learner = self.parameter_learners[0]
        try:
            return float(learner.learning_rate())
        except (AttributeError, TypeError):
            return None

    def summarize_training_progress(self) -> None:
        for writer in self._writers():
            writer.summarize_training_progress()

    def summarize_test_progress(self) -> None:
        for writer in self._writers():
            writer.summarize_test_progress()

    @property
    def parameters(self) -> list[Variable]:
        return [p for learner in self.parameter_learners for p in _learner_params(learner)]

    # -- one call: epochs over a reader ---------------------------------------------------------
    def fit(self, source, input_map: Mapping | None = None, *, epochs: int = 1,
            epoch_size: int | None = None, minibatch_size: int = 64, validation=None,
            validation_input_map: Mapping | None = None, validation_minibatch_size: int = 256,
            checkpoint: str | os.PathLike | None = None, callbacks: Sequence = ()) -> list[dict]:
        """Train for ``epochs`` epochs of ``epoch_size`` samples (default: one sweep of
        ``source``) read from a :class:`~stadyn.io.MinibatchSource`, as CNTK scripts do by hand.

        ``input_map`` maps the model's inputs to the source's streams.  After each epoch: the progress
        writers summarise, ``validation`` (another source, read for one sweep) is evaluated,
        ``checkpoint`` (a path) is written atomically with the reader's position, and each
        callback is called with the epoch's record.  With an existing ``checkpoint`` the run
        resumes after the last epoch it holds and continues the same loss curve; a missing
        folder for it is created before training starts.  Returns one
        record per epoch trained: ``{"epoch", "loss", "metric", "samples", "seconds",
        "validation_metric"}``.
        """
        import time

        input_map = self._input_map(source, input_map)
        size = epoch_size or source.sweep_size
        for learner in self.parameter_learners:
            if hasattr(learner, "resolve_epoch_size"):
                learner.resolve_epoch_size(source.sweep_size)
        first = 0
        if checkpoint is not None:
            # before any training: a missing folder would lose the first epoch's work
            os.makedirs(os.path.dirname(os.path.abspath(checkpoint)), exist_ok=True)
        if checkpoint is not None and os.path.exists(checkpoint):
            state = self.restore_from_checkpoint(checkpoint)
            source.restore_from_checkpoint(state["reader"])
            first = int(state["epoch"]) + 1
            for writer in self._writers():
                if hasattr(writer, "epochs"):
                    writer.epochs = first
        history = []
        for epoch in range(first, epochs):
            start = time.perf_counter()
            seen, loss_sum, metric_sum = 0, 0.0, 0.0
            while seen < size:
                data = source.next_minibatch(min(minibatch_size, size - seen),
                                             input_map=input_map)
                if not data:
                    break
                self.train_minibatch(data)
                n = self.previous_minibatch_sample_count
                seen += n
                loss_sum += self.previous_minibatch_loss_average * n
                if self.previous_minibatch_evaluation_average is not None:
                    metric_sum += self.previous_minibatch_evaluation_average * n
            self.summarize_training_progress()
            record = {"epoch": epoch, "samples": seen, "seconds": time.perf_counter() - start,
                      "loss": loss_sum / max(seen, 1),
                      "metric": metric_sum / max(seen, 1) if self._metric_sum is not None
                      else None, "validation_metric": None}
            if validation is not None:
                record["validation_metric"] = self.evaluate(
                    validation, self._input_map(validation, validation_input_map),
                    validation_minibatch_size)
            if checkpoint is not None and (self.data_parallel is None or
                                           self.data_parallel.is_main):
                self.save_checkpoint(checkpoint, {"epoch": epoch,
                                                  "reader": source.get_checkpoint_state()})
            for callback in callbacks:
                callback(record)
            history.append(record)
            if seen < size:
                break           # the source ran out (max_samples / max_sweeps)
        return history

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
        """Write parameters, learner states, the trainer's counters and ``external_state`` (a
        JSON-able mapping: reader position, epoch, ...) to one file, atomically."""
        from safetensors.torch import save_file
        tensors: dict[str, torch.Tensor] = {}
        learner_meta = []
        for k, learner in enumerate(self.parameter_learners):
            state = learner.state_dict()
            plain = {}
            for key, value in _flatten_state(state):
                if isinstance(value, torch.Tensor):
                    tensors[f"learner{k}/{key}"] = value.detach().cpu().contiguous()
                else:
                    plain[key] = value
            learner_meta.append(plain)
        params = self._named_parameters()
        for name, var in params.items():
            tensors[f"param/{name}"] = var.data.detach().cpu().contiguous()
        meta = {"format": _CHECKPOINT_FORMAT, "version": "1",
                "trainer": json.dumps({"total_number_of_samples_seen":
                                       self.total_number_of_samples_seen,
                                       "minibatches_seen": self.minibatches_seen}),
                "learners": json.dumps(learner_meta, default=_json_default),
                "external_state": json.dumps(dict(external_state or {}), default=_json_default)}
        atomic_write(filename, lambda tmp: save_file(tensors, tmp, metadata=meta))

    def restore_from_checkpoint(self, filename: str | os.PathLike) -> dict:
        """Restore what :meth:`save_checkpoint` wrote; returns the external state."""
        from safetensors import safe_open
        path = os.fspath(filename)
        try:
            with safe_open(path, framework="pt") as f:
                meta = f.metadata() or {}
                tensors = {k: f.get_tensor(k) for k in f.keys()}
        except Exception as exc:
            raise ModelFileError(f"{path}: not a readable checkpoint ({exc})") from exc
        if meta.get("format") != _CHECKPOINT_FORMAT:
            raise ModelFileError(f"{path}: not a Stadyn checkpoint")
        params = self._named_parameters()
        for name, var in params.items():
            key = f"param/{name}"
            if key not in tensors:
                raise ModelFileError(f"{path}: the checkpoint has no parameter '{name}'")
            if tuple(tensors[key].shape) != var.shape:
                raise ModelFileError(f"{path}: parameter '{name}' has shape "
                                     f"{tuple(tensors[key].shape)}, the model {var.shape}")
            with torch.no_grad():
                var.data.copy_(tensors[key])
        learner_meta = json.loads(meta["learners"])
        for k, learner in enumerate(self.parameter_learners):
            prefix = f"learner{k}/"
            flat = dict(learner_meta[k])
            flat.update({key[len(prefix):]: t for key, t in tensors.items()
                         if key.startswith(prefix)})
            learner.load_state_dict(_unflatten_state(flat))
        counters = json.loads(meta["trainer"])
        self.total_number_of_samples_seen = counters["total_number_of_samples_seen"]
        self.minibatches_seen = counters["minibatches_seen"]
        return json.loads(meta["external_state"])

    def _named_parameters(self) -> dict[str, Variable]:
        """Every parameter the trainer touches, trainable or not (running statistics too)."""
        named: dict[str, Variable] = {}
        for learner in self.parameter_learners:
            for p in _learner_params(learner):
                named[p.name or f"#{len(named)}"] = p
        for v in Subgraph(self._outputs).parameters:
            named.setdefault(v.name, v)
        return named


# ---------------------------------------------------------------------------------------------
# Learners: CNTK learners (update(sample_count)) and NNabla solvers (update()) alike
# ---------------------------------------------------------------------------------------------
def _learner_params(learner) -> list[Variable]:
    params = getattr(learner, "parameters", None)
    if params is None and hasattr(learner, "get_parameters"):
        params = learner.get_parameters()
    if callable(params):
        params = params()
    if isinstance(params, Mapping):
        params = list(params.values())
    return list(params or [])


def _zero_grad(learner) -> None:
    if hasattr(learner, "zero_grad"):
        learner.zero_grad()
    else:
        for p in _learner_params(learner):
            p.grad = None


def _update(learner, samples: int) -> None:
    from ..solvers import Solver
    if isinstance(learner, Solver):
        learner.update()
    else:
        learner.update(samples)


def _unwrap(var) -> Variable:
    """Inputs may be given as CNTK-compat wrappers around Variables."""
    return var if isinstance(var, Variable) else getattr(var, "variable", var)


_SEP = "::"   # parameter names contain "/", so nested state keys are joined with "::"


def _flatten_state(state: Mapping, prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in state.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flatten_state(value, path + _SEP)
        else:
            yield path, value


def _unflatten_state(flat: Mapping[str, Any]) -> dict:
    root: dict = {}
    for key, value in flat.items():
        node = root
        parts = key.split(_SEP)
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return root


def _json_default(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in a checkpoint")


"""CNTK's ``Trainer`` over CNTK Functions (``cntk.train.Trainer``)."""

from __future__ import annotations

import math
import os
import sys
import warnings

import numpy as np
import torch

from ... import io as _io
from ..._errors import ModelFileError
from ...learners import Learner as _Learner
from ...train import Trainer as _Trainer
from ._adapt import unwrap, wrap
from ._checked_mode import CheckedLatch
from ._function import Function, combine_outputs
from ._graph import BATCH, is_splice_leaf, made_by_cntk_op
from ._run_checks import RunnableCheck
from ._sparse_operands import refuse_dense_feed
from ._sequence_begin import (SequenceBeginError, SequenceBegins, carrying, split_flags,
                              truncated_layout)
from ._values import Value
from ._previous_averages import PreviousAverages
from ._worker_sums import WorkerSums, aggregation, no_samples, refuse_no_rows

__all__ = ["Trainer", "counted_variable"]


def _as_function(slot: str, doc: str) -> property:
    """An attribute the native Trainer sets to a Variable, read as a CNTK Function."""
    def get(self):
        return wrap(getattr(self, slot))

    def set_(self, value) -> None:
        setattr(self, slot, value)
    return property(get, set_, doc=doc)


def _plain(arguments):
    """Minibatch data as the native Trainer feeds it: ``(N, *shape)`` arrays, and sequences
    with their lengths.  A reader's stream of the input's size but another shape takes the
    input's shape, as in CNTK (a 784-value stream feeds an input of shape ``(1, 28, 28)``);
    so does a reader stream's ``.data`` (a ``Value`` of one-step sequences, ``(N, 1,
    *shape)``) fed to an input without a sequence axis, as CNTK 2.7 takes it.  Dense data
    for a sparse input is refused, as CNTK 2.7 refuses it."""
    for k, v in (arguments.items() if isinstance(arguments, dict) else ()):
        refuse_dense_feed(unwrap(k), v)
    if not isinstance(arguments, dict) or not any(
            isinstance(v, (_io.MinibatchData, Value)) for v in arguments.values()):
        return arguments
    plain = {}
    for k, v in arguments.items():
        if isinstance(v, _io.MinibatchData) and getattr(v, "lengths", None) is None:
            v = _as_input_shape(k, np.asarray(v))         # (sequences keep their lengths)
        elif isinstance(v, Value) and v.lengths is None and not _on_sequences(k):
            v = _as_input_shape(k, v.asarray())
        plain[k] = v
    return plain


def _on_sequences(var) -> bool:
    """Whether the input ``var`` has a sequence axis besides the batch axis."""
    return len(getattr(var, "dynamic_axes", ()) or ()) > 1


def _as_input_shape(var, data):
    """``data`` (``(N, *stream shape)``) as ``(N, *var.shape)`` where the sizes agree; data of
    exactly the sample's shape is one sample, as CNTK 2.7 takes a ``Value`` without a batch
    axis (CNTK's object-detection examples' ``MinibatchData(Value(batch=image))``)."""
    shape = tuple(getattr(var, "shape", ()) or ())
    if shape and tuple(data.shape) == shape and not _on_sequences(var):
        return data.reshape((1,) + shape)
    if (shape and tuple(data.shape[1:]) != shape
            and math.prod(data.shape[1:]) == math.prod(shape)):
        return data.reshape((data.shape[0],) + shape)
    return data


def _sequence_count(arguments) -> int | None:
    """The sequences of a minibatch: a list's entries, a reader's ``num_sequences``, an
    array's first axis (of the first input that has one)."""
    for value in arguments.values():
        if isinstance(value, (list, tuple)):
            return len(value)
        if getattr(value, "num_sequences", None) is not None:
            return int(value.num_sequences)
        if hasattr(value, "shape") and len(value.shape):
            return int(value.shape[0])
    return None


def _truncated(arguments):
    """The slots of a minibatch a ``MinibatchSource`` with ``truncation_length`` packed, in a
    dict of inputs' data, or None."""
    return truncated_layout(arguments) if isinstance(arguments, dict) else None


def _truncated_flags(arguments, flags):
    """CNTK's sequence-begin flags of a truncated minibatch (a sequence that goes on from its
    slot's previous minibatch: False), else ``flags``."""
    layout = _truncated(arguments) if flags is None else None
    return flags if layout is None else list(layout.begins)


def counted_variable(criterion):
    """CNTK 2.7's Trainer and Evaluator count a minibatch's samples on the criterion, or, where
    the criterion is one number for the minibatch (no batch axis: CTC's ``forward_backward``,
    ``edit_distance_error``, a ``reduce_sum`` over all axes), on the first Variable with a batch
    or sequence axis met depth first through its inputs, in their order: CNTK 208 counts its
    label frames, not its utterances.  The Variables met are CNTK's: inputs and the outputs of
    CNTK ops, not those of the Stadyn ops a CNTK op is made of."""
    if criterion is None or BATCH(criterion) or criterion.sequence_lengths is not None:
        return criterion
    seen: set[int] = set()

    def search(v):
        for x in (v.parent.inputs if v.parent is not None else ()):
            if id(x) in seen:
                continue
            seen.add(id(x))
            if (BATCH(x) or x.sequence_lengths is not None) and (
                    x.parent is None or made_by_cntk_op(x)):
                return x
            found = search(x)
            if found is not None:
                return found
        return None
    return search(criterion) or criterion


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


class Trainer(WorkerSums, PreviousAverages, _Trainer):
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

    def __init__(self, model, criterion, parameter_learners=None, progress_writers=None, *args,
                 **kwargs):
        if isinstance(criterion, Function) and len(criterion.outputs) == 2:
            criterion = tuple(criterion.outputs)     # a (loss, metric)-valued Function
        if not isinstance(criterion, (tuple, list)):
            if isinstance(parameter_learners, Function):   # the betas: loss, metric, learner
                criterion = (criterion, parameter_learners)
                parameter_learners = progress_writers
                progress_writers, args = (args[0], args[1:]) if args else (None, args)
            else:
                criterion = (criterion,)
        super().__init__(unwrap(model), tuple(unwrap(c) for c in criterion),
                         unwrap(parameter_learners), unwrap(progress_writers), *unwrap(args),
                         **kwargs)
        # the model's carried states live as long as the Trainer, as in CNTK, where
        # ``trainer.model`` is one Function: each ``trainer.model`` here is a new Function over
        # the same outputs, which shares the state this holds
        model = self.model
        self._model_runs = model._run_state() if model is not None else None
        self._note_uncovered_parameters()
        self._distributed = _distributed_learners(self.parameter_learners)
        # distributed learners of several workers: the counts, losses and metrics are the
        # workers' sums, as CNTK 2.7's (the native Trainer's data_parallel hook)
        self._workers = aggregation(self.parameter_learners)
        if self._workers is not None:
            self.data_parallel = self._workers

    def _note_uncovered_parameters(self) -> None:
        """CNTK 2.7's Trainer ctor notes on stderr how many parameters of the model, loss
        and metric no learner updates (they stay as they are)."""
        learned = {id(unwrap(p)) for p in self.parameters}
        left = {id(unwrap(p)) for f in self._trained_roots() for p in wrap(f).parameters}
        left = len(left - learned)
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
        arguments, flags = split_flags(arguments)
        if self._workers is not None and no_samples(arguments):
            return self._train_nothing()
        refuse_no_rows(arguments, "train_minibatch")
        flags = _truncated_flags(arguments, flags)
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
            updated, values = self._train_minibatch(_plain(arguments), mine, is_sweep_end,
                                                    carried)
        self._trained = bool(arguments) or self.__dict__.get("_trained", False)
        if arguments and is_sweep_end:
            self._sweeps_seen = self.__dict__.get("_sweeps_seen", 0) + 1
        if arguments and len(self._distributed) > 1 and \
                not any(x.is_metric_aggregator() for x in self._distributed):
            # (CNTK 2.7 raises after the update: the parameters and counts have moved on)
            raise RuntimeError("Update failed: Metric aggregation did not happen, none of the "
                               "learners was marked as metric aggregator.")
        return (updated, {o: values[o] for o in mine}) if mine and updated else updated

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
        check(roots)

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
        if flags is not None and len(flags) != _sequence_count(arguments):
            raise ValueError(f"{what}: {len(flags)} sequence-begin flags for a "
                             f"minibatch of {_sequence_count(arguments)} sequences")
        begins.begin(flags, what, _truncated(arguments) if flags is not None else None)
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
        arguments, flags = split_flags(arguments)
        refuse_no_rows(arguments, "test_minibatch")
        flags = _truncated_flags(arguments, flags)
        if self._metric_sum is None:     # the native Trainer's NoMetricError (a ValueError)
            return super().test_minibatch(_plain(arguments), device)
        self._runnable("test", [self._metric_sum])
        begins = self._begins(arguments, flags, "test_minibatch")
        with self._checked("test").run():
            if begins is None:
                return super().test_minibatch(_plain(arguments), device)
            with carrying(begins):
                return self._test(_plain(arguments), begins.wanted())

    def _minibatch_data(self, arguments):
        return _plain(arguments)

    def _fed(self, leaf):
        # the leaves sequence-begin flags splice into a recurrence (where a Function of the
        # model ran with flags before this Trainer was made) are set by the runs, not fed
        return not is_splice_leaf(leaf)

    def _counted(self, criterion):
        cache = self.__dict__.setdefault("_counted_variables", {})
        key = id(criterion)
        if key not in cache:
            cache[key] = (criterion, counted_variable(criterion))
        return cache[key][1]

    # -- checkpoints (CNTK 2.7's pair: the model file and its .ckp) ---------------------------
    def save_checkpoint(self, filename, external_state=None) -> None:
        """Write CNTK 2.7's checkpoint: ``filename``, a CNTK v2 model file of the model, loss
        and metric (``C.load_model`` reads it), and ``filename.ckp``, CNTK's trainer state
        (learners' counts, schedules and smoothed gradients; ``external_state``), both or
        neither (see :mod:`stadyn.serialize._cntk_checkpoint`).  Where the graph has an op the
        CNTK v2 writer cannot write, or a learner has no CNTK checkpoint form, ``filename`` is
        Stadyn's own checkpoint, as before, with a warning naming why.

        Example:
            >>> import os, tempfile, numpy as np, stadyn.compat.cntk as C
            >>> x, y = C.input_variable(3), C.input_variable(1)
            >>> z = C.layers.Dense(1)(x)
            >>> loss = (z - y) * (z - y)
            >>> t = C.Trainer(z, (loss, loss), [C.sgd(z.parameters, 0.1)])
            >>> _ = t.train_minibatch({x: np.ones((2, 3), np.float32),
            ...                        y: np.ones((2, 1), np.float32)})
            >>> path = os.path.join(tempfile.mkdtemp(), "run.model")
            >>> t.save_checkpoint(path, {"epoch": 1})
            >>> sorted(os.listdir(os.path.dirname(path)))
            ['run.model', 'run.model.ckp']
            >>> t.restore_from_checkpoint(path)
            {'epoch': 1}

        With distributed learners of several workers every worker calls it and worker 0
        writes the pair, ``external_state`` its own and the ``.ckp`` holding every worker's
        too, which :meth:`restore_from_checkpoint` gives back to each (CNTK 2.7's
        Trainer::SaveCheckpoint).
        """
        if self._workers is None:
            return self._save_checkpoint(filename, external_state)
        self._workers.barrier()
        states = self._workers.gather(dict(external_state or {}))
        try:
            if self._workers.rank == 0:
                self._save_checkpoint(filename, external_state, states)
        finally:
            self._workers.barrier()

    def _save_checkpoint(self, filename, external_state, worker_states=None) -> None:
        from ...serialize import write_cntk_checkpoint
        from ._learner_checkpoint import wrapped_learner
        learners = self._cntk_learner_entries()
        if isinstance(learners, str):
            warnings.warn(f"{os.fspath(filename)}: written as Stadyn's checkpoint, which CNTK "
                          f"2.7 cannot read ({learners})", UserWarning, stacklevel=3)
            return self._save_stadyn_checkpoint(filename, external_state)
        roots = self._trained_roots()
        combined = combine_outputs(roots)
        outputs = len(combined.outputs) - len(roots) + 1 if self.model is not None else 0
        metric = self.evaluation_function is not None
        distributed = any(wrapped_learner(x) is not x for x in self.parameter_learners)
        try:
            write_cntk_checkpoint(filename, lambda tmp: _write_cntk_model(
                combined, tmp, outputs, metric), learners, external_state, distributed,
                worker_states)
        except _NotCntk as exc:
            warnings.warn(f"{os.fspath(filename)}: written as Stadyn's checkpoint, which CNTK "
                          f"2.7 cannot read ({exc})", UserWarning, stacklevel=3)
            self._save_stadyn_checkpoint(filename, external_state)

    def _trained_roots(self) -> list:
        """The model, loss and metric (those given): the graph CNTK's checkpoint holds."""
        return [f for f in (self.model, self.loss_function, self.evaluation_function)
                if f is not None]

    def _save_stadyn_checkpoint(self, filename, external_state) -> None:
        super().save_checkpoint(filename, external_state)
        _remove_stale_ckp(filename)

    def restore_from_checkpoint(self, filename) -> dict:
        """Restore a checkpoint: CNTK 2.7's pair (``filename``, a CNTK v2 model, and
        ``filename.ckp``; written by CNTK 2.7 or by :meth:`save_checkpoint`) or Stadyn's own
        checkpoint file; returns the external state.  The parameters are matched as CNTK
        matches them (by uid where the file has the trainer's uids, else in order), each
        learner's state by its parameters' order.  A checkpoint of another network or other
        learners is one ModelFileError naming the file, and nothing is changed.  On several
        workers each restores the same file and gets its own external state back (the main
        worker's ``ExternalState``, another its entry of ``DistributedState``), after all
        have read it (CNTK 2.7's Trainer::RestoreFromCheckpoint)."""
        from ...serialize import is_cntk_checkpoint
        if not is_cntk_checkpoint(filename):
            return super().restore_from_checkpoint(filename)      # Stadyn's own checkpoint
        external, workers = self._restore_cntk(os.fspath(filename))
        if self._workers is None:
            return external
        self._workers.barrier()
        mine = workers.get(str(self._workers.rank)) if self._workers.rank else None
        return dict(mine.get("external_worker_state", {})) if isinstance(mine, dict) \
            else external

    def _cntk_learner_entries(self):
        """Each learner's CNTK checkpoint Dictionary, or why one has none (a str)."""
        from ._learner_checkpoint import learner_entry
        entries = []
        for learner in self.parameter_learners:
            entry = learner_entry(learner)
            if isinstance(entry, str):
                return entry
            entries.append(entry)
        return entries

    def _restore_cntk(self, path: str) -> tuple[dict, dict]:
        """Restore CNTK's pair at ``path``: everything checked, then everything set; its
        external state and ``DistributedState`` (each worker's, by rank)."""
        from ...graph import data_of
        from ...serialize import read_cntk_checkpoint
        from ._learner_checkpoint import learner_state, restore_learner, wrapped_learner
        saved, constants, top = read_cntk_checkpoint(
            path, [wrapped_learner(x) is not x for x in self.parameter_learners])
        where = f"{path}.ckp"
        # the parameters by their place in the graph, as CNTK's RestoreFromCheckpoint matches
        # them: the file lists the graph's parameters (the model's, the loss's, the metric's;
        # those no learner trains too) in CNTK's Inputs() order, which is the order of the
        # graph's `parameters` -- not the learners' order.  (uids are not compared: Stadyn's
        # writer numbers its own, which may equal other parameters' uids in this process.)
        graph = combine_outputs(self._trained_roots())
        mine = list(graph.parameters)
        theirs = [(name, value) for _, name, value in saved]
        if len(theirs) != len(mine):
            raise ModelFileError(f"{path}: the file holds {len(theirs)} parameters, the "
                                 f"trainer's network {len(mine)} (another network); nothing "
                                 "was restored")
        for p, (name, value) in zip(mine, theirs):
            if tuple(value.shape) != tuple(p.shape):
                raise ModelFileError(f"{path}: parameter {name!r} has shape "
                                     f"{tuple(value.shape)}, the trainer's {p.name!r} "
                                     f"{tuple(p.shape)} (another network); nothing was "
                                     "restored")
        # the named constants (batch normalisation's running statistics), which CNTK restores
        # with the model: each by name and shape, in the file's order
        unused = list(constants)
        statistics = []
        for c in graph.constants:
            match = next((k for k, (_, name, value) in enumerate(unused) if c.name
                          and name == c.name and tuple(value.shape) == tuple(c.shape)), None)
            if match is not None:
                statistics.append((c, unused.pop(match)[2]))
        stored = top["Learners"]
        if len(stored) != len(self.parameter_learners):
            raise ModelFileError(f"{where}: {len(stored)} learner states for the trainer's "
                                 f"{len(self.parameter_learners)} learners; nothing was restored")
        states = [learner_state(learner, entry, f"{where}: learner {k}")
                  for k, (learner, entry) in enumerate(zip(self.parameter_learners, stored))]
        external = top.get("ExternalState", {})
        # all checked: set everything
        with torch.no_grad():
            for p, (_, value) in zip(mine, theirs):
                data_of(p.variable).copy_(torch.as_tensor(np.asarray(value)))
            for c, value in statistics:
                data_of(c.variable).copy_(torch.as_tensor(np.asarray(value)))
        for learner, state, entry in zip(self.parameter_learners, states, stored):
            restore_learner(learner, state, entry)
        first = stored[0] if stored else {}
        self.total_number_of_samples_seen = int(first.get("sample_count", 0))
        self.minibatches_seen = int(first.get("minibatchCount", 0))
        self._sweeps_seen = int(first.get("sweepCount", 0))
        workers = top.get("DistributedState", {})
        return dict(external), workers if isinstance(workers, dict) else {}

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


def _remove_stale_ckp(filename) -> None:
    """Remove the ``.ckp`` a CNTK pair at ``filename`` had: its model file has just been
    replaced by Stadyn's own checkpoint, so it belongs to no checkpoint now."""
    try:
        os.unlink(os.fspath(filename) + ".ckp")
    except FileNotFoundError:
        pass


class _NotCntk(Exception):
    """The graph was written in Stadyn's model format: CNTK 2.7 could not read it."""


def _write_cntk_model(combined, tmp: str, outputs: int, metric: bool) -> None:
    """Write ``combined`` (the model's ``outputs`` outputs, the loss, the metric) at ``tmp`` as
    the CNTK v2 model file of CNTK's Trainer (with its aggregates), or raise :class:`_NotCntk`
    with the writer's reason where it wrote Stadyn's format instead."""
    from ...serialize import cntk_training_function_bytes
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        combined.save(tmp)
    fell_back = [str(w.message) for w in caught if "Stadyn model file" in str(w.message)]
    if fell_back:
        why = fell_back[0]
        raise _NotCntk(why.partition("(")[2].rpartition(")")[0] or why)
    with open(tmp, "rb") as f:
        data = cntk_training_function_bytes(f.read(), outputs, metric)
    with open(tmp, "wb") as f:
        f.write(data)

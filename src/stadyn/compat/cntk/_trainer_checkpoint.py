"""The checkpoints of ``compat.cntk``'s Trainer: CNTK 2.7's pair (a CNTK v2 model file of the
model, loss and metric, and its ``.ckp`` of the trainer's state) written and restored, with
Stadyn's own checkpoint where the graph or a learner has no CNTK form (a mixin of
:class:`~._trainer.Trainer`, whose ``save_checkpoint`` and ``restore_from_checkpoint`` these
are)."""

from __future__ import annotations

import os
import warnings

import numpy as np
import torch

from ..._errors import ModelFileError
from ._function import combine_outputs

__all__ = ["TrainerCheckpoints"]


class TrainerCheckpoints:
    """CNTK 2.7's ``save_checkpoint`` and ``restore_from_checkpoint`` over the native
    Trainer's (the next class in a Trainer's bases), which writes Stadyn's own checkpoint."""

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
        for learner in self._distributed:     # (1-bit SGD's residuals: zeroed, every worker)
            learner._forget_residuals()
        blocks = self._block_learner()
        if blocks is not None:      # (CNTK 2.7: the learners' checkpoints first, every worker)
            for learner in self._distributed:
                learner._checkpoint_merge()
            self.total_number_of_samples_seen = int(blocks.total_number_of_samples_seen)
        group = self._worker_group()
        if group is None:
            return self._save_checkpoint(filename, external_state)
        group.barrier()
        states = group.all_gather_objects(dict(external_state or {}))
        try:
            if group.rank == 0:
                self._save_checkpoint(filename, external_state, states)
        finally:
            group.barrier()

    def _worker_group(self):
        """The workers (a :class:`stadyn.distributed.DataParallel`) of the distributed
        learners of several workers, data-parallel or block momentum; None otherwise."""
        if self._workers is not None:
            return self._workers._parallel
        return getattr(self._block_learner(), "_parallel", None)

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
        group = self._worker_group()
        if group is None:
            return external
        group.barrier()
        mine = workers.get(str(group.rank)) if group.rank else None
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
        # the parameters by their place in the graph, as CNTK's RestoreFromCheckpoint matches
        # them (Function.cpp:1040-1051): the file's graph's parameters (the model's, the
        # loss's, the metric's; those no learner trains too) in its Inputs() order, walked
        # on the file as read (:func:`_inputs_order`) -- not the order its serializer lists
        # them in the file, nor the learners' order.  (uids are not compared with the
        # trainer's: Stadyn's writer numbers its own, which may equal other parameters' uids
        # in this process.)
        saved, constants, top = read_cntk_checkpoint(
            path, [wrapped_learner(x) is not x for x in self.parameter_learners],
            order=_inputs_order)
        where = f"{path}.ckp"
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
        blocks = _block_states(self.parameter_learners, top.get("BlockMomentum", {}), where)
        external = top.get("ExternalState", {})
        # all checked: set everything
        with torch.no_grad():
            for p, (_, value) in zip(mine, theirs):
                data_of(p.variable).copy_(torch.as_tensor(np.asarray(value)))
            for c, value in statistics:
                data_of(c.variable).copy_(torch.as_tensor(np.asarray(value)))
        for learner, state, entry in zip(self.parameter_learners, states, stored):
            restore_learner(learner, state, entry)
        for learner, block in blocks:
            learner._restore_block(*block)
        first = stored[0] if stored else {}
        self.total_number_of_samples_seen = int(blocks[0][1][0] if blocks else
                                                first.get("sample_count", 0))
        self.minibatches_seen = int(first.get("minibatchCount", 0))
        self._sweeps_seen = int(first.get("sweepCount", 0))
        workers = top.get("DistributedState", {})
        return dict(external), workers if isinstance(workers, dict) else {}


def _inputs_order(model) -> list[str]:
    """The leaves of a CNTK v2 file's graph (``model``: the file decoded,
    ``serialize.read_cntk``'s) in the order CNTK 2.7's loaded Function lists its
    ``Inputs()``: walked from its root function, a root ``Combine`` by its operands (its
    outputs are its operands' names, which it does not make), each function's operands as
    stored (``Inputs()``'s default, ``pythonOperandOrder`` false: ``times(s, H)`` meets ``H``
    first).

    Example:
        >>> import os, tempfile, stadyn.compat.cntk as C
        >>> from stadyn.serialize import read_legacy_model
        >>> x = C.input_variable(2, name="x")
        >>> z = C.times(x, C.parameter((2, 1), name="W")) + C.parameter(1, name="b")
        >>> path = os.path.join(tempfile.mkdtemp(), "z.model")
        >>> z.save(path)
        >>> model = read_legacy_model(path)
        >>> [model.parameters[u].name for u in _inputs_order(model) if u in model.parameters]
        ['W', 'b']
    """
    from ._model_load import file_leaf_order
    return file_leaf_order(model, python_order=False)


def _block_states(learners, saved: dict, where: str) -> list:
    """``[(learner, its saved block state)]`` of the block momentum learners among
    ``learners`` (checked: a state for each, one smoothed gradient per parameter of its
    shape); a block state for a learner of another kind is refused."""
    found = []
    for k, learner in enumerate(learners):
        block = saved.get(k)
        if hasattr(learner, "_restore_block") != (block is not None):
            kinds = ("a block momentum learner", "another") if block is not None else \
                ("another learner", "a block momentum one")
            raise ModelFileError(f"{where}: learner {k} was saved by {kinds[0]}, the "
                                 f"trainer's is {kinds[1]}; nothing was restored")
        if block is not None:
            try:
                learner._check_block_state(block[2], f", {where}: learner {k}")
            except RuntimeError as exc:
                raise ModelFileError(f"{exc}; nothing was restored") from None
            found.append((learner, block))
    return found


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

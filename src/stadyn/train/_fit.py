"""The one epoch loop, :meth:`Trainer.fit <stadyn.train.Trainer.fit>`: epochs of minibatches
read from a source, with per-epoch minibatch sizes, checkpoints that resume, validation, a
progress bar, NaN detection and the hooks of :class:`~stadyn.train.TrainingCallback`.  Written as
functions of the trainer (``Trainer.fit`` is :func:`fit`); the step itself is the trainer's."""

from __future__ import annotations

import os
import time
from typing import Mapping, Sequence

from .._errors import StadynError, checked_count
from .._logging import logger
from ..graph import Variable
from ._callbacks import as_callbacks
from ._checkpoint import check_checkpoint_folder
from ._source_protocol import ends_sweep, epoch_starter

__all__ = ["fit", "NonFiniteLossError"]


class NonFiniteLossError(StadynError, FloatingPointError):
    """:meth:`Trainer.fit` stopped: a minibatch's loss was NaN or infinite.  ``epoch`` and
    ``minibatch`` (both counted from 1) say where; the checkpoint, if any, still holds the last
    finished epoch."""

    def __init__(self, message: str, epoch: int, minibatch: int):
        super().__init__(message)
        self.epoch, self.minibatch = epoch, minibatch


class _NonFiniteLoss(Exception):
    """Raised inside a training step, before the update, when the loss is not finite."""

    def __init__(self, loss: float):
        super().__init__(loss)
        self.loss = loss


def fit(trainer, source, input_map: Mapping | None = None, *, epochs: int = 1,
        epoch_size: int | None = None, minibatch_size=64, initial_epoch: int = 0,
        outputs: Sequence[Variable] = (), stop_on_nonfinite: bool = True, validation=None,
        validation_input_map: Mapping | None = None, validation_minibatch_size: int = 256,
        checkpoint: str | os.PathLike | None = None, callbacks: Sequence = (),
        progress_bar: bool | None = None) -> list[dict]:
    """Train for ``epochs`` epochs of ``epoch_size`` samples (default: one sweep of
    ``source``) read from a :class:`~stadyn.io.MinibatchSource`, as CNTK scripts do by hand.

    ``input_map`` maps the model's inputs to the source's streams.  After each epoch: the
    progress writers summarise, ``validation`` (another source, read for one sweep) is
    evaluated, ``checkpoint`` (a path) is written atomically with the reader's position and
    the random generators' states, and each callback is called with the epoch's record.
    A callback is a function (called then) or a :class:`~stadyn.train.TrainingCallback`,
    which also sees the start of each epoch, each minibatch and each checkpoint written; an
    exception a callback raises stops training and leaves ``fit``.
    Returns one record per epoch trained: ``{"epoch", "loss", "metric", "samples",
    "seconds", "validation_metric"}``.

    * **Minibatch size**: an int, or a schedule per epoch — a list whose entry ``k`` is the
      size in epoch ``k`` (counted from 0; the last entry repeats, as CNTK's
      ``minibatchSize = 64*2:128``), or a function of the 0-based epoch.  An epoch's last
      minibatch is cut to end the epoch at ``epoch_size`` samples.  Samples are the trainer's
      (labels: one per sequence for a sequence classifier); where those are not what the
      reader counts, minibatches are not cut, an epoch ends once ``epoch_size`` samples are
      trained, and the default epoch at the minibatch that ends the reader's sweep.
    * **Schedules per sweep**: a learner's schedule given per data sweep (``epoch_size=None``:
      ``Schedule([0.1, 0.01])``) moves on after each minibatch that ends a sweep of ``source``
      (its ``end_of_sweep``), as CNTK's Trainer moves it on a reader's ``sweep_end``: once per
      sweep, whatever the trainer counts as samples (sequences, steps) and whatever
      ``epoch_size`` is.
    * **Extra outputs**: ``outputs`` are scalar Variables computed with every step (sums
      over the minibatch, say); each minibatch record seen by
      :meth:`TrainingCallback.on_minibatch_end` holds their values as ``"outputs"``.  With
      a compiled step (``Trainer(compile=...)``) they are computed in the step's program (one
      more program, traced once, as :meth:`~stadyn.train.Trainer.train_minibatch`'s).
    * **Data-parallel** (``Trainer(data_parallel=...)`` over several workers): each worker
      reads its own share of every minibatch (``next_minibatch(num_data_partitions=W,
      partition_index=r)``), so ``minibatch_size`` and ``epoch_size`` count the samples of
      all workers together, as CNTK's did; the records' sums and ``outputs`` are summed
      over the workers.
    * **Resuming**: with an existing ``checkpoint`` the run resumes after the last epoch it
      holds and continues the same loss curve (dropout masks and data order included); a
      checkpoint that already holds ``epochs`` epochs trains nothing and says so (a
      warning on the ``stadyn`` logger).  Without one, training starts at epoch
      ``initial_epoch`` (0-based): for a caller that restored the trainer and the source
      from files of its own (the BrainScript runner's ``modelPath.<n>``).
    * **Before training**: the checkpoint's folder is made and a file is written in it and
      removed, so an unwritable folder fails at once.
    * **A NaN or infinite loss** stops training with :class:`NonFiniteLossError` naming the
      epoch and minibatch, before the learners apply that minibatch; the checkpoint keeps
      the last finished epoch.  (The check reads the loss the step already waited for.)
      With ``stop_on_nonfinite=False`` training goes on and the callbacks, which see each
      minibatch's ``loss_sum``, decide (CNTK checked only where it logged).
    * **Progress bar**: with ``progress_bar=None`` a bar is drawn on ``sys.stderr`` when it
      is a terminal (and the writers hold none); ``True`` always, ``False`` never.  The
      writers' text lines are printed above it.

    Example — 10 samples, minibatches of 4 in the first epoch and 3 after it:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F, stadyn.layers as L
        >>> import stadyn.solvers as S
        >>> from stadyn.io import MinibatchSourceFromData
        >>> from stadyn.train import Trainer, TrainingCallback
        >>> class Sizes(TrainingCallback):
        ...     def __init__(self): self.sizes = []
        ...     def on_minibatch_end(self, trainer, record):
        ...         self.sizes.append((record["epoch"], record["samples"]))
        >>> rng = np.random.default_rng(0)
        >>> source = MinibatchSourceFromData({"x": rng.normal(size=(10, 3)).astype("f4"),
        ...                                   "y": np.eye(2, dtype="f4")[[0, 1] * 5]})
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     x, y = sd.Variable((1, 3)), sd.Variable((1, 2))
        ...     loss = F.cross_entropy_with_softmax(L.Dense(2)(x), y)
        ...     solver = S.Sgd(lr=0.1); solver.set_parameters(sd.get_parameters())
        ...     sizes = Sizes()
        ...     history = Trainer(None, loss, [solver]).fit(
        ...         source, {x: "x", y: "y"}, epochs=2, minibatch_size=[4, 3],
        ...         callbacks=[sizes], progress_bar=False)
        >>> sizes.sizes
        [(0, 4), (0, 4), (0, 2), (1, 3), (1, 3), (1, 3), (1, 1)]
        >>> [record["samples"] for record in history]
        [10, 10]
    """
    from ._progress import ProgressBarWriter

    input_map = trainer._input_map(source, input_map)
    hooks = as_callbacks(callbacks)
    size = epoch_size or source.sweep_size
    by_sweep = not epoch_size       # an epoch is one sweep (CNTK's epochSize = 0)
    same_units = True               # the trainer counts samples as the reader does (so far)
    begin_epoch = epoch_starter(source)     # a reader that ends its own epochs, else None
    sizes = _minibatch_sizes(minibatch_size)
    first = checked_count(initial_epoch, "Trainer.fit: initial_epoch", 0)
    outputs = list(outputs)     # a compiled step computes them too (one program per set)
    main = trainer.data_parallel is None or trainer.data_parallel.is_main
    partition = {}
    if trainer.data_parallel is not None and trainer.data_parallel.size > 1:
        partition = {"num_data_partitions": trainer.data_parallel.size,
                     "partition_index": trainer.data_parallel.rank}
    if checkpoint is not None and os.path.exists(checkpoint):
        state = trainer.restore_from_checkpoint(checkpoint)
        source.restore_from_checkpoint(state["reader"])
        first = int(state["epoch"]) + 1
    if first > 0:
        for writer in trainer._writers():
            if hasattr(writer, "epochs"):
                writer.epochs = first
    if first >= epochs:
        if main and checkpoint is not None:
            logger.warning(f"Trainer.fit: {os.fspath(checkpoint)}: already trained {first} "
                           f"epoch{'s' if first != 1 else ''} of the {epochs} asked for; "
                           f"nothing to train")
        return []
    if checkpoint is not None and main:
        check_checkpoint_folder(checkpoint)
    bar = None
    if main and progress_bar is not False and not any(
            isinstance(w, ProgressBarWriter) for w in trainer.progress_writers):
        bar = ProgressBarWriter(num_samples_per_epoch=size, enabled=progress_bar)
        bar.epochs = first
        trainer.progress_writers.insert(0, bar)    # closes its line before summaries print
    history = []
    try:
        for epoch in range(first, epochs):
            start = time.perf_counter()
            seen, loss_sum, metric_sum, minibatch = 0, 0.0, 0.0, 0
            swept, read_total = False, 0
            batch = sizes(epoch)
            for hook in hooks:
                hook.on_epoch_begin(trainer, epoch)
            if begin_epoch is not None:
                begin_epoch(epoch, size, batch)
            while seen < size or begin_epoch is not None:
                # a request counts what the reader counts: cut to the epoch's end while the
                # trainer counts the same, else (labels per sequence of sequence inputs) to
                # the sweep's end where an epoch is a sweep
                request = (batch if begin_epoch is not None else
                           min(batch, size - seen) if same_units else
                           max(min(batch, source.sweep_size - read_total), 1) if by_sweep
                           else batch)
                data = source.next_minibatch(request, input_map=input_map, **partition)
                # a worker whose share is empty joins the others' step (none had samples:
                # the epoch, or the data, is over for every worker)
                if not data and (not partition or not trainer._train_nothing()):
                    break
                minibatch += 1
                if data:
                    try:
                        trainer._train(data, outputs, finite_only=stop_on_nonfinite)
                    except _NonFiniteLoss as exc:
                        raise _diverged(exc.loss, epoch, minibatch, checkpoint) from None
                if data and ends_sweep(data):   # schedules given per sweep move on (CNTK's rule)
                    for learner in trainer.parameter_learners:
                        learner.end_sweep()
                n = trainer.previous_minibatch_sample_count
                seen += n
                read = None if partition else _reader_count(data)   # (a worker's share)
                read_total += read or 0
                if read is not None and read != n:
                    same_units = False
                if n:   # (a compat Trainer refuses the averages of no samples, as CNTK's)
                    loss_sum += trainer.previous_minibatch_loss_average * n
                    if trainer.previous_minibatch_evaluation_average is not None:
                        metric_sum += trainer.previous_minibatch_evaluation_average * n
                if hooks:
                    step = {"epoch": epoch, "minibatch": minibatch, "samples": n,
                            "loss_sum": trainer.previous_minibatch_loss_sum,
                            "metric_sum": trainer.previous_minibatch_evaluation_sum,
                            "outputs": _output_values(trainer, outputs)}
                    for hook in hooks:
                        hook.on_minibatch_end(trainer, step)
                if by_sweep and not same_units and (
                        ends_sweep(data) or read_total >= source.sweep_size):
                    swept = True      # one sweep, counted in other units than the trainer's
                    break
            trainer.summarize_training_progress()
            record = {"epoch": epoch, "samples": seen,
                      "seconds": time.perf_counter() - start,
                      "loss": loss_sum / max(seen, 1),
                      "metric": metric_sum / max(seen, 1) if trainer._metric_sum is not None
                      else None, "validation_metric": None}
            if validation is not None:
                record["validation_metric"] = trainer.evaluate(
                    validation, trainer._input_map(validation, validation_input_map),
                    validation_minibatch_size)
            if checkpoint is not None and main:
                trainer.save_checkpoint(checkpoint, {"epoch": epoch,
                                                  "reader": source.get_checkpoint_state()})
                for hook in hooks:
                    hook.on_checkpoint(trainer, checkpoint, record)
            for hook in hooks:
                hook.on_epoch_end(trainer, record)
            history.append(record)
            if seen < size and not swept and begin_epoch is None:
                break           # the source ran out (max_samples / max_sweeps)
    finally:
        if bar is not None:
            bar.close()
            trainer.progress_writers.remove(bar)
    return history


def _reader_count(data) -> int | None:
    """A minibatch's samples as its reader counts them (the largest stream's), if it says."""
    counts = [v.num_samples for v in data.values() if hasattr(v, "num_samples")]
    return max(counts) if counts else None


def _output_values(trainer, outputs: Sequence[Variable]) -> list[float]:
    """The values of ``fit``'s extra outputs after a step (summed over the workers)."""
    values = [float(v.d) for v in outputs]
    if values and trainer.data_parallel is not None:
        values = list(trainer.data_parallel.all_reduce_scalars(*values))
    return values


def _diverged(loss: float, epoch: int, minibatch: int,
              checkpoint: str | os.PathLike | None) -> NonFiniteLossError:
    kept = ""
    if checkpoint is not None:
        kept = (f"; {os.fspath(checkpoint)} keeps the state after epoch {epoch}"
                if epoch > 0 or os.path.exists(checkpoint) else "; no checkpoint was written")
    return NonFiniteLossError(
        f"Trainer.fit: the loss is {loss} in epoch {epoch + 1}, minibatch {minibatch} "
        f"(counted from 1); training stopped before that minibatch's update (check the "
        f"data and the learning rate){kept}", epoch + 1, minibatch)


def _minibatch_sizes(minibatch_size):
    """``fit``'s ``minibatch_size`` (an int, a per-epoch list, or a function of the epoch) as a
    function of the 0-based epoch, each size checked (a list's entries at once)."""
    what = "Trainer.fit: minibatch_size"
    if callable(minibatch_size):
        return lambda epoch: checked_count(minibatch_size(epoch), f"{what}({epoch})", 1)
    if isinstance(minibatch_size, (list, tuple)):
        if not minibatch_size:
            raise StadynError(f"{what}: the per-epoch list is empty")
        sizes = [checked_count(m, f"{what}[{k}]", 1) for k, m in enumerate(minibatch_size)]
        return lambda epoch: sizes[min(epoch, len(sizes) - 1)]
    size = checked_count(minibatch_size, what, 1)
    return lambda epoch: size

"""Hooks of :meth:`stadyn.train.Trainer.fit`: a callback sees the loop at its four points."""

from __future__ import annotations

import os
from typing import Any, Callable

__all__ = ["TrainingCallback"]


class TrainingCallback:
    """Subclass and override the points of :meth:`~stadyn.train.Trainer.fit` you need (each
    does nothing by default).  A plain function given as a callback is called at
    :meth:`on_epoch_end` with the epoch's record.

    * :meth:`on_epoch_begin` — before an epoch's first minibatch;
    * :meth:`on_minibatch_end` — after each minibatch's update, with ``{"epoch", "minibatch"
      (from 1), "samples", "loss_sum", "metric_sum", "outputs"}`` (sums over the minibatch's
      samples; ``outputs``: the values of ``fit(outputs=...)``);
    * :meth:`on_checkpoint` — after the checkpoint of an epoch is written (``fit(checkpoint=)``);
    * :meth:`on_epoch_end` — with the epoch's record, after validation and the checkpoint.

    Example:
        >>> from stadyn.train import TrainingCallback
        >>> class Losses(TrainingCallback):
        ...     def __init__(self): self.sums = []
        ...     def on_minibatch_end(self, trainer, record): self.sums.append(record["loss_sum"])
        >>> Losses().sums
        []
    """

    def on_epoch_begin(self, trainer, epoch: int) -> None:
        """Before epoch ``epoch`` (0-based) reads its first minibatch."""

    def on_minibatch_end(self, trainer, record: dict[str, Any]) -> None:
        """After a minibatch's update."""

    def on_checkpoint(self, trainer, path: str | os.PathLike, record: dict[str, Any]) -> None:
        """After the epoch's checkpoint was written to ``path``."""

    def on_epoch_end(self, trainer, record: dict[str, Any]) -> None:
        """After an epoch (validation and checkpoint done)."""


class _EpochFunction(TrainingCallback):
    """A plain function as a callback: called with each epoch's record."""

    def __init__(self, function: Callable[[dict], Any]):
        self.function = function

    def on_epoch_end(self, trainer, record: dict[str, Any]) -> None:
        self.function(record)


def as_callbacks(callbacks) -> list[TrainingCallback]:
    """``fit``'s ``callbacks``: TrainingCallbacks, and functions wrapped into one."""
    return [c if isinstance(c, TrainingCallback) else _EpochFunction(c) for c in callbacks]

"""What the training and evaluation loops ask of a minibatch source beyond
``next_minibatch``: whether it ends its own epochs, and whether a minibatch ends a sweep (the
one rule :func:`~._fit.fit` and :func:`~._evaluate.evaluate_sums` share)."""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["ends_sweep", "epoch_starter"]


def epoch_starter(source: Any) -> Callable[[int, int, int], None] | None:
    """The ``start_epoch(epoch, epoch_size, minibatch_size)`` of a reader that ends its own
    epochs (CNTK's legacy HTKMLFReader in utterance mode, :class:`~stadyn.io.UtteranceSource`,
    and truncated BPTT's :class:`~stadyn.io.TruncatedSource`): told each epoch's number, size
    and minibatch size, it is read until it gives no more.  None for any other source."""
    return getattr(source, "start_epoch", None)


def ends_sweep(data: Any) -> bool:
    """Whether a minibatch (``{input: stream data}``) ends a sweep of its reader."""
    return any(getattr(v, "end_of_sweep", False) for v in data.values())

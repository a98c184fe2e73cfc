"""Checkpoints in data-parallel training: rank 0 writes, every worker resumes from the same file.

The :class:`stadyn.train.Trainer` writes a checkpoint atomically (a temporary file, then a
rename), so a worker killed mid-write leaves the previous checkpoint intact.  With several workers
only rank 0 writes (the others hold the same parameters and learner state — that is what the
gradient all-reduce guarantees — and the reader positions are global), and everyone waits at a
barrier so that no worker runs ahead of a checkpoint that might be needed to resume it.  On a
restart every worker reads that one file (one machine, or a shared file system).
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from . import _collectives as C
from ._env import is_main

__all__ = ["save_checkpoint", "restore_from_checkpoint"]


def _barrier(what: str) -> None:
    if C.active():
        import torch.distributed as dist
        C.run(what, dist.barrier)


def save_checkpoint(trainer, filename: str | os.PathLike,
                    external_state: Mapping[str, Any] | None = None) -> None:
    """Rank 0 writes ``trainer``'s checkpoint (atomically); every worker then waits for it.

    ``external_state`` is saved along (a JSON-able mapping: the reader's
    ``get_checkpoint_state()``, the epoch, ...); take it on any worker — the readers' positions
    are global, the same on all of them.
    """
    if is_main():
        trainer.save_checkpoint(filename, external_state)
    _barrier(f"barrier after writing the checkpoint {os.fspath(filename)}")


def restore_from_checkpoint(trainer, filename: str | os.PathLike) -> dict:
    """Every worker restores ``trainer`` from the same checkpoint; returns its external state."""
    _barrier(f"barrier before reading the checkpoint {os.fspath(filename)}")
    return trainer.restore_from_checkpoint(filename)

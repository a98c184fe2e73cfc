"""Training: the CNTK-style Trainer, progress writers and checkpoints."""

from ._trainer import Trainer, feed

__all__ = ["Trainer", "feed"]

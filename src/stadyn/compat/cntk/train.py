"""``cntk.train``: the Trainer over CNTK Functions."""

from __future__ import annotations

from ...train import Trainer as _Trainer
from ._function import unwrap

__all__ = ["Trainer"]


class Trainer(_Trainer):
    """``cntk.Trainer(model, (loss, metric), learners, progress_writers)``, or the 2017 betas'
    ``cntk.Trainer(model, loss, metric, learner)``; takes CNTK Functions."""

    def __init__(self, model, criterion, parameter_learners=None, progress_writers=None, *args,
                 **kwargs):
        super().__init__(unwrap(model), unwrap(criterion), unwrap(parameter_learners),
                         unwrap(progress_writers), *unwrap(args), **kwargs)

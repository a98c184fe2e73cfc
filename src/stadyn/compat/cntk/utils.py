"""The 2017 betas' ``cntk.utils``: the progress printer with that release's wording (and the
by-hand calls of CNTK's, ``update`` with a minibatch's averages, ``update_with_trainer`` and
``epoch_summary``, which were the betas' way to drive it)."""

from __future__ import annotations

from .logging import ProgressPrinter as _ProgressPrinter
from .logging import log_number_of_parameters

__all__ = ["ProgressPrinter", "log_number_of_parameters"]


class ProgressPrinter(_ProgressPrinter):
    """``cntk.utils.ProgressPrinter`` printing the 2017 betas' lines (``Finished Epoch [1]: ...
    (3250.9 samples per second)``)."""

    def __init__(self, freq=None, first=0, tag="", log_to_file=None, rank=None,
                 gen_heartbeat=False, num_epochs=None, **kwargs):
        kwargs.setdefault("style", "2017")
        super().__init__(freq=freq, first=first, tag=tag, log_to_file=log_to_file, rank=rank,
                         gen_heartbeat=gen_heartbeat, num_epochs=num_epochs, **kwargs)

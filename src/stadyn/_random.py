"""Seeds: the NumPy generator parameter initialisers draw from, the seeds of random ops made
without one, and torch's generator.

Like NNabla, parameter initialisation draws from a dedicated generator (seeded 313 at import), so
creating a model is reproducible regardless of other uses of ``np.random``.  Random ops whose
framework picks their seed for them (CNTK's ``seed=auto_select``: its dropout, ``cntk.random``,
its samplers) take it from :func:`auto_seed`, a second dedicated generator, so such a run repeats
from one process to the next as it does in CNTK 2.7.  :func:`seed` reseeds both and torch (the
ops with ``seed=-1``, which draw from torch's generator: NNabla's rule, and PyTorch's).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["seed", "prng", "auto_seed"]

prng = np.random.RandomState(313)
_auto_seeds = np.random.RandomState(313)


def auto_seed() -> int:
    """The next seed for a random op its framework seeds itself (CNTK's ``auto_select``): the
    same sequence in every process until :func:`seed` is called.

    Example:
        >>> import stadyn as sd
        >>> from stadyn._random import auto_seed
        >>> sd.seed(1); a = auto_seed(); sd.seed(1)
        >>> auto_seed() == a
        True
    """
    return int(_auto_seeds.randint(0, 2 ** 62, dtype=np.int64))


def seed(value: int) -> None:
    """Reseed parameter initialisation and torch's random ops.

    Example:
        >>> import stadyn as sd
        >>> sd.seed(0)
    """
    prng.seed(value)
    _auto_seeds.seed(value)
    torch.manual_seed(value)

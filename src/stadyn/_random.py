"""Seeds: the NumPy generator parameter initialisers draw from, the seeds of random ops made
without one, and torch's generator.

Like NNabla, NNabla-style parameter initialisation draws from a dedicated generator (seeded 313
at import), so creating a model is reproducible regardless of other uses of ``np.random``.
CNTK-style initialisers and random ops whose framework picks their seed for them (CNTK's
``seed=auto_select``: its initialisers, dropout, ``cntk.random``, its samplers) take it from
:func:`auto_seed`, CNTK's count of seeds, so such a run repeats from one process to the next as
it does in CNTK 2.7, and CNTK layers start from CNTK's own values (``_mt19937.py``).
:func:`seed` reseeds both and torch (the ops with ``seed=-1``, which draw from torch's
generator: NNabla's rule, and PyTorch's).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["seed", "prng", "auto_seed"]

prng = np.random.RandomState(313)
_next_auto_seed = [0]


def auto_seed() -> int:
    """The next seed for a parameter initialiser or random op whose framework seeds it itself
    (CNTK's ``auto_select``): 0, 1, 2, ... from the start of the process, in the order the
    parameters and random ops are made, as CNTK 2.7 numbers them (so a CNTK layer's initial
    values are CNTK's); after :func:`seed` ``(v)`` the count starts at ``v * 2**32``.

    Example:
        >>> import stadyn as sd
        >>> from stadyn._random import auto_seed
        >>> sd.seed(0); [auto_seed(), auto_seed()]
        [0, 1]
    """
    value = _next_auto_seed[0]
    _next_auto_seed[0] = value + 1
    return value


def seed(value: int) -> None:
    """Reseed parameter initialisation and torch's random ops.

    Example:
        >>> import stadyn as sd
        >>> sd.seed(0)
    """
    prng.seed(value)
    _next_auto_seed[0] = (int(value) % 2 ** 32) << 32
    torch.manual_seed(value)

"""Seeds: the NumPy generator parameter initialisers draw from, and torch's generator.

Like NNabla, parameter initialisation draws from a dedicated generator (seeded 313 at import), so
creating a model is reproducible regardless of other uses of ``np.random``.  :func:`seed` reseeds
it and torch (dropout and other random ops).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["seed", "prng"]

prng = np.random.RandomState(313)


def seed(value: int) -> None:
    """Reseed parameter initialisation and torch's random ops.

    Example:
        >>> import stadyn as sd
        >>> sd.seed(0)
    """
    prng.seed(value)
    torch.manual_seed(value)

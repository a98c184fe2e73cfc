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

import contextlib

import numpy as np
import torch

__all__ = ["seed", "prng", "auto_seed", "fixed_seed", "set_fixed_seed", "initializer_seed",
           "restart_auto_seeds", "auto_seeds_kept", "seed_torch"]

prng = np.random.RandomState(313)
_next_auto_seed = [0]
_fixed = [None]     # CNTK's set_fixed_random_seed: what every auto-selected seed becomes


def auto_seed() -> int:
    """The next seed for a parameter initialiser or random op whose framework seeds it itself
    (CNTK's ``auto_select``): 0, 1, 2, ... from the start of the process, in the order the
    parameters and random ops are made, as CNTK 2.7 numbers them (so a CNTK layer's initial
    values are CNTK's); after :func:`seed` ``(v)`` the count starts at ``v * 65536``
    (modulo 2**31).

    Example:
        >>> import stadyn as sd
        >>> from stadyn._random import auto_seed
        >>> sd.seed(0); [auto_seed(), auto_seed()]
        [0, 1]
    """
    value = _next_auto_seed[0]
    _next_auto_seed[0] = value + 1
    return value


def restart_auto_seeds(value: int = 0) -> None:
    """Count :func:`auto_seed` from ``value`` again and unfix a fixed seed (CNTK 2.7's
    ``cntk_py.reset_random_seed``).

    Example:
        >>> from stadyn._random import auto_seed, restart_auto_seeds
        >>> restart_auto_seeds(5); auto_seed()
        5
    """
    _next_auto_seed[0] = int(value)
    _fixed[0] = None


@contextlib.contextmanager
def auto_seeds_kept():
    """Around code whose seeds do not count (a probe calling a user's function once more than
    the framework would): :func:`auto_seed` counts on afterwards from where it was.

    Example:
        >>> from stadyn._random import auto_seed, auto_seeds_kept, restart_auto_seeds
        >>> restart_auto_seeds(5)
        >>> with auto_seeds_kept():
        ...     _ = auto_seed()
        >>> auto_seed()
        5
    """
    kept = _next_auto_seed[0]
    try:
        yield
    finally:
        _next_auto_seed[0] = kept


def fixed_seed() -> int | None:
    """The seed CNTK's ``set_fixed_random_seed`` fixed (every auto-selected seed is then that
    one, as in CNTK 2.7), or None."""
    return _fixed[0]


def set_fixed_seed(value: int | None) -> None:
    """Fix every auto-selected seed to ``value`` (None: count them again)."""
    _fixed[0] = None if value is None else int(value)


def initializer_seed() -> int:
    """The seed of a CNTK initialiser given none: the fixed seed, else the next of the count
    (CNTK's ``GenerateRandomSeed``)."""
    fixed = _fixed[0]
    return auto_seed() if fixed is None else fixed


def seed(value: int) -> None:
    """Reseed parameter initialisation and torch's random ops.

    Example:
        >>> import stadyn as sd
        >>> sd.seed(0)
    """
    prng.seed(value)
    _next_auto_seed[0] = int(value) * 65536 % 2 ** 31   # sd.seed(0): CNTK's own count
    seed_torch(value)


def seed_torch(value: int) -> None:
    """Seed torch's generators as ``torch.manual_seed(value)`` does, without its cost on a
    build that has no accelerator.

    ``torch.manual_seed`` also seeds CUDA, XPU, MTIA, MPS and a custom device; before one is
    initialized it queues that seeding with the caller's stack (``traceback.format_stack``):
    about 1 ms per call in a shallow program, several in a test's deep stack.  A torch built
    without any accelerator (``torch.accelerator.current_accelerator()`` is None, a
    compile-time fact that initializes nothing) can never run that queued seeding, so only the
    CPU generator is seeded: the same numbers.  With an accelerator in the build,
    ``torch.manual_seed`` runs as it is (its lazy seeding at the device's initialization
    included).

    Example:
        >>> import torch
        >>> from stadyn._random import seed_torch
        >>> seed_torch(3); a = torch.rand(2)
        >>> _ = torch.manual_seed(3); bool((a == torch.rand(2)).all())
        True
    """
    if torch.accelerator.current_accelerator() is None:
        torch.default_generator.manual_seed(int(value))
    else:
        torch.manual_seed(value)

"""``nnabla.random``: the seeds of parameter initialisation and of random functions.

NNabla 1.39 keeps two: the parameter seed, whose NumPy generator ``prng`` (seeded 313 at import)
the initialisers draw from, and the function seed of random functions (``F.rand``,
``F.dropout``, ... with ``seed=-1``).  ``seed(v)`` sets both; ``set_parameter_seed`` and
``set_function_seed`` one each (nnabla-examples' ``utils/neu`` gives every worker the same
parameter seed and its own function seed this way).  ``prng`` is the generator Stadyn's
NNabla-style initialisers draw from at each call: assigning a generator to it
(``nnabla.random.prng = np.random.RandomState(0)``) makes them draw from that one, as in NNabla.
A reseed reseeds it in place, so a ``prng`` imported before a reseed draws the new stream
(NNabla's module makes a new generator, so such an import would keep the old one).

Example:
    >>> import stadyn.compat.nnabla.random as R
    >>> R.set_parameter_seed(5); a = R.prng.rand(2)
    >>> R.seed(5, set_function_seed=False); b = R.prng.rand(2)
    >>> bool((a == b).all()), R.pseed
    (True, 5)
"""

from __future__ import annotations

import sys
import types

import numpy as np

from ... import _random

__all__ = ["prng", "pseed", "seed", "set_function_seed", "set_parameter_seed",  # noqa: F822
           "np"]  # (prng: a property of the module, below)

#: the parameter seed last set (313 at import, as NNabla's)
pseed = 313


def seed(seed_value: int, set_function_seed: bool = True, set_parameter_seed: bool = True
         ) -> None:
    """Set the parameter seed (``prng`` restarts from it), the function seed (random functions
    without a seed of their own), or both (``nn.seed(v)``).  ``seed_value`` must be an ``int``
    (NNabla asserts it)."""
    assert isinstance(seed_value, int)
    if set_parameter_seed:
        global pseed
        pseed = seed_value
        _random.prng.seed(seed_value)
    if set_function_seed:
        _random.seed_torch(seed_value)


def set_parameter_seed(seed_value: int) -> None:
    """Set the parameter seed only: ``prng`` restarts from ``seed_value``."""
    seed(seed_value, set_function_seed=False, set_parameter_seed=True)


def set_function_seed(seed_value: int) -> None:
    """Set the function seed only (random functions with ``seed=-1``)."""
    seed(seed_value, set_function_seed=True, set_parameter_seed=False)


class _RandomModule(types.ModuleType):
    """This module, whose ``prng`` is the generator initialisers read at each call (reading
    and assigning it reach Stadyn's one generator)."""

    @property
    def prng(self) -> np.random.RandomState:
        """The generator parameter initialisers draw from."""
        return _random.prng

    @prng.setter
    def prng(self, generator: np.random.RandomState) -> None:
        _random.prng = generator


sys.modules[__name__].__class__ = _RandomModule

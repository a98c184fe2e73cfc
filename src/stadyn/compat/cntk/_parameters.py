"""Where CNTK's parameters are registered.

A CNTK parameter lives as long as a graph or a layer refers to it: a model built and dropped
in a loop frees its weights.  Stadyn's process-wide parameter registry holds every parameter
for good (NNabla's rule: ``get_parameters()`` lists them until ``clear_parameters()``), so
CNTK's layers and ``Parameter`` register theirs in a registry of their own that holds them
weakly, unless the program made another registry current (``parameter_registry(reg)``: then
it gets them, as it asked).  Names stay unique there (``dense``, ``dense_1``, ...) while
the parameters live, so that a saved model's parameters keep distinct names.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Iterator

from ...parametric import (ParameterRegistry, current_registry, default_registry,
                           parameter_registry)

__all__ = ["WeakParameterRegistry", "CNTK_PARAMETERS", "cntk_parameters"]


class WeakParameterRegistry(ParameterRegistry):
    """A parameter registry that holds its parameters weakly (an entry goes with the last
    reference to its parameter); a claimed scope's number is never handed out again.

    Example:
        >>> import gc, stadyn as sd
        >>> reg = WeakParameterRegistry()
        >>> with sd.parameter_registry(reg):
        ...     w = sd.get_parameter_or_create("W", (2,))
        >>> list(reg), reg.claim("dense"), reg.claim("dense")
        (['W'], 'dense', 'dense_1')
        >>> del w; _ = gc.collect(); list(reg)
        []
    """

    def __init__(self) -> None:
        super().__init__()
        self._params = weakref.WeakValueDictionary()     # (in insertion order, as a dict)
        self._next: dict[str, int] = {}

    def claim(self, prefix: str) -> str:
        k = self._next.get(prefix, 0)
        while True:
            candidate = f"{prefix}_{k}" if k else prefix
            k += 1
            if candidate not in self._claimed and not self.items(candidate):
                break
        self._next[prefix] = k
        self._claimed.add(candidate)
        return candidate

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._params))


CNTK_PARAMETERS = WeakParameterRegistry()


@contextlib.contextmanager
def cntk_parameters():
    """Register the parameters made inside in :data:`CNTK_PARAMETERS`, unless the program
    made a registry of its own current."""
    if current_registry() is default_registry():
        with parameter_registry(CNTK_PARAMETERS):
            yield
    else:
        yield

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

import numpy as np

from ...parametric import (ParameterRegistry, current_registry, default_registry,
                           get_parameter_or_create, parameter_registry)

__all__ = ["WeakParameterRegistry", "CNTK_PARAMETERS", "cntk_parameters", "first_value",
           "registered"]


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
        # each path -> a weak reference to its parameter, whose callback drops the path from
        # the index of scopes (ParameterRegistry._below) when the parameter goes, so that the
        # index holds the living parameters' paths, not every path ever set
        self._watched: dict[str, tuple[weakref.ref, list[str]]] = {}

    def set(self, name: str, var) -> None:
        super().set(name, var)
        self._watch(name, var)

    def _watch(self, name: str, var) -> None:
        at = [name]                 # (the path it goes by: a rename moves it)
        registry = weakref.ref(self)

        def gone(ref, at=at, registry=registry):
            self = registry()
            if self is not None and self._watched.get(at[0], (None,))[0] is ref:
                del self._watched[at[0]]
                if at[0] not in self._params:       # (unless another parameter took it)
                    self._index(at[0], add=False)

        self._watched[name] = (weakref.ref(var, gone), at)

    def _renamed(self, moves: list[tuple[str, str]]) -> None:
        super()._renamed(moves)
        # (all taken out before any is put back: a new path may be another pair's old one)
        watched = [(new, self._watched.pop(old, None)) for old, new in moves]
        for new, entry in watched:
            if entry is not None:
                entry[1][0] = new
                self._watched[new] = entry

    def pop(self, name: str):
        var = super().pop(name)
        if var is not None:
            self._watched.pop(name, None)
        return var

    def remove(self, prefix: str = "") -> None:
        names = [k for k, _ in self.items(prefix)]
        super().remove(prefix)
        for k in names:
            self._watched.pop(k, None)

    def _holds_under(self, scope: str) -> bool:
        """Whether a living parameter's path is below ``scope`` (``items(scope)`` not empty)."""
        key = scope.rstrip("/")
        if not key:
            return bool(self.items(scope))
        names = self._below.get(key)
        # (a copy: a parameter going during the loop drops its path from the set)
        return bool(names) and any(n in self._params for n in tuple(names))

    def claim(self, prefix: str) -> str:
        k = self._next.get(prefix, 0)
        while True:
            candidate = f"{prefix}_{k}" if k else prefix
            k += 1
            if candidate not in self._claimed and not self._holds_under(candidate):
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


def registered(path: str, name: str, shape: tuple, value, dtype):
    """The parameter of ``shape`` and first ``value`` at ``path`` (``path/name`` when named)
    in the registry :func:`cntk_parameters` picks (``C.parameter``'s).

    Example:
        >>> import numpy as np
        >>> registered("doc_w", "", (2,), np.ones(2), np.float32).d.tolist()
        [1.0, 1.0]
    """
    with cntk_parameters():
        return get_parameter_or_create(f"{path}/{name}" if name else path, tuple(shape),
                                       np.asarray(value, dtype=dtype), dtype=dtype)


def first_value(shape: tuple, init, dtype) -> np.ndarray:
    """A ``C.parameter``'s first value: ``init`` a number (in the parameter's own type) or an
    initializer from ``cntk.initializer``, drawn for ``shape`` with CNTK's fans.

    Example:
        >>> first_value((2,), 0.5, np.float32).tolist()
        [0.5, 0.5]
    """
    from ...layers import initial_value
    if isinstance(init, float):
        return np.full(shape, init, dtype)
    fan_in, fan_out = _fans(shape, init)
    return initial_value(init, shape, fan_in, fan_out, dtype)


def _fans(shape: tuple, init) -> tuple[int, int]:
    """CNTK's fans of a parameter made directly: the last ``output_rank`` axes (1 by default)
    are the output's, the others the input's; a filter's axes count in both."""
    out_rank = getattr(init, "output_rank", None) or 1
    filter_rank = getattr(init, "filter_rank", None) or 0
    if not shape:
        return 1, 1
    out_rank = min(out_rank, len(shape))
    filt = int(np.prod(shape[len(shape) - filter_rank:])) if filter_rank else 1
    fan_out = int(np.prod(shape[len(shape) - out_rank:])) * (filt if filter_rank else 1)
    fan_in = int(np.prod(shape[:len(shape) - out_rank])) if len(shape) > out_rank else 1
    return max(fan_in, 1), max(fan_out, 1)

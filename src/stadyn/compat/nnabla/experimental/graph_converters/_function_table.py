"""NNabla's functions by type name (``'Convolution'`` -> ``F.convolution``), for rebuilding a
function of a graph from its ``info.type_name`` and ``info.args``."""

from __future__ import annotations

from typing import Callable

from ... import functions as _F
from ..._function import type_name

__all__ = ["function_of"]

_TABLE: dict[str, Callable] = {}


def function_of(name: str) -> Callable:
    """The ``nnabla.functions`` function whose graph nodes are of type ``name``.

    Example:
        >>> function_of("ReLU").__name__, function_of("MulScalar").__name__
        ('relu', 'mul_scalar')
    """
    if not _TABLE:
        for op in dir(_F):
            fn = getattr(_F, op)
            if not op.startswith("_") and callable(fn) and op.islower():
                _TABLE.setdefault(type_name(op), fn)
    try:
        return _TABLE[name]
    except KeyError:
        raise ValueError(f"graph_converters: no nnabla.functions function makes "
                         f"{name!r} nodes") from None

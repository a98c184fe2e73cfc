"""NNabla 1.39's functions compute in float32: its CPU functions are built for ``float``, read
every input array as float32 and write float32, so ``F.add2`` of two int32 Variables, or
``F.sum`` / ``F.max`` / ``F.relu`` / ``F.cumsum`` of one, gives float32 values (checked on
NNabla 1.39, case ``nnabla_fidelity_3.integer_inputs__float32``).  Stadyn's catalog ops compute in
their inputs' dtype (``add2`` of int32 is int32, ``sum`` of int32 is int64, as torch's), so
here the integer inputs of NNabla's arithmetic, mathematical, activation, comparison and
reduction functions are cast to float32 first (a ``cast`` node before the function: its
``parent.inputs`` show the cast values).

Functions that read an input as indices (``embed``, ``one_hot``, ``gather``, a loss's
target, ...) are left alone, as are the indices functions give back (``max(...,
only_index=True)``, ``sort``'s: int64 in Stadyn, uint64 in NNabla).

Example:
    >>> import numpy as np, stadyn as sd
    >>> import stadyn.compat.nnabla.functions as F
    >>> with sd.auto_forward():
    ...     y = F.sum(sd.Variable.from_numpy_array(np.array([1, 2, 3], np.int32)))
    >>> y.d.dtype, float(y.d)
    (dtype('float32'), 6.0)
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ... import functions as _F
from ...graph import Variable as _Variable
from ...ops import CATALOG as _CATALOG

__all__ = ["FLOAT_CATEGORIES", "reading_floats", "as_float32"]

# The catalog's categories whose NNabla functions take data (no indices) in every input.
FLOAT_CATEGORIES = ("activation", "arithmetic", "math", "reduction", "logical")
_ALSO = ("cumsum", "cumprod")


def _integer(v: Any) -> bool:
    return (isinstance(v, _Variable)
            and np.issubdtype(np.dtype(v.dtype), np.integer))


def as_float32(v: Any) -> Any:
    """``v`` cast to float32 when it is a Variable of integers; else ``v``.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> as_float32(sd.Variable.from_numpy_array(np.ones(2, np.int32))).dtype
        dtype('float32')
    """
    return _F.cast(v, "float32") if _integer(v) else v


def reading_floats(name: str, fn: Callable) -> Callable:
    """``fn`` (NNabla's function ``name``) with its integer Variable inputs cast to float32
    first, where NNabla's function reads its inputs as float32 (see the module docstring);
    ``fn`` itself for the others.

    Example:
        >>> import stadyn.functions as sdF
        >>> reading_floats("add2", sdF.add2) is sdF.add2, reading_floats("embed", sdF.embed) \\
        ...     is sdF.embed
        (False, True)
    """
    spec = _CATALOG.get(name)
    if name not in _ALSO and (spec is None or spec.category not in FLOAT_CATEGORIES):
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if any(_integer(a) for a in args) or any(_integer(v) for v in kwargs.values()):
            args = tuple(as_float32(a) for a in args)
            kwargs = {k: as_float32(v) for k, v in kwargs.items()}
        return fn(*args, **kwargs)
    return call

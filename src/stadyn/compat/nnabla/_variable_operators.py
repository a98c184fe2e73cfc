"""The arithmetic operators of NNabla's ``nn.Variable`` (``x + y``, ``x - y``, ``x * y``,
``x / y``, ``x ** y`` and their reflections), as NNabla 1.39 computes them: an operand that is a
Variable or an NdArray makes NNabla's binary function (``F.add2``, ...: refused where NNabla
refuses it, computed in float32; with an NdArray at once, giving an NdArray), anything else is
a scalar (``F.add_scalar(x, float(y))``) of one value, or a ``TypeError``.  ``_variable.py``
installs them on its Variable.

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn
    >>> x = nn.Variable.from_numpy_array(np.array([1.0, 2.0]))
    >>> y = x * np.float32(3); y.forward(); y.d.tolist()
    [3.0, 6.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import graph as _graph
from ._float_inputs import as_float32
from ._half_scalars import half_scalar, in_half_context
from ._ndarray import NdArray
from ._refusals import check_binary

_Core = _graph.Variable


def _checked_operator(name: str, function: str, reflected: bool):
    # ``x + y`` of a Variable and a Variable or an NdArray is NNabla's ``F.add2(x, y)``:
    # refused where it refuses (inputs of different ranks; ``_refusals.py``), computed in
    # float32 (``_float_inputs``); with an NdArray it is computed at once on ``x``'s current
    # value and gives an NdArray (NNabla 1.39, both modes: ``_ndarray.imperative``); anything
    # else is a scalar to NNabla (``F.add_scalar(x, float(y))``): a one-value array is read as
    # its value, a longer one or a list is refused (NNabla 1.39: TypeError); then Stadyn's own
    # operator
    def method(self, other):
        if isinstance(other, (_Core, NdArray)):
            check_binary(function, *((other, self) if reflected else (self, other)))
            if isinstance(other, NdArray):
                return getattr(NdArray, name)(self.data, other)
            other = as_float32(other)
        else:
            if isinstance(other, (np.ndarray, np.generic, list, tuple)):
                other = _scalar_operand(name, other)
            if name == "__truediv__" and in_half_context() and isinstance(other, (int, float)):
                # NNabla's F.mul_scalar(x, 1. / y), its scalar in the half type
                return _Core.__mul__(as_float32(self), half_scalar(1.0 / other))
            other = half_scalar(other)
        return getattr(_Core, name)(as_float32(self), other)
    method.__name__ = name
    return method


def _scalar_operand(name: str, other: Any) -> float:
    """``other``, the operand of ``Variable.<name>`` that is no Variable or NdArray, as the
    scalar NNabla 1.39 reads it (``float(other)``): one value, or a ``TypeError``.

    Example:
        >>> import numpy as np
        >>> _scalar_operand("__add__", np.ones((1, 1), np.float32) * 2)
        2.0
    """
    size = np.size(other) if isinstance(other, (np.ndarray, np.generic)) else None
    if size != 1:
        what = (f"a NumPy array of shape {np.shape(other)}" if size is not None
                else f"a {type(other).__name__}")
        line = _graph.format_location(_graph.user_location())
        raise TypeError(f"Variable.{name}: NNabla 1.39 takes a Variable, an NdArray or a "
                        f"scalar here (it computes F.*_scalar(x, float(y)) otherwise), got "
                        f"{what}; wrap an array as nn.Variable.from_numpy_array(a) of the "
                        f"same number of dimensions" + (f" (at {line})" if line else ""))
    return float(np.asarray(other).reshape(()))

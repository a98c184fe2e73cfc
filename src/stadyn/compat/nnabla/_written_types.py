"""The dtype a write gives an NNabla leaf: NNabla 1.39 keeps integer and bool arrays beside a
float32 gradient, and its leaf takes the type of what is written into it (``v.d = labels`` of
int64 reads back int64); torch computes gradients of floating-point tensors only, and a graph
Stadyn built on a float leaf holds no cast.  So here a leaf takes a written integer type unless
it, or a Variable holding its array, needs a gradient or is read by a built graph as float data
(:func:`stays_float`), and an integer leaf about to need a gradient becomes float32
(:func:`float_for_gradients`).  ``_variable.py``'s ``d`` / ``data`` setters apply these rules.

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn
    >>> v = nn.Variable((2,))
    >>> v.d = np.array([1, 2], np.int64); v.d.dtype
    dtype('int64')
    >>> v.need_grad = True; v.d.dtype
    dtype('float32')
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ...graph import Variable as _Core, data_of, grad_of, to_torch_dtype, value_holder
from ._float_inputs import read_as_float
from ._shared_arrays import members

__all__ = ["stays_float", "float_for_gradients", "take_written_type"]


def stays_float(v: _Core, current: torch.Tensor) -> bool:
    """Whether the leaf ``v`` (holding ``current``) keeps its floating dtype when integers are
    written into it (``v.d =``, ``v.data``): it, or a Variable holding its array
    (``x.reshape(shape, unlink=True)``), needs a gradient, or a live graph reads one of them as
    float data (:func:`read_as_float`)."""
    return current.is_floating_point() and any(
        _Core.need_grad.fget(m) or read_as_float(m) for m in members(v))


def float_for_gradients(v: _Core) -> None:
    """An integer or bool leaf about to need a gradient holds float32 from now on (its values
    kept): NNabla 1.39 writes a float32 gradient beside its integer array, and torch computes
    gradients of floating-point tensors only.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> v = nn.Variable.from_numpy_array(np.array([4, 5]))
        >>> float_for_gradients(v)
        >>> v.d
        array([4., 5.], dtype=float32)
    """
    current = data_of(v)
    if (v.parent is None and current is not None and value_holder(v) is v
            and not current.is_floating_point() and not current.is_complex()):
        grad = grad_of(v)                     # a gradient buffer read before: float32 too
        if grad is not None:
            _Core.grad.fset(v, None)
        v.data.cast(np.float32)
        if grad is not None:
            _Core.grad.fset(v, grad.to(torch.float32))


def take_written_type(v: _Core, value: Any) -> None:
    """NNabla 1.39's leaf takes the type of a NumPy array assigned to its ``.d`` (``v.d =
    labels`` of int64 reads back int64; checked on NNabla 1.39, case
    ``nnabla_fidelity_12.assigned_integers__keep_their_type``).  Here ``v`` takes an integer or
    bool array's type unless it needs a gradient (torch's are floating point only), views
    another Variable's value, or a graph built before reads it as float data (it holds no cast
    then: ``_float_inputs.read_as_float``); an integer ``v`` given floating values becomes
    float32 (NNabla's float64: Stadyn keeps floating values float32).  Anything else is written
    into ``v``'s dtype, as before.  Integers written through ``v.data`` follow the same rule
    (``_variable._set_data``)."""
    dtype = getattr(value, "dtype", None)
    if not isinstance(dtype, np.dtype):
        return
    current = data_of(v)
    if current is None or value_holder(v) is not v:
        return
    if dtype.kind in "biu":
        if to_torch_dtype(dtype) == current.dtype or stays_float(v, current):
            return
        v.data.cast(dtype)
    elif dtype.kind == "f" and not current.is_floating_point():
        v.data.cast(np.float32)

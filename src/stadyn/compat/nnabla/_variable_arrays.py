"""The NdArrays over an NNabla Variable's value and gradient (``v.data``, ``v.grad``, and so
``v.d``, ``v.g``): what they read and how they write back.

An NdArray given out by a Variable views the tensor the Variable holds and calls back here when
it needs that tensor again (a kept one reads the Variable's tensor of the moment), gives the
Variable another (``cast``: :func:`value_array`'s setter keeps a floating leaf floating by the
rule of ``v.d = ints``, ``_written_types.py``), or new memory (``fill()`` / ``zero()`` while a
NumPy array reads the old, seen by the Variables sharing the array: ``_shared_arrays.py``,
``_own_arrays.renew_shared_input``).  A gradient read first is allocated as zeros (after a
solver's ``zero_grad``, marked ``zeroing``), as NNabla's.  :func:`assign` writes an array
assigned to ``v.data`` / ``v.grad`` into the buffer the Variable holds.

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn
    >>> x = nn.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
    >>> value_array(x).fill(3.0); grad_array(x).data.tolist(), x.d.tolist()
    ([0.0, 0.0], [3.0, 3.0])
"""

from __future__ import annotations

from typing import Any

import torch

from ..._errors import ArgumentError
from ...graph import Variable as _Core, data_of, grad_of, renew_value, take_released, value_holder
from ._ndarray import NdArray
from ...graph import mark_zeroing
from ._own_arrays import renew_shared_input, renew_shared_outputs
from ._shared_arrays import follow, viewed_in_group, watch_output
from ._written_types import stays_float, warn_rounded

__all__ = ["value_array", "grad_array", "grad_tensor", "assign"]


def value_array(v: _Core) -> NdArray:
    """The NdArray over ``v``'s value (``v.data``).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> value_array(nn.Variable.from_numpy_array(np.arange(3.0))).data.tolist()
        [0.0, 1.0, 2.0]
    """
    return NdArray._of(v, _value_tensor, _set_data, _renew_value, viewed_in_group)


def grad_array(v: _Core) -> NdArray:
    """The NdArray over ``v``'s gradient (``v.grad``), allocated as zeros on the first read.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> grad_array(nn.Variable((2,), need_grad=True)).data.tolist()
        [0.0, 0.0]
    """
    grad_tensor(v)
    return NdArray._of(v, grad_tensor, _set_grad, _set_grad)


def grad_tensor(v: _Core) -> torch.Tensor:
    """``v``'s gradient tensor, zeros allocated when it has none (after a solver's
    ``zero_grad``: ``zeroing``, as NNabla's zeroed gradient).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> grad_tensor(nn.Variable((2,), need_grad=True)).tolist()
        [0.0, 0.0]
    """
    g = grad_of(v)
    released = v.parent is None and take_released(v)
    if g is None:
        _Core.g.fget(v)                 # allocates the zero buffer
        g = grad_of(v)
        if released:
            mark_zeroing(g)
    return g


def _value_tensor(v: _Core) -> torch.Tensor:
    """The tensor holding ``v``'s value: for a view (``get_unlinked_variable``, a parameter
    asked for with another ``need_grad``) the viewed Variable's own, so that a NumPy array
    handed out through either is seen by the other's ``fill()`` / ``zero()`` (NNabla's view and
    viewed Variable hold one array)."""
    return data_of(value_holder(v))


def _set_data(v: _Core, tensor: torch.Tensor) -> torch.Tensor:
    """``v``'s value becomes ``tensor`` (an NdArray cast to another dtype: ``v.data.cast``,
    ``v.data.data = array``); returns the tensor ``v`` now holds.  Integers cast into a
    floating leaf that needs a gradient or that a graph built before reads as float data are
    held in its floating dtype (the integer values: 1.5 cast to int is 1.0), by the rule of
    ``v.d = ints`` (``_written_types.take_written_type``): NNabla 1.39 gives the leaf the
    integer type and its functions read it as float32, which Stadyn's graph built on the float
    leaf would not (it holds no cast there)."""
    current = data_of(v)
    if (v.parent is None and current is not None and stays_float(v, current)
            and not (tensor.is_floating_point() or tensor.is_complex())):
        warn_rounded(tensor)
        tensor = tensor.to(current.dtype)
    _Core.data.fset(v, tensor)
    follow(v)                           # the Variables sharing its array (x.reshape(unlink))
    if v.parent is not None:
        watch_output(v)                 # its next run gives it float32 again, dtype included
    return data_of(v)


def _renew_value(v: _Core, tensor: torch.Tensor) -> torch.Tensor:
    """``renew_value`` (new memory for ``fill()`` / ``zero()``), seen by the Variables sharing
    ``v``'s array."""
    old = data_of(v)
    was = old.untyped_storage().data_ptr() if old is not None else None
    new = renew_value(v, tensor)
    follow(value_holder(v))
    renew_shared_input(v, new)          # (an in-place reshape's input holds its array too)
    if was is not None:
        renew_shared_outputs(v, new, was)   # (and its output, and scatter_nd(out=v)'s)
    return new


def _set_grad(v: _Core, tensor: torch.Tensor) -> torch.Tensor:
    """``v``'s gradient becomes ``tensor``; returns the tensor ``v`` now holds."""
    value = data_of(v)
    held = value.dtype if value.is_floating_point() or value.is_complex() else torch.float32
    if v.parent is None and tensor.dtype != held:
        raise ArgumentError(f"a leaf Variable's gradient stays {held} on Stadyn (its value's "
                            f"dtype, float32 for integers), not {tensor.dtype}: cast its "
                            ".data instead")
    _Core.grad.fset(v, tensor)
    return grad_of(v)


def assign(v: _Core, value: Any, current: torch.Tensor, core_setter) -> None:
    """Assign ``value`` (an NdArray, a tensor or an array) to ``v``'s data or gradient
    (``current``): the NdArray of an in-place operator on the same memory is already there; an
    array of the same shape is copied in (the Variable keeps its buffer, which a plan may hold);
    anything else replaces the buffer (with ``core_setter``, Stadyn's ``Variable`` setter).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> from stadyn.graph import Variable, data_of
        >>> x = nn.Variable((2,)); assign(x, [4.0, 5.0], data_of(x), Variable.data.fset)
        >>> x.d.tolist()
        [4.0, 5.0]
    """
    if isinstance(value, NdArray):
        t = value._t
        if (t.data_ptr() == current.data_ptr() and t.shape == current.shape
                and t.dtype == current.dtype):
            return                      # ``v.data -= ...``: written in place already
        value = t
    if isinstance(value, torch.Tensor):
        if value.shape == current.shape and value.dtype == current.dtype:
            with torch.no_grad():
                current.copy_(value)
            return
        core_setter(v, value)
        return
    with torch.no_grad():
        current.copy_(torch.as_tensor(value, dtype=current.dtype).expand(current.shape))

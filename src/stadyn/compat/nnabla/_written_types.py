"""The dtype a write gives an NNabla leaf: NNabla 1.39 keeps integer and bool arrays beside a
float32 gradient, and its leaf takes the type of what is written into it (``v.d = labels`` of
int64 reads back int64); torch computes gradients of floating-point tensors only, and a graph
Stadyn built on a float leaf holds no cast.  So here a leaf takes a written integer type unless
it, or a Variable holding its array, needs a gradient or is read by a built graph as float data
(:func:`stays_float`), and an integer leaf about to need a gradient becomes float32
(:func:`float_for_gradients`); integers that float32 rounds get a warning at the user's line
there (:func:`warn_rounded`: NNabla keeps them exactly).  An op's output takes a written
integer type until its next run, the values reaching what a backward before that run reads
(:func:`assign_to_output`), element writes through its NumPy array included
(:func:`sync_for_backward`).  An array written whole is broadcast to the Variable's shape
first, as NumPy's ``a[...] = value`` does (:func:`broadcast_written`).  ``_variable.py``'s
``d`` / ``g`` / ``data`` setters apply these rules.

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn
    >>> v = nn.Variable((2,))
    >>> v.d = np.array([1, 2], np.int64); v.d.dtype
    dtype('int64')
    >>> v.need_grad = True; v.d.dtype
    dtype('float32')
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

import numpy as np
import torch

from ..._errors import ShapeError
from ...graph import (Variable as _Core, data_of, grad_of, to_torch_dtype, user_location,
                      value_holder)
from ._float_inputs import read_as_float
from ._shared_arrays import members
from ...graph import IdentityKeyDict

__all__ = ["stays_float", "float_for_gradients", "take_written_type", "warn_rounded",
           "assign_to_output", "sync_for_backward", "broadcast_written"]

# An op output -> the tensor the backward of its graph reads (the one its last run gave it)
# and a weak reference to the tensor it holds since integers assigned gave it other memory.
_FOR_BACKWARD: "IdentityKeyDict[_Core, tuple]" = IdentityKeyDict()


def stays_float(v: _Core, current: torch.Tensor) -> bool:
    """Whether the leaf ``v`` (holding ``current``) keeps its floating dtype when integers are
    written into it (``v.d =``, ``v.data``): it, or a Variable holding its array
    (``x.reshape(shape, unlink=True)``), needs a gradient, or a live graph reads one of them as
    float data (:func:`read_as_float`)."""
    return current.is_floating_point() and any(
        _Core.need_grad.fget(m) or read_as_float(m) for m in members(v))


def warn_rounded(values: Any) -> None:
    """Warn, at the user's line, when integer ``values`` going into a float32 leaf are not all
    float32 numbers (beyond 2**24, ``16777217`` becomes ``16777216``): NNabla 1.39 keeps the
    integer array exactly beside a float32 gradient (``x.d`` reads them back; its functions
    read them as float32, rounded alike), where Stadyn's leaf that needs a gradient, or that a
    built graph reads as float data, holds float32 (checked on NNabla 1.39, case
    ``nnabla_fidelity_15.large_integers__need_grad``).

    Example:
        >>> import warnings, numpy as np
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_rounded(np.array([3, 2**24 + 1]))
        >>> "16777217" in str(caught[0].message)
        True
    """
    arr = values.detach().cpu().numpy() if isinstance(values, torch.Tensor) else values
    arr = np.asarray(arr)
    if arr.dtype.kind not in "iu" or arr.size == 0:
        return
    exact = arr.astype(np.float64)
    lost = np.flatnonzero(arr.astype(np.float32).astype(np.float64) != exact)
    if lost.size == 0:
        return
    first = arr.reshape(-1)[lost[0]]
    where = user_location()
    message = (f"integers written into a float32 Variable lose their values on Stadyn: "
               f"{lost.size} of them are no float32 number ({int(first)} is held as "
               f"{int(np.float32(first))}); NNabla 1.39 keeps the integer array beside the "
               "float32 gradient of a Variable that needs one (its functions read float32 "
               "all the same). Hold such integers in a Variable that needs no gradient, "
               "given them before a graph is built on it")
    if where is None:
        warnings.warn(message, UserWarning, stacklevel=2)
    else:
        warnings.warn_explicit(message, UserWarning, where[0], where[1])


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
        warn_rounded(current)
        grad = grad_of(v)                     # a gradient buffer read before: float32 too
        if grad is not None:
            _Core.grad.fset(v, None)
        v.data.cast(np.float32)
        if grad is not None:
            _Core.grad.fset(v, grad.to(torch.float32))


def take_written_type(v: _Core, value: Any) -> None:
    """NNabla 1.39's leaf takes the type of a NumPy array assigned to its ``.d`` (``v.d =
    labels`` of int64 reads back int64; checked on NNabla 1.39, case
    ``nnabla_fidelity_12.assigned_integers__keep_their_type``), and so does an op's output
    until its next run writes float32 again (case ``nnabla_fidelity_15.output_written_
    integers__keep_their_type``).  Here ``v`` takes an integer or bool array's type unless it
    is a leaf that needs a gradient (torch's are floating point only) or that a graph built
    before reads as float data (it holds no cast then: ``_float_inputs.read_as_float``), or
    views another Variable's value; an integer ``v`` given floating values becomes
    float32 (NNabla's float64: Stadyn keeps floating values float32), and so does a float16
    leaf given float32 or float64 values that no built graph reads.  Anything else is written
    into ``v``'s dtype, as before.  Integers written through ``v.data`` follow the same rule
    (``_variable._set_data``).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> y = F.add_scalar(nn.Variable.from_numpy_array(np.zeros(2, np.float32)), 1.0)
        >>> y.forward(); y.d = np.array([3, 4], np.int32); y.d.dtype
        dtype('int32')
        >>> y.forward(); y.d.dtype, y.d.tolist()
        (dtype('float32'), [1.0, 1.0])
    """
    dtype = getattr(value, "dtype", None)
    if not isinstance(dtype, np.dtype):
        return
    current = data_of(v)
    if current is None or value_holder(v) is not v:
        return
    if dtype.kind in "biu":
        if to_torch_dtype(dtype) == current.dtype:
            return
        if v.parent is None and stays_float(v, current):
            warn_rounded(value)
            return
        v.data.cast(dtype)
    elif dtype.kind == "f" and not current.is_floating_point():
        v.data.cast(np.float32)
    elif (dtype.kind == "f" and dtype.itemsize > 2 and v.parent is None
          and current.dtype in (torch.float16, torch.bfloat16)
          and not any(read_as_float(m) for m in members(v))):
        # a half leaf given float32 / float64 values: NNabla 1.39's takes their type and its
        # functions read float32 (7.9 stays 7.9, where half holds 7.8984375: case
        # ``nnabla_fill_values.written_arrays__dtypes``); Stadyn's takes float32
        v.data.cast(np.float32)


def assign_to_output(v: _Core, value: Any) -> None:
    """``v.d = value`` of the op output ``v``: it takes an integer or bool array's type
    (:func:`take_written_type`), and the values reach the tensor the backward of the graph
    that computed ``v`` reads: NNabla's backward reads the values assigned (its arrays are plain
    memory), Stadyn's the tensor the run gave ``v``, which the write reaches through ``.data``
    (no version bump, which would make autograd refuse a dynamic graph's; as ``NdArray.fill``
    writes), also after integers assigned gave ``v`` other memory (case
    ``nnabla_fidelity_15.output_written_integers__keep_their_type``).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> x = nn.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
        >>> y = F.add_scalar(x, 1.0); loss = F.sum(F.mul2(y, y)); loss.forward()
        >>> assign_to_output(y, np.array([3, 4], np.int32)); loss.backward()
        >>> y.d.dtype, x.g.tolist()
        (dtype('int32'), [6.0, 8.0])
    """
    current = data_of(v)
    entry = _FOR_BACKWARD.get(v)
    saved = entry[0] if entry is not None and entry[1]() is current else current
    take_written_type(v, value)
    now = data_of(v)
    if now is not saved or saved.grad_fn is not None:
        try:
            arr = np.array(np.broadcast_to(np.asarray(value), tuple(saved.shape)))
        except ValueError:
            arr = None                  # (the assignment itself says what does not fit)
        if arr is not None:
            saved.data.copy_(torch.from_numpy(arr).to(saved.dtype))
        if now is not saved:
            _FOR_BACKWARD[v] = (saved, weakref.ref(now))
        else:
            return
    _Core.d.fset(v, value)


def sync_for_backward() -> None:
    """Before a backward: the values of each op output that integers assigned gave other memory
    (:func:`assign_to_output`), and that holds it still, reach the tensor the backward reads.
    NNabla 1.39 casts its one array back to float32 when the backward reads it, so element
    writes through the NumPy array (``y.d[0] = 3`` after ``y.d = ints``) count too (checked on
    NNabla 1.39, case ``nnabla_fidelity_16.output_written_integers__element_writes``).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> x = nn.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
        >>> y = F.add_scalar(x, 1.0); loss = F.sum(F.mul2(y, y)); loss.forward()
        >>> y.d = np.array([3, 4], np.int32); y.d[0] = 5
        >>> sync_for_backward(); loss.backward(); x.g.tolist()
        [10.0, 8.0]
    """
    for v, (saved, ref) in list(_FOR_BACKWARD.items()):
        now = ref()
        if now is None or data_of(v) is not now:
            del _FOR_BACKWARD[v]        # a run gave it its own tensor again
        elif now.shape == saved.shape:
            saved.data.copy_(now.detach().to(saved.dtype))


def broadcast_written(v: _Core, value: Any, what: str) -> Any:
    """``value`` (not a torch tensor nor a scalar) broadcast to ``v``'s shape as NNabla 1.39's
    ``v.d = value`` / ``v.g = value`` write it (``array[...] = value`` on its NumPy array:
    ``np.ones(3)`` fills each row of a (2, 3) Variable, a (1, 2, 3) array drops its leading 1;
    case ``nnabla_fidelity_27.assignment__broadcast``), a list of the shape as the NumPy array
    it makes (its dtype: ``[1, 2, 3]`` int64); a shape that does not broadcast is
    NumPy's ``ValueError`` in its words, the Variable named (a ``ShapeError``, which is one).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> broadcast_written(nn.Variable((2, 3)), np.ones(3), "d").shape
        (2, 3)
    """
    if isinstance(value, torch.Tensor) or np.isscalar(value):
        return value
    arr = np.asarray(value)
    shape = tuple(v.shape)
    if arr.dtype == object or arr.ndim == 0:
        return value
    if arr.shape == shape:
        # (a list or tuple as NumPy makes it an array, as NNabla's assignment does: [1, 2, 3]
        # int64, written as an int64 array is)
        return arr
    out = np.empty(shape, arr.dtype)
    try:
        out[...] = arr
    except ValueError as exc:
        label = f" {v.graph_name!r}" if v.graph_name else ""
        raise ShapeError(f"{exc} (Variable{label}.{what} = an array of shape "
                         f"{arr.shape})") from None
    return out

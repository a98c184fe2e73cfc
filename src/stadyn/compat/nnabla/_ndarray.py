"""NNabla's ``NdArray``: an array with no graph, and NNabla's imperative mode over it.

An ``NdArray`` holds one torch tensor.  Its ``data`` is a NumPy view of it (on the CPU; writing
into the view writes the array), its operators and every ``F.*`` applied to NdArrays compute at
once and return NdArrays (NNabla's imperative mode), in float32 as NNabla's functions do.

Differences from NNabla 1.39, each deliberate:

* ``nn.Variable.data`` / ``.grad`` are NdArrays viewing the Variable's memory (``_variable.py``);
  an NdArray assigned to ``Variable.d`` / ``.data`` is copied in, not shared (the Variable keeps
  its buffer, which a static plan may hold).
* ``zero()`` / ``fill()`` (and a scalar assigned to ``.data``) of a Variable's value or
  gradient write its memory in place unless a NumPy array handed out reads it
  (``stadyn.graph.viewed``); NNabla gives the array new memory every time.  What a kept NumPy
  array shows is the same either way: it keeps the old values (``stadyn.graph.renew_value``
  gives a value new memory that graphs, solvers and views read from then on).
* Integer NdArrays keep their type through ``F.*`` (NNabla casts every input to float32): the
  ops that read indices (``one_hot``, ``embed``, ``gather``) need them.

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn
    >>> a = nn.NdArray((2, 2))
    >>> a.fill(3.0)
    >>> a.data[0, 0] = 1.0            # a view: writes the array
    >>> (a * 2.0).data.tolist()
    [[2.0, 6.0], [6.0, 6.0]]
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np
import torch

from ...graph import (Variable, auto_forward, data_of, get_current_context, is_zeroing,
                      mark_zeroing, numpy_reader, to_torch_dtype, unmark_zeroing, viewed)
from ..._errors import ArgumentError, ShapeError
from ._fill_values import (filled_value, mark_filled, mark_made, pending_fill, scalar_is_filled,
                           unmark_filled)
from ._kept_dtypes import filled, forget, keep, kept_now, saved_arrays
from ._index_dtypes import as_shown, shown_as_uint64

__all__ = ["NdArray"]

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


class NdArray:
    """An array with no graph (``nnabla.NdArray``): ``NdArray(shape)`` is zeros in float32.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> import stadyn.compat.nnabla.functions as F
        >>> x = nn.NdArray.from_numpy_array(np.array([-1.0, 2.0], np.float32))
        >>> y = F.relu(x)                 # computed at once
        >>> type(y).__name__, y.data.tolist()
        ('NdArray', [0.0, 2.0])
    """

    __slots__ = ("_own", "_owner", "__weakref__")   # (weak: an op output it was given to)
    __array_ufunc__ = None      # ``np.float32(2) * a`` calls NdArray.__rmul__, as in NNabla

    def __init__(self, shape: Any = ()):
        shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
        self._own = torch.zeros(shape, dtype=torch.float32)
        self._owner = None

    @classmethod
    def from_numpy_array(cls, nparr: Any) -> "NdArray":
        """A new NdArray holding a copy of ``nparr`` in its own dtype.

        Example:
            >>> import numpy as np, stadyn.compat.nnabla as nn
            >>> nn.NdArray.from_numpy_array(np.arange(3)).dtype
            dtype('int64')
        """
        arr = np.array(nparr, copy=True, order="C")       # a 0-d array stays 0-d
        if arr.dtype == object:
            raise ArgumentError(f"NdArray.from_numpy_array: cannot hold {type(nparr).__name__}")
        return cls._wrap(torch.from_numpy(arr))

    @classmethod
    def _wrap(cls, tensor: torch.Tensor) -> "NdArray":
        """An NdArray over ``tensor`` (its memory: writes reach it).  ``zero()`` marks
        ``tensor`` itself, which the next NdArray over it sees."""
        a = cls.__new__(cls)
        a._own = tensor
        a._owner = None
        return a

    @classmethod
    def _of(cls, variable: Any, getter, setter, renew, is_viewed=None) -> "NdArray":
        """The NdArray of ``variable``'s value or gradient, as NNabla's: one handle that reads
        whatever tensor the Variable holds when it is used (``getter(variable)``; a ``zero_grad``
        or a new value since it was taken is seen).  ``setter(variable, tensor)`` makes the
        Variable hold a new tensor (``cast`` to another dtype) and returns the tensor it now
        holds; ``renew(variable, tensor)`` likewise, for new memory of the same kind that
        ``zero()`` / ``fill()`` give when a NumPy array handed out reads the old (see the
        module docstring); ``is_viewed(variable, tensor)``, when given, says whether such an
        array reads ``tensor``'s memory (default :func:`stadyn.graph.viewed` of the tensor: a
        Variable sharing its array with others counts theirs too)."""
        a = cls.__new__(cls)
        a._own = None
        a._owner = (variable, getter, setter, renew, is_viewed)
        return a

    @property
    def _mark(self) -> torch.Tensor:
        """The tensor this array is now (a Variable's own, which may need a gradient)."""
        owner = self._owner
        return self._own if owner is None else owner[1](owner[0])

    @property
    def _t(self) -> torch.Tensor:
        """:attr:`_mark` without its autograd record: what the array's methods compute with."""
        t = self._mark
        return t.detach() if t.requires_grad else t

    def _retensor(self, tensor: torch.Tensor) -> torch.Tensor:
        """Hold ``tensor`` from now on (and so does the Variable this array views); returns
        the tensor held."""
        if self._owner is not None:
            variable, _, setter, _, _ = self._owner
            return setter(variable, tensor)
        self._own = tensor
        return tensor

    def _renewed(self) -> torch.Tensor | None:
        """A new tensor like this Variable value's or gradient's, held from now on, when a
        NumPy array handed out reads the old one's memory (``stadyn.graph.viewed``; it then
        keeps its values, as NNabla's ``zero()`` / ``fill()`` leave the old array to it); else
        None."""
        if self._owner is None:
            return None
        t = self._mark
        variable, _, _, renew, is_viewed = self._owner
        if not (viewed(t) if is_viewed is None else is_viewed(variable, t)):
            return None
        fresh = torch.empty_like(t.detach(), memory_format=torch.contiguous_format)
        return renew(variable, fresh)

    # -- shape and type ---------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The shape, a tuple."""
        return tuple(self._t.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return int(self._t.numel())

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return self._t.ndim

    @property
    def dtype(self) -> np.dtype:
        """The element type, a NumPy dtype (uint64 for the indices NNabla gives as such:
        ``_index_dtypes.py``)."""
        dtype = _numpy_view(self._t).dtype
        if self._owner is not None and dtype == np.int64 and shown_as_uint64(self._owner[0]):
            return np.dtype(np.uint64)
        return dtype

    def size_from_axis(self, axis: int = -1) -> int:
        """The product of the dimensions from ``axis`` on.

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> nn.NdArray((2, 3, 4)).size_from_axis(1)
            12
        """
        return int(np.prod(self.shape[axis:], dtype=np.int64))

    # -- values -----------------------------------------------------------------------------
    @property
    def data(self) -> np.ndarray:
        """The values as a NumPy array that shares memory with the array (on the CPU).

        Assigning an array writes its values, broadcast to the shape, in the assigned array's
        dtype (the NdArray takes that dtype, as NNabla's does).
        """
        t = self._mark
        unmark_zeroing(t)
        unmark_filled(t)
        if self._owner is None:
            return _numpy_view(t, False)
        return as_shown(self._owner[0], _numpy_view(t, True))

    @data.setter
    def data(self, value: Any) -> None:
        if np.isscalar(value) and (value == 0 or scalar_is_filled(value)):
            # NNabla's zero() / fill(): the array keeps its dtype (_fill_values.py)
            self.zero() if value == 0 else self.fill(value)
            return
        arr = np.asarray(value)
        self.cast(arr.dtype)[...] = arr

    def get_data(self, mode: str = "rw", dtype: Any = None) -> np.ndarray:
        """The values as a NumPy array (``mode="r"``: a read-only view), cast to ``dtype`` first
        when it is given.

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> nn.NdArray((2,)).get_data("r").flags.writeable
            False
        """
        if mode not in ("r", "w", "rw"):
            raise ArgumentError(f"NdArray.get_data: mode must be 'r', 'w' or 'rw', not {mode!r}")
        view = self.cast(dtype) if dtype is not None else self.data
        if mode == "r":
            view = view.view()
            view.flags.writeable = False
        return view

    def cast(self, dtype: Any, ctx: Any = None) -> np.ndarray:
        """Convert the array to ``dtype`` in place and give its values (NNabla's ``cast``; the
        context is accepted and, on the CPU, ignored).

        Example:
            >>> import numpy as np, stadyn.compat.nnabla as nn
            >>> a = nn.NdArray.from_numpy_array(np.arange(3))
            >>> a.cast(np.float32), a.dtype
            (array([0., 1., 2.], dtype=float32), dtype('float32'))
        """
        dtype = np.dtype(dtype)
        target = to_torch_dtype(dtype)
        kept = self._kept()
        cast = None
        if (self._owner is not None and dtype.kind in "biuf" and dtype != np.float32
                and (kept is None or dtype != kept[1])):
            # NNabla's array (a kept one's values, else the Variable's) in ``dtype``, which a
            # re-save writes while the Variable stays float32 (a parameter's does)
            cast = saved_arrays({"": self._owner[0]})[""].astype(dtype)
        if kept is not None and dtype != kept[1]:
            forget(self._owner[0])      # NNabla's array of a kept parameter cast: that dtype
        if self._t.dtype != target:
            self._retensor(self._t.to(target))
        if cast is not None:
            keep(self._owner[0], cast)  # (nothing, where the Variable took ``dtype`` itself)
        return self.data

    def fill(self, value: float) -> None:
        """Set every element to ``value``, which goes through float32 as NNabla 1.39's does
        (``_fill_values.py``: ``2**24 + 5`` reads ``16777220`` in any dtype).

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> a = nn.NdArray((2,)); a.fill(0.5); a.data
            array([0.5, 0.5], dtype=float32)
        """
        given = value
        value = filled_value(value, self._t.dtype)
        kept = self._kept()
        try:
            mark_filled(self._fill(value), given)   # (no array until read: copy_from)
        finally:
            filled(kept)

    def _kept(self) -> Any:
        """What ``_kept_dtypes`` keeps for the parameter whose value this array is, if any."""
        return None if self._owner is None else kept_now(self._owner[0], self._mark)

    def _fill(self, value: Any) -> torch.Tensor:
        """Write ``value`` into every element; the tensor written (this array's from now on)."""
        renewed = self._renewed()
        if renewed is not None:         # (a dynamic graph's output: no version bump, below)
            (renewed.data if renewed.grad_fn is not None else renewed.detach()).fill_(value)
            return renewed
        t = self._mark
        if t.grad_fn is not None:
            # an output of a dynamic graph, which its backward may read: NNabla's backward
            # reads the values written (its arrays are plain memory), so write them without
            # telling autograd (``.data``: no version bump, which would make it refuse)
            t.data.fill_(value)
            unmark_zeroing(t)
        else:
            self._t.fill_(value)
        return t

    def zero(self) -> None:
        """Set every element to 0 (``zeroing`` is True until the values are read).

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> a = nn.NdArray((2,)); a.fill(1); a.zero(); a.zeroing, a.data
            (True, array([0., 0.], dtype=float32))
        """
        kept = self._kept()
        t = self._renewed()
        if t is None:
            t = self._mark
        (t.data if t.grad_fn is not None else t.detach()).zero_()   # as fill()
        unmark_filled(t)
        mark_zeroing(t)
        filled(kept)

    def clear(self) -> None:
        """Let go of the values (NNabla's ``NdArray.clear``: what a later read sees is
        whatever memory it gets, zeros for a Variable's data on NNabla 1.39's CPU): here the
        array keeps its shape and dtype and reads zeros.

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> a = nn.NdArray((2,)); a.fill(3); a.clear(); a.data
            array([0., 0.], dtype=float32)
        """
        self.zero()

    @property
    def zeroing(self) -> bool:
        """Whether :meth:`zero` was the last thing done to the array (no write or read of its
        values since).

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> x = nn.Variable((2,), need_grad=True)
            >>> x.grad.zero(); x.grad.zeroing
            True
            >>> _ = x.g; x.grad.zeroing
            False
        """
        return is_zeroing(self._mark)

    def copy_from(self, arr: "NdArray", use_current_context: bool = True) -> "NdArray":
        """Copy ``arr``'s values and dtype into this array (the shapes must agree) and return
        this array, as NNabla 1.39's.  ``use_current_context`` (NNabla's: copy with
        ``F.identity`` in the current context, or on the source's device and dtype) matters
        only for a source whose last change was ``zero()`` or ``fill(v)``, unread since
        (NNabla holds no array for it then: ``_fill_values.py``): with it, both arrays become
        the context's float type holding ``v`` (a uint8 source filled with 300 copies as
        ``300.0``); without it, NNabla finds no array to copy: IndexError.

        Example:
            >>> import numpy as np, stadyn.compat.nnabla as nn
            >>> a = nn.NdArray((2,))
            >>> a.copy_from(nn.NdArray.from_numpy_array(np.array([1, 2]))) is a, a.data
            (True, array([1, 2]))
            >>> s = nn.NdArray.from_numpy_array(np.zeros(2, np.uint8)); s.fill(300)
            >>> a.copy_from(s).data
            array([300., 300.], dtype=float32)
        """
        src = _tensor_of(arr, "copy_from")
        if tuple(src.shape) != self.shape:
            raise RuntimeError(f"NdArray.copy_from: an array of shape {tuple(src.shape)} into "
                               f"one of shape {self.shape} (NNabla 1.39's RuntimeError)")
        dtype = src.dtype
        pending = None
        if isinstance(arr, NdArray):
            pending = pending_fill(arr._mark, is_zeroing(arr._mark))
        if pending is not None:
            if not use_current_context:
                raise IndexError("NdArray.copy_from(src, use_current_context=False): the source "
                                 "was zeroed or filled and not read since, so NNabla 1.39 holds "
                                 "no array of it to copy (map::at); read it first (src.data) or "
                                 "copy in the current context")
            # F.identity reads the recorded value in the current context's type: the source
            # is an array of that type from now on, as NNabla's
            dtype = get_current_context().compute_dtype
            zeroing = is_zeroing(arr._mark)
            if src.dtype != dtype:
                arr._retensor(torch.full(tuple(src.shape), pending, dtype=dtype,
                                         device=src.device))
                if zeroing:
                    mark_zeroing(arr._mark)
            mark_made(arr._mark)        # (an array now; ``zeroing`` stays, as NNabla's)
            src = torch.full(tuple(src.shape), pending, dtype=dtype, device=src.device)
        t = self._t
        if dtype != t.dtype:
            t = self._retensor(torch.empty_like(t, dtype=dtype)).detach()
        t.copy_(src)
        return self

    def narrow(self, dim: int, start: int, length: int) -> "NdArray":
        """The ``length`` entries from ``start`` along axis ``dim`` (0, as NNabla allows),
        sharing memory with this array.

        Example:
            >>> import numpy as np, stadyn.compat.nnabla as nn
            >>> a = nn.NdArray.from_numpy_array(np.arange(6.0).reshape(3, 2))
            >>> a.narrow(0, 1, 1).data[...] = 9; a.data.tolist()
            [[0.0, 1.0], [9.0, 9.0], [4.0, 5.0]]
        """
        if dim != 0:
            raise ArgumentError(f"NdArray.narrow: only dim 0 can be narrowed, not {dim}")
        if start < 0 or length < 0 or start + length > self.shape[0]:
            raise ShapeError(f"NdArray.narrow: [{start}, {start + length}) is outside axis 0 "
                             f"of length {self.shape[0]}")
        return NdArray._wrap(self._t.narrow(0, start, length))

    def __array__(self, dtype=None, copy=None):
        return self.data if dtype is None else self.data.astype(dtype)

    def _identity(self) -> tuple:
        """What ``==`` compares: the Variable and which of its arrays (value or gradient) an
        NdArray views, else the NdArray itself."""
        owner = self._owner
        return (id(self), None) if owner is None else (id(owner[0]), owner[1])

    def __eq__(self, other) -> bool:
        """``a == b``: whether ``a`` and ``b`` are the same array (``x.data == x.data`` is
        True, ``x.data == x.grad`` False); comparing with anything else (a number, None) is a
        ``TypeError``, as NNabla 1.39's.  Not element-wise: that is ``F.equal(a, b)``.

        Example:
            >>> import stadyn.compat.nnabla as nn
            >>> x = nn.Variable((2,), need_grad=True)
            >>> x.data == x.data, x.data == x.grad, x.data != x.grad
            (True, False, True)
        """
        if not isinstance(other, NdArray):
            raise TypeError(f"Cannot convert {type(other).__name__} to nnabla NdArray (NNabla "
                            "1.39 compares an NdArray with NdArrays only; for element-wise "
                            "comparison use F.equal / F.equal_scalar)")
        return self._identity() == other._identity()

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._identity())

    def __repr__(self) -> str:
        return f"<NdArray({self.shape}) at {hex(id(self))}>"

    # -- NNabla's imperative mode -----------------------------------------------------------
    def __neg__(self) -> "NdArray":
        return imperative(operator.neg, self)

    def __pos__(self) -> "NdArray":
        return imperative(operator.pos, self)

    def _inplace(self, result: "NdArray") -> "NdArray":
        t = self._t
        if t.dtype == result._t.dtype:
            t.copy_(result._t)
        else:
            self._retensor(result._t)
        return self


def _operator(fn):
    def method(self, other):
        return imperative(fn, self, other)

    def reflected(self, other):
        return imperative(fn, other, self)

    def inplace(self, other):
        result = imperative(fn, self, other)
        if fn is operator.pow or (fn in (operator.mul, operator.truediv)
                                  and isinstance(other, (NdArray, Variable))):
            return result       # NNabla 1.39's a *= b, a /= b of arrays and a **= y: a new
                                # NdArray, ``a`` left as it was (its _nd_array.pyx)
        return self._inplace(result)
    return method, reflected, inplace


for _name, _fn in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("pow", operator.pow)):
    _m, _r, _i = _operator(_fn)
    setattr(NdArray, f"__{_name}__", _m)
    setattr(NdArray, f"__r{_name}__", _r)
    setattr(NdArray, f"__i{_name}__", _i)


def _numpy_view(t: torch.Tensor, recorded: bool = False) -> np.ndarray:
    """``t``'s values as NumPy: its memory on the CPU (``recorded``: a gradient's, handed out
    with ``stadyn.graph.numpy_reader``), else a copy."""
    if t.dtype == torch.bfloat16:
        return t.detach().float().numpy()
    if t.device.type != "cpu":
        return t.detach().cpu().numpy()
    return numpy_reader(t) if recorded else t.detach().numpy()


def _tensor_of(arr: Any, what: str) -> torch.Tensor:
    if isinstance(arr, NdArray):
        return arr._t
    if isinstance(arr, torch.Tensor):
        return arr.detach()
    raise ArgumentError(f"NdArray.{what}: expected an NdArray, got {type(arr).__name__}")


def _as_input(a: NdArray) -> Variable:
    t = a._t
    if t.dtype in _FLOATS and t.dtype != torch.float32:
        t = t.float()
    return Variable.from_tensor(t, need_grad=False)


def _convert(value: Any, float_only: bool) -> Any:
    if isinstance(value, NdArray):
        return _as_input(value) if not float_only else Variable.from_tensor(
            value._t.float(), need_grad=False)
    if isinstance(value, (list, tuple)) and any(isinstance(v, NdArray) for v in value):
        return type(value)(_convert(v, float_only) for v in value)
    return value


def _has_ndarray(args: tuple, kwargs: dict) -> bool:
    for v in (*args, *kwargs.values()):
        if isinstance(v, NdArray) or (isinstance(v, (list, tuple))
                                      and any(isinstance(e, NdArray) for e in v)):
            return True
    return False


def _has_variable(args: tuple, kwargs: dict) -> bool:
    for v in (*args, *kwargs.values()):
        if isinstance(v, Variable) or (isinstance(v, (list, tuple))
                                       and any(isinstance(e, Variable) for e in v)):
            return True
    return False


def _outputs(value: Any) -> Any:
    if isinstance(value, Variable):
        return NdArray._wrap(data_of(value))
    if isinstance(value, (list, tuple)):
        return type(value)(_outputs(v) for v in value)
    return value


def _values(value: Any) -> Any:
    """A Variable (or those in a list) as an NdArray of its current value."""
    if isinstance(value, Variable):
        return NdArray._wrap(Variable.data.fget(value).detach())
    if isinstance(value, (list, tuple)) and any(isinstance(v, Variable) for v in value):
        return type(value)(_values(v) for v in value)
    return value


def imperative(fn, *args: Any, float_only: bool = True, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` computed at once on NdArrays, its Variables given back as
    NdArrays (NNabla's imperative mode).  ``float_only`` casts every NdArray to float32 (the
    operators); otherwise only float ones are (``F.*``).  A Variable among NdArrays is read
    as its current value (zeros before a static graph has computed it), as NNabla 1.39 does
    (``x + a`` and ``F.add2(x, a)`` of a Variable ``x`` and an NdArray ``a`` give an NdArray
    in both modes, no graph: case ``nnabla_fidelity_5.variable_with_ndarray__ndarray``)."""
    if _has_variable(args, kwargs):
        args = tuple(_values(a) for a in args)
        kwargs = {k: _values(v) for k, v in kwargs.items()}
    args = tuple(_convert(a, float_only) for a in args)
    kwargs = {k: _convert(v, float_only) for k, v in kwargs.items()}
    with torch.no_grad(), auto_forward():
        return _outputs(fn(*args, **kwargs))


def _storages(values: Any) -> set:
    """The addresses of the memory the NdArrays among ``values`` (lists' too) hold."""
    out = set()
    for v in values:
        if isinstance(v, NdArray):
            out.add(v._t.untyped_storage().data_ptr())
        elif isinstance(v, (list, tuple)):
            out |= _storages(v)
    return out


def _in_new_memory(value: Any, storages: set) -> Any:
    """``value`` (an NdArray, or those in a list) with each NdArray that holds memory of
    ``storages`` replaced by a copy."""
    if isinstance(value, NdArray):
        t = value._t
        return NdArray._wrap(t.clone()) if t.untyped_storage().data_ptr() in storages else value
    if isinstance(value, (list, tuple)):
        return type(value)(_in_new_memory(v, storages) for v in value)
    return value


def _shares_input(name: str, args: tuple, kwargs: dict) -> bool:
    """Whether NNabla 1.39's imperative ``F.<name>(*args, **kwargs)`` gives an array sharing
    its input's memory: ``F.reshape`` with ``inplace=True`` (its default) alone; every other
    function's output (``F.identity``, ``F.slice``, ``F.transpose``, ``F.broadcast``,
    ``F.split``, ``F.reshape(..., inplace=False)`` ...) is new memory."""
    if name != "reshape":
        return False
    return bool(kwargs.get("inplace", args[2] if len(args) > 2 else True))


def accepting_ndarrays(fn):
    """``fn`` (an ``F`` function) that also takes NdArrays, computing at once and giving
    NdArrays back when it gets any (NNabla's imperative mode), in new memory as NNabla's but
    for ``F.reshape(x, shape)``'s (:func:`_shares_input`): a later write into the input, or a
    ``p.data.copy_from(...)`` of a parameter, leaves ``F.identity(p.data)`` as it was (case
    ``nnabla_examples_12.imperative_output_in_new_memory``)."""
    name = getattr(fn, "__name__", "")

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if _has_ndarray(args, kwargs):
            out = imperative(fn, *args, float_only=False, **kwargs)
            if _shares_input(name, args, kwargs):
                return out
            return _in_new_memory(out, _storages((*args, *kwargs.values())))
        return fn(*args, **kwargs)
    return call

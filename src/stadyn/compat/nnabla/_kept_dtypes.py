"""The array NNabla 1.39 holds in a parameter's own dtype, kept for its ``.h5`` re-save.

NNabla 1.39 holds a parameter in the dtype it was given: an ``.h5`` dataset's (float64,
float16: nnabla/utils/get_file_handle.py:303, ``var.data.cast(ds.dtype)[...] = ds[...]``),
float64 from a ``.protobuf`` / ``.nntxt`` / an ``.nnp``'s ``parameter.protobuf``
(nnabla/parameter.py:392, ``numpy.reshape`` of the message's repeated ``float`` field), an
initializer array's or an initializer callable's result, integers included
(parameter.py:244, ``Variable.from_numpy_array``; ``PF.batch_normalization``'s integer
``beta`` / ``gamma``).  Its functions read it as float32 and write float32, its gradient is
float32 and a solver's update writes float32 into it; ``save_parameters`` to an
``.h5`` writes the array as it is (get_file_handle.py:470), so a re-save keeps the dtype and a
float64 one every digit (checked on NNabla 1.39, cases
``nnabla_dtypes_28.h5_float64__resaved_with_its_digits``,
``protobuf_and_initializers__resaved_in_their_dtype``).

A Stadyn Variable holds one float32 tensor, in which its ops compute (NNabla's outputs,
gradients and updates), so ``.d`` is float32 there.  What NNabla holds is kept here
(:func:`keep`): the dtype, and the array itself only where it has digits float32 lacks (a
``.protobuf``'s float64 values are float32 numbers; so is float16, and an integer below
2**24), with the tensor the Variable held then and that tensor's version counter.  An ``.h5``
re-save writes it (:func:`saved_arrays`) while the Variable holds that tensor at that
version, the values a program wrote in place through ``.d`` taking their elements' place
(NNabla writes them into its float64 array).  A solver's update, a batch normalization's
running statistics (torch bumps the version; after its fused Adam kernels, which do not,
stadyn.solvers bumps it), ``v.d = ...`` and ``cast(np.float32)`` change it: then the float32
values are written, as NNabla writes float32 after them; ``cast`` to another dtype keeps
NNabla's array cast to it (``_ndarray.py``; case
``nnabla_io_35.cast_parameters__resaved_in_the_cast_dtype``).  What is kept goes at once when
``v.d = ...``, ``cast(np.float32)`` or a solver's update
(``stadyn.solvers.add_update_listener``) writes the Variable, else at the next save that
finds it written.  ``fill()`` and ``zero()`` write NNabla's array in its own dtype (the value
through float32: ``fill(0.1)`` of a float64 parameter holds float64(float32(0.1))), so the
dtype stays kept (:func:`filled`; case
``nnabla_dtypes_28.initializers_by_name_and_fills__resaved``).  Not kept: a float64 ``.d``
written in place to digits float32 lacks (``w.d[0] += 1e-9``, ``w.d *= 2``: Stadyn's ``.d``
is float32, so the digits never reach it).

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn
    >>> w = nn.Variable.from_numpy_array(np.zeros(2, np.float32))
    >>> w.d = np.array([1 + 1e-9, 2.0])        # (float32 on Stadyn)
    >>> keep(w, np.array([1 + 1e-9, 2.0]))
    >>> a = saved_arrays({"w": w})["w"]; a.dtype, bool(a[0] == 1 + 1e-9)
    (dtype('float64'), True)
    >>> w.d[0] = 5.0                            # in place: NNabla's float64 array too
    >>> saved_arrays({"w": w})["w"].tolist()
    [5.0, 2.0]
    >>> w.data.fill(3.0)                        # NNabla fills its float64 array
    >>> a = saved_arrays({"w": w})["w"]; a.dtype, a.tolist()
    (dtype('float64'), [3.0, 3.0])
    >>> w.d = np.zeros(2, np.float32)           # a new array: float32, as NNabla's
    >>> saved_arrays({"w": w})["w"].dtype
    dtype('float32')
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import types
import weakref
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple

import numpy as np
import torch

from ... import parametric as _parametric
from ... import solvers as _solvers
from ...graph import data_of, value_holder
from ...graph import IdentityKeyDict

__all__ = ["keep", "forget", "kept_now", "filled", "saved_arrays", "kept_arrays", "kept_across",
           "keeping_initializer_arrays"]


class _Kept(NamedTuple):
    dtype: np.dtype                 # the dtype NNabla holds the parameter in
    array: np.ndarray | None        # the array, where it has digits float32 lacks
    tensor: weakref.ref             # the tensor the Variable held when kept
    version: int                    # that tensor's version then

    @classmethod
    def of(cls, dtype: np.dtype, array: np.ndarray | None, current: torch.Tensor) -> "_Kept":
        return cls(dtype, array, weakref.ref(current), current._version)

    def holds(self, t: torch.Tensor) -> bool:
        """Whether ``t`` is the tensor kept and nothing wrote it since."""
        return self.tensor() is t and t._version == self.version


# The Variable holding a parameter's value -> what is kept for it.
_KEPT: "IdentityKeyDict[Any, _Kept]" = IdentityKeyDict()


def keep(v: Any, array: Any) -> None:
    """Keep what NNabla 1.39's parameter ``v`` holds, ``array``, when it is an array of another
    dtype than float32 (float64, float16, integers, bools) and ``v`` holds it as float32;
    else forget any array kept for ``v``."""
    holder = value_holder(v)
    arr = np.asarray(array)
    current = data_of(holder)
    if (arr.dtype.kind not in "biuf" or arr.dtype == np.float32 or current.dtype != torch.float32
            or tuple(arr.shape) != tuple(current.shape)):
        _KEPT.pop(holder, None)
        return
    rounded = arr.astype(np.float32)
    digits = not np.array_equal(rounded.astype(arr.dtype), arr, equal_nan=True)
    _KEPT[holder] = _Kept.of(arr.dtype, arr.copy() if digits else None, current)


def forget(v: Any) -> None:
    """Forget what was kept for ``v`` (a write gave it new values).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> w = nn.Variable.from_numpy_array(np.zeros(1, np.float32))
        >>> keep(w, np.zeros(1)); forget(w)
        >>> saved_arrays({"w": w})["w"].dtype
        dtype('float32')
    """
    _KEPT.pop(value_holder(v), None)


def _updated(variables: Iterable[Any]) -> None:
    """A solver's update wrote ``variables``: NNabla writes float32 over their arrays, so
    what is kept for them is let go now (a float64 copy of a 1000x1000 parameter is 8 MB),
    not at the next save (:func:`_saved` would find it written anyway).  The update bumped
    their tensors' versions (``stadyn.solvers`` bumps them after its fused kernels too), so
    the kept entries no longer holding their tensor go: a walk of what is kept (few
    entries), not of the solver's parameters (a step of a model with one parameter kept
    and left out of the update would pay a look-up per parameter, 850 us for 300).  An
    update traced into a compiled step (``stadyn.compile``) tells no one: that is left to
    the save."""
    for holder, entry in list(_KEPT.items()):
        if not entry.holds(data_of(holder)):
            del _KEPT[holder]


_solvers.add_update_listener(_updated)


def kept_now(v: Any, t: torch.Tensor) -> Any:
    """A token for :func:`filled`: what is kept for the Variable ``v``, when ``t`` is the
    tensor it holds as kept and nothing wrote it since (else None: ``t`` is its gradient, or
    written)."""
    holder = value_holder(v)
    entry = _KEPT.get(holder)
    if entry is None or not entry.holds(t):
        return None
    return holder, entry.dtype


def filled(token: Any) -> None:
    """``fill()`` / ``zero()`` wrote the Variable of ``token`` (:func:`kept_now`, taken
    before): NNabla 1.39 fills its array in the array's dtype (a float64 parameter stays
    float64, the value through float32: ``fill(0.1)`` holds float64(float32(0.1))), so the
    dtype stays kept, the values now those of the float32 Variable."""
    if token is None:
        return
    holder, dtype = token
    _KEPT[holder] = _Kept.of(dtype, None, data_of(holder))


@contextlib.contextmanager
def kept_across(variables: Iterable[Any]) -> Iterator[None]:
    """Keep what is kept for ``variables`` (held as kept, unwritten) across a block that writes
    their values again as they are: a loaded network's build giving its parameters the values
    the loader holds (``nnabla.utils.nnp_graph``, ``nnabla.utils.load``), which NNabla's
    ``get_parameter_or_create`` leaves in the dtype the file gave.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> w = nn.Variable.from_numpy_array(np.zeros(2, np.float32))
        >>> keep(w, np.zeros(2))
        >>> with kept_across([w]):
        ...     w.d = np.zeros(2, np.float32)       # (a build writing the same values)
        >>> saved_arrays({"w": w})["w"].dtype
        dtype('float64')
    """
    before = []
    for v in variables:
        holder = value_holder(v)
        entry = _KEPT.get(holder)
        if entry is not None and entry.holds(data_of(holder)):
            before.append((holder, entry))
    yield
    for holder, entry in before:
        _KEPT[holder] = _Kept.of(entry.dtype, entry.array, data_of(holder))


def _saved(holder: Any, v: Any) -> np.ndarray:
    entry = _KEPT.get(holder)
    values = np.asarray(v.d)
    if entry is None:
        return values
    if not entry.holds(data_of(holder)):
        del _KEPT[holder]                   # written since: float32, as NNabla's
        return values
    arr = entry.array
    if arr is None:
        return values.astype(entry.dtype)
    out = arr.copy()
    written = values != arr.astype(np.float32)      # (in place through .d)
    out[written] = values[written]
    return out


def kept_arrays(params: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """:func:`saved_arrays` of those of ``params`` kept in another dtype only (the others are
    left out, their values not read: a writer that has them as float32 keeps its own).

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> w = nn.Variable.from_numpy_array(np.zeros(2, np.float32))
        >>> b = nn.Variable.from_numpy_array(np.zeros(2, np.float32))
        >>> keep(w, np.zeros(2))
        >>> {k: a.dtype for k, a in kept_arrays({"w": w, "b": b}).items()}
        {'w': dtype('float64')}
    """
    out = {}
    for name, v in params.items():
        holder = value_holder(v)
        if holder in _KEPT:
            saved = _saved(holder, v)
            if holder in _KEPT:             # (not written since: still NNabla's dtype)
                out[name] = saved
    return out


def saved_arrays(params: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """``{name: array}`` an ``.h5`` re-save writes for ``params``: what NNabla 1.39 holds for
    each, kept here, while the Variable holds the tensor it held when kept; else its value
    (``.d``)."""
    return {name: _saved(value_holder(v), v) for name, v in params.items()}


# An initializer argument -> the last name component of the parameter NNabla 1.39 makes of it
# (nnabla/parametric_functions.py: ``get_parameter_or_create("W", ..., w_init)``, ``"b"``,
# ``PF.embed``'s ``initializer`` its ``W``); another ``<name>_init`` makes ``<name>``
# (``slope_init``: ``slope``), ``param_init``'s keys name theirs (``beta``, ``mean``, ...).
_MADE_OF = {"w_init": "W", "b_init": "b", "initializer": "W"}


def _made_of(arg: str) -> str:
    return _MADE_OF.get(arg, arg[:-len("_init")] if arg.endswith("_init") else arg)


def _initializers(bound: Any, recorded: list) -> list:
    """``[(name, array)]`` of the call's initializer arrays of another dtype than float32
    (``w_init``, ``b_init``, ``initializer``, other ``*_init``, ``param_init``'s items), each
    by the last name component of the parameter it makes; its initializer functions replaced
    in ``bound`` by ones appending ``(name, array given)`` to ``recorded`` (``recorded`` holds
    ``None`` then, till they are called)."""
    def look(name: str, value: Any) -> Any:
        if isinstance(value, _FUNCTIONS):
            recorded.append(None)
            return _recording(value, name, recorded)
        if _of_another_dtype(value):
            found.append((name, value))
        return value

    found: list = []
    for arg, value in list(bound.arguments.items()):
        if arg == "param_init" and isinstance(value, dict):
            bound.arguments[arg] = {k: look(str(k), v) for k, v in value.items()}
        elif arg.endswith("_init") or arg == "initializer":
            bound.arguments[arg] = look(_made_of(arg), value)
    return found


def _of_another_dtype(value: Any) -> bool:
    return (isinstance(value, np.ndarray) and value.dtype.kind in "biuf"
            and value.dtype != np.float32)


# A program's own initializer function (a lambda, a def, a partial); NNabla's initializer
# objects give float32 and are left as they are.
_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
              functools.partial)


def _recording(init: Callable, name: str, recorded: list) -> Callable:
    """``init`` appending ``(name, each array it gives)`` to ``recorded``."""
    def call(*args: Any, **kwargs: Any) -> Any:
        value = init(*args, **kwargs)
        recorded.append((name, np.asarray(value)))
        return value
    return call


def _same_float32(v: Any, arr: np.ndarray) -> bool:
    current = data_of(v).detach()
    return (current.dtype == torch.float32 and tuple(current.shape) == arr.shape
            and torch.equal(current, torch.from_numpy(arr.astype(np.float32))))


def _made_since(registry: Any, count: int) -> list:
    """``[(last name component, parameter)]`` of the parameters ``registry`` gained since it
    held ``count``, oldest first: the last ones of its order (a new path goes last), read
    without walking the others (a ``PF`` call in a training loop of a large model pays for
    what it made only)."""
    grown = len(registry) - count
    if grown <= 0:
        return []
    paths = list(itertools.islice(reversed(registry), grown))[::-1]
    return [(path.rsplit("/", 1)[-1], registry.get(path)) for path in paths]


def keeping_initializer_arrays(func: Callable) -> Callable:
    """The parametric function ``func`` keeping (:func:`keep`) the initializer arrays of
    another dtype than float32 it is given or its initializer functions give (``w_init``,
    ``param_init``'s values: float64, integers) for the float32 parameters it makes of them:
    NNabla 1.39 holds those in the array's dtype (parameter.py:244,
    ``Variable.from_numpy_array``; ``PF.batch_normalization``'s integer ``beta`` / ``gamma``
    int64).  Each goes to the new parameter its argument names (``w_init`` ``W``, ``b_init``
    ``b``, ``param_init={"mean": ...}`` ``mean``), of its shape; failing that, to the first new
    parameter of its shape holding its float32 rounding.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     _ = PF.affine(nn.Variable((1, 2)), 1, w_init=np.full((2, 1), 0.1))
        ...     saved_arrays(nn.get_parameters())["affine/W"].dtype
        dtype('float64')
    """
    def call(bound: inspect.BoundArguments, args: tuple, kwargs: dict) -> Any:
        recorded: list = []
        arrays = _initializers(bound, recorded)
        if not arrays and not recorded:
            return func(*args, **kwargs)
        registry = _parametric.current_registry()
        count = len(registry)
        out = func(*bound.args, **bound.kwargs)
        new = _made_since(registry, count)
        arrays += [(n, a) for n, a in filter(None, recorded) if _of_another_dtype(a)]
        for name, arr in arrays:
            shaped = [(n, v) for n, v in new if tuple(data_of(v).shape) == arr.shape]
            pick = next(((n, v) for n, v in shaped if n == name), None) or next(
                ((n, v) for n, v in shaped if _same_float32(v, arr)), None)
            if pick is not None:
                keep(pick[1], arr)
                new.remove(pick)
        return out
    return with_bound_arguments(func, call)


def with_bound_arguments(func: Callable, body: Callable) -> Callable:
    """``func`` whose calls run ``body(bound, args, kwargs)``: ``bound`` the call's arguments
    bound to ``func``'s signature (``inspect.BoundArguments``, which ``body`` may change before
    calling ``func(*bound.args, **bound.kwargs)``), ``args`` and ``kwargs`` as given.  A call
    the signature refuses goes to ``func`` itself (its own error); a ``func`` without a
    signature is returned as it is.  The wrapper of :func:`keeping_initializer_arrays` and of
    ``_lowrank_dtypes.keeping_factor_dtypes``.

    Example:
        >>> def f(a, b=2):
        ...     return a * b
        >>> g = with_bound_arguments(f, lambda bound, args, kwargs: (
        ...     dict(bound.arguments), f(*bound.args, **bound.kwargs)))
        >>> g(3), g(3, b=5)
        (({'a': 3}, 6), ({'a': 3, 'b': 5}, 15))
    """
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return func

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind_partial(*args, **kwargs)
        except TypeError:
            return func(*args, **kwargs)            # (func's own error)
        return body(bound, args, kwargs)
    return call

"""What CNTK 2.7 refuses of the data a run is given, before the graph runs: NumPy data of a
type it does not convert (``int32`` for a float input: only Python's integer, ``int64`` on
Linux, bool and the float types are converted), object arrays, and sequence inputs on the same
dynamic axes given different numbers or lengths of sequences (its "Different minibatch
layouts" ValueError, for inputs of the batch axis alone given different numbers of samples
too).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.input_variable(2)
    >>> (x * 1).eval({x: np.ones((1, 2), np.int64)}).tolist()
    [[1.0, 1.0]]
    >>> try:
    ...     (x * 1).eval({x: np.ones((1, 2), np.int32)})
    ... except ValueError as e:
    ...     print(e)
    only integer, bool, float32, float64 and float16 are supported, you gave int32
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..._errors import DataError, ShapeError
from ...train import cntk_value_misfit
from ._adapt import unwrap
from ._graph import BATCH, kind_of
from ._variable_text import axis_mark

__all__ = ["refuse_data_type", "refuse_fed_layouts_that_differ", "refuse_layouts_that_differ",
           "unbatched", "unbatched_sample"]

# the types CNTK 2.7's Value.create converts to an input's type: bool and the float types,
# and the integers ``np.issubdtype(dtype, int)`` holds for (NumPy 1.19: ``np.int_`` only)
_CONVERTED = {np.dtype(np.bool_), np.dtype(np.float16), np.dtype(np.float32),
              np.dtype(np.float64), np.dtype(np.int_)}


def _arrays(value: Any) -> list:
    """The NumPy or SciPy sparse arrays of fed data (the data itself, or the items of a list:
    one per sample or sequence)."""
    def is_array(v):
        return isinstance(v, np.ndarray) or (hasattr(v, "tocsr") and hasattr(v, "dtype"))
    return [value] if is_array(value) else \
        [v for v in value if is_array(v)] if isinstance(value, list) else []


def refuse_data_type(value: Any, target: Any = None) -> None:
    """CNTK 2.7's ValueError for NumPy data (an array, or a list holding arrays: one per
    sample or sequence; SciPy sparse matrices too) of a type it does not convert to the
    input's; for data it converts, its UserWarning once an array that the input ``target``
    (given) expects another type.

    Example:
        >>> import numpy as np, warnings, stadyn.compat.cntk as C
        >>> refuse_data_type([np.ones(2, np.float64)])
        >>> try:
        ...     refuse_data_type(np.ones(2, np.uint8))
        ... except ValueError as e:
        ...     print(e)
        only integer, bool, float32, float64 and float16 are supported, you gave uint8
        >>> x = C.input_variable(2)
        >>> with warnings.catch_warnings(record=True) as said:
        ...     warnings.simplefilter("always")
        ...     refuse_data_type(np.ones((1, 2)), x)
        >>> print(str(said[0].message).replace(x.uid, "Input1"))
        your data is of type "float64", but your input variable (uid "Input1") expects \
"<class 'numpy.float32'>". Please convert your data beforehand to speed up training.
    """
    arrays = _arrays(value)
    for a in arrays:
        if a.dtype == object:
            raise DataError("dtype object is not supported. If this is a batch of sequences, "
                            "you need to pass them as a pure-Python list of NumPy arrays")
        if a.dtype not in _CONVERTED:
            raise DataError("only integer, bool, float32, float64 and float16 are supported, "
                            f"you gave {a.dtype}")
    expected = getattr(target, "dtype", None)
    if expected is None:
        return
    for a in arrays:
        if a.dtype != np.dtype(expected):
            warnings.warn(f'your data is of type "{a.dtype}", but your input variable (uid '
                          f'"{target.uid}") expects "{expected}". Please convert your data '
                          "beforehand to speed up training.", UserWarning, stacklevel=4)


def _layout(value: Any, rank: int) -> list | None:
    """The steps of each sequence of the data of a sequence input of samples of ``rank``
    axes (a list of sequences; an array ``(sequences, steps, *sample)``, or one sequence's
    ``(steps, *sample)``; a reader's data or a ``Value`` with their lengths), or None where
    the data says no more."""
    lengths = getattr(value, "lengths", None)       # a reader's data, a Value of sequences
    if lengths is not None and not isinstance(value, np.ndarray):
        return [int(n) for n in np.asarray(lengths).reshape(-1)]
    if isinstance(value, (list, tuple)):
        return [int(s.shape[0]) if len(getattr(s, "shape", ())) > rank else
                len(s) if isinstance(s, (list, tuple)) else 1 for s in value]
    if isinstance(value, np.ndarray) and value.ndim == rank + 2:
        return [int(value.shape[1])] * int(value.shape[0])
    if isinstance(value, np.ndarray) and value.ndim == rank + 1:
        return [int(value.shape[0])]
    return None


def _count(value: Any, rank: int) -> int | None:
    """The number of samples of the data of an input of the batch axis alone, with samples of
    ``rank`` axes (a list of samples, an array or a SciPy sparse matrix ``(samples,
    *sample)``), or
    None where the data says no more."""
    if isinstance(value, (list, tuple)):
        return len(value)
    if (isinstance(value, np.ndarray) or hasattr(value, "tocsr")) and value.ndim == rank + 1:
        return int(value.shape[0])
    return None


def refuse_layouts_that_differ(arguments: Any, order: Any = ()) -> None:
    """CNTK 2.7's ValueError for data of inputs on the same dynamic axes whose sequences
    differ in number or length, or whose samples differ in number where the axes are the batch
    axis alone (``{input: data}``; its keys CNTK Variables), the
    inputs named in the order of ``order`` (the Function's arguments, as CNTK names them
    whatever the order of the data given).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> s, t = C.sequence.input_variable(2, name="s"), C.sequence.input_variable(2, name="t")
        >>> refuse_layouts_that_differ({s: [np.ones((2, 2))], t: [np.ones((3, 2))]})
        Traceback (most recent call last):
          ...
        stadyn._errors.DataError: Different minibatch layouts detected (difference in sequence \
lengths or count or start flags) in data specified for the Function's arguments \
'Input('t', [#, *], [2])' vs. 'Input('s', [#, *], [2])', though these arguments have the same \
dynamic axes '[#, *]'
    """
    if not isinstance(arguments, dict):
        return
    place = {id(unwrap(a)): i for i, a in enumerate(order)}
    first: dict = {}        # dynamic axes -> (the first input on them, its layout)
    for key, value in sorted(arguments.items(),
                             key=lambda kv: place.get(id(unwrap(kv[0])), len(place))):
        axes = tuple(getattr(key, "dynamic_axes", ()) or ())
        rank = len(tuple(getattr(key, "shape", ()) or ()))
        if not axes:
            continue
        layout = _layout(value, rank) if len(axes) > 1 else _count(value, rank)
        if layout is None:
            continue
        names = tuple(getattr(a, "name", str(a)) for a in axes)
        seen = first.setdefault(names, (key, layout))
        if seen[1] != layout:
            raise _layouts_differ(key, seen[0])


def _layouts_differ(later: Any, earlier: Any) -> DataError:
    """CNTK 2.7's ValueError for two inputs on the same dynamic axes given data of different
    layouts (``later`` met after ``earlier`` in the data given)."""
    axes = ", ".join(axis_mark(a) for a in later.dynamic_axes)
    return DataError(
        "Different minibatch layouts detected (difference in sequence lengths or count or "
        f"start flags) in data specified for the Function's arguments '{later!r}' vs. "
        f"'{earlier!r}', though these arguments have the same dynamic axes '[{axes}]'")


def refuse_fed_layouts_that_differ(fed: list) -> None:
    """CNTK 2.7's ValueError once a run's data is fed (``fed``: ``(input, the Variable fed)``
    pairs, in the order given) where inputs on the same dynamic axes got different numbers
    of samples, or of sequences or their lengths: ``Function.eval``, ``forward`` and ``grad``
    refuse them before running (inputs without a sequence axis too).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x, y = C.input_variable(2, name="x"), C.input_variable(2, name="y")
        >>> (x + y).eval({x: np.ones((2, 2), np.float32), y: np.ones((3, 2), np.float32)})
        Traceback (most recent call last):
          ...
        stadyn._errors.DataError: Different minibatch layouts detected (difference in sequence \
lengths or count or start flags) in data specified for the Function's arguments \
'Input('y', [#], [2])' vs. 'Input('x', [#], [2])', though these arguments have the same \
dynamic axes '[#]'
    """
    first: dict = {}        # dynamic axes -> (the first input on them, its layout)
    for key, var in fed:
        axes = tuple(getattr(key, "dynamic_axes", ()) or ())
        if not axes or not tuple(var.shape):
            continue
        lengths = getattr(var, "sequence_lengths", None)
        layout = (int(var.shape[0]), None if lengths is None else
                  tuple(int(n) for n in np.asarray(lengths.d).reshape(-1)))
        seen = first.setdefault(tuple(getattr(a, "name", str(a)) for a in axes), (key, layout))
        if seen[1] != layout:
            raise _layouts_differ(key, seen[0])


def unbatched(k) -> bool:
    """Whether ``k`` (a key of a minibatch: an input, or a name) is an input without dynamic
    axes (``dynamic_axes=[]``).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> unbatched(C.input_variable(3, dynamic_axes=[])), unbatched(C.input_variable(3))
        (True, False)
    """
    var = unwrap(k) if not isinstance(k, str) else None
    return var is not None and not BATCH(var) and var.sequence_lengths is None and \
        kind_of(var) == "input"


def unbatched_sample(shown: str, sample: tuple, arr: Any) -> Any:
    """``arr`` fed to an input without dynamic axes (``C.input_variable(3, dynamic_axes=[])``,
    shown as ``shown``) of shape ``sample``, as CNTK 2.7 takes it: of that shape, or with
    leading axes of length 1 (left out); otherwise its ValueError as it is fed (a value of
    lower rank; a leading axis longer than 1, which CNTK numbers after the sample's axes; last
    axes that are not the sample's).  A free dimension takes any length.

    Example:
        >>> import numpy as np
        >>> unbatched_sample("Input('x', [], [3])", (3,), np.ones((1, 3))).shape
        (3,)
        >>> unbatched_sample("Input('x', [], [3])", (3,), np.ones(4))
        Traceback (most recent call last):
        stadyn._errors.ShapeError: The trailing dimensions of the Value shape '[4]' do not \
match the Variable 'Input('x', [], [3])' shape '[3]'.
        input x: a value of shape (4,) fed to an input of shape (3,) without dynamic axes
    """
    shape = tuple(int(d) for d in np.shape(arr))
    first = cntk_value_misfit(shape, sample, shown)
    if first is None:
        extra = len(shape) - len(sample)
        return arr.reshape(shape[extra:]) if extra else arr
    name = shown.split("'")[1] if shown.count("'") >= 2 else shown
    raise ShapeError(f"{first}\ninput {name}: a value of shape {shape} fed to an input of "
                     f"shape {sample} without dynamic axes")

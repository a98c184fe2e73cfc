"""An op's axis arguments as CNTK 2.7's Python takes them, as the op is called (of a waiting
operand too): the one rule of every op that takes an axis.

CNTK 2.7 makes an ``Axis`` of an axis argument (``cntk.internal.sanitize_axis``): an ``Axis``
and None (all of a sample's axes) pass; a ``numbers.Integral`` is made ``Axis(-axis - 1)``,
which SWIG's ``new_Axis`` takes of a Python int only (a bool is one): a NumPy integer
(``np.int64(1)``, ``np.int32(1)``) is its NotImplementedError; anything else (a float, a NumPy
float, ``np.bool_``, a string) is read as an Axis, ``axis.is_static_axis``: its
AttributeError.  The reductions, ``slice`` and ``squeeze`` take a list or tuple of such axes
too (``sanitize_axis_list``: each checked; of another type, a NumPy array, it is one axis);
``transpose`` takes a permutation (``sanitize_permutation``: its TypeError, ValueErrors, then
``Axis(n - i - 1)`` of each entry).  An op declares which of its parameters are axes, and
of which kind (:func:`takes_axes`); :func:`axes_checker` makes the check the op's wrapper
(``_deferrable.deferrable``) runs as it is called.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> C.reduce_sum(C.input_variable(3), axis=np.int64(0))
    Traceback (most recent call last):
      ...
    NotImplementedError: Wrong number or type of arguments for overloaded function 'new_Axis'.
    >>> C.argmax(C.placeholder(), axis=np.float32(0))      # (of a waiting operand too)
    Traceback (most recent call last):
      ...
    AttributeError: 'numpy.float32' object has no attribute 'is_static_axis'
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from ._axis import Axis

__all__ = ["checked_axis", "checked_axis_list", "checked_permutation", "takes_axes",
           "axes_checker", "whole_sample", "refuse_whole_sample"]


def checked_axis(axis: Any) -> Any:
    """``axis`` where CNTK 2.7 makes an ``Axis`` of it (``sanitize_axis``): None, an Axis or a
    Python int (a bool too) as it is; a NumPy integer SWIG's NotImplementedError for
    ``new_Axis``; anything else CNTK's AttributeError (it has no ``is_static_axis``).

    Example:
        >>> import numpy as np
        >>> checked_axis(1), checked_axis(True)
        (1, True)
        >>> checked_axis(np.int64(0))
        Traceback (most recent call last):
          ...
        NotImplementedError: Wrong number or type of arguments for overloaded function 'new_Axis'.
        >>> checked_axis(1.0)
        Traceback (most recent call last):
          ...
        AttributeError: 'float' object has no attribute 'is_static_axis'
    """
    if axis is None or isinstance(axis, (Axis, int)):
        return axis
    if isinstance(axis, np.integer):
        raise _new_axis_refused()
    kind = type(axis)   # (Python names a NumPy scalar's type by its module: numpy.float32)
    shown = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    raise AttributeError(f"'{shown}' object has no attribute 'is_static_axis'")


def checked_axis_list(axes: Any) -> Any:
    """``axes`` where CNTK 2.7 takes one axis or a list of them (``sanitize_axis_list``, the
    reductions' ``sanitize_multi_axis_reduction_list``): a list or tuple (those types exactly)
    has each entry checked (:func:`checked_axis`), anything else is one axis.

    Example:
        >>> import numpy as np
        >>> checked_axis_list([0, 1])
        [0, 1]
        >>> checked_axis_list((0, np.int64(1)))
        Traceback (most recent call last):
          ...
        NotImplementedError: Wrong number or type of arguments for overloaded function 'new_Axis'.
    """
    if type(axes) in (list, tuple):
        for a in axes:
            checked_axis(a)
        return axes
    return checked_axis(axes)


def checked_permutation(perm: Any) -> Any:
    """``transpose``'s ``perm`` as CNTK 2.7 takes it (``cntk.ops.transpose``,
    ``sanitize_permutation``): an int or an Axis is a TypeError; its entries must lie in
    ``[-n, n)`` (an Axis among them: Python's TypeError comparing it) and differ (ValueErrors);
    then ``Axis(n - i - 1)`` of each: SWIG's NotImplementedError for one not a Python int.

    Example:
        >>> import numpy as np
        >>> checked_permutation([1, 0])
        [1, 0]
        >>> checked_permutation([np.int64(1), 0])
        Traceback (most recent call last):
          ...
        NotImplementedError: Wrong number or type of arguments for overloaded function 'new_Axis'.
        >>> checked_permutation([0, 0])
        Traceback (most recent call last):
          ...
        ValueError: duplicate item in permutation
    """
    if type(perm) in (int, Axis):
        raise TypeError("transpose expects a permutation; to swap two axes use swapaxes")
    n = len(perm)
    for i in perm:
        if isinstance(i, Axis):
            raise TypeError("'<=' not supported between instances of 'int' and 'Axis'")
    if not all(-n <= i < n for i in perm):
        raise ValueError("invalid permutation element: elements must be from {-len(perm), "
                         "..., len(perm)-1}")
    if len({i if i >= 0 else n + i for i in perm}) != n:
        raise ValueError("duplicate item in permutation")
    if not all(isinstance(i, int) for i in perm):
        raise _new_axis_refused()
    return perm


def _new_axis_refused() -> NotImplementedError:
    return NotImplementedError("Wrong number or type of arguments for overloaded function "
                               "'new_Axis'.")


def whole_sample(axis: Any) -> bool:
    """Whether ``axis`` is all of a sample's axes: None (``sanitize_axis`` makes it
    ``Axis.all_static_axes()``) or that Axis.

    Example:
        >>> whole_sample(None), whole_sample(Axis.all_static_axes()), whole_sample(0)
        (True, True, False)
    """
    return axis is None or (isinstance(axis, Axis) and axis == Axis.all_static_axes())


def refuse_whole_sample(axes: tuple, message: "str | Callable[[], str]") -> None:
    """CNTK 2.7's RuntimeError ``message`` where one of ``axes`` is all of a sample's axes
    (:func:`whole_sample`): the ops taking one static axis (``one_hot``, ``swapaxes``)
    refuse it as their output's shape is inferred.  ``message`` may be a function making it,
    called only to refuse (an operand's repr names it, which must not happen on every call).

    Example:
        >>> refuse_whole_sample((0, None), "TopK operation only supports a single static axis.")
        Traceback (most recent call last):
          ...
        RuntimeError: TopK operation only supports a single static axis.
    """
    if any(whole_sample(a) for a in axes):
        raise RuntimeError(message() if callable(message) else message)


_CHECKS = {"axis": checked_axis, "axes": checked_axis_list, "permutation": checked_permutation}


def takes_axes(unless: "Callable[[tuple, dict], bool] | None" = None,
               whole: "str | None" = None, dynamic: "str | None" = None,
               **kinds: str) -> Callable:
    """Declare the parameters of an op that are CNTK axes and their kind: ``"axis"`` (one),
    ``"axes"`` (one or a list), ``"permutation"``; its wrapper checks them as it is called
    (:func:`axes_checker`), in the order declared (CNTK's), except for a call whose
    ``(args, kwargs)`` ``unless`` holds for (``splice`` of one operand: CNTK 2.7 returns it
    before reading the axis).  ``whole``: the RuntimeError an op taking one static axis
    raises as called, of a waiting operand too, where an axis is all of a sample's axes
    (None: CNTK 2.7's ``top_k``, ``expand_dims``; :func:`whole_sample`).  ``dynamic``: the
    RuntimeError of an op taking one static axis or None (its default), as called, where an
    axis is an ``Axis`` that is not a static one (all static axes, the batch axis: CNTK 2.7's
    ``gather``).

    Example:
        >>> @takes_axes(axis="axis")
        ... def op(x, axis=-1, name=""):
        ...     return x
        >>> op.cntk_axes
        {'axis': 'axis'}
    """
    for kind in kinds.values():
        if kind not in _CHECKS:
            raise ValueError(f"takes_axes: unknown kind {kind!r} (one of {sorted(_CHECKS)})")

    def declare(fn):
        fn.cntk_axes = dict(kinds)
        fn.cntk_axes_unless = unless
        fn.cntk_axes_whole = whole
        fn.cntk_axes_dynamic = dynamic
        return fn
    return declare


def axes_checker(fn) -> "Callable[[tuple, dict], None] | None":
    """The check of the axis arguments ``fn`` declares (:func:`takes_axes`) of a call's
    ``(args, kwargs)``, found by keyword or position (a default is not checked); None where
    it declares none.

    Example:
        >>> import numpy as np
        >>> @takes_axes(axis="axis")
        ... def op(x, axis=-1, name=""):
        ...     return x
        >>> check = axes_checker(op)
        >>> check((1, 0), {}) is None
        True
        >>> check((1,), {"axis": np.float64(0)})
        Traceback (most recent call last):
          ...
        AttributeError: 'numpy.float64' object has no attribute 'is_static_axis'
    """
    kinds = getattr(fn, "cntk_axes", None)
    if not kinds:
        return None
    params = list(inspect.signature(fn).parameters.values())
    places = []
    for name, kind in kinds.items():
        at = next((k for k, p in enumerate(params) if p.name == name), None)
        positional = at is not None and params[at].kind in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        places.append((name, at if positional else None, _CHECKS[kind]))

    unless = getattr(fn, "cntk_axes_unless", None)
    whole = getattr(fn, "cntk_axes_whole", None)
    dynamic = getattr(fn, "cntk_axes_dynamic", None)

    def check(args: tuple, kwargs: dict) -> None:
        if unless is not None and unless(args, kwargs):
            return
        given = []
        for name, at, rule in places:
            if name in kwargs:
                given.append(rule(kwargs[name]))
            elif at is not None and at < len(args):
                given.append(rule(args[at]))
        if whole is not None:
            refuse_whole_sample(tuple(given), whole)
        if dynamic is not None and any(isinstance(a, Axis) and not a.is_static_axis
                                       for a in given):
            raise RuntimeError(dynamic)
    return check

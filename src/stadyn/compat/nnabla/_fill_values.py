"""The value NNabla 1.39's ``fill`` writes: a scalar goes through float32 on its way into the
array, whatever the array's dtype, and a float32 too large for an integer type gives what the
C++ conversion gives on x86 (measured on NNabla 1.39, case
``nnabla_fill_values.scalar_writes__through_float32``):

* ``t.d = 2**24 + 5`` into an int32 (or float64) array reads ``16777220``; ``2**31 - 1``,
  ``1e10``, ``-2**40`` and NaN read ``-2147483648``; ``300`` into uint8 reads ``44``, ``200``
  into int8 ``-56``, ``70000`` into float16 ``inf``; ``7.9`` into float64 reads
  ``7.900000095367432``.
* ``.d`` / ``.data`` given a scalar: 0 is ``zero()``; a float, or an integer not above 2**53,
  is ``fill()``; a larger integer is written as an array of its NumPy type (an int32 array
  given ``2**60`` becomes int64 and holds it exactly): :func:`scalar_is_filled`.

NumPy's cast of a float32 scalar converts as the C++ does on the same machine, so
:func:`filled_value` casts with NumPy.

NNabla's ``zero()`` and ``fill(v)`` write no array: they record the value, and the first read
makes the array, in the type it is read in.  So ``dst.copy_from(src)`` (with the current
context: ``F.identity`` in its type) of a ``src`` zeroed or filled and not read since gives a
float32 ``dst`` holding ``v`` itself (a uint8 ``src`` filled with 300: ``[300., 300.]``; case
``nnabla_variable_44.copy_from__filled_source``), and ``copy_from(src, False)`` finds no array
to copy (an IndexError).  :func:`mark_filled` records such a fill on the tensor, until it is
written or read (:func:`unmark_filled`).

Example:
    >>> import torch
    >>> filled_value(2**31 - 1, torch.int32), filled_value(7.9, torch.float64)
    (-2147483648, 7.900000095367432)
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

__all__ = ["filled_value", "mark_filled", "mark_made", "pending_fill", "scalar_is_filled",
           "unmark_filled"]

_NUMPY_OF = {torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8,
             torch.int16: np.int16, torch.int32: np.int32, torch.int64: np.int64,
             torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64}


def filled_value(value: Any, dtype: torch.dtype) -> Any:
    """The Python scalar that NNabla 1.39's ``fill(value)`` leaves in an array of ``dtype``:
    ``value`` rounded to float32, then converted as its C++ converts (wrapping, or the x86
    integer-indefinite ``INT_MIN`` for a value out of range).  Types NumPy has no name for
    here (bfloat16, complex) take ``value`` as it is.

    Example:
        >>> import torch
        >>> filled_value(2**24 + 5, torch.int32), filled_value(300, torch.uint8)
        (16777220, 44)
    """
    target = _NUMPY_OF.get(dtype)
    if target is None:
        return value
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.array(np.float32(value)).astype(target).item()


def scalar_is_filled(value: Any) -> bool:
    """Whether NNabla 1.39's ``.data = value`` (``value`` a NumPy scalar or a Python number)
    fills the array, keeping its dtype: a floating value, or one not above 2**53 (what a float64
    holds exactly); a larger integer is written as an array of its own NumPy type instead.

    Example:
        >>> scalar_is_filled(2**53), scalar_is_filled(2**60), scalar_is_filled(1e300)
        (True, False, True)
    """
    if np.dtype(type(value)).kind == "f":
        return True
    return bool(value <= (1 << 53))


_FILLED_AT = "_stadyn_nnabla_filled_at"


def mark_filled(t: torch.Tensor, value: Any) -> None:
    """Record that ``fill(value)`` was the last thing done to ``t`` (``value`` as NNabla holds
    it before any array exists: rounded to float32 only).  Kept on the tensor with its version,
    so a write ends it; so does a read (:func:`unmark_filled`).

    Example:
        >>> t = torch.full((2,), 44, dtype=torch.uint8); mark_filled(t, 300)
        >>> pending_fill(t)
        300.0
    """
    setattr(t, _FILLED_AT, (t._version, float(np.float32(value))))


def mark_made(t: torch.Tensor) -> None:
    """``t``'s array was made (read by a copy) with no write: NNabla's ``zeroing`` stays, but
    there is an array to copy now.

    Example:
        >>> t = torch.zeros(2); mark_made(t); pending_fill(t, zeroing=True) is None
        True
    """
    setattr(t, _FILLED_AT, (t._version, None))


def pending_fill(t: torch.Tensor, zeroing: bool = False) -> float | None:
    """The value NNabla holds for ``t`` without an array: what a ``fill`` left (:func:`mark_filled`)
    if nothing wrote or read it since, 0.0 where ``t`` is ``zeroing`` (``zero()`` and no read;
    not where a copy made its array since: :func:`mark_made`); else None.

    Example:
        >>> t = torch.zeros(2); mark_filled(t, 3); t += 1; pending_fill(t) is None
        True
        >>> pending_fill(t, zeroing=True)
        0.0
    """
    mark = getattr(t, _FILLED_AT, None)
    if mark is not None and mark[0] == t._version:
        return mark[1]
    return 0.0 if zeroing else None


def unmark_filled(t: torch.Tensor) -> None:
    """``t``'s values were read: NNabla's array exists now, in its dtype.

    Example:
        >>> t = torch.zeros(2); mark_filled(t, 3); unmark_filled(t); pending_fill(t) is None
        True
    """
    if hasattr(t, _FILLED_AT):
        delattr(t, _FILLED_AT)

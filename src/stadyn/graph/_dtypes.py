"""Dtypes and shapes as a Variable takes them: NumPy, torch or named dtypes to torch's, and
shapes checked to be tuples of non-negative ints."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._errors import ShapeError, StadynError

__all__ = ["to_torch_dtype"]


_NP_TO_TORCH = {
    np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64,
    np.dtype(np.float16): torch.float16, np.dtype(np.int32): torch.int32,
    np.dtype(np.int64): torch.int64, np.dtype(np.int8): torch.int8,
    np.dtype(np.uint8): torch.uint8, np.dtype(np.bool_): torch.bool,
    np.dtype(np.int16): torch.int16,
}
_TORCH_TO_NP = {v: k for k, v in _NP_TO_TORCH.items()}


def to_torch_dtype(dtype: Any) -> torch.dtype:
    """A torch dtype from a NumPy dtype, a torch dtype or a name (``'float32'``, ``'bfloat16'``)."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str) and dtype in ("bfloat16", "bf16"):
        return torch.bfloat16
    try:
        return _NP_TO_TORCH[np.dtype(dtype)]
    except (KeyError, TypeError) as exc:
        raise StadynError(f"unsupported dtype {dtype!r}") from exc


def _normalise_shape(shape: Any) -> tuple[int, ...]:
    """``shape`` as a tuple of ints; a dimension that is not a non-negative integer (``2.5``,
    ``-1``, ``True``, ``"3"``) is a :class:`ShapeError` naming it: never truncated or passed on."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    try:
        dims = list(shape)
    except TypeError:
        raise ShapeError(f"a shape must be a sequence of ints, got {shape!r}") from None
    out = []
    for k, d in enumerate(dims):
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise ShapeError(f"shape {tuple(dims)!r}: dimension {k} is {d!r}, not an int")
        if d < 0:
            raise ShapeError(f"shape {tuple(dims)!r}: dimension {k} is {int(d)}; dimensions "
                             "must be >= 0")
        out.append(int(d))
    return tuple(out)

"""NNabla 1.39 gives the indices its functions compute as ``uint64`` (``size_t``): ``F.max`` /
``F.min`` with ``only_index`` or ``with_index``, ``F.sort``'s, ``F.top_k_data``'s
(``with_index``), ``F.nonzero``'s, ``F.onnx_non_max_suppression``'s.  Stadyn's ops
give int64 (what torch indexes with, and what ``F.gather`` and the others read), so here such
an output Variable is recorded, and its ``.d`` / ``.data.data`` / ``.data.dtype`` show the same
memory as ``uint64`` (the indices are never negative: the same values).

Example:
    >>> import numpy as np, stadyn.compat.nnabla as nn
    >>> import stadyn.compat.nnabla.functions as F
    >>> with nn.auto_forward():
    ...     i = F.max(nn.Variable.from_numpy_array(np.array([1.0, 5.0, 2.0])), only_index=True)
    >>> i.d.dtype, int(i.d)
    (dtype('uint64'), 1)
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np
from ...graph import IdentitySet

__all__ = ["giving_uint64_indices", "shown_as_uint64", "as_shown"]

_UINT64: "IdentitySet[Any]" = IdentitySet()
_FUNCTIONS = ("max", "min", "sort", "top_k_data", "nonzero", "onnx_non_max_suppression")


def _index_outputs(name: str, out: Any, kwargs: dict) -> list:
    if name in ("nonzero", "onnx_non_max_suppression"):
        return [out]
    if kwargs.get("only_index"):
        return [out]
    if kwargs.get("with_index") and isinstance(out, (tuple, list)) and len(out) == 2:
        return [out[1]]
    return []




def giving_uint64_indices(name: str, fn: Callable) -> Callable:
    """``fn`` (NNabla's function ``name``) whose index outputs show as uint64 (see the module
    docstring); ``fn`` itself for a function with none.

    Example:
        >>> import stadyn.functions as sdF
        >>> giving_uint64_indices("relu", sdF.relu) is sdF.relu
        True
    """
    if name not in _FUNCTIONS:
        return fn
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        out = fn(*args, **kwargs)
        # ``with_index`` / ``only_index`` may come by position
        given = signature.bind_partial(*args, **kwargs).arguments
        for v in _index_outputs(name, out, given):
            _UINT64.add(v)
        return out
    return call


def shown_as_uint64(variable: Any) -> bool:
    """Whether ``variable`` holds indices NNabla gives as uint64.

    Example:
        >>> import stadyn as sd
        >>> shown_as_uint64(sd.Variable((2,)))
        False
    """
    try:
        return variable in _UINT64
    except TypeError:
        return False


def as_shown(variable: Any, array: np.ndarray) -> np.ndarray:
    """``array`` (``variable``'s values) as NNabla shows them: an int64 array of indices as a
    uint64 view of the same memory; else ``array``.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> as_shown(sd.Variable((2,)), np.zeros(2, np.int64)).dtype
        dtype('int64')
    """
    if array.dtype == np.int64 and shown_as_uint64(variable):
        return array.view(np.uint64)
    return array

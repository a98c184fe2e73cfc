"""What a static build's shape inference found, kept per op and per call signature.

Building a static graph runs each op's implementation on ``meta`` tensors to learn its outputs'
shapes, dtypes and whether they need a gradient.  For most ops that goes through torch's Python
reference decompositions and costs hundreds of microseconds a call (``F.relu``: ~400 us on this
project's CPU machine), far more than the node itself; and a network repeats the same calls —
the same op on the same input shapes with the same attributes, layer after layer, build after
build.  :func:`key` turns one call into a hashable key when every argument is one that decides
shapes by value (a Variable by its shape, dtype and ``need_grad``; ``None``, numbers, strings,
dtypes, and tuples of these); a call with anything else (a tensor, an array, a function, a
list) is not cached and is inferred every time.  The key also holds what inference reads from
torch's global state: grad mode and the default dtype.

Example:
    >>> import stadyn as sd, stadyn.functions as F
    >>> from stadyn.graph._shape_cache import key
    >>> x = sd.Variable((2, 3))
    >>> key((x, 0.5), {}) == key((sd.Variable((2, 3)), 0.5), {})
    True
    >>> key((x, [1, 2]), {}) is None          # a list: not cached
    True
"""

from __future__ import annotations

from typing import Any

import torch

from ._variable import Variable

__all__ = ["key", "store", "MAX_ENTRIES"]

#: Entries kept per op before its table is emptied and starts again.
MAX_ENTRIES = 2048

_PLAIN = (int, float, bool, str, bytes, type(None), torch.dtype)
_Tensor = torch.Tensor


def _part(a: Any):
    """``a``'s share of the key; raises TypeError for an argument that is not cached."""
    if isinstance(a, Variable):
        return (Variable, a._shape, a._dtype, a._need_grad)
    t = type(a)
    if t in _PLAIN or (isinstance(a, _PLAIN) and not isinstance(a, _Tensor)):
        return (t, a)                   # the type too: 2 and 2.0 can make different dtypes
    if isinstance(a, tuple):            # torch.Size and named tuples too
        return (t, tuple(_part(e) for e in a))
    raise TypeError


def key(args: tuple, kwargs: dict) -> tuple | None:
    """The cache key of one op call, or None when an argument keeps it from being cached."""
    try:
        parts = tuple(_part(a) for a in args)
        named = tuple((k, _part(v)) for k, v in kwargs.items()) if kwargs else ()
    except TypeError:
        return None
    return parts, named, torch.is_grad_enabled(), torch.get_default_dtype()


def store(spec, k: tuple, found: tuple) -> None:
    """Record what inference found for key ``k`` of ``spec`` (``spec.inferred[k]``; read by
    ``graph/_apply.py``), emptying the op's table when it is full."""
    table = spec.inferred
    if len(table) >= MAX_ENTRIES:
        table.clear()
    table[k] = found

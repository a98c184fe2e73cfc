"""The attributes CNTK 2.7 reports for an op (``Function.attributes``) where Stadyn's op
records others: kept per output Variable, weakly, by the op that made it.

CNTK writes a static axis counted from the last (its C++ order): sample axis ``a`` (negative
ones counted from the end) is CNTK's ``-a - 1``, shown as ``('ordered', 'static', -a - 1)``.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> table = C.constant(np.zeros((4, 3), np.float32))
    >>> C.gather(table, C.input_variable(2), axis=1).root_function.attributes
    {'axis': ('ordered', 'static', -2)}
"""

from __future__ import annotations

import weakref

from ...graph import Variable

__all__ = ["CNTK_ATTRIBUTES", "CNTK_ROOT_ATTRIBUTES", "file_attribute", "static_axis_attribute"]

CNTK_ATTRIBUTES: "weakref.WeakKeyDictionary[Variable, dict]" = weakref.WeakKeyDictionary()
# the attributes of the op inside a block (its ``block_root``) where they are CNTK's own: a
# GatherOp's TransposeAxes has ``axis1``/``axis2``
CNTK_ROOT_ATTRIBUTES: "weakref.WeakKeyDictionary[Variable, dict]" = weakref.WeakKeyDictionary()


def static_axis_attribute(axis: int) -> tuple:
    """How CNTK 2.7 shows static axis ``axis`` (Python's order, negative from the end)."""
    return ("ordered", "static", -int(axis) - 1)


def file_attribute(value):
    """An attribute as read from a CNTK file, as CNTK 2.7 shows it: a static axis as
    ``('ordered', 'static', index)`` (the index as stored), a dynamic one as
    ``('unordered', 'dynamic', name)`` (``'ordered'`` for a sequence axis), lists item by
    item.

    Example:
        >>> from types import SimpleNamespace as Axis    # (a file's axis, as the reader gives it)
        >>> file_attribute([Axis(static_axis_idx=1, is_dynamic=False, ordered=True), 3])
        [('ordered', 'static', 1), 3]
    """
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(file_attribute(v) for v in value)
    dynamic = getattr(value, "is_dynamic", None)
    if dynamic is None:
        return value
    if dynamic:
        return ("ordered" if value.ordered else "unordered", "dynamic", value.name)
    return ("ordered", "static", int(value.static_axis_idx))

"""``cntk.axis``: the module of CNTK's :class:`Axis` (``C.axis.Axis`` is ``C.Axis``).

Example:
    >>> import stadyn.compat.cntk as C
    >>> C.axis.Axis.default_batch_axis() == C.Axis.default_batch_axis()
    True
"""

from ._axis import Axis

__all__ = ["Axis"]

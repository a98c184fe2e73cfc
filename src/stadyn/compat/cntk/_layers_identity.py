"""CNTK 2.7's ``cntk.layers.identity`` (its layers' default activation) as the Function it is
there: ``combine`` of a placeholder ``keep``.

Example:
    >>> import stadyn.compat.cntk as C
    >>> C.layers.identity.op_name
    'CompositeFunctionOpName'
"""

from __future__ import annotations

from ._late import late
from ._swig_handles import SwigHandle

__all__ = ["identity"]


class _Identity(SwigHandle):
    """CNTK 2.7's ``identity`` (its layers' default activation): a Function, ``combine``
    of a placeholder ``keep``; applied to ``x``, the combine of ``x``.  Made when first used
    (the ops are bound once the package is imported).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> print(C.layers.identity)
        Combine(keep: Sequence[tensor]) -> Sequence[tensor]
        >>> print(C.layers.identity(C.input_variable(3, name="x")))
        Combine(x: Tensor[3]) -> Tensor[3]
    """

    _cntk_function = True       # (isinstance(identity, C.Function), as CNTK 2.7's)

    def _function(self):
        made = self.__dict__.get("_made")
        if made is None:
            ops = late("ops")
            made = self.__dict__["_made"] = ops.combine([ops.placeholder(name="keep")])
        return made

    def __call__(self, *args, **kwargs):
        return self._function()(*args, **kwargs)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._function(), name)

    def __str__(self) -> str:
        return str(self._function())

    def __repr__(self) -> str:
        return repr(self._function())


identity = _Identity()

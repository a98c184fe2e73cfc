"""CNTK 2.7's ``cntk.layers.identity`` (its layers' default activation) as the Function it is
there: ``combine`` of a placeholder ``keep``.

Example:
    >>> import stadyn.compat.cntk as C
    >>> C.layers.identity.op_name
    'CompositeFunctionOpName'
"""

from __future__ import annotations

import weakref

from ._adapt import several_outputs_message
from ._late import late
from ._swig_handles import SwigHandle

__all__ = ["identity", "FULL_STATES"]

# an unnamed recurrence's output (h) whose step is an LSTM cell, without return_full_state,
# each with a maker of the recurrence's Function of both states (h, c): CNTK 2.7's identity
# of it, the combine of a variable whose owner, the LSTM block, has two outputs, is that block
# (noted by ``_recurrent.StatesLayer``)
FULL_STATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class _Identity(SwigHandle):
    """CNTK 2.7's ``identity`` (its layers' default activation): a Function, ``combine``
    of a placeholder ``keep``; applied to ``x``, the combine of ``x``; to the output of an
    unnamed recurrence of an LSTM cell (its h), the recurrence's both states, h and c (CNTK's
    combine of a variable whose owner, the LSTM's block, has two outputs); to a Function of
    several outputs, CNTK 2.7's RuntimeError.  Made when first used (the ops are bound once
    the package is imported).

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
        full = FULL_STATES.get(getattr(args[0], "variable", args[0])) \
            if len(args) == 1 and not kwargs else None
        if full is not None:        # (an LSTM recurrence's h: both states, as CNTK 2.7's)
            return full()
        if len(args) == 1 and len(getattr(args[0], "outputs", None) or ()) > 1:
            raise RuntimeError(several_outputs_message(args[0]))    # (CNTK 2.7's refusal)
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

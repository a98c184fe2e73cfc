"""CNTK 2.7's check of a Python step function as a recurrence (``Recurrence``,
``RecurrenceFrom``, ``Fold``) is made: the function is run once as the body of a
``@Function`` (``_santize_step_function``, cntk/layers/sequence.py), where making a parameter
is refused, so a step that makes its layer inside it (``lambda h, x: Dense(3)(splice(h, x))``)
is refused with a TypeError; a layer made outside it and applied inside is not.

Example:
    >>> import stadyn.compat.cntk as C
    >>> refuse_parameters_made(lambda h, x: C.layers.Dense(3)(C.splice(h, x)))
    Traceback (most recent call last):
    ...
    TypeError: Parameter cannot be created inside Recurrence Python step function.
    >>> d = C.layers.Dense(3)
    >>> refuse_parameters_made(lambda h, x: d(C.splice(h, x)))
"""

from __future__ import annotations

import inspect
import types
from typing import Any

from ..._random import auto_seeds_kept
from ._function_pure import PARAMETERS_REFUSED, pure

__all__ = ["refuse_parameters_made"]


def refuse_parameters_made(step: Any) -> None:
    """CNTK 2.7's TypeError where the Python function ``step`` (a ``def`` or ``lambda``; a
    ``@Function`` or a layer is not checked so) makes a parameter when called on placeholders;
    nothing otherwise (any other error is the step's to raise when it is applied)."""
    if not isinstance(step, types.FunctionType):
        return
    from ._variables import placeholder
    try:
        params = inspect.signature(step).parameters.values()
    except (TypeError, ValueError):
        return
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
             and p.default is p.empty]
    try:
        with pure(), auto_seeds_kept():
            step(*[placeholder(name=n) for n in names])
    except TypeError as e:
        if str(e) == PARAMETERS_REFUSED:
            raise TypeError("Parameter cannot be created inside Recurrence Python step "
                            "function.") from None
    except Exception:       # (a step the check cannot run: its errors come when applied)
        pass

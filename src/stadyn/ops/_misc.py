"""Identity, constants, casts and graph helpers."""

from __future__ import annotations

import torch

from ..graph import get_current_context
from ._registry import op


@op(1, category="misc")
def identity(x):
    """The input unchanged (a new graph node).  Example: ``F.identity(x)``."""
    return x.view_as(x)  # a view, not ``x`` itself: the output gets its own autograd node


@op(0, category="misc")
def constant(val=0.0, shape=()):
    """An array of ``shape`` filled with ``val`` (no inputs, no gradient).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     c = F.constant(2.0, (2,))
        >>> c.d
        array([2., 2.], dtype=float32)
    """
    return torch.full(tuple(int(s) for s in shape), float(val),
                      device=get_current_context().device)


@op(1, category="misc")
def stop_gradient(x):
    """The input's value with no gradient flowing back.  Example: ``F.stop_gradient(h)``."""
    return x.detach()


#: The element types ``cast`` converts to, by name.
CAST_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
               "uint8", "bool")


@op(1, category="misc")
def cast(x, dtype="float32"):
    """``x`` converted to ``dtype`` (a name from :data:`CAST_DTYPES`): floats to integers round
    toward zero, anything to ``bool`` is ``x != 0``.  The gradient flows between floating-point
    types.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.cast(sd.Variable.from_numpy_array([-1.7, 0.0, 2.9]), "int64")
        >>> y.d
        array([-1,  0,  2])
    """
    if dtype not in CAST_DTYPES:
        raise ValueError(f"cannot cast to {dtype!r}; the types are {', '.join(CAST_DTYPES)}")
    return x.to(getattr(torch, dtype))

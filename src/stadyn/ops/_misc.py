"""Identity, constants and graph helpers."""

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

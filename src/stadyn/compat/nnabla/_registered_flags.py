"""NNabla 1.39's ``need_grad`` of a registered parameter, as distinct from the graphs'.

NNabla's parametric functions never put the registered parameter itself in a graph: each call
gives the graph a new Variable viewing its arrays (``get_unlinked_variable``) with a
``need_grad`` of its own.  So ``nn.get_parameters()["fc/affine/W"].need_grad = False`` after
the graph was built changes the registered flag only: ``nn.get_parameters()`` (and a solver
given it afterwards) leaves the parameter out, but a backward through the graphs already built
still writes its gradient, and a solver given it before still updates it (checked on NNabla
1.39, static and dynamic: case ``nnabla_fidelity_5.parameter_need_grad_after_build__update``).
Building again with a parametric function sets the registered flag back to what that
function asks (``need_grad=True``).

Stadyn's parametric functions put the registered parameter itself in the graph, so here a
flag a program sets on a registered parameter is kept apart (:data:`REGISTERED_FLAGS`, what
``need_grad`` reads) and the Variable the graphs hold keeps computing its gradient.  What
Stadyn's own code sets (the registry when a parametric function asks for the parameter with
another ``need_grad``, the loaders) is what the graphs compute with, and ends the separate
flag (:func:`set_by_stadyn`).  One difference stays: a registered parameter a program put
in a graph itself (``F.affine(x, nn.get_parameters()["W"])``) also keeps its gradient, where
NNabla's would stop.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.compat.nnabla as nn
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     _ = nn.parameter.get_parameter_or_create("W", (2,))
    ...     w = nn.get_parameters()["W"]
    ...     w.need_grad = False
    ...     w.need_grad, sorted(nn.get_parameters()), sd.Variable.need_grad.fget(w)
    (False, [], True)
"""

from __future__ import annotations

import os
import weakref
from typing import Any

from ...parametric import current_registry

__all__ = ["REGISTERED_FLAGS", "is_registered", "set_by_stadyn"]

_STADYN = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep

# The registered flag of a parameter where it differs from what its Variable computes with.
REGISTERED_FLAGS: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()


def is_registered(v: Any) -> bool:
    """Whether ``v`` is itself a parameter of the current registry (not a view of one).

    Example:
        >>> import stadyn as sd
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     w = sd.get_parameter_or_create("W", (2,))
        ...     is_registered(w), is_registered(sd.Variable((2,)))
        (True, False)
    """
    return v.parent is None and any(p is v for _, p in current_registry().items())


def set_by_stadyn(frame: Any) -> bool:
    """Whether the code of ``frame`` (the one setting a flag) is Stadyn's own, not a program's
    (a doctest's examples count as a program's).

    Example:
        >>> import sys
        >>> set_by_stadyn(sys._getframe())
        False
    """
    return frame.f_code.co_filename.startswith(_STADYN)

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
flag (:func:`set_by_stadyn`).  A registered parameter a program puts in a graph itself
(``F.affine(x, nn.get_parameters()["W"])``) after setting its flag False goes in as a view
with ``need_grad=False`` (:func:`honouring_registered_flags`, around every ``F`` function), so
its gradient stops there, as NNabla's.  One difference stays: set False *after* such a graph
was built, the graph still writes its gradient, where NNabla's would stop (case
``nnabla_fidelity_6.registered_parameter_in_graph__need_grad_false``, its ``after`` keys).

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

import functools
import os
import weakref
from typing import Any, Callable

from ...graph import Variable as _Variable
from ...parametric import current_registry

__all__ = ["REGISTERED_FLAGS", "is_registered", "set_by_stadyn", "honouring_registered_flags"]

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


def _as_given(v: Any) -> Any:
    """``v``, or a view of it with ``need_grad=False`` where ``v`` is a registered parameter
    whose flag a program set False (the Variable NNabla's graph would hold)."""
    if isinstance(v, _Variable) and REGISTERED_FLAGS.get(v) is False:
        return v.get_unlinked_variable(need_grad=False)
    return v


def honouring_registered_flags(fn: Callable) -> Callable:
    """``fn`` (an ``F`` function) given, for each registered parameter whose ``need_grad`` a
    program set False, a view of it that computes no gradient, as NNabla 1.39's graph on the
    registered Variable computes none (nothing is done while no such flag is set).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.compat.nnabla as nn
        >>> import stadyn.compat.nnabla.functions as F
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     _ = nn.parameter.get_parameter_or_create("W", (2,))
        ...     w = nn.get_parameters()["W"]
        ...     w.need_grad = False
        ...     y = F.mul2(nn.Variable.from_numpy_array(np.ones(2), need_grad=True), w)
        ...     y.parent.inputs[1] is w, y.parent.inputs[1].need_grad
        (False, False)
    """
    @functools.wraps(fn)
    def call(*args, **kwargs):
        if REGISTERED_FLAGS:
            args = tuple(_as_given(a) for a in args)
            kwargs = {k: _as_given(v) for k, v in kwargs.items()}
        return fn(*args, **kwargs)
    return call

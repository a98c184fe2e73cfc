"""``nnabla.parameter``: the module NNabla 1.39 keeps its parameter registry in (``nnabla``
re-exports most of it).  Programs reach it as ``nn.parameter.save_parameters(path)`` and
``nn.parameter.load_parameters(path)`` (nnabla-examples' ``neu.checkpoint_util``), or
``nn.parameter.get_parameter(key)`` / ``set_parameter(key, var)`` / ``pop_parameter(key)``
for one parameter of the current scope.  The names are the top-level package's (Stadyn's
registry, ``stadyn.parametric``); ``pop_parameter`` is this module's alone, as in NNabla.

Example:
    >>> import stadyn as sd
    >>> import stadyn.compat.nnabla as nn
    >>> with sd.parameter_registry(sd.ParameterRegistry()), nn.parameter_scope("net"):
    ...     w = nn.parameter.get_parameter_or_create("W", (2,))
    ...     w.d = [1.0, 2.0]
    ...     nn.parameter.get_parameter("W").d.tolist(), nn.parameter.get_parameter("b")
    ([1.0, 2.0], None)
"""

import collections
import functools

from ... import parametric as _parametric
from ...graph import current_scope as _current_scope
from ._scope_order import clear_parameters, parameter_scope
from ._parameter import (get_current_parameter_scope, get_parameter_or_create, get_parameters,
                         load_parameters, no_grad, save_parameters)
from ._variable import as_nnabla

__all__ = ["get_parameter", "set_parameter", "pop_parameter", "get_parameter_or_create",
           "get_parameters",
           "clear_parameters", "parameter_scope", "get_current_parameter_scope",
           "load_parameters", "save_parameters", "no_grad"]


@functools.wraps(_parametric.get_parameter)
def get_parameter(key):
    return as_nnabla(_parametric.get_parameter(key))


set_parameter = _parametric.set_parameter


def pop_parameter(key):
    """Remove the parameter ``key`` (a name in the current scope; ``a/b/W`` reaches into
    scopes ``a/b``) and return it, or None when there is none (nothing is removed).  A ``key``
    naming a scope rather than a parameter removes every parameter under it and returns them
    as NNabla's nested dicts, ``{"b": {"W": W}}``.  nnabla-examples' ENAS keeps only its
    controller's parameters this way before saving them.

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla as nn
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     w = nn.parameter.get_parameter_or_create("net/W", (2,))
        ...     popped = nn.parameter.pop_parameter("net/W")
        ...     popped is not None, list(nn.get_parameters()), nn.parameter.pop_parameter("x")
        (True, [], None)
    """
    registry = _parametric.current_registry()
    scope = _current_scope()
    full = f"{scope}/{key}" if scope else key
    param = registry.pop(full)
    if param is not None:
        return as_nnabla(param)
    below = registry.items(full)
    if not below:
        return None
    nested = collections.OrderedDict()
    for path, var in below:
        *scopes, name = path[len(full) + 1:].split("/")
        level = nested
        for s in scopes:
            level = level.setdefault(s, collections.OrderedDict())
        level[name] = as_nnabla(var)
        registry.pop(path)
    return nested

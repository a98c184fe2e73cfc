"""``nnabla.parameter``: the module NNabla 1.39 keeps its parameter registry in (``nnabla``
re-exports most of it).  Programs reach it as ``nn.parameter.save_parameters(path)`` and
``nn.parameter.load_parameters(path)`` (nnabla-examples' ``neu.checkpoint_util``), or
``nn.parameter.get_parameter(key)`` / ``set_parameter(key, var)`` for one parameter of the
current scope.  The names are the top-level package's (Stadyn's registry, ``stadyn.parametric``).

Example:
    >>> import stadyn as sd
    >>> import stadyn.compat.nnabla as nn
    >>> with sd.parameter_registry(sd.ParameterRegistry()), nn.parameter_scope("net"):
    ...     w = nn.parameter.get_parameter_or_create("W", (2,))
    ...     w.d = [1.0, 2.0]
    ...     nn.parameter.get_parameter("W").d.tolist(), nn.parameter.get_parameter("b")
    ([1.0, 2.0], None)
"""

import functools

from ... import parametric as _parametric
from ...parametric import clear_parameters, parameter_scope
from ...serialize import load_parameters, save_parameters
from ._parameter import (get_current_parameter_scope, get_parameter_or_create, get_parameters,
                         no_grad)
from ._variable import as_nnabla

__all__ = ["get_parameter", "set_parameter", "get_parameter_or_create", "get_parameters",
           "clear_parameters", "parameter_scope", "get_current_parameter_scope",
           "load_parameters", "save_parameters", "no_grad"]


@functools.wraps(_parametric.get_parameter)
def get_parameter(key):
    return as_nnabla(_parametric.get_parameter(key))


set_parameter = _parametric.set_parameter

"""Parameters: the registry keyed by scope path, scopes, initialisers and PF functions."""

from . import initializers
from ._registry import (ParameterRegistry, clear_parameters, current_registry,
                        default_registry, get_parameter, get_parameter_or_create, get_parameters,
                        parameter_registry, parameter_scope, set_parameter)

__all__ = [
    "ParameterRegistry", "parameter_scope", "parameter_registry", "get_parameters",
    "clear_parameters", "get_parameter_or_create", "get_parameter", "set_parameter",
    "current_registry", "default_registry", "initializers",
]

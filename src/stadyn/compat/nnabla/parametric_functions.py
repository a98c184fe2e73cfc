"""``nnabla.parametric_functions`` on Stadyn (NNabla also exports ``get_parameter_or_create``
here, the one of ``nnabla``, and the decorator ``parametric_function_api``)."""

import functools
import inspect

from ..._errors import ArgumentError
from ...parametric import get_parameter_or_create, parameter_scope
from ...parametric_functions import *  # noqa: F401,F403
from ...parametric_functions import __all__ as _pf_all

__all__ = list(_pf_all) + ["get_parameter_or_create", "parametric_function_api"]


def parametric_function_api(scope_name=None, param_desc=None):
    """Decorator for a parametric function of one's own (NNabla's): the function is called in
    the parameter scope ``scope_name`` (default: its own name; NNabla 1.39 fails with a
    ``NameError`` without one), and gets a keyword ``name``
    that opens a scope above it.  ``param_desc`` (NNabla's docstring material) is accepted and
    unused.  The function must take ``fix_parameters``, as NNabla requires.

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla.parametric_functions as PF
        >>> @PF.parametric_function_api("scaled")
        ... def scaled(x, fix_parameters=False):
        ...     return x * PF.get_parameter_or_create("s", (1,), 2.0)
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = scaled(sd.Variable((2,)), name="l1")
        ...     list(sd.get_parameters())
        ['l1/scaled/s']
    """
    def decorate(func):
        scope = scope_name if scope_name is not None else func.__name__
        if "fix_parameters" not in inspect.signature(func).parameters:
            raise ArgumentError(f"parametric_function_api: {func.__name__} must take "
                                "fix_parameters, as NNabla requires of a parametric function")

        @functools.wraps(func)
        def call(*args, name=None, **kwargs):
            if name is None:
                with parameter_scope(scope):
                    return func(*args, **kwargs)
            with parameter_scope(name), parameter_scope(scope):
                return func(*args, **kwargs)
        call.__scope_name__ = scope
        return call
    return decorate

"""NNabla's decorators that hand a function the current context as its ``ctx`` argument:
``function_api`` (``nnabla.functions``; every NNabla function is written ``f(ctx, x, ...)``
and published through it) and ``solver_api`` (``nnabla.solvers``).

The decorated function has the original's signature without ``ctx`` and calls the original
with the current context first, then the arguments as given (positional ones positionally,
``*args``, keyword-only ones and ``**kwargs`` by name), as the source NNabla generates does
(kept, for ``function_api``, as ``__source__``, written from ``FUNCTION_API_HEADER`` and
``FUNCTION_API_BODY``).  A function without a ``ctx`` parameter is a ``KeyError``.

Example:
    >>> import stadyn.compat.nnabla.functions as F
    >>> @F.function_api
    ... def scaled(ctx, x, scale=2.0):
    ...     return x * scale, ctx.backend
    >>> scaled(3.0)
    (6.0, ['cpu:float'])
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ._context import get_current_context

__all__ = ["FUNCTION_API_HEADER", "FUNCTION_API_BODY", "function_api", "solver_api"]

#: The templates of the source ``function_api`` describes a decorated function by.
FUNCTION_API_HEADER = "def {name}{signature}:"
FUNCTION_API_BODY = "ctx = get_current_context()\nreturn _func_(ctx, {shortsignature})"

_NOTE = ("\n\n    Note:\n        All nnabla functions in :obj:`nnabla.functions` are decorated "
         "with the :obj:`nnabla.function_bases.function_api` decorator,\n        which queries "
         "the current context and passes it into the first argument of the\n        original "
         "function. The original function always takes a context as the first argument.\n\n"
         "    ")


def _without_ctx(func: Callable) -> inspect.Signature:
    sig = inspect.signature(func)
    if "ctx" not in sig.parameters:
        raise KeyError(f"'ctx' not found in {list(sig.parameters)}")
    return sig.replace(parameters=[p for n, p in sig.parameters.items() if n != "ctx"])


def _caller_arguments(sig: inspect.Signature) -> str:
    """How the generated source passes the arguments on (``x, y, *args, z=z, **kw``)."""
    parts = []
    for name, p in sig.parameters.items():
        if p.kind is p.VAR_POSITIONAL:
            parts.append("*" + name)
        elif p.kind is p.VAR_KEYWORD:
            parts.append("**" + name)
        elif p.kind is p.KEYWORD_ONLY:
            parts.append(f"{name}={name}")
        else:
            parts.append(name)
    return ", ".join(parts)


def _with_context(func: Callable, sig: inspect.Signature) -> Callable:
    def call(*args: Any, **kwargs: Any) -> Any:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return func(get_current_context(), *bound.args, **bound.kwargs)
    call.__name__ = call.__qualname__ = func.__name__
    call.__signature__ = sig
    return call


def function_api(func: Callable) -> Callable:
    """``func(ctx, ...)`` as a function of the rest, called with the current context (see the
    module docstring); its docstring gets NNabla's note appended.

    Example:
        >>> import inspect
        >>> def f(ctx, x, y=1):
        ...     return x + y
        >>> g = function_api(f)
        >>> str(inspect.signature(g)), g(2), g.__function_api_base__ is f
        ('(x, y=1)', 3, True)
    """
    sig = _without_ctx(func)
    call = _with_context(func, sig)
    name = func.__name__
    body = FUNCTION_API_BODY.format(shortsignature=_caller_arguments(sig))
    call.__source__ = (FUNCTION_API_HEADER.format(name=name, signature=str(sig)) + "\n"
                       + "\n".join("    " + line for line in body.splitlines()))
    call.__doc__ = (func.__doc__ if func.__doc__ is not None else "No docstring.") + _NOTE
    call.__function_api_base__ = func
    return call


def solver_api(func: Callable) -> Callable:
    """``func(ctx, ...)`` as a function of the rest, called with the current context (see the
    module docstring); as NNabla's, its docstring keeps all but the first line.

    Example:
        >>> def make(ctx, lr=0.1):
        ...     return lr
        >>> solver_api(make)(lr=0.5)
        0.5
    """
    sig = _without_ctx(func)
    call = _with_context(func, sig)
    doc = func.__doc__ if func.__doc__ is not None else "No docstring."
    call.__doc__ = "\n".join(doc.splitlines()[1:]) + "\n    "
    call.__solver_api_base__ = func
    return call

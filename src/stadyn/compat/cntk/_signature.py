"""CNTK's Python functions as Functions: ``@C.Function`` and ``Function.with_signature``, their
arguments made of the types of ``_argument_types`` (``Tensor[3]``, ``SparseTensor[...]``,
``ParameterTensor[...]``, ``tensor``, ``Signature``: ``cntk.layers.typing``'s, re-exported).

A typed argument becomes an input variable named after the Python argument (``Tensor``: with
the batch axis; ``ParameterTensor``: without), an untyped one a placeholder bound when the
Function is called; when the body needs an untyped argument's shape, the graph is built only
then, for the operands it is called on.  (``Sequence[...]`` types belong to the sequence axis.)

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> from stadyn.compat.cntk.layers.typing import Tensor
    >>> @C.Function.with_signature(Tensor[3])
    ... def double(x):
    ...     return x * 2
    >>> double.arguments[0].name, double.arguments[0].shape
    ('x', (3,))
    >>> double(np.ones((1, 3), np.float32)).tolist()
    [[2.0, 2.0, 2.0]]
"""

from __future__ import annotations

import inspect

from . import _graph as G
from ._adapt import unwrap
from ._argument_types import ParameterTensor, Signature, SparseTensor, Tensor, _Type, tensor
from ._body_results import as_function, in_signature_order, of_graph, waits
from ._body_runs import run_body
from ._late import bind
from ._step_checks import NOT_BUILT, check_function_result
from ._variables import input_variable, placeholder
from ._waiting_function import _Deferred

__all__ = ["Tensor", "SparseTensor", "ParameterTensor", "tensor", "Signature"]


def _argument(name: str, kind):
    if kind is None or (isinstance(kind, _Type) and kind["shape"] == (-2,)):
        return placeholder(name=name)
    if not isinstance(kind, _Type):
        raise TypeError(f"argument {name!r}: a type is Tensor[...], SparseTensor[...] or "
                        f"ParameterTensor[...], got {kind!r}")
    return input_variable(kind["shape"], is_sparse=kind["is_sparse"],
                          dynamic_axes=kind["dynamic_axes"] or [], name=name,
                          **({"dtype": kind["dtype"]} if "dtype" in kind else {}))


def _input_of_type(kind, name: str = ""):
    """An input of a per-sample shape (a number or tuple) or of a type (``Tensor[3]``,
    ``Sequence[SparseTensor[943]]``)."""
    if isinstance(kind, _Type):
        return _argument(name, kind)
    if not isinstance(kind, (int, tuple)) or isinstance(kind, bool):     # (CNTK 2.7's words)
        raise TypeError("update_signature() expects arguments of type int, tuple of int, or "
                        "Type.Variable")
    return input_variable(kind, name=name)


def _function_of_callable(f, types=(), named_types=None):
    """The Function a Python function computes from its arguments (typed: inputs; untyped:
    placeholders)."""
    # (those with defaults are none of its arguments: CNTK 2.7's get_python_function_arguments
    # takes them as always left at their defaults, cntk/internal/utils.py:109-111)
    names = [n for n, p in inspect.signature(f).parameters.items()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    given = {**getattr(f, "__annotations__", {}), **dict(zip(names, types)),
             **(named_types or {})}
    arguments = [_argument(n, given.get(n)) for n in names]
    untyped = any(G.kind_of(unwrap(a)) == "placeholder" for a in arguments)
    first: list = []        # (its user functions: those a call of a waiting one clones)
    out = run_body(f, arguments, untyped, first)
    if len(names) > 1 and out is not NOT_BUILT:
        # CNTK 2.7 runs the body once more where the walk of its result meets the arguments
        # in another order than the Python function's (functions.py:248-252, its Tuple
        # block), and keeps that run's graph
        seen = _walk_order(out, untyped)
        if sorted(seen) == sorted(names) and seen != names:
            first.clear()
            out = run_body(f, arguments, untyped, first)
    if out is NOT_BUILT or (untyped and waits(out)):
        check_function_result(f, names, arguments, out)
        deferred = _Deferred(f, arguments, first)
        if out is not NOT_BUILT:      # (its graph over the placeholders: calls replay it)
            deferred.__dict__["_waiting"] = out
            deferred.__dict__["_decorated"] = as_function(out) if isinstance(
                out, (tuple, list)) else out
        return deferred
    check_function_result(f, names, arguments, out)
    return in_signature_order(as_function(out), arguments)


def _walk_order(out, untyped: bool) -> list:
    """The names of the arguments (or placeholders) of a body's result in the order the walk
    of its graph meets them (CNTK 2.7's ``signature`` of it); [] where it returned no graph
    (None, a number, an array: ``check_function_result`` or the Function made of it says what
    is wrong), where the walk has nothing to compare."""
    if not all(of_graph(o) for o in (out if isinstance(out, (tuple, list)) else (out,))):
        return []
    function = as_function(out)
    found = function.placeholders if untyped and waits(out) else function.arguments
    return [a.name for a in found]


bind(input_of_type=_input_of_type)      # a waiting op's update_signature (_deferred)
bind(variable_type=_Type)                # a Variable's _type (_mixins)

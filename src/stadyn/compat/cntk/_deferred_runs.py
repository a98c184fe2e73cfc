"""Running a waiting Function (``_deferred.Deferred``) before its placeholders are bound, as
CNTK 2.7 refuses it: ``eval`` or ``forward`` with no data is a ValueError
(``function expects 1 arguments``), with data for a placeholder a RuntimeError
(``Unknown DataType.``: a placeholder has no type until it is replaced), with data for some
inputs and none for a placeholder a ValueError naming the placeholder.  One waiting on
parameters with inferred axes alone is built as it is run (``_parameter_waits``).  Mixed into
``Deferred``.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> p = C.placeholder(3, dynamic_axes=[], name="p")
    >>> try:
    ...     (p * 2).eval({p: np.ones(3, np.float32)})
    ... except RuntimeError as e:
    ...     print(str(e).splitlines()[0])
    Unknown DataType.
"""

from __future__ import annotations

from ...graph import user_location
from ._mixins import GraphObject
from ._parameter_waits import built_on_parameters

__all__ = ["DeferredRuns", "typeless_data", "refuse_run", "refuse_grad", "not_provided",
           "unbound_placeholders"]


class DeferredRuns:
    """``eval``/``forward``/``grad`` of a waiting Function: CNTK 2.7's refusals (its
    ``arguments``, ``output`` and ``name`` are ``Deferred``'s)."""

    def eval(self, arguments=None, outputs=None, device=None, as_numpy: bool = True):
        """Refused, as CNTK 2.7 refuses it: its placeholders are not bound yet (bind them with
        ``replace_placeholders`` or by calling it on values with a shape)."""
        typed = self.__dict__.get("_typed") or built_on_parameters(self)
        if typed is not None:           # (built: its graph runs)
            return typed.eval(arguments, outputs, device, as_numpy)
        refuse_run(self, self._root_op(), arguments, "eval")

    def forward(self, arguments=None, outputs=None, keep_for_backward=None, device=None,
                as_numpy: bool = True):
        """Refused, as :meth:`eval`."""
        typed = self.__dict__.get("_typed") or built_on_parameters(self)
        if typed is not None:
            return typed.forward(arguments, outputs, keep_for_backward, device, as_numpy)
        refuse_run(self, self._root_op(), arguments, "forward")

    def grad(self, at, wrt=None, outputs=None, device=None, as_numpy: bool = True,
             grad_root=None):
        """Refused, as :meth:`eval`: without ``wrt``, first because no argument (a
        placeholder) needs a gradient."""
        typed = self.__dict__.get("_typed") or built_on_parameters(self)
        if typed is not None:
            return typed.grad(at, wrt, outputs, device, as_numpy, grad_root)
        refuse_grad(self, self._root_op(), at, wrt)


def refuse_run(function, op: str, arguments, method: str) -> None:
    """Raise CNTK 2.7's error for ``function.eval(arguments)`` (``method``) where
    ``function``'s arguments include placeholders not bound yet and its root is ``op``:
    ValueError ``function expects N arguments`` without data, ValueError ``... have not been
    provided.`` naming those left without data, else RuntimeError ``Unknown DataType.``."""
    expected = function.arguments
    if isinstance(arguments, tuple):        # (data, sequence starts)
        arguments = arguments[0]
    if arguments is None or isinstance(arguments, (dict, list)) and not arguments:
        raise ValueError(f"function expects {len(expected)} arguments")
    if not isinstance(arguments, dict) and len(expected) != 1:      # (CNTK 2.7's words)
        raise ValueError(f"non-dict argument ({type(arguments).__name__}) is not supported "
                         "for nodes with more than one input")
    if isinstance(arguments, dict):
        given = [_variable(k) for k in arguments]
    else:           # (one value: for its one argument, as CNTK maps it)
        given = [_variable(expected[0])]
    left = [a for a in expected if all(_variable(a) is not v for v in given)]
    if left:
        raise not_provided(left, list(function.outputs))
    names = {id(_variable(a)): a for a in expected}
    raise typeless_data(op, method, [names[id(v)] for v in given if id(v) in names and
                                     _placeholder(names[id(v)])])


def refuse_grad(function, op: str, at, wrt) -> None:
    """Raise CNTK 2.7's error for ``function.grad(at, wrt)`` where ``function`` waits for its
    placeholders (as :func:`refuse_run`; with data and no ``wrt``, ValueError ``None of the
    Function ... arguments have 'needs_gradient == True'``: a placeholder needs none)."""
    if isinstance(at, tuple):
        at = at[0]
    if wrt is None and not (at is None or isinstance(at, (dict, list)) and not at) and not any(
            a.needs_gradient for a in function.arguments):
        raise ValueError(f"None of the Function '{function}' arguments have "
                         "'needs_gradient == True'")
    refuse_run(function, op, at, "grad")


def not_provided(left: list, outputs: list) -> ValueError:
    """CNTK 2.7's ValueError for a run given no data for the arguments ``left``, which the
    requested ``outputs`` depend on."""
    return ValueError(
        f"Values for {len(left)} required arguments "
        f"'{', '.join(repr(a) for a in left)}', that the requested output(s) "
        f"'{', '.join(repr(o) for o in outputs)}' depend on, have not been provided.")


def unbound_placeholders(placeholders: list) -> ValueError:
    """CNTK 2.7's ValueError for a run of a Function whose ``placeholders`` (each with a data
    type: a Trainer's model waiting for its shapes, the inside of a block) are not bound."""
    return ValueError(f"{len(placeholders)} unbound Placeholder(s) "
                      f"'{', '.join(repr(p) for p in placeholders)}' found in the Function. All "
                      "Placeholders of a Function must be bound (to a variable) before "
                      "performing a Forward computation.")


def typeless_data(op: str, method: str, placeholders: list) -> RuntimeError:
    """CNTK 2.7's RuntimeError for data given to ``placeholders`` (not bound yet) by
    ``method`` (``eval``) of a Function whose root is ``op``, with the user's line."""
    where = user_location()
    at = f"{where[0]}:{where[1]}: " if where else ""
    return RuntimeError(
        f"Unknown DataType.\n{at}{op}.{method}: "
        f"{', '.join(_named(p) for p in placeholders)} has no data type until it is bound "
        "(replace_placeholders, or call the Function on a value with a shape); give the "
        "data to what it is bound to")


def _variable(v):
    """The Variable a CNTK Variable (or Function: its output) wraps."""
    return getattr(v, "variable", v)


def _placeholder(v) -> bool:
    return isinstance(v, GraphObject) and v.is_placeholder


def _named(p) -> str:
    return f"the placeholder {p.name!r}" if p.name else f"a placeholder ({p.uid})"

"""CNTK 2.7's checks of a Python step function as a recurrence (``Recurrence``,
``RecurrenceFrom``, ``Fold``) is made: the function is run once on placeholders as the body of
a ``@Function`` (``_santize_step_function``, cntk/layers/sequence.py:165-189, over
``Function._to_Function_unchecked`` and ``_sanitize_check_Function``, cntk/ops/functions.py),
and the recurrence is refused where

* the step makes a parameter (``lambda h, x: Dense(3)(splice(h, x))``; a layer made outside
  and applied inside is not): a TypeError (sequence.py:187);
* the step's own code raises (``1 // 0``, a ``KeyError``, an ``IndexError``): that error,
  as it was raised (functions.py:195, re-raised by sequence.py:185); Stadyn leaves an
  AttributeError to the application (its Functions waiting on placeholders may lack an
  attribute CNTK's have);
* it returns None: a TypeError (functions.py:197);
* its result reads a variable or placeholder other than its arguments (``lambda h, x: h + x +
  y`` over an input ``y``): a TypeError naming them (sequence.py:172-182); a parameter or
  constant is no argument and is read freely;
* it leaves an argument unused (``lambda h, x: tanh(x)``): a TypeError (functions.py:263-270);
* it returns another number of results than it takes states (``lambda h, c, x: h + c + x``):
  a TypeError naming the recurrence (sequence.py:265-267, 445-446).

Example:
    >>> import stadyn.compat.cntk as C
    >>> check_step_function(lambda h, x: C.layers.Dense(3)(C.splice(h, x)))
    Traceback (most recent call last):
    ...
    TypeError: Parameter cannot be created inside Recurrence Python step function.
    >>> d = C.layers.Dense(3)
    >>> check_step_function(lambda h, x: d(C.splice(h, x)))
    >>> check_step_function(lambda h, x: C.tanh(x))
    Traceback (most recent call last):
    ...
    TypeError: CNTK Function '<lambda>' has 1 unused arguments (h), which is currently not supported
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import types
from typing import Any

from ..._random import auto_seeds_kept
from ._adapt import unwrap, wrap
from ._deferred_operands import _layer_function
from ._deferred_reads import parts_of
from ._function_pure import PARAMETERS_REFUSED, pure

__all__ = ["check_step_function", "check_function_result", "NOT_BUILT", "refuse_unused",
           "arguments_read", "constructing", "called_on_placeholders"]

# Stadyn's own code: an error raised in it while the step runs on placeholders is Stadyn's
# (an op that cannot wait on a placeholder of no shape), raised when the step is applied
_STADYN = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


# the ids of the arguments (placeholders) of each Python function being made a Function or
# checked as a step, outermost first: hidden from the arguments an inner ``@Function``'s
# result reads, as CNTK's ``Function._placeholders_under_construction`` hides them from its
# ``signature`` (cntk/ops/functions.py:191-200)
_CONSTRUCTING: list = []


@contextlib.contextmanager
def constructing(arguments: list):
    """While the Python function whose arguments are ``arguments`` is called to be made a
    Function: an inner one made meanwhile is checked without them (its
    :func:`check_function_result`).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> v = C.placeholder(name="v")
        >>> with constructing([v]):
        ...     try:
        ...         C.Function(lambda input: v * 2)
        ...     except TypeError as e:
        ...         print(e)
        CNTK Function '<lambda>' has 1 unused arguments (input), which is currently not supported
    """
    _CONSTRUCTING.append({id(unwrap(a)) for a in arguments})
    try:
        yield
    finally:
        _CONSTRUCTING.pop()


# the most states CNTK 2.7's RecurrenceFrom (under Recurrence and Fold too) takes
_MOST_STATES = 10


def check_step_function(step: Any, kind: str = "Recurrence") -> None:
    """CNTK 2.7's errors for the Python function ``step`` (a ``def`` or ``lambda``; a
    ``@Function`` or a layer is not checked so) called on placeholders as the recurrence
    ``kind`` (``Recurrence``, also for a ``Fold``; ``RecurrenceFrom``) is made (see the
    module's text); nothing where it passes.  An error raised inside Stadyn while it
    runs (an op Stadyn cannot apply to a placeholder without a shape) is left for the step's
    application."""
    if not isinstance(step, types.FunctionType):
        return
    from ._variables import placeholder
    try:
        params = inspect.signature(step).parameters.values()
    except (TypeError, ValueError):
        return
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
             and p.default is p.empty]
    arguments = [placeholder(name=n) for n in names]
    try:
        with pure(), auto_seeds_kept(), constructing(arguments):
            out = step(*arguments)
    except TypeError as e:
        if str(e) == PARAMETERS_REFUSED:
            raise TypeError("Parameter cannot be created inside Recurrence Python step "
                            "function.") from None
        if _raised_by_the_step(sys.exc_info()[2]):
            raise
        return
    except Exception:
        if _raised_by_the_step(sys.exc_info()[2]):
            raise
        return      # (Stadyn cannot run it on placeholders: its errors come when applied)
    if out is None:
        raise TypeError(f"CNTK Function '{step.__name__}' must return a value")
    read = arguments_read(out)
    if read is None:
        return
    _check_arguments(step, names, [unwrap(a) for a in arguments], read)
    results = len(out) if isinstance(out, (tuple, list)) else len(out.outputs)
    if results != len(names) - 1:       # (sequence.py:265-267, 445-446)
        raise TypeError(f"{kind}: number of state variables inconsistent between "
                        "create_placeholder() and recurrent block")
    if len(names) - 1 > _MOST_STATES:   # (CNTK 2.7's recurrence_from_1 .. _10, sequence.py)
        raise ValueError("RecurrenceFrom() currently supports recurrence with up to "
                         f"{_MOST_STATES} state variables (the step "
                         f"'{step.__name__}' takes {len(names) - 1})")


def _raised_by_the_step(tb: Any) -> bool:
    """Whether the error of the traceback ``tb`` is the step's own: its innermost frame outside
    Stadyn (the step's code, or a library it calls: CNTK's run of the step raises it too), and
    no AttributeError, which a step reading what Stadyn's Function waiting on placeholders
    may lack raises where CNTK's has it."""
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return last is not None and not last.tb_frame.f_code.co_filename.startswith(_STADYN) and \
        not isinstance(sys.exc_info()[1], AttributeError)


def arguments_read(out: Any) -> "list | None":
    """The arguments (inputs and placeholders) the step's result reads, each once, first met
    first (a tuple's, item by item, as CNTK's ``combine`` of them lists them); None where the
    result is no Function (nothing to check).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> a, b = C.placeholder(name="a"), C.placeholder(name="b")
        >>> [v.name for v in arguments_read((b * 2, a + b))]
        ['b', 'a']
    """
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    found: list = []
    for item in items:
        got = getattr(item, "arguments", None)
        if got is None:
            return None
        for a in got:
            if all(unwrap(a) is not unwrap(b) for b in found):
                found.append(a)
    return found


def _check_arguments(step: Any, names: list, own: list, read: list) -> None:
    """CNTK 2.7's TypeErrors where the step reads other variables than its arguments ``own``
    (``names``) or leaves one unused (``read``: what its result reads)."""
    read_names = [a.name for a in read]
    if len(read) > len(names):      # (sequence.py:172-182)
        extra = set(read_names) - set(names)
        raise TypeError(
            f"Recurrence Python step function makes use of additional CNTK variables or "
            f"placeholders: {extra}. Your step function arguments in Python code are: {names}, "
            f"while the converted CNTK function argument are: {read_names}. This is currently "
            "not a supported Python step function definition. Note that the current supported "
            "Python step function signature is: step_function(prev_state_1, prev_state_2, ..., "
            "prev_state_n, sequence_input_x) -> next_state_1, next_state_2, ..., next_state_n "
            "in which no references to any CNTK variables or placeholders are allowed.")
    ids = {id(unwrap(a)) for a in read}
    own_ids = {id(v) for v in own}
    if len(read) != len(own):       # (functions.py:251-270)
        missing = [a.name for a in read if id(unwrap(a)) not in own_ids]
        if missing:
            raise TypeError(f"CNTK Function '{step.__name__}' has {len(missing)} missing "
                            f"arguments ({', '.join(missing)}), which is currently not "
                            "supported")
        refuse_unused(step, names, own, read)
    if ids != own_ids:      # (as many, but others: functions.py:273-274's assertion)
        raise AssertionError((read_names, names))


def refuse_unused(fn: Any, names: list, own: list, read: list) -> None:
    """CNTK 2.7's TypeError where the Python function ``fn``'s result (reading ``read``)
    leaves some of its arguments ``own`` (named ``names``) unused (functions.py:263-270), as
    ``Function(lambda a, b: a * 2)`` is refused; nothing otherwise.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> a, b = C.placeholder(name="a"), C.placeholder(name="b")
        >>> try:
        ...     refuse_unused(lambda a, b: a, ["a", "b"], [a, b], [a])
        ... except TypeError as e:
        ...     print(e)
        CNTK Function '<lambda>' has 1 unused arguments (b), which is currently not supported
    """
    ids = {id(unwrap(a)) for a in read}
    unused = [n for n, v in zip(names, own) if id(unwrap(v)) not in ids]
    if unused:
        raise TypeError(f"CNTK Function '{fn.__name__}' has {len(unused)} unused arguments "
                        f"({', '.join(unused)}), which is currently not supported")


#: what a ``@C.Function``'s body gave where Stadyn could not run it over placeholders (an op
#: that cannot wait read one): :func:`check_function_result` skips it
NOT_BUILT = object()


def check_function_result(f: Any, names: list, arguments: list, out: Any) -> None:
    """CNTK 2.7's TypeErrors for the Python function ``f`` made a Function (``_to_Function``,
    cntk/ops/functions.py:197, 263-270) whose result on its ``arguments`` (named ``names``)
    is ``out``: None, or leaving a required argument unused (``lambda a, b: a * 2``).  A
    result reading other arguments besides (a placeholder of an enclosing ``@Function`` under
    construction, which CNTK's signature hides) or applying a layer (whose closure may read
    an argument: a recurrence's step, ``attend(encoded, h)``) is not checked.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> a, b = C.placeholder(name="a"), C.placeholder(name="b")
        >>> check_function_result(lambda a, b: (a, b), ["a", "b"], [a, b], (a * 2, b))
        >>> try:
        ...     check_function_result(lambda a: None, ["a"], [a], None)
        ... except TypeError as e:
        ...     print(e)
        CNTK Function '<lambda>' must return a value
    """
    if out is NOT_BUILT:
        return
    if out is None:
        raise TypeError(f"CNTK Function '{getattr(f, '__name__', '')}' must return a value")
    own = {id(unwrap(a)) for a in arguments}
    read = [out] if id(unwrap(out)) in own else \
        arguments_read(out if isinstance(out, (tuple, list)) else [wrap(out)])
    hidden = set().union(*_CONSTRUCTING) - own      # (an enclosing function's, CNTK's too)
    read = None if read is None else [a for a in read if id(unwrap(a)) not in hidden]
    if read is None or any(id(unwrap(a)) not in own for a in read) or _applies_a_layer(out):
        return
    params = inspect.signature(f).parameters
    required = [(n, a) for n, a in zip(names, arguments) if params[n].default is params[n].empty]
    refuse_unused(f, [n for n, _ in required], [a for _, a in required], read)


def _applies_a_layer(out: Any) -> bool:
    """Whether the waiting result ``out`` applies a layer holding a Python function, which may
    read an argument from a closure of its own (a recurrence's step; a ``Sequential`` of
    lambdas) that a waiting graph's arguments do not show (a ``Dense``'s reads all show)."""
    layer = _layer_function()
    return any(isinstance(part._fn, layer) and _holds_python(part._fn.layer)
               for part in parts_of(out))


def _holds_python(obj: Any, depth: int = 4) -> bool:
    """Whether ``obj`` (a layer), its attributes, items and sublayers hold a function defined
    outside Stadyn (``depth`` levels down)."""
    fn = getattr(obj, "fn", None) if not isinstance(obj, types.FunctionType) else obj
    if isinstance(fn, types.FunctionType):
        return not fn.__code__.co_filename.startswith(_STADYN)
    if depth == 0 or isinstance(obj, (str, bytes, int, float, type)) or obj is None:
        return False
    items = list(obj) if isinstance(obj, (list, tuple)) else \
        list(obj.values()) if isinstance(obj, dict) else \
        list(vars(obj).values()) if hasattr(obj, "__dict__") and \
        type(obj).__module__.startswith("stadyn") else []
    return any(_holds_python(v, depth - 1) for v in items)


def called_on_placeholders(fn: Any, n_states: int) -> "tuple | None":
    """``(state placeholders, input placeholder, result)`` of the recurrence step ``fn`` of
    ``n_states`` states called on placeholders ``state0``... and ``x`` (no seeds drawn); None
    where the call raises (a step that cannot run so).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> states, x, out = called_on_placeholders(lambda h, v: (h + v, v), 1)
        >>> [s.name for s in states], x.name, len(out)
        (['state0'], 'x', 2)
    """
    from ._variables import placeholder
    fn = getattr(fn, "_fn", fn)
    states = [placeholder(name=f"state{k}") for k in range(n_states)]
    x = placeholder(name="x")
    try:
        with auto_seeds_kept():
            out = fn(*states, x)
    except Exception:       # (a step the call cannot run)
        return None
    return states, x, out


"""CNTK's ops made to wait for their operands' shapes: :func:`deferrable` wraps one op so
that a call on a placeholder without a shape, a waiting Function or a layer not applied yet
is recorded as a :class:`~._deferred.Deferred` (built once the shapes arrive; a call over a
parameter whose inferred axes are not known yet waits too, ``_parameter_waits``), and runs what
CNTK 2.7 does as the op is called whatever its operands (its ``as_called`` hook: a seed
drawn, an argument refused); :func:`defer_module` wraps a module's ops.

Example:
    >>> import stadyn.compat.cntk as C
    >>> f = C.relu(C.placeholder(name="p"), "r")      # (relu is deferrable: it waits)
    >>> f.name, f.shape
    ('r', (-2,))
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from typing import Any

from ._adapt import refuse_name, root_as_output
from ._axis_arguments import axes_checker
from ._deferred import Deferred, pending
from ._deferred_reads import as_built
from ._inferred_parameters import UnresolvedParameterError
from ._parameter_waits import follows_parameters, waiting_on_parameters
from ._sequence_placeholders import note_call

__all__ = ["deferrable", "defer_module"]


def deferrable(fn=None, *, as_called=None):
    """``fn`` (a CNTK op) recording itself as a :class:`Deferred` when an operand is a
    placeholder without a shape, a Deferred or a layer not applied yet.  ``as_called``, when
    given, is what CNTK 2.7 does as the op is called whether or not its operands have shapes
    (draw its seed, refuse an argument): it gets the call's arguments by parameter name (the
    defaults filled in), may change them in place or raise, and the op runs (or is recorded)
    on them; a shape it returns is the one the op shows while it waits (CNTK's, inferred as it
    is made, where the Deferred would else probe for it).  The arguments are bound by the
    signature the op takes calls by (an n-ary wrapper's, ``plus(a, b, c)``), and a default the
    hook leaves as it is is not passed on.  The axis arguments ``fn`` declares
    (``_axis_arguments.takes_axes``) are checked first, as CNTK 2.7 takes them.  A hook
    with an ``acts_on`` attribute (a test of the call's first operand, False where the hook
    does nothing for it) is skipped for a call that binds plainly and whose first operand
    fails the test.  The wrapper keeps ``fn``'s globals, name and docstring (so its module's
    doctests still find it).  Without ``fn``, a decorator.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> def k_checked(arguments):
        ...     if arguments["k"] < 0:
        ...         raise ValueError("scaled: k must be >= 0")
        >>> @deferrable(as_called=k_checked)
        ... def scaled(x, k=2.0, name=""):
        ...     return C.element_times(x, k, name=name)
        >>> f = scaled(C.placeholder(), 3.0, "t")      # (waits for its operand's shape)
        >>> x = C.input_variable(2)
        >>> f.name, f(x).eval({x: np.ones((1, 2), np.float32)}).tolist()
        ('t', [[3.0, 3.0]])
        >>> scaled(C.placeholder(), -1.0)
        Traceback (most recent call last):
          ...
        ValueError: scaled: k must be >= 0
    """
    if fn is None:
        return functools.partial(deferrable, as_called=as_called)
    check, make, typed, note = pending, Deferred, as_built, note_call
    unresolved, on_parameters = UnresolvedParameterError, waiting_on_parameters
    follows = follows_parameters
    refuse, op = refuse_name, fn.__name__
    as_operands = root_as_output
    axes_checked = axes_checker(fn)     # (CNTK's refusals of an axis argument, as called)
    given_name, name_of = _given_name, _name_of         # (its closure:
    signature = inspect.signature(fn)                   # it runs in fn's module's globals)
    taken = _call_signature(fn)     # (a call the op cannot take is refused now, not replayed)
    bind = taken.bind if taken is not None else None
    recheck = None
    if as_called is not None:
        def recheck(args: tuple, kwargs: dict) -> None:
            """The hook again on the values the waiting op is built on (its shapes known)."""
            call = (taken or signature).bind(*args, **kwargs)
            call.apply_defaults()
            as_called(call.arguments)

    # (the call is bound once: taken checked, and the name read from that binding where the
    # op's own signature is the one bound; an n-ary op's takes the name among its operands)
    named = "name" in signature.parameters and (taken is None or taken == signature)
    # a hook's cheap test of a call's first operand (``acts_on``): False where the hook would
    # do nothing, so a call that binds plainly skips the binding (a sequence op's on a
    # sequence: the binding cost a fifth of the call)
    acts_on = getattr(as_called, "acts_on", None)
    binds = _plain_binding(taken or signature) if acts_on is not None else None
    again = fn      # (what a call noted on a sequence placeholder calls once it is bound: the
    if recheck is not None:     # hook's checks, then the op)
        def again(*args, **kwargs):
            recheck(args, kwargs)
            return fn(*args, **kwargs)

    def wrapper(*args, **kwargs):
        if axes_checked is not None:
            axes_checked(args, kwargs)
        args = as_operands(args)        # (a root function: its output, as CNTK takes it)
        kwargs = {k: as_operands(v) for k, v in kwargs.items()}
        shape = name = None
        checked = False
        if as_called is not None and (acts_on is None or not args or acts_on(args[0])
                                      or not binds(len(args), kwargs)):
            call = (taken or signature).bind(*args, **kwargs)
            checked = True
            given = set(call.arguments)
            call.apply_defaults()
            if named:
                if "name" in given:             # (CNTK 2.7's refusal, waiting or not)
                    refuse(call.arguments["name"], op)
                name = name_of(call.arguments)
            shape = as_called(call.arguments)
            defaults = call.signature.parameters
            for key in [k for k, v in call.arguments.items()    # (a default the hook left
                        if k not in given and v is defaults[k].default]:  # stays unsaid: an
                del call.arguments[key]     # n-ary op reads a name among its operands)
            args, kwargs = call.args, call.kwargs
        if check(args, kwargs):
            if bind is not None and not checked:
                bound = bind(*args, **kwargs)
                if named:
                    refuse(bound.arguments.get("name", ""), op)
                    name = name_of(bound.arguments)
            if name is None:
                name = given_name(signature, args, kwargs)
            return follows(make(fn, args, kwargs, name=name, shape=shape, check=recheck))
        try:
            out = fn(*typed(args), **dict(zip(kwargs, typed(tuple(kwargs.values())))))
        except unresolved:      # (over a parameter whose axes no op has inferred: it waits,
            if name is None:    # as CNTK 2.7 builds it and refuses it only when run)
                name = given_name(signature, args, kwargs)
            return on_parameters(make(fn, args, kwargs, name=name, shape=shape,
                                      check=recheck), args, kwargs)
        note(again, args, kwargs, out)  # (on a placeholder made on a sequence axis: noted)
        return out
    new = types.FunctionType(wrapper.__code__, fn.__globals__, fn.__name__, None,
                             wrapper.__closure__)
    functools.update_wrapper(new, fn)
    return new


def _call_signature(fn):
    """The signature ``fn`` takes calls by: that of the first function down its
    ``__wrapped__`` chain that names its parameters (a wrapper of ``(*args, **kwargs)`` passes
    them on; an n-ary wrapper takes more operands than the op it wraps); None if none."""
    while fn is not None:
        try:
            signature = inspect.signature(fn, follow_wrapped=False)
        except (TypeError, ValueError):
            return None
        kinds = {p.kind for p in signature.parameters.values()}
        if kinds != {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD}:
            return signature
        fn = getattr(fn, "__wrapped__", None)
    return None


def _plain_binding(signature):
    """A cheap test of whether a call (its number of positional arguments and its keyword
    arguments) binds to ``signature`` whose parameters are all positional-or-keyword, every
    required one given (never, for a signature with parameters of other kinds)."""
    params = list(signature.parameters.values())
    if any(p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params):
        return lambda count, kwargs: False
    names = [p.name for p in params]
    required = [k for k, p in enumerate(params) if p.default is inspect.Parameter.empty]

    least = len(required)       # (positional alone: the required ones lead)
    leading = required == list(range(least))

    def binds(count: int, kwargs: dict) -> bool:
        if count > len(names):
            return False
        if not kwargs and leading:
            return count >= least
        later = names[count:]
        return all(k in later for k in kwargs) and all(
            names[k] in kwargs for k in required if k >= count)
    return binds


def _name_of(arguments: dict) -> str:
    """The ``name`` among a call's bound ``arguments`` (``""`` where none, or not a string)."""
    name = arguments.get("name", "")
    return name if isinstance(name, str) else ""


def _given_name(signature, args: tuple, kwargs: dict) -> str:
    """The ``name`` a call of an op of ``signature`` gives, by keyword or in its place."""
    try:
        return _name_of(signature.bind_partial(*args, **kwargs).arguments)
    except TypeError:
        return _name_of(kwargs)


def defer_module(namespace: dict, names, as_called: "dict | None" = None) -> None:
    """Make the ops ``names`` of a module (its ``globals()``) :func:`deferrable`: those it
    defines or adapts (a name imported as it is stays the object it is elsewhere), an
    alias (``input = input_variable``) wrapped once; ``as_called`` gives some of them (by
    name) their hook (see :func:`deferrable`)."""
    hooks = as_called or {}
    done: dict[int, Any] = {}
    for n in names:
        f = namespace.get(n)
        if not isinstance(f, types.FunctionType):
            continue
        home = sys.modules.get(f.__module__)
        if f.__module__ != namespace["__name__"] and home is not None and \
                getattr(home, f.__name__, None) is f:
            continue            # imported as it is from another module
        if id(f) not in done:
            done[id(f)] = deferrable(f, as_called=hooks.get(n))
        namespace[n] = done[id(f)]

"""The user functions a ``@C.Function`` of untyped arguments makes, as CNTK 2.7 makes them:
its Python body runs once, over placeholders, and each call of the Function clones that
graph, so each ``UserFunction`` in what a call gives is the ``clone(inputs)`` of the one the
first run made (``UserFunction.clone``'s default: ``type(self)(*inputs, name=self.name)``,
the subclass's ``__init__`` defaults back).  Stadyn runs the body again on each call's
operands (shapes come from them); :func:`body_run` records the first run's user functions
and, in a call, :func:`as_cloned` puts the clone of the first run's in the place of each
(where its arguments are bound in place, ``update_signature``, the first run's own).

Example:
    >>> with body_run([], cloned=False):
    ...     as_cloned("made", lambda f, inputs: f) == "made"
    True
"""

from __future__ import annotations

from contextlib import contextmanager

__all__ = ["body_run", "as_cloned"]

_RUNS: list = []        # [the Function's first user functions, clone?, how many so far]


@contextmanager
def body_run(first: list, cloned: bool):
    """A run of a ``@C.Function``'s body: ``first`` holds (and, past its end, is given) the
    user functions its first run made, in order; ``cloned``: True in a call, whose user
    functions are clones of those, ``"bound"`` where its arguments are bound in place, which
    binds those themselves."""
    _RUNS.append([first, cloned, 0])
    try:
        yield
    finally:
        _RUNS.pop()


def as_cloned(user_func, made_again):
    """The user function to build in ``user_func``'s place: itself outside a body's run
    or in a run that records; in a call, ``made_again(first, inputs)`` (the clone of the
    first run's function at the same place over ``user_func``'s inputs)."""
    if not _RUNS:
        return user_func
    run = _RUNS[-1]
    first, cloned, k = run
    run[2] = k + 1
    if k >= len(first):
        first.append(user_func)
    if cloned == "bound":
        return _bound(first[k], user_func)
    if not cloned:
        return user_func
    return made_again(first[k], list(user_func.inputs))


def _bound(first, user_func):
    """The first run's function itself over ``user_func``'s inputs, where it still waits
    for them (CNTK 2.7's ``update_signature`` / ``replace_placeholders`` bind the graph's
    placeholders in place: no clone); else ``user_func``."""
    if first is user_func or first.__dict__.get("_built"):
        return user_func
    first._user_inputs = list(user_func.inputs)
    return first

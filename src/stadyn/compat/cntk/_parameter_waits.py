"""Ops over a parameter whose inferred axes no op has fixed yet, as CNTK 2.7 makes them.

``C.tanh(C.parameter((C.InferredDimension, 3)))`` is built in CNTK 2.7: its shape shows ``-1``
for the axes it cannot know (``(-1, 3)``), and the graph is refused only when it is compiled
(``eval``, ``forward``, ``grad``: ValueError ``Parameter or Constant ... with unresolved shape
[? x 3] found when compiling the Function graph.``).  Another op that meets the parameter with
a known shape (``p + x``) fixes its axes meanwhile; the op keeps the shape it showed until it
is first run, which then computes over the parameter's inferred shape.

Here such a call is a waiting Function (``_deferred.Deferred``, made by ``_deferrable``'s
wrapper when the op raises :class:`~._inferred_parameters.UnresolvedParameterError`):
:func:`waiting_on_parameters` gives it the shape CNTK shows (the op built twice on stand-ins
of the parameter, each inferred axis of another length: an axis that follows them is ``-1``),
and :func:`built_on_parameters` builds it when it is first run (raising CNTK's error where a
parameter is still unresolved).

Example:
    >>> import stadyn.compat.cntk as C
    >>> p = C.parameter((C.InferredDimension, 3), init=0.5, name="p")
    >>> t = C.tanh(p)
    >>> t.shape
    (-1, 3)
    >>> _ = p + C.input_variable((2, 3))     # (fixes p's first axis: 2)
    >>> t.shape, t.eval().shape, t.shape
    ((-1, 3), (2, 3), (2, 3))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._random import auto_seeds_kept
from ._inferred_parameters import pending_shape
from ._mixins import GraphObject

__all__ = ["waiting_on_parameters", "follows_parameters", "built_on_parameters"]

# the lengths the stand-ins give an inferred axis, one build each
_PROBE_LENGTHS = (7, 11)


def _waiting_parameters(value: Any, found: list) -> list:
    """The parameters still waiting for their axes among ``value`` (lists, tuples within)."""
    if isinstance(value, GraphObject) and pending_shape(value) is not None:
        if all(value.variable is not p.variable for p in found):
            found.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _waiting_parameters(v, found)
    return found


def _probed(deferred: Any, waiting: list) -> "tuple | None":
    """The shape of ``deferred``'s op built on constants in place of the ``waiting``
    parameters, ``-1`` on the axes that follow their inferred ones, and its dynamic axes;
    None where it does not build on them."""
    from ._variables import constant
    built, axes = [], ()
    for length in _PROBE_LENGTHS:
        bound = {}
        for p in waiting:
            shape = tuple(length if d == -1 else d for d in pending_shape(p))
            if -2 in shape:         # (a constant made of shape -2: no op takes it)
                raise RuntimeError(f"{p!r}: an op on a constant of shape "
                                   f"{pending_shape(p)}: -2 is no size (CNTK 2.7 takes it as "
                                   "2**64 - 2, which no operand's shape is compatible with)")
            bound[id(p.variable)] = constant(np.zeros(shape, np.float32), dtype=p.dtype)
        try:
            with auto_seeds_kept():     # (a random op built here draws no seed of the program's)
                out = deferred._replay(bound, {})
            built.append(tuple(int(d) for d in out.shape))
            axes = tuple(out.dynamic_axes)
        except Exception:       # (not on these lengths: the shape stays CNTK's unknown)
            return None
    first, second = built
    if len(first) != len(second):
        return None
    return tuple(a if a == b else -1 for a, b in zip(first, second)), axes


def waiting_on_parameters(deferred: Any, args: tuple, kwargs: dict) -> Any:
    """``deferred`` (a call over ``args``/``kwargs`` that read a parameter whose axes are
    not known yet) marked to be built when it is run, its shape the one CNTK 2.7 shows.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> W = C.parameter((3, C.InferredDimension), init=0.1, name="W")
        >>> C.times(W, C.input_variable(4)).shape
        (3, -1, 4)
    """
    deferred.__dict__["_on_parameters"] = True
    waiting: list = []
    for part in deferred._parts():      # (those read by the waiting ops it applies to too)
        _waiting_parameters((part._args, tuple(part._kwargs.values())), waiting)
    known = deferred.__dict__
    if waiting and ("_probed_shape" not in known or "_probed_axes" not in known):
        found = _probed(deferred, waiting)
        if found is not None:   # (its dynamic axes too: those of the op over the stand-ins;
            known.setdefault("_probed_shape", found[0])     # a shape CNTK's hook gave kept)
            known.setdefault("_probed_axes", found[1])
    return deferred


def follows_parameters(deferred: Any) -> Any:
    """``deferred`` (an op recorded because an operand is a waiting Function) given the shape
    and dynamic axes CNTK 2.7 shows where that operand waits on parameters alone
    (:func:`waiting_on_parameters`); as it is otherwise.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> t = C.tanh(C.parameter((C.InferredDimension, 2), name="q")) * 2
        >>> t.shape, t.dynamic_axes
        ((-1, 2), ())
    """
    if any(getattr(v, "__dict__", {}).get("_on_parameters") for v in deferred._operands()) \
            and not deferred.placeholders:
        return waiting_on_parameters(deferred, deferred._args, deferred._kwargs)
    return deferred


def built_on_parameters(deferred: Any) -> Any:
    """``deferred``'s graph, built now (and kept: it is that Function from now on) where it
    waits on parameters alone; None where it waits on placeholders too (or on nothing of
    that kind).  A parameter still unresolved is CNTK 2.7's ValueError, raised as the op over
    it is built.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> t = C.tanh(C.parameter((C.InferredDimension,), name="q"))
        >>> try:
        ...     t.eval()
        ... except ValueError as e:
        ...     print(str(e).splitlines()[0][:60])
        Parameter or Constant 'Parameter('q', [], [?])' with unresol
    """
    if deferred.placeholders or not any(part.__dict__.get("_on_parameters")
                                        for part in deferred._parts()):
        return None
    deferred._typed = deferred._build(dict(deferred._bound))
    return deferred._typed

"""What CNTK 2.7 accepts when a graph is built but refuses when it runs: an op given a constant
of another data type than the op computes in (``x + C.constant(np.ones(2))`` for a float32
``x``: CNTK's "Cannot clone Constant with DataType 'Double' to DataType 'Float'" at the first
``eval``, ``forward`` or ``train_minibatch``).  The op is built, with the constant cast, and the
cast is marked; every run of a graph holding a marked value raises :class:`DataTypeError`.
Likewise an op CNTK builds whose graph fails its validation at the first run (``times`` of a
scalar on the left): :class:`InvalidAtRunError`.  A clone's copy of a marked value is marked
too; where only the copy's operands decide (an op cloned onto a sparse input), the value
registers who decides (:func:`refuse_copies_when`).

Some of CNTK's graph changes at its first run: a float32 constant in a float64 op is cloned as
a float64 constant then, which the graph's walks show from then on.  The values whose view so
changes register what to do (:func:`at_first_run`), done at the first run whose graph holds
them.

A graph changes only where it is rewired, which counts a new graph version, and a value is
marked when its op is built, so a Function or Trainer checks its graph once
(:class:`RunnableCheck`) and again only after either happened.

What only the data of a run decides (a slice of an input's free dimension, or of a value
computed from one, whose range the run's length leaves empty or overruns; a crop window the
run's input is too small for: CNTK 2.7's RuntimeError) registers a check of the lengths fed
(:func:`check_each_run`; a value's lengths in a run: :func:`shape_at_run`), which a
Function's runs and a Trainer's minibatches make once their data are in the inputs."""

from __future__ import annotations

import weakref
from typing import Callable, Sequence

from ...graph import (Subgraph, Variable, format_location, graph_version, refresh_shapes,
                      user_location)

__all__ = ["DataTypeError", "InvalidAtRunError", "refuse_when_run", "refusal_carried",
           "refuse_copies_when", "at_first_run", "check_each_run", "check_runnable",
           "RunnableCheck", "shape_at_run"]


class DataTypeError(ValueError, RuntimeError):
    """A constant of another data type than its op's, met when the graph runs: CNTK 2.7's
    ValueError (for some float16 ops its RuntimeError; both catch this)."""


class InvalidAtRunError(RuntimeError):
    """An op CNTK 2.7 builds but refuses when its graph first runs (its validation then
    fails): CNTK's RuntimeError, met at the first ``eval``, ``forward`` or
    ``train_minibatch``."""


_REFUSED: "weakref.WeakKeyDictionary[Variable, tuple]" = weakref.WeakKeyDictionary()
_FIRST_RUN: "weakref.WeakKeyDictionary[Variable, Callable]" = weakref.WeakKeyDictionary()
_COPIES: "weakref.WeakKeyDictionary[Variable, tuple]" = weakref.WeakKeyDictionary()
_EACH_RUN: "weakref.WeakKeyDictionary[Variable, Callable]" = weakref.WeakKeyDictionary()
_MARKED = [0]       # the values marked so far


def refuse_when_run(value: Variable, message: str, error: type = DataTypeError) -> None:
    """Make every run of a graph holding ``value`` raise ``error`` with ``message`` and the
    user's line that built it."""
    where = format_location(user_location())
    _REFUSED[value] = (error, message + (f" (the op built at {where})" if where else ""))
    _MARKED[0] += 1


def refuse_copies_when(value: Variable, decide: Callable[[Variable, Callable], None],
                       instead: bool = False) -> None:
    """Have a copy of ``value`` in a clone decide whether its runs are refused: ``decide(new,
    copy_of)`` (``copy_of``: an old Variable's copy in that clone, itself where not copied),
    called by :func:`refusal_carried`, refuses ``new`` (:func:`refuse_when_run`) where the
    copy's operands call for it (an op CNTK 2.7 refuses to run on a sparse input, cloned
    onto one) and should have ``new``'s own copies decide too.  With ``instead``, the
    decision replaces the carrying of ``value``'s own refusal (an op refused for its sparse
    input, cloned onto a dense one, runs in CNTK 2.7)."""
    _COPIES[value] = (decide, instead)


def refusal_carried(old: Variable, new: Variable, copy_of: "Callable | None" = None) -> None:
    """Give ``new`` (``old``'s copy in a clone or an application of its Function) the refusal
    of a run :func:`refuse_when_run` recorded for ``old``, as CNTK 2.7's copy of the function
    is refused when it runs as the original is; where ``old`` has none, what
    :func:`refuse_copies_when` registered for it decides over the copy's operands
    (``copy_of``: an old Variable's copy in the clone).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> from stadyn.compat.cntk._adapt import unwrap
        >>> a, b = (unwrap(C.tanh(C.input_variable(1))) for _ in range(2))
        >>> refuse_when_run(a, "refused")
        >>> refusal_carried(a, b)
        >>> try:
        ...     check_runnable([b])
        ... except DataTypeError as e:
        ...     print(str(e).split(" (")[0])
        refused
    """
    decide, instead = _COPIES.get(old, (None, False))
    if old in _REFUSED and new not in _REFUSED and not instead:
        _REFUSED[new] = _REFUSED[old]
        _MARKED[0] += 1
    elif decide is not None and new not in _REFUSED:
        decide(new, copy_of if copy_of is not None else (lambda v: v))


def at_first_run(value: Variable, action: Callable[[Variable], None]) -> None:
    """Call ``action(value)`` once, when a graph holding ``value`` first runs (before it
    runs), as CNTK 2.7 changes its graph when it first compiles it."""
    _FIRST_RUN[value] = action
    _MARKED[0] += 1


def check_each_run(value: Variable, check: Callable[[], None]) -> None:
    """Call ``check()`` at every run of a Function whose graph holds ``value``, once the run's
    data are in its inputs (it raises what CNTK 2.7 raises for those data)."""
    _EACH_RUN[value] = check
    _MARKED[0] += 1


def shape_at_run(v: Variable) -> Callable[[], "tuple | None"]:
    """A reader of ``v``'s shape in a run, for a check of :func:`check_each_run`: an input's
    as the run fed it, a computed value's inferred anew from the inputs the run fed (CNTK 2.7
    checks a slice or crop of a value computed from an input's free dimension against the
    run's lengths too); None once ``v`` is gone.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> from stadyn.compat.cntk._adapt import unwrap
        >>> x = C.input_variable((C.FreeDimension, 3))
        >>> h = C.tanh(x)
        >>> shape = shape_at_run(unwrap(h))
        >>> unwrap(x).data = unwrap(x).data.new_zeros(2, 5, 3)     # a run's data
        >>> shape()
        (2, 5, 3)
    """
    ref = weakref.ref(v)

    def shape():
        u = ref()
        if u is None:
            return None
        if u.parent is not None:
            sub = Subgraph([u])
            refresh_shapes(sub.nodes, sub.leaves)
        return tuple(u.shape)
    return shape


def check_runnable(roots: Sequence[Variable]) -> list:
    """Raise the error of the first marked value computing ``roots`` needs; else do what
    :func:`at_first_run` registered for the values it needs.  Returns the values it needs
    whose data :func:`check_each_run` checks at each run."""
    if not _REFUSED and not _FIRST_RUN and not _EACH_RUN:
        return []
    first: list = []
    each: list = []
    for node in Subgraph([r for r in roots if isinstance(r, Variable)]).nodes:
        for out in node.outputs:
            if out is not None and out in _REFUSED:
                error, message = _REFUSED[out]
                raise error(message)
            if out is not None and out in _FIRST_RUN:
                first.append(out)
            if out is not None and out in _EACH_RUN:
                each.append(out)
    for out in first:
        _FIRST_RUN.pop(out)(out)
    return each


class RunnableCheck:
    """:func:`check_runnable` for one caller's runs (a Function's, a Trainer's): the graph of
    the roots is walked at the first run, and again only where other roots are given, the
    graph was rewired or a value was marked since; a refused graph raises every time."""

    __slots__ = ("_roots", "_versions", "_each")

    def __init__(self):
        self._roots: list[weakref.ref] = []
        self._versions: tuple[int, int] | None = None
        self._each: list[weakref.ref] = []     # the values checked at each run

    def __call__(self, roots: Sequence[Variable], each_run: bool = True) -> None:
        """Check the graph of ``roots``; with ``each_run``, the data of this run too (once
        they are in the inputs: :func:`check_each_run`)."""
        if not _REFUSED and not _FIRST_RUN and not _EACH_RUN:
            return
        versions = (graph_version(), _MARKED[0])
        if versions != self._versions or len(roots) != len(self._roots) or not all(
                r is seen() for r, seen in zip(roots, self._roots)):
            self._each = [weakref.ref(v) for v in check_runnable(roots)]
            self._roots = [weakref.ref(r) for r in roots]
            self._versions = versions
        if each_run:
            self.check_data()

    def check_data(self) -> None:
        """Make the checks of the run's data (:func:`check_each_run`) of the graph last
        checked, once the run's data are in its inputs."""
        for ref in self._each:
            value = ref()
            check = _EACH_RUN.get(value) if value is not None else None
            if check is not None:
                check()

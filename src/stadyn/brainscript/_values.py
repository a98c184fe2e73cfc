"""BrainScript's runtime values -- lazy values (:class:`Thunk`), :class:`Record`,
:class:`BSArray` and :class:`BSFunction` -- and the located errors they raise.  The evaluator
that makes and forces them is :mod:`._evaluator`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from stadyn._errors import ConfigError

from . import _ast as A
from ._ast import config_error as _err

__all__ = ["Thunk", "Record", "BSArray", "BSFunction", "CycleError"]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _num(v: float) -> int | float:
    """Normalise a number: integral values that a double holds exactly become ``int``."""
    if isinstance(v, int):
        return v if abs(v) < 2 ** 53 else float(v)
    if v.is_integer() and abs(v) < 2 ** 53:
        return int(v)
    return v


# ---------------------------------------------------------------------------------------------
# lazy values
# ---------------------------------------------------------------------------------------------

class CycleError(ConfigError):
    """A value needed its own value while it was being computed: a circular definition.  The
    evaluator turns one that passes through ``PastValue``/``FutureValue`` into a recurrence;
    any other is reported as it is, at the definition (``thunk.loc``)."""

    def __init__(self, message: str, thunk: Thunk):
        loc = thunk.loc
        if loc is None:
            super().__init__(message)
        else:
            super().__init__(message, loc.path, loc.line, loc.column)
        self.thunk = thunk


class Thunk:
    """A value computed on first use and then cached; re-entry while computing is a cycle.

    ``when_done(callback)`` asks for ``callback()`` once the running computation has finished
    (the evaluator closes recurrence loops this way).  Inside :meth:`attempt`, the values
    computed can be forgotten again (:meth:`Attempt.undo`)."""

    __slots__ = ("_compute", "_value", "_state", "name", "loc", "_done_callbacks")
    _PENDING, _RUNNING, _DONE = 0, 1, 2
    _attempts: list[Attempt] = []

    def __init__(self, compute: Callable[[], Any] | None, name: str = "",
                 loc: A.SourceLocation | None = None):
        self._compute = compute
        self._value: Any = None
        self._state = self._PENDING
        self.name = name
        self.loc = loc
        self._done_callbacks: list[Callable[[], None]] | None = None

    @classmethod
    def of(cls, value: Any) -> Thunk:
        """An already computed value."""
        t = cls(None)
        t._value, t._state = value, cls._DONE
        return t

    def force(self) -> Any:
        if self._state == self._DONE:
            return self._value
        if self._state == self._RUNNING:
            what = f"'{self.name}'" if self.name else "this value"
            raise CycleError(f"circular definition: {what} needs its own value (a loop must "
                             "pass through PastValue or FutureValue)", self)
        self._state = self._RUNNING
        compute = self._compute
        try:
            value = compute()  # type: ignore[misc]
        except BaseException:
            self._state = self._PENDING   # callbacks wait for the computation that succeeds
            raise
        self._value, self._state, self._compute = value, self._DONE, None
        callbacks, self._done_callbacks = self._done_callbacks, None
        for attempt in Thunk._attempts:
            attempt.computed.append((self, compute))
        for callback in callbacks or ():
            callback()
        return value

    @classmethod
    @contextlib.contextmanager
    def attempt(cls) -> Iterator[Attempt]:
        """Record the values computed inside the block, so that :meth:`Attempt.undo` can make
        them pending again (the evaluator tries a delay's input this way: an input still being
        defined is computed later, as cntk.exe attaches a delay's input late).

        Example:
            >>> calls = []
            >>> t = Thunk(lambda: calls.append(1) or len(calls))
            >>> with Thunk.attempt() as tried:
            ...     t.force()
            1
            >>> tried.undo(); t.force(), calls
            (2, [1, 1])
        """
        attempt = Attempt()
        cls._attempts.append(attempt)
        try:
            yield attempt
        finally:
            cls._attempts.remove(attempt)

    @property
    def running(self) -> bool:
        """Whether the value is being computed now."""
        return self._state == self._RUNNING

    def when_done(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` when the value has been computed (a computation that fails
        leaves it waiting for the next one)."""
        if self._done_callbacks is None:
            self._done_callbacks = []
        self._done_callbacks.append(callback)
        for attempt in Thunk._attempts:
            attempt.waiting.append((self, callback))


class Attempt:
    """The values computed inside one :meth:`Thunk.attempt` (``computed``: each thunk with its
    computation) and the callbacks asked for inside it (``waiting``: each thunk with its
    callback)."""

    def __init__(self) -> None:
        self.computed: list[tuple[Thunk, Callable[[], Any]]] = []
        self.waiting: list[tuple[Thunk, Callable[[], None]]] = []

    def undo(self) -> None:
        """Make every value computed in the attempt pending again (computed anew when used),
        and drop the callbacks asked for inside it: a computation done again asks again (the
        callbacks run meanwhile, closing loops of values made in the attempt, are undone with
        the library's checkpoint).

        Example:
            >>> t = Thunk(lambda: 1)
            >>> with Thunk.attempt() as tried:
            ...     t.when_done(lambda: print("called"))
            >>> tried.undo(); t.force()
            1
        """
        for thunk, compute in reversed(self.computed):
            thunk._value, thunk._state, thunk._compute = None, Thunk._PENDING, compute
        for thunk, callback in self.waiting:
            waiting = thunk._done_callbacks or []
            thunk._done_callbacks = [c for c in waiting if c is not callback] or None
        self.computed, self.waiting = [], []


def _guarded(thunk: Thunk) -> Any:
    """Force a thunk for Python code: a runaway recursion becomes a located ConfigError."""
    try:
        return thunk.force()
    except RecursionError:
        what = f" while evaluating '{thunk.name}'" if thunk.name else ""
        raise _err(f"evaluation nested too deeply{what} (a function that never stops calling "
                   "itself?)", thunk.loc) from None


class Record(Mapping):
    """A BrainScript record: lazily evaluated members plus the scope it was defined in.

    As a Python mapping it exposes its own members only, evaluating each on access.
    ``network`` is set on a record that stands for a whole network (``BS.Network.Load``): its
    members are that network's nodes by name, and a network description holding it as a member
    does not take them all in (CNTK's ``ComputationNetwork`` as a config value).
    """

    def __init__(self, parent: Record | None = None, loc: A.SourceLocation | None = None) -> None:
        self._parent = parent
        self._members: dict[str, Thunk] = {}
        # how to re-create each member against another record (for `with`)
        self._rebind: dict[str, Callable[[Record], Thunk]] = {}
        self.loc = loc
        self.network: Any = None
        self.path = ""      # cntk.exe's expression path of the record (the evaluator's)

    @classmethod
    def of_values(cls, values: Mapping[str, Any], loc: A.SourceLocation | None = None,
                  network: Any = None) -> Record:
        """A record of computed values (members in the mapping's order)."""
        rec = cls(None, loc)
        for name, value in values.items():
            rec._define(name, Thunk.of(value))
        rec.network = network
        return rec

    def _define(self, name: str, thunk: Thunk,
                rebind: Callable[[Record], Thunk] | None = None) -> None:
        self._members[name] = thunk
        self._rebind[name] = rebind or (lambda _rec, t=thunk: t)

    def _find(self, name: str) -> Thunk | None:
        rec: Record | None = self
        while rec is not None:
            t = rec._members.get(name)
            if t is not None:
                return t
            rec = rec._parent
        return None

    def _visible_names(self) -> list[str]:
        names: list[str] = []
        rec: Record | None = self
        while rec is not None:
            names += rec._members
            rec = rec._parent
        return names

    def __getitem__(self, name: str) -> Any:
        return _guarded(self._members[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)

    def __repr__(self) -> str:
        return f"Record({', '.join(self._members)})"


class BSArray(Sequence):
    """A BrainScript array: items computed on demand, indexed ``first..first+len-1`` in BrainScript.

    As a Python sequence it is 0-based and evaluates items on access.
    """

    def __init__(self, first: int, size: int, item: Callable[[int], Thunk],
                 loc: A.SourceLocation | None = None):
        self.first = first
        self._size = max(size, 0)
        self._item = item
        self._cache: dict[int, Thunk] = {}
        self.loc = loc

    @classmethod
    def of_thunks(cls, thunks: Sequence[Thunk], first: int = 0,
                  loc: A.SourceLocation | None = None) -> BSArray:
        items = list(thunks)
        return cls(first, len(items), lambda k: items[k], loc)

    @classmethod
    def of_values(cls, values: Sequence[Any], loc: A.SourceLocation | None = None) -> BSArray:
        return cls.of_thunks([Thunk.of(v) for v in values], 0, loc)

    def thunk(self, k: int) -> Thunk:
        """The item at 0-based position ``k``."""
        t = self._cache.get(k)
        if t is None:
            t = self._cache[k] = self._item(k)
        return t

    def __getitem__(self, k):  # type: ignore[override]
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self._size))]
        if not -self._size <= k < self._size:
            raise IndexError(k)
        return _guarded(self.thunk(k % self._size))

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"BSArray(first={self.first}, size={self._size})"


class BSFunction:
    """A BrainScript function (lambda or ``f(x) = ...``) with the scope it closes over.

    Callable from Python with plain values: ``f(x, name=value)``.
    """

    def __init__(self, evaluator: Any, lam: A.Lambda, scope: Record | None,
                 path: str = "") -> None:
        # evaluator: the ._evaluator.Evaluator that evaluates the body (not imported: it imports
        # this module); path: cntk.exe's expression path the function was defined at (an
        # optional parameter's default is evaluated there, plus the parameter's name)
        self._ev = evaluator
        self.path = path
        self.lam = lam
        self.scope = scope
        self.positional = [p.name for p in lam.params if p.default is None]
        self.optional = {p.name: p for p in lam.params if p.default is not None}
        self.name = lam.name or "lambda"

    def apply(self, args: Sequence[Thunk], kwargs: Mapping[str, Thunk],
              loc: A.SourceLocation | None) -> Any:
        if len(args) != len(self.positional):
            raise _err(f"function '{self.name}' expects {len(self.positional)} positional "
                       f"argument(s) ({', '.join(self.positional) or 'none'}), got {len(args)}",
                       loc)
        for key in kwargs:
            if key not in self.optional:
                known = ", ".join(self.optional) or "none"
                raise _err(f"function '{self.name}' has no optional parameter '{key}' "
                           f"(optional parameters: {known})", loc)
        scope = Record(self.scope, self.lam.loc)
        for name, value in zip(self.positional, args):
            scope._define(name, value)
        for name, param in self.optional.items():
            given = kwargs.get(name)
            if given is None:
                default_path = f"{self.path}.{name}" if self.path else name
                given = Thunk(self._ev.at_path(default_path, functools.partial(
                    self._ev.eval, param.default, self.scope)), name, param.loc)
            scope._define(name, given)
        return self._ev.eval(self.lam.body, scope)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        loc = self.lam.loc
        conv = self._ev._from_python
        return _guarded(Thunk(lambda: self.apply(
            [Thunk.of(conv(a, loc)) for a in args],
            {k: Thunk.of(conv(v, loc)) for k, v in kwargs.items()}, loc), self.name, loc))

    def __repr__(self) -> str:
        return f"BSFunction({self.name}({', '.join(p.name for p in self.lam.params)}))"

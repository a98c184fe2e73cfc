"""A lazy evaluator for BrainScript proper, engine-agnostic: engines plug in through a Library.

Values are Python numbers (BrainScript has only doubles; integral ones are kept as ``int``),
strings, booleans, :class:`Record`, :class:`BSArray`, :class:`BSFunction` and whatever the
:class:`~._library.Library` makes (nodes, layers).  Semantics follow CNTK's evaluator:

- a record member is evaluated on first use, in the record's own scope (all members see each
  other, like F#'s ``let rec``), then the enclosing scopes outwards, then the library;
- ``r.x`` looks ``x`` up in ``r`` and then in the scopes enclosing ``r``'s definition;
- a function call evaluates its arguments lazily in the caller's scope; the body sees the
  parameters, then the scope where the function was defined (closures); an optional
  parameter's default is evaluated in the defining scope;
- ``Sequential (F : G)`` applied to ``x`` is ``G (F (x))`` with ``F (x)`` evaluated when
  ``G`` asks for it (CNTK.core.bs), ``F >> G`` applies ``F`` first; a library function hears
  of its application before its arguments are evaluated (``Library.before_apply``);
- operators and ``if`` are :mod:`._operators` (node operands go to the library's hooks);
  a network description's node lists are collected by :mod:`._network`, which evaluates the
  members in cntk.exe's order.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from stadyn._errors import ConfigError, StadynError
from stadyn.graph import source_location

from . import _ast as A
from ._ast import line_of
from ._library import LIBRARY_SOURCE, Composition, ForwardRef, Library, NodeCall
from ._operators import OperatorsMixin
from ._values import BSArray, BSFunction, CycleError, Record, Thunk, _err, _is_number, _num

__all__ = ["Evaluator", "Record", "BSArray", "BSFunction", "Thunk", "evaluate"]

_MAX_ARRAY = 10_000_000  # a guard against array[0..1e15](...) exhausting memory when converted


def _add_caller(err: ConfigError, loc: A.SourceLocation | None, name: str) -> None:
    """An error raised inside the library's BrainScript (``<library>:96:56``) also names the
    user's line that called the library function, as a traceback: cntk.exe adds the location
    of every expression the error passes through (BrainScriptEvaluator.cpp:876-880,
    ``AddLocation``) and prints them as its ``[CALL STACK]`` (BrainScriptParser.cpp:99-150);
    here the error's own place stays first and the nearest call from outside the library is
    added once (``err.call_stack``: innermost first)."""
    if loc is None or loc.path == LIBRARY_SOURCE or err.path != LIBRARY_SOURCE:
        return
    if getattr(err, "call_stack", None):
        return
    err.call_stack = [A.SourceLocation(err.path, err.line or 1, err.column or 1), loc]
    note = f"\n  called from {loc} ({name})"
    err.reason += note
    first = err.args[0] if err.args and isinstance(err.args[0], str) else str(err)
    err.args = (first + note, *err.args[1:])


# ---------------------------------------------------------------------------------------------
# the evaluator
# ---------------------------------------------------------------------------------------------

class Evaluator(OperatorsMixin):
    """Evaluates AST nodes against a :class:`Library`.

    >>> from stadyn.brainscript._parser import parse_members
    >>> rec = Evaluator(Library()).evaluate(parse_members("sq(x) = x * x ; y = sq(3) + 1"))
    >>> rec["y"]
    10
    """

    def __init__(self, library: Library | None = None) -> None:
        self.library = library if library is not None else Library()
        self._prelude: dict[str, Callable[..., Any]] = {
            "Sequential": self._sequential,
            "LayerStack": self._layer_stack,
            "Identity": lambda x: x,
            "Length": self._length,
            "Fail": self._fail,
        }
        self._last_loc: A.SourceLocation | None = None
        # where each function a library call returned (a layer) was made: a step of
        # Sequential is applied there, so its errors name the layer's line, however deep
        self._made_at: dict[int, tuple[Any, A.SourceLocation]] = {}
        self._script_prelude: Record | None = None
        # cntk.exe's expression path of what is being evaluated (``out.h1``): a record takes
        # the path it is made at, its members add their names, and every lazy value keeps the
        # path it was written at, however late it is computed (so names do not depend on the
        # order of evaluation); a library function is called with it (Library.path)
        self._path = ""

    # ---- entry -----------------------------------------------------------------------------
    def evaluate(self, expr: A.Expr, scope: Record | None = None) -> Any:
        """Evaluate ``expr`` (records stay lazy); a runaway recursion becomes a ConfigError."""
        try:
            return self.eval(expr, scope)
        except RecursionError:
            raise _err("evaluation nested too deeply (a function that never stops calling "
                       "itself?)", self._last_loc) from None

    def eval(self, e: A.Expr, scope: Record | None) -> Any:
        self._last_loc = e.loc
        return getattr(self, _DISPATCH[type(e)])(e, scope)

    # ---- literals and names --------------------------------------------------------------
    def _number(self, e: A.Number, scope):
        return e.value

    def _string(self, e: A.String, scope):
        return e.value

    def _bool(self, e: A.Bool, scope):
        return e.value

    def _ident(self, e: A.Ident, scope: Record | None):
        thunk = scope._find(e.name) if scope is not None else None
        if thunk is not None:
            return thunk.force()
        found = self._global(e.name)
        if found is not None:
            return found
        raise _err(f"unknown identifier '{e.name}'{self._hint(e.name, scope)}", e.loc)

    def _global(self, name: str) -> Any:
        fn = self.library.lookup(name)
        if fn is not None:
            return fn
        fn = self._prelude.get(name)
        if fn is not None:
            return fn
        prelude = self._library_script()
        if prelude is not None and name in prelude._members:
            return prelude._members[name].force()
        return None

    def _library_script(self) -> Record | None:
        """The library's own BrainScript definitions (:meth:`Library.script_prelude`)."""
        if self._script_prelude is None:
            text = self.library.script_prelude()
            if text is None:
                return None
            from ._parser import parse_members
            # cntk.exe reads CNTK.core.bs into the network's own record: its members' paths
            # start at the top (BS.Constants.One), wherever they are first used
            self._script_prelude = self.at_path("", lambda: self.eval(
                parse_members(text, LIBRARY_SOURCE), None))()
        return self._script_prelude

    def _hint(self, name: str, scope: Record | None) -> str:
        note = self.library.renamed(name)
        if note is not None:
            return f"; {note}"
        pool = set(self.library.names()) | set(self._prelude)
        prelude = self._library_script()
        if prelude is not None:
            pool |= set(prelude._members)
        if scope is not None:
            pool |= set(scope._visible_names())
        close = difflib.get_close_matches(name, sorted(pool), n=3)
        return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""

    # ---- records, arrays, functions -------------------------------------------------------
    def _record(self, e: A.Record, scope: Record | None) -> Record:
        rec = Record(scope, e.loc)
        rec.path = self._path
        for m in e.members:
            rec._define(m.name, self._member_thunk(m, rec),
                        functools.partial(self._member_thunk, m))
        return rec

    def _member_thunk(self, m: A.Member, rec: Record) -> Thunk:
        path = f"{rec.path}.{m.name}" if rec.path else m.name
        return Thunk(self.at_path(path, functools.partial(self.eval, m.value, rec)), m.name,
                     m.loc)

    def at_path(self, path: str, compute: Callable[[], Any]) -> Callable[[], Any]:
        """``compute`` run at expression path ``path`` (:attr:`_path`), whenever it runs.  Made
        during a user's call of a library function, it runs in that call (the library's
        :attr:`~._library.Library.callers` the same, so its ``user_call``), however much later
        it is forced: a library record's member read after the call (``p = BS.RNNs.PreviousHC
        (q)``, ``q = [h = p.h ; ...]``) names the user's line, not the library's."""
        library = self.library
        callers, user_call = library.callers, library.user_call

        def run() -> Any:
            outer, self._path = self._path, path
            restore = user_call is not None and library.user_call != user_call
            if restore:
                outer_callers, library.callers = library.callers, callers
            try:
                return compute()
            finally:
                self._path = outer
                if restore:
                    library.callers = outer_callers
        return run

    def sub_path(self, name: str) -> str:
        """The current expression path with ``name`` added (cntk.exe's rule: joined by ``.``
        where both are given, else whichever is)."""
        return join_path(self._path, name)

    def eval_at(self, e: A.Expr, scope: Record | None, name: str) -> Any:
        """``e`` evaluated at the current path with ``name`` added (``PlusArgs[0]``, ``if``)."""
        return self.at_path(self.sub_path(name), lambda: self.eval(e, scope))()

    def _array_lit(self, e: A.ArrayLit, scope):
        thunks = [Thunk(self.at_path(f"{self._path}[{k}]", functools.partial(
                      self.eval, item, scope)), "", item.loc) for k, item in enumerate(e.items)]
        return BSArray.of_thunks(thunks, 0, e.loc)

    def _array_ctor(self, e: A.ArrayCtor, scope):
        first = self._int(self.eval_at(e.first, scope, "array_first"), e.first.loc,
                          "first index of 'array'")
        last = self._int(self.eval_at(e.last, scope, "array_last"), e.last.loc,
                         "last index of 'array'")
        init = self.eval_at(e.init, scope, "_initializer")
        if not self._is_function(init):
            raise _err("'array' needs an initializer function of one argument (the index), got "
                       f"{self._type(init)}", e.init.loc)
        if isinstance(init, BSFunction) and (len(init.positional) != 1):
            raise _err("'array' needs an initializer function of one argument (the index)",
                       e.init.loc)
        if last - first + 1 > _MAX_ARRAY:
            raise _err(f"array[{first}..{last}] has more than {_MAX_ARRAY} items", e.loc)

        path = self._path

        def item(k: int) -> Thunk:
            return Thunk(self.at_path(f"{path}[{first + k}]" if path else "", lambda: self.call(
                init, [Thunk.of(first + k)], {}, e.init.loc, "array initializer")), "", e.init.loc)
        return BSArray(first, last - first + 1, item, e.loc)

    def _lambda(self, e: A.Lambda, scope):
        return BSFunction(self, e, scope, self._path)

    def _new(self, e: A.New, scope):
        value = self.eval(e.arg, scope)
        try:
            made = self.library.new(e.class_name, value)
        except NotImplementedError as err:
            raise _err(str(err), e.loc) from None
        if not isinstance(made, NodeCall):
            return made
        # a node: the library function applied as a call at this line (argument checks,
        # errors located here), and refused unless it makes a node
        kwargs = {} if made.tag in (None, "") else {"tag": Thunk.of(made.tag)}
        node = self.call(made.function, [Thunk.of(x) for x in made.inputs], kwargs, e.loc,
                         made.operation)
        if not self.library.is_node(node):
            raise _err(f"new {e.class_name}: operation '{made.operation}' is not a node type "
                       f"(Stadyn's '{made.operation}' makes {self._type(node)})", e.loc)
        return node

    # ---- access ----------------------------------------------------------------------------
    def _member_access(self, e: A.MemberAccess, scope):
        obj = self.eval(e.obj, scope)
        if isinstance(obj, Record):
            thunk = obj._find(e.name)
            if thunk is None:
                close = difflib.get_close_matches(e.name, list(obj), n=3)
                hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
                raise _err(f"record has no member '{e.name}'{hint}", e.loc)
            return thunk.force()
        if isinstance(obj, Mapping):
            if e.name not in obj:
                raise _err(f"record has no member '{e.name}'", e.loc)
            return self._from_python(obj[e.name], e.loc)
        raise _err(f"'.{e.name}' needs a record on its left, got {self._type(obj)}", e.loc)

    def _index(self, e: A.Index, scope):
        obj = self.eval_at(e.obj, scope, "_vector")
        if not isinstance(obj, (BSArray, tuple, list)):
            raise _err(f"'[...]' needs an array on its left, got {self._type(obj)}", e.loc)
        i = self._int(self.eval_at(e.index, scope, "_index"), e.index.loc, "array index")
        first = obj.first if isinstance(obj, BSArray) else 0
        if not first <= i < first + len(obj):
            bounds = f"{first}..{first + len(obj) - 1}" if len(obj) else "(the array is empty)"
            raise _err(f"array index {i} out of bounds {bounds}", e.index.loc)
        if isinstance(obj, BSArray):
            return obj.thunk(i - first).force()
        return self._from_python(obj[i], e.loc)

    # ---- calls -----------------------------------------------------------------------------
    def _call(self, e: A.Call, scope):
        name = _callee_name(e.func)
        if isinstance(e.func, A.Ident) and (scope is None or scope._find(e.func.name) is None) \
                and self._global(e.func.name) is None:
            raise _err(f"unknown function '{e.func.name}' (defined neither in the script nor in "
                       f"the library){self._hint(e.func.name, scope)}", e.func.loc)
        fn = self.eval(e.func, scope)
        params = self._parameter_names(fn)
        args = [Thunk(self.at_path(self._argument_path(params, k), functools.partial(
                    self.eval, a.value, scope)), "", a.loc)
                for k, a in enumerate(a for a in e.args if a.name is None)]
        kwargs = {a.name: Thunk(self.at_path(self._argument_path(params, a.name),
                                             functools.partial(self.eval, a.value, scope)),
                                a.name, a.loc)
                  for a in e.args if a.name is not None}
        return self.call(fn, args, kwargs, e.loc, name)

    def _parameter_names(self, fn: Any) -> Sequence[str]:
        """The positional parameter names of the function ``fn``, as cntk.exe's expression paths
        use them: an argument is evaluated at the call's path plus its parameter's name
        (``model.arrayOfFunctions`` for ``model = Sequential (...)``, ``z.y`` for the data of
        ``z = Times (W, x)``).  A library function's are CNTK.core.bs's
        (:meth:`Library.parameter_names`); a layer's, which CNTK.core.bs defines as
        ``{ ... apply (x) = ... }.apply``, ``x``."""
        if isinstance(fn, BSFunction):
            return fn.positional
        if getattr(fn, "__func__", None) is Evaluator._sequential:
            return ("arrayOfFunctions",)
        if getattr(fn, "__func__", None) is Evaluator._layer_stack:
            return ("n", "c")
        if isinstance(fn, Composition):     # Sequential's apply (x); F >> G has F's parameters
            return ("x",) if fn.nested else self._parameter_names(fn.f)
        names = self.library.parameter_names(fn)
        return ("x",) if names is None else names

    def _argument_path(self, params: Sequence[str], key: int | str) -> str:
        name = key if isinstance(key, str) else params[key] if key < len(params) else ""
        return self.sub_path(name)

    def call(self, fn: Any, args: Sequence[Thunk], kwargs: Mapping[str, Thunk],
             loc: A.SourceLocation | None, name: str = "function") -> Any:
        """Apply a BrainScript or library function to (lazy) arguments."""
        if isinstance(fn, BSFunction):
            outside = loc is not None and loc.path != LIBRARY_SOURCE
            if outside:
                outer_callers = self.library.callers
                self.library.callers = outer_callers + ((loc, name),)
            try:
                return fn.apply(args, kwargs, loc)
            except CycleError:
                raise
            except ConfigError as err:
                _add_caller(err, loc, name)
                raise
            finally:
                if outside:
                    self.library.callers = outer_callers
        if isinstance(fn, Composition) and fn.nested:     # Sequential (F : G): G (F (x))
            # CNTK.core.bs: fs[N-1] (Apply (x, N-1)), F applied when G asks for its argument,
            # at the path of G's argument; each applied where it was made (its errors' line)
            inner = Thunk(self.at_path(self._argument_path(self._parameter_names(fn.g), 0),
                                       lambda: fn.link(self.call(fn.f, args, kwargs,
                                                                 self._made(fn.f, loc), name))),
                          "", loc)
            return self.call(fn.g, [inner], {}, self._made(fn.g, loc), name)
        if isinstance(fn, Composition):     # F >> G: F applied first (at the path's .arg), then G
            first = self.at_path(self.sub_path("arg"),
                                 lambda: self.call(fn.f, args, kwargs, self._made(fn.f, loc),
                                                   name))()
            return self.call(fn.g, [Thunk.of(fn.link(first))], {}, self._made(fn.g, loc), name)
        if not self._is_function(fn):
            raise _err(f"'{name}' is {self._type(fn)}, which cannot be called", loc)
        self.library.before_apply(fn)
        delay = self.library.delay_input(fn)
        if delay is not None:
            args, kwargs = self._delay_args(delay, args, kwargs, loc, name)
        pos = [self._to_python(a.force()) for a in args]
        named = {k: self._to_python(v.force()) for k, v in kwargs.items()}
        _check_signature(fn, pos, named, name, loc)
        self.library.prepare_args(pos, named)
        self.library.path = self._path
        with source_location(line_of(loc)):     # nodes it makes name the config's line
            result = self._guard(lambda: fn(*pos, **named), loc, name)
        self.library.after_apply(fn, pos, named, result)
        if loc is not None and callable(result) and self._is_function(result):
            self._made_at.setdefault(id(result), (result, loc))
        return self._from_python(result, loc)

    def _made(self, fn: Any, loc: A.SourceLocation | None) -> A.SourceLocation | None:
        """Where the function ``fn`` was made by a library call (a layer), else ``loc``."""
        made = self._made_at.get(id(fn))
        return made[1] if made is not None and made[0] is fn else loc

    def _delay_args(self, delay: tuple[int, str], args: Sequence[Thunk],
                    kwargs: Mapping[str, Thunk], loc, name: str):
        """A delay's arguments, its input replaced by a :class:`ForwardRef` when the input is
        still being defined (a loop: ``h = f(PastValue(0, h))``); the library gets the input's
        value once that definition has finished.  cntk.exe attaches a delay's input late, so
        what trying the input early made before it met the definition in progress (parameters,
        their seeds, values of the config) is forgotten: the input is computed once, later."""
        position, key = delay
        if key in kwargs:
            thunk = kwargs[key]
        elif position < len(args):
            thunk = args[position]
        else:
            return args, kwargs
        forget = self.library.checkpoint()
        try:
            with Thunk.attempt() as tried:
                thunk.force()
            return args, kwargs
        except CycleError as cycle:
            if not cycle.thunk.running:
                raise
            waits_for = cycle.thunk
            tried.undo()                   # (loops closed meanwhile opened again)
            forget()
        ref = ForwardRef(loc, waits_for.name)
        caller = self.library.callers[-1] if self.library.callers else None

        def define() -> None:
            forget = self.library.checkpoint()
            try:
                with Thunk.attempt() as tried:
                    value = self._to_python(thunk.force())
            except CycleError as again:   # the input also needs a value still being computed
                if not again.thunk.running:
                    raise
                tried.undo()
                forget()
                again.thunk.when_done(define)
                return
            try:
                with source_location(line_of(loc)):
                    self._guard(lambda: self.library.define_forward(ref, value), loc, name)
            except ConfigError as err:
                if caller is not None and not isinstance(err, CycleError):
                    _add_caller(err, *caller)
                raise
        waits_for.when_done(define)
        if key in kwargs:
            return args, {**kwargs, key: Thunk.of(ref)}
        return [*args[:position], Thunk.of(ref), *args[position + 1:]], kwargs

    def _guard(self, fn: Callable[[], Any], loc, name: str) -> Any:
        """``fn()`` with its errors located at ``loc`` (a cycle passes on as it is)."""
        try:
            return fn()
        except CycleError:
            raise
        except ConfigError as err:
            if err.line is not None:
                raise
            # a library function's message may already start with its name ("Times: ...")
            prefix = f"{name}: "
            reason = err.reason if err.reason.startswith(prefix) else prefix + err.reason
            raise _err(reason, loc) from err
        except (StadynError, NotImplementedError) as err:
            reason = str(err)
            raise _err(reason if reason.startswith(f"{name}: ") else f"{name}: {reason}",
                       loc) from err

    def _is_function(self, v: Any) -> bool:
        if isinstance(v, BSFunction):
            return True
        if isinstance(v, (Record, BSArray)) or self.library.is_node(v):
            return False
        return callable(v)

    # ---- prelude (used where the library defines no such name) ------------------------------
    def _sequential(self, array_of_functions: Any) -> Any:
        fns = array_of_functions if isinstance(array_of_functions, tuple) else (array_of_functions,)
        for k, f in enumerate(fns):
            if not self._is_function(f):
                raise ConfigError(f"item {k} is {self._type(f)}, not a function")
        if not fns:
            return lambda x: x
        return functools.reduce(lambda f, g: self.library.compose(f, g, nested=True), fns)

    def _layer_stack(self, n: Any, c: Any) -> Any:
        count = self._int(n, None, "LayerStack count")
        if count > _MAX_ARRAY:
            raise ConfigError(f"{count} layers are more than {_MAX_ARRAY}")
        if not self._is_function(c):
            raise ConfigError(f"needs a function of the layer index, got {self._type(c)}")
        # CNTK.core.bs: Sequential (array[0..n-1] (c)): item i made at .arrayOfFunctions[i]
        path = self.sub_path("arrayOfFunctions")
        return self._sequential(tuple(
            self._to_python(self.at_path(f"{path}[{i}]", functools.partial(c, i))())
            for i in range(count)))

    def _fail(self, what: Any) -> Any:
        # CNTK.core.bs's Fail (msg): stops evaluation, with the caller's line
        raise ConfigError(str(what))

    def _length(self, x: Any) -> int:
        if isinstance(x, (str, tuple)):
            return len(x)
        raise ConfigError(f"needs an array or a string, got {self._type(x)}")

    # ---- conversions -----------------------------------------------------------------------
    def _to_python(self, v: Any) -> Any:
        """A value as a library function receives it: arrays become tuples."""
        if isinstance(v, BSArray):
            return tuple(self._to_python(v.thunk(k).force()) for k in range(len(v)))
        return v

    def _from_python(self, v: Any, loc) -> Any:
        """A value a library returned, as BrainScript sees it."""
        if isinstance(v, (list, tuple)):
            return BSArray.of_values([self._from_python(x, loc) for x in v], loc)
        if isinstance(v, numbers.Real) and not isinstance(v, (bool, int)):
            return _num(float(v))  # float, numpy floats
        if isinstance(v, numbers.Integral) and not isinstance(v, (bool, int)):
            return _num(int(v))  # numpy integers
        if isinstance(v, Mapping) and not isinstance(v, Record):
            rec = Record(None, loc)
            for k, x in v.items():
                rec._define(str(k), Thunk.of(self._from_python(x, loc)))
            return rec
        return v

    def _int(self, v: Any, loc, what: str) -> int:
        if not _is_number(v) or not float(v).is_integer() or math.isinf(v):
            raise _err(f"{what} must be an integer, got {self._type(v)} {v!r}", loc)
        return int(v)

    def _type(self, v: Any) -> str:
        if isinstance(v, bool):
            return "a boolean"
        if _is_number(v):
            return "a number"
        if isinstance(v, str):
            return "a string"
        if isinstance(v, Record):
            return "a record"
        if isinstance(v, (BSArray, tuple, list)):
            return "an array"
        if isinstance(v, BSFunction):
            return "a function"
        if self.library.is_node(v):
            return f"a {self.library.type_name(v)}"
        if callable(v):
            return "a library function"
        return f"a {type(v).__name__}"


_DISPATCH = {
    A.Number: "_number", A.String: "_string", A.Bool: "_bool", A.Ident: "_ident",
    A.Record: "_record", A.ArrayLit: "_array_lit", A.ArrayCtor: "_array_ctor",
    A.Lambda: "_lambda", A.New: "_new", A.MemberAccess: "_member_access", A.Index: "_index",
    A.Call: "_call", A.Unary: "_unary", A.If: "_if", A.Binary: "_binary",
}


def join_path(path: str, name: str) -> str:
    """cntk.exe's expression path ``path`` with ``name`` added: ``a.b``, or whichever is given.

    >>> join_path("z", "PlusArgs[0]"), join_path("", "W"), join_path("z", "")
    ('z.PlusArgs[0]', 'W', 'z')
    """
    return f"{path}.{name}" if path and name else path or name


def _callee_name(e: A.Expr) -> str:
    if isinstance(e, A.Ident):
        return e.name
    if isinstance(e, A.MemberAccess):
        return e.name
    return "function"


@functools.lru_cache(maxsize=512)
def _signature(fn: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _check_signature(fn, args, kwargs, name, loc) -> None:
    """Report a wrong argument list for a library function as a located ConfigError."""
    try:
        sig = _signature(fn)
    except TypeError:  # unhashable callable
        sig = None
    if sig is None:
        return
    try:
        sig.bind(*args, **kwargs)
    except TypeError as err:
        raise _err(f"{name}: {err}", loc) from None


def evaluate(expr: A.Expr, library: Library | None = None) -> Any:
    """Evaluate a parsed BrainScript expression or record with ``library``.

    >>> from stadyn.brainscript._parser import parse_expression
    >>> evaluate(parse_expression("(x => y => x + y)(1)(2)"))
    3
    """
    return Evaluator(library).evaluate(expr)

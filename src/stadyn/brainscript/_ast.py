"""The syntax tree of BrainScript proper: small frozen dataclasses, each with its source location.

The parser (:mod:`._parser`) builds these from lark's parse; the evaluator (:mod:`._evaluator`)
walks them.  Sugar is removed at parse time, as CNTK does: ``f(x) = e`` becomes a member whose
value is a :class:`Lambda`, ``v[i:a..b] = e`` becomes an :class:`ArrayCtor`, ``[| a; b |]`` and
``a : b`` both become an :class:`ArrayLit`, and parentheses leave no node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._errors import ConfigError

__all__ = [
    "SourceLocation", "line_of", "config_error", "Expr", "Number", "String", "Bool", "Ident",
    "Unary", "Binary", "ArrayLit", "ArrayCtor", "If", "Lambda", "Param", "Call", "Arg",
    "MemberAccess", "Index", "Record", "Member", "New",
]


@dataclass(frozen=True)
class SourceLocation:
    """A place in a source file: ``path`` (``None`` for a string), 1-based ``line`` and
    ``column``."""

    path: str | None
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.path or '<string>'}:{self.line}:{self.column}"


def line_of(loc: SourceLocation | None) -> tuple[str, int] | None:
    """The ``(file, line)`` graph nodes made at ``loc`` record (``<string>`` for a config given
    as text).

    >>> line_of(SourceLocation(None, 3, 7)), line_of(None)
    (('<string>', 3), None)
    """
    return None if loc is None else (loc.path or "<string>", loc.line)


def config_error(message: str, loc: SourceLocation | None,
                 cls: type[ConfigError] = ConfigError) -> ConfigError:
    """A :class:`ConfigError` (or ``cls``) at ``loc``; one without a place where ``loc`` is
    None.

    >>> str(config_error("bad value", SourceLocation("run.cntk", 3, 7)))
    'run.cntk:3:7: bad value'
    """
    if loc is None:
        return cls(message)
    return cls(message, loc.path, loc.line, loc.column)


@dataclass(frozen=True)
class Expr:
    """Base class of every expression node; ``loc`` is where the node's key token starts."""

    loc: SourceLocation = field(compare=False, repr=False)


@dataclass(frozen=True)
class Number(Expr):
    value: int | float = 0


@dataclass(frozen=True)
class String(Expr):
    value: str = ""


@dataclass(frozen=True)
class Bool(Expr):
    value: bool = False


@dataclass(frozen=True)
class Ident(Expr):
    name: str = ""


@dataclass(frozen=True)
class Unary(Expr):
    """``-x``, ``+x`` or ``!x``."""

    op: str = "-"
    operand: Expr | None = None


@dataclass(frozen=True)
class Binary(Expr):
    """An infix operation; ``loc`` is the operator's location."""

    op: str = "+"
    left: Expr | None = None
    right: Expr | None = None


@dataclass(frozen=True)
class ArrayLit(Expr):
    """``a : b : c`` or ``[| a; b; c |]``: one 0-based array."""

    items: tuple[Expr, ...] = ()


@dataclass(frozen=True)
class ArrayCtor(Expr):
    """``array[first..last](init)``: an array indexed first..last whose items are ``init(i)``."""

    first: Expr | None = None
    last: Expr | None = None
    init: Expr | None = None


@dataclass(frozen=True)
class If(Expr):
    cond: Expr | None = None
    then: Expr | None = None
    orelse: Expr | None = None


@dataclass(frozen=True)
class Param(Expr):
    """A parameter: positional when ``default`` is ``None``, else optional with that default."""

    name: str = ""
    default: Expr | None = None


@dataclass(frozen=True)
class Lambda(Expr):
    """A function: ``x => e``, or ``f(a, b=1) = e`` / ``f{a, b=1} = e`` after desugaring."""

    params: tuple[Param, ...] = ()
    body: Expr | None = None
    name: str = ""


@dataclass(frozen=True)
class Arg(Expr):
    """A call argument: positional when ``name`` is ``None``, else named."""

    name: str | None = None
    value: Expr | None = None


@dataclass(frozen=True)
class Call(Expr):
    """``f(args)`` or ``f{args}`` (``braces`` says which; they mean the same)."""

    func: Expr | None = None
    args: tuple[Arg, ...] = ()
    braces: bool = False


@dataclass(frozen=True)
class MemberAccess(Expr):
    """``obj.name``; ``loc`` is the location of ``name``."""

    obj: Expr | None = None
    name: str = ""


@dataclass(frozen=True)
class Index(Expr):
    obj: Expr | None = None
    index: Expr | None = None


@dataclass(frozen=True)
class Member(Expr):
    """One ``name = value`` member of a record; ``loc`` is the name's location."""

    name: str = ""
    value: Expr | None = None


@dataclass(frozen=True)
class Record(Expr):
    """``{ members }`` or ``[ members ]``; member names are unique."""

    members: tuple[Member, ...] = ()


@dataclass(frozen=True)
class New(Expr):
    """``new ClassName operand``."""

    class_name: str = ""
    arg: Expr | None = None

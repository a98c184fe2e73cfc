"""BrainScript proper: lark parse (grammar in ``brainscript.lark``) -> the dataclass AST of
:mod:`._ast`.

Parsing runs in two passes, both driven by lark with one LALR grammar:

1. the token pass lexes the text with lark's basic lexer, splices ``include "file"`` in place (as
   CNTK's lexer did, so an include may appear anywhere a token may) and stamps every token with
   its file;
2. the token stream is fed to lark's LALR parser, whose inline transformer (:class:`_Builder`)
   turns each reduced rule straight into an AST node.

Every syntax error becomes a :class:`~stadyn._errors.ConfigError` naming file, line and column,
the offending text, what was expected there, and the source line with a caret under the spot.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError

from stadyn._errors import ConfigError

from . import _ast as A
from ._source_files import read_source, resolve_include

__all__ = ["parse_expression", "parse_members", "parse_file", "source_excerpt", "describe_expected",
           "unclosed_hint"]

_GRAMMAR = Path(__file__).with_name("brainscript.lark")


# ---------------------------------------------------------------------------------------------
# tokens
# ---------------------------------------------------------------------------------------------

class _Tok(Token):
    """A lark token that also knows the file it came from (tokens of includes differ)."""

    __slots__ = ("path",)


def _loc(tok: Token) -> A.SourceLocation:
    return A.SourceLocation(getattr(tok, "path", None), tok.line or 1, tok.column or 1)


def source_excerpt(text: str, line: int, column: int) -> str:
    """The source line ``line`` of ``text`` with a caret under ``column``, for error messages.

    >>> print(source_excerpt("a = 1\\nb = ?", 2, 5))
    <BLANKLINE>
        b = ?
            ^
    """
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    src = lines[line - 1].expandtabs(1)
    caret = max(column - 1, 0)
    if len(src) > 2 * _EXCERPT_HALF:   # a long line is shown around the column only
        start = max(0, min(caret - _EXCERPT_HALF, len(src) - 2 * _EXCERPT_HALF))
        src = ("..." if start else "") + src[start:start + 2 * _EXCERPT_HALF] + (
            "..." if start + 2 * _EXCERPT_HALF < len(src) else "")
        caret += (3 if start else 0) - start
    return f"\n    {src}\n    {' ' * caret}^"


_EXCERPT_HALF = 60   # characters shown either side of the column in a long line


_DISPLAY_KIND = {"NAME": "identifier", "NUMBER": "number", "STRING": "string"}
_EXPR_START = {"NAME", "NUMBER", "STRING", "TRUE", "FALSE", "LPAR", "LBRACE", "LSQB", "LARRAY",
               "IF", "NEW", "ARRAY", "MINUS", "PLUS", "BANG"}
_OPERATORS = {"STAR", "SLASH", "DOTSTAR", "POW", "PERCENT", "PLUS", "MINUS", "WITH", "EQEQ", "NE",
              "LT", "LE", "GT", "GE", "ANDAND", "OROR", "RSHIFT", "LSHIFT", "COLON", "DOT",
              "LSQB", "LPAR", "LBRACE"}


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of input"
    if tok.type in _DISPLAY_KIND:
        if tok.type == "STRING":
            return f"string {tok.value}"
        return f"{_DISPLAY_KIND[tok.type]} {tok.value!r}"
    if tok.value.isalpha():
        return f"keyword '{tok.value}'"
    return f"'{tok.value}'"


def _terminal_text(lark: Lark, name: str) -> str:
    if name == "$END":
        return "end of input"
    if name in _DISPLAY_KIND:
        return f"an {_DISPLAY_KIND[name]}" if name == "NAME" else f"a {_DISPLAY_KIND[name]}"
    try:
        pattern = lark.get_terminal(name).pattern
    except KeyError:
        return name
    return f"'{pattern.value}'" if pattern.type == "str" else name


def describe_expected(lark: Lark, expected: set[str]) -> str:
    """Summarise lark's set of expected terminals in words ("an expression, ')' or ','")."""
    names = set(expected)
    parts: list[str] = []
    if {"NAME", "NUMBER"} <= names:
        parts.append("an expression")
        names -= _EXPR_START
    if {"STAR", "PLUS"} <= names:
        parts.append("an operator")
        names -= _OPERATORS
    parts += sorted(_terminal_text(lark, n) for n in names if not n.startswith("__"))
    if not parts:
        return "nothing more"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


# ---------------------------------------------------------------------------------------------
# AST builder (lark inline transformer)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _ParamSpec:
    params: tuple[A.Param, ...]
    loc: A.SourceLocation


@dataclass(frozen=True)
class _ArraySpec:
    index: str
    first: A.Expr
    last: A.Expr
    loc: A.SourceLocation


def _number(text: str) -> int | float:
    value = float(text)
    if value.is_integer() and abs(value) < 2 ** 53:
        return int(value)
    return value


def _exprs(children: list) -> list:
    return [c for c in children if not isinstance(c, Token) and c is not None]


class _Builder(Transformer):
    """Turns each reduced grammar rule into an AST node (called by lark during the parse)."""

    # ---- records -----------------------------------------------------------------------
    def start_expr(self, c):
        return c[0]

    def start_members(self, c):
        members = c[0]
        loc = members[0].loc if members else A.SourceLocation(None, 1, 1)
        return A.Record(loc, tuple(members))

    def member_list(self, c):
        seen: dict[str, A.Member] = {}
        for m in c:
            if m.name in seen:
                raise ConfigError(f"duplicate member '{m.name}' (first defined at "
                                  f"{seen[m.name].loc})", m.loc.path, m.loc.line, m.loc.column)
            seen[m.name] = m
        return list(c)

    def member(self, c):
        name_tok, *specs, _eq, value = c
        loc = _loc(name_tok)
        for spec in reversed(specs):
            if isinstance(spec, _ParamSpec):
                value = A.Lambda(spec.loc, spec.params, value, str(name_tok))
            else:
                init = A.Lambda(spec.loc, (A.Param(spec.loc, spec.index),), value, str(name_tok))
                value = A.ArrayCtor(loc, spec.first, spec.last, init)
        return A.Member(loc, str(name_tok), value)

    def array_spec(self, c):
        _lsqb, index, _colon, first, _dotdot, last, _rsqb = c
        return _ArraySpec(str(index), first, last, _loc(index))

    def paren_params(self, c):
        return _ParamSpec(c[1], _loc(c[0]))

    brace_params = paren_params

    def params(self, c):
        params = tuple(p for p in c if isinstance(p, A.Param))
        names: set[str] = set()
        for p in params:
            if p.name in names:
                raise ConfigError(f"duplicate parameter '{p.name}'", p.loc.path, p.loc.line,
                                  p.loc.column)
            names.add(p.name)
        return params

    def positional_param(self, c):
        return A.Param(_loc(c[0]), str(c[0]))

    def optional_param(self, c):
        return A.Param(_loc(c[0]), str(c[0]), c[2])

    # ---- operators ---------------------------------------------------------------------
    def lambda_(self, c):
        name, _arrow, body = c
        return A.Lambda(_loc(name), (A.Param(_loc(name), str(name)),), body)

    def colon_array(self, c):
        colons = [t for t in c if isinstance(t, Token)]
        return A.ArrayLit(_loc(colons[0]), tuple(_exprs(c)))

    def binop(self, c):
        left, op, right = c
        return A.Binary(_loc(op), str(op), left, right)

    def unop(self, c):
        op, operand = c
        return A.Unary(_loc(op), str(op), operand)

    def member_access(self, c):
        obj, _dot, name = c
        return A.MemberAccess(_loc(name), obj, str(name))

    def index(self, c):
        obj, lsqb, idx, _rsqb = c
        return A.Index(_loc(lsqb), obj, idx)

    def call(self, c):
        func, opener, args, _closer = c
        return A.Call(_loc(opener), func, args, braces=str(opener) == "{")

    def args(self, c):
        args = tuple(a if isinstance(a, A.Arg) else A.Arg(a.loc, None, a)
                     for a in c if not isinstance(a, Token) and a is not None)
        names: set[str] = set()
        for a in args:
            if a.name is not None:
                if a.name in names:
                    raise ConfigError(f"duplicate named argument '{a.name}'", a.loc.path,
                                      a.loc.line, a.loc.column)
                names.add(a.name)
        return args

    def named_arg(self, c):
        return A.Arg(_loc(c[0]), str(c[0]), c[2])

    # ---- operands ----------------------------------------------------------------------
    def number(self, c):
        return A.Number(_loc(c[0]), _number(str(c[0])))

    def string(self, c):
        return A.String(_loc(c[0]), str(c[0])[1:-1])

    def true(self, c):
        return A.Bool(_loc(c[0]), True)

    def false(self, c):
        return A.Bool(_loc(c[0]), False)

    def ident(self, c):
        return A.Ident(_loc(c[0]), str(c[0]))

    def paren(self, c):
        return c[1]

    def record(self, c):
        return A.Record(_loc(c[0]), tuple(c[1]))

    def array_literal(self, c):
        return A.ArrayLit(_loc(c[0]), tuple(_exprs(c)))

    def if_(self, c):
        return A.If(_loc(c[0]), c[1], c[3], c[5])

    def new(self, c):
        return A.New(_loc(c[0]), str(c[1]), c[2])

    def array_ctor(self, c):
        return A.ArrayCtor(_loc(c[0]), c[2], c[4], c[7])


@functools.cache
def _lark() -> Lark:
    """The LALR parser, built once per process."""
    return Lark(_GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="basic",
                start=["start_expr", "start_members", "start_tokens"], transformer=_Builder(),
                maybe_placeholders=True)


@functools.cache
def _lexer() -> Lark:
    """The same grammar as a lexer only (``Lark.lex`` of the parser rebuilds its lexer per call)."""
    return Lark(_GRAMMAR.read_text(encoding="utf-8"), parser=None, lexer="basic",
                start=["start_expr", "start_members", "start_tokens"])


# ---------------------------------------------------------------------------------------------
# the two passes
# ---------------------------------------------------------------------------------------------

class _Session:
    """One parse: the source texts seen (for error excerpts) and the include stack."""

    def __init__(self, include_dirs: Sequence[str] = ()) -> None:
        self.sources: dict[str | None, str] = {}
        self.sites: dict[str, A.SourceLocation] = {}    # included file -> its ``include``
        self.include_dirs = tuple(include_dirs)         # every config file's folder

    def error(self, message: str, loc: A.SourceLocation) -> ConfigError:
        text = self.sources.get(loc.path, "")
        site = self.sites.get(loc.path) if loc.path is not None else None
        if site is not None and not _reads_as_members(text):
            # Not BrainScript (``include "/etc/passwd"``): say where, quote nothing of it.
            return ConfigError(f"cannot include '{loc.path}': not a BrainScript file (line "
                               f"{loc.line}, column {loc.column} is not a definition such as "
                               "'name = value'; its text is not shown)",
                               site.path, site.line, site.column)
        excerpt = source_excerpt(text, loc.line, loc.column)
        return ConfigError(message + excerpt, loc.path, loc.line, loc.column)

    # ---- pass 1: tokens ----------------------------------------------------------------
    def tokens(self, text: str, path: str | None, line0: int, col0: int,
               stack: tuple[str, ...]) -> Iterator[_Tok]:
        self.sources.setdefault(path, ("\n" * (line0 - 1)) + (" " * (col0 - 1)) + text)
        raw = _lexer().lex(text)
        while True:
            try:
                tok = next(raw)
            except StopIteration:
                return
            except UnexpectedCharacters as err:
                loc = self._shift(path, err.line, err.column, line0, col0)
                raise self.error(f"unexpected character {err.char!r}; expected a token "
                                 "(BrainScript has no such operator or symbol)", loc) from None
            tok = self._stamp(tok, path, line0, col0)
            if tok.type == "UNTERMINATED_STRING":
                raise self.error("string without closing quotation mark", _loc(tok))
            if tok.type == "UNTERMINATED_COMMENT":
                raise self.error("comment without closing '*/'", _loc(tok))
            if tok.type == "INCLUDE":
                yield from self._include(tok, raw, path, line0, col0, stack)
                continue
            yield tok

    def _include(self, tok, raw, path, line0, col0, stack) -> Iterator[_Tok]:
        try:
            name = self._stamp(next(raw), path, line0, col0)
        except (StopIteration, UnexpectedInput):
            name = None
        if name is None or name.type != "STRING":
            raise self.error("'include' must be followed by a quoted file name", _loc(name or tok))
        target = resolve_include(name.value[1:-1], self._folders(stack))
        if target is None:
            raise self.error(f"cannot include {name.value}: file not found", _loc(name))
        if target in stack:
            chain = " -> ".join([*stack, target])
            raise self.error(f"include cycle: {chain}", _loc(name))
        text = read_source(target, _loc(name), "BrainScript file")
        self.sites.setdefault(target, _loc(name))
        yield from self.tokens(text, target, 1, 1, (*stack, target))

    def _folders(self, stack: tuple[str, ...]) -> list[str]:
        """Where an ``include`` is looked for after the working folder: the folders of the
        files being included, innermost first (cntk.exe pushes each in front while its file
        is read, BrainScriptParser.cpp:487, and pops it at its end, :445), then every config
        file's (Config.cpp:66, NetworkFactory.cpp:84), then the folder of the text parsed."""
        folders = [os.path.dirname(p) for p in reversed(stack[1:])]
        folders += [*self.include_dirs, *(os.path.dirname(p) for p in stack[:1])]
        return list(dict.fromkeys(folders))

    @staticmethod
    def _shift(path, line, column, line0, col0) -> A.SourceLocation:
        return A.SourceLocation(path, line + line0 - 1, column + (col0 - 1 if line == 1 else 0))

    def _stamp(self, tok: Token, path, line0, col0) -> _Tok:
        loc = self._shift(path, tok.line, tok.column, line0, col0)
        end = self._shift(path, tok.end_line or tok.line, tok.end_column or tok.column, line0, col0)
        new = _Tok(tok.type, tok.value, tok.start_pos, loc.line, loc.column,
                   end.line, end.column, tok.end_pos)
        new.path = path
        return new

    # ---- pass 2: LALR parse ------------------------------------------------------------
    def parse(self, text: str, path: str | None, line0: int, col0: int, start: str):
        stack = (os.path.normpath(path),) if path else ()
        parser = _lark().parse_interactive(start=start)
        try:
            for tok in self.tokens(text, path, line0, col0, stack):
                self._feed(parser, tok)
            end = _end_token(text, path, line0, col0)
            return self._feed(parser, end)
        except VisitError as err:  # an error raised by the builder (duplicate names)
            if isinstance(err.orig_exc, ConfigError):
                raise self._with_excerpt(err.orig_exc) from None
            raise
        except ConfigError as err:
            raise self._with_excerpt(err) from None
        except RecursionError:
            raise ConfigError("expression nested too deeply", path, line0, col0) from None

    def _with_excerpt(self, err: ConfigError) -> ConfigError:
        if "\n" in err.reason or err.line is None:
            return err
        return self.error(err.reason, A.SourceLocation(err.path, err.line, err.column or 1))

    def _feed(self, parser, tok: Token):
        try:
            return parser.feed_token(tok)
        except UnexpectedToken as err:
            accepted = _acceptable(parser, err)
            expected = describe_expected(_lark(), accepted)
            hint = unclosed_hint(parser.parser_state.value_stack, accepted, tok)
            raise self.error(f"unexpected {_describe_token(tok)}; expected {expected}{hint}",
                             _loc(tok)) from None


_CLOSER = {"LPAR": "RPAR", "LBRACE": "RBRACE", "LSQB": "RSQB", "LARRAY": "RARRAY"}


def unclosed_hint(value_stack: list, accepted: set[str], tok: Token) -> str:
    """`` (to close the '(' at 3:14)`` when a closing bracket was due and ``tok`` is not it."""
    closers = set(_CLOSER.values())
    if not (accepted & closers) or (tok.type not in closers and tok.type != "$END"):
        return ""
    for value in reversed(value_stack):
        if isinstance(value, Token) and value.type in _CLOSER:
            if _CLOSER[value.type] in accepted:
                where = f"{value.line}:{value.column}"
                path = getattr(value, "path", None)
                if path and path != getattr(tok, "path", path):
                    where = f"{path}:{where}"
                return f" to close the '{value.value}' at {where}"
            return ""
    return ""


def _acceptable(parser, err: UnexpectedToken) -> set[str]:
    """The terminals the parser would accept here (exact, unlike LALR's merged lookahead set)."""
    try:
        return set(parser.accepts()) or set(err.expected)
    except UnexpectedInput:
        return set(err.expected)


def _end_token(text: str, path: str | None, line0: int, col0: int) -> _Tok:
    lines = text.split("\n")
    line = line0 + len(lines) - 1
    column = len(lines[-1]) + 1 + (col0 - 1 if len(lines) == 1 else 0)
    tok = _Tok("$END", "", len(text), line, column, line, column, len(text))
    tok.path = path
    return tok


def _reads_as_members(text: str) -> bool:
    """Does ``text`` start as BrainScript definitions do (``name = ...``, ``name(x) = ...``,
    ``name[n] = ...``, ``include "..."``), or is it empty?  Decides only whether an error in an
    included file may quote it."""
    try:
        tokens = []
        for tok in _lexer().lex(text):
            tokens.append(tok)
            if len(tokens) == 2:
                break
    except Exception:  # noqa: BLE001 - the lexer rejects the text: not BrainScript either
        return False
    if not tokens:
        return True
    if len(tokens) == 1:
        return False
    head, nxt = tokens
    return (head.type == "NAME" and nxt.type in ("EQ", "LPAR", "LSQB")) or (
        head.type == "INCLUDE" and nxt.type == "STRING")


# ---------------------------------------------------------------------------------------------
# public entry points
# ---------------------------------------------------------------------------------------------

def parse_expression(text: str, path: str | None = None, *, line: int = 1,
                     column: int = 1, include_dirs: Sequence[str] = ()) -> A.Expr:
    """Parse one BrainScript expression (e.g. the ``{ ... }`` of a ``BrainScriptNetworkBuilder``).

    ``line``/``column`` say where ``text`` starts inside ``path`` so that error locations point
    into the enclosing file; ``include_dirs`` are the config files' folders, where an
    ``include`` is looked for (after the working folder and the included files' folders).

    >>> e = parse_expression("a + b * c")
    >>> e.op, e.right.op
    ('+', '*')
    """
    return _Session(include_dirs).parse(text, path, line, column, "start_expr")


def parse_members(text: str, path: str | None = None, *, line: int = 1,
                  column: int = 1) -> A.Record:
    """Parse a sequence of record members without braces (a ``.bs`` file) into one record.

    >>> r = parse_members("f(x) = x + 1 ; y = f(2)")
    >>> [m.name for m in r.members]
    ['f', 'y']
    """
    return _Session().parse(text, path, line, column, "start_members")


def parse_file(path: str | os.PathLike) -> A.Record:
    """Parse a BrainScript file of record members (includes resolve relative to it)."""
    p = os.fspath(path)
    return parse_members(read_source(p, None, "BrainScript file"), p)

"""The syntax of cntk.exe's Network Description Language (NDL, ``NDLNetworkBuilder``).

An NDL text is a list of items, one a line (or separated by ``;``), ``#`` starting a comment:

* ``name = value``: a number, a string (``"..."`` or ``'...'``), a (dotted) name, a call
  ``Fn(arg, ..., key = value)``, an array ``(a, b)`` or a section ``[ items ]``;
* ``Macro(p1, p2) = [ items ]``, ``Macro(p1, p2) { items }`` or ``Macro(p1) = Fn(...)``: a macro.

Names are case-insensitive (cntk.exe's symbol tables are); ``$var$`` is replaced before parsing
(:mod:`._ndl`).  The parser gives plain dataclasses with locations, for :mod:`._ndl` to evaluate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .._errors import ConfigError
from ._ast import SourceLocation as Loc

__all__ = ["where", "Num", "Str", "Ref", "Call", "Array", "Section", "Assign", "MacroDef",
           "parse_ndl", "section_names", "builder_settings"]


def where(loc: Loc) -> tuple:
    """``(path, line, column)``: a :class:`ConfigError`'s location arguments."""
    return (loc.path, loc.line, loc.column)


@dataclass
class Num:
    value: int | float
    loc: Loc


@dataclass
class Str:
    value: str
    loc: Loc


@dataclass
class Ref:
    name: str              # dotted: L1.BFF.W
    loc: Loc


@dataclass
class Call:
    function: str
    args: list[Any]
    kwargs: dict[str, Any]   # lower-case key -> value
    loc: Loc


@dataclass
class Array:
    items: list[Any]
    loc: Loc


@dataclass
class Assign:
    name: str
    value: Any
    loc: Loc


@dataclass
class MacroDef:
    name: str
    params: list[str]
    body: Any               # a Section, or one expression (``RFF_R(x, w, b) = Fn(...)``)
    loc: Loc


@dataclass
class Section:
    items: list[Any] = field(default_factory=list)
    loc: Loc | None = None


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r]+|\#[^\n]*)
  | (?P<nl>\n|;)
  | (?P<num>[0-9]+\.?[0-9]*(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?)
  | (?P<str>"[^"\n]*"|'[^'\n]*')
  | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[=(),\[\]{}:\-+])
""", re.X)


@dataclass
class _Tok:
    kind: str
    text: str
    loc: Loc


def _tokens(text: str, path: str | None, line: int, column: int) -> list[_Tok]:
    out: list[_Tok] = []
    pos, ln, col0 = 0, line, 0   # col0: offset of the line's start
    first_line_col = column - 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        col = pos - col0 + 1 + (first_line_col if ln == line else 0)
        if m is None:
            raise ConfigError(f"NDL: unexpected character {text[pos]!r}", path, ln, col)
        kind = m.lastgroup
        if kind != "ws":
            out.append(_Tok(kind, m.group(), Loc(path, ln, col)))
        if m.group() == "\n":
            ln += 1
            col0 = m.end()
        pos = m.end()
    out.append(_Tok("end", "", Loc(path, ln, 1)))
    return out


class _Parser:
    def __init__(self, toks: list[_Tok]):
        self.toks = toks
        self.i = 0

    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, text: str) -> _Tok:
        t = self.next()
        if t.text != text:
            got = "the end" if t.kind == "end" else f"'{t.text}'"
            raise ConfigError(f"NDL: expected '{text}', got {got}", *where(t.loc))
        return t

    def skip_nl(self) -> None:
        while self.peek().kind == "nl":
            self.i += 1

    def items(self, close: str | None) -> list[Any]:
        items: list[Any] = []
        while True:
            self.skip_nl()
            t = self.peek()
            if close is not None and t.text == close:
                self.i += 1
                return items
            if t.kind == "end":
                if close is not None:
                    raise ConfigError(f"NDL: '{close}' missing (the text ends first)",
                                      *where(t.loc))
                return items
            items.append(self.item())
            nxt = self.peek()
            if nxt.kind not in ("nl", "end") and nxt.text != close:
                raise ConfigError(f"NDL: unexpected '{nxt.text}' after an item (one item a line)",
                                  *where(nxt.loc))

    def item(self) -> Any:
        t = self.next()
        if t.kind != "name":
            raise ConfigError(f"NDL: expected a name, got '{t.text}'", *where(t.loc))
        if self.peek().text == "(":                 # a macro definition
            self.i += 1
            params: list[str] = []
            while self.peek().text != ")":
                p = self.next()
                if p.kind != "name":
                    raise ConfigError(f"NDL: a macro's parameters are names, got '{p.text}'",
                                      *where(p.loc))
                params.append(p.text)
                if self.peek().text == ",":
                    self.i += 1
            self.i += 1
            self.skip_nl()
            if self.peek().text == "=":
                self.i += 1
                self.skip_nl()
            if self.peek().text in ("[", "{"):
                body: Any = self.bare_call() or self.section()
            else:
                body = self.expr()
            return MacroDef(t.text, params, body, t.loc)
        self.expect("=")
        self.skip_nl()
        if self.peek().text in ("[", "{"):
            return Assign(t.text, self.section(), t.loc)
        return Assign(t.text, self.value(), t.loc)

    def bare_call(self) -> Any:
        """``{ Fn(...) }``: a body that is one call without a name, as a one-line macro's
        (cntk.exe parses a body after ``=`` allowing no definitions, so ``Fn(...)`` is a call);
        ``None`` (nothing read) for any other body."""
        start = self.i
        close = "]" if self.next().text == "[" else "}"
        self.skip_nl()
        if self.peek().kind == "name" and self.peek(1).text == "(":
            call = self.expr()
            self.skip_nl()
            if self.peek().text == close:
                self.i += 1
                return call
        self.i = start
        return None

    def section(self) -> Section:
        open_tok = self.next()
        close = "]" if open_tok.text == "[" else "}"
        return Section(self.items(close), open_tok.loc)

    def value(self) -> Any:
        """An item's value: an expression, or ``a:b`` (a list of names, ``load = A:B``)."""
        first = self.expr()
        if self.peek().text != ":":
            return first
        items = [first]
        while self.peek().text == ":":
            self.i += 1
            items.append(self.expr())
        return Array(items, first.loc)

    def expr(self) -> Any:
        t = self.next()
        if t.text in ("-", "+") and self.peek().kind == "num":
            n = self.next()
            return Num(_number(n.text) * (-1 if t.text == "-" else 1), t.loc)
        if t.kind == "num":
            return Num(_number(t.text), t.loc)
        if t.kind == "str":
            return Str(t.text[1:-1], t.loc)
        if t.text in ("(", "{"):          # (a, b): a node list; {a, b}: a shape
            close = ")" if t.text == "(" else "}"
            items = []
            while self.peek().text != close:
                self.skip_nl()
                items.append(self.expr())
                self.skip_nl()
                if self.peek().text == ",":
                    self.i += 1
                elif self.peek().text != close:
                    raise ConfigError(f"NDL: expected ',' or '{close}', got "
                                      f"'{self.peek().text}'", *where(self.peek().loc))
            self.i += 1
            return Array(items, t.loc)
        if t.kind != "name":
            got = "the end of the line" if t.kind in ("nl", "end") else f"'{t.text}'"
            raise ConfigError(f"NDL: expected a value, got {got}", *where(t.loc))
        if self.peek().text != "(":
            return Ref(t.text, t.loc)
        self.i += 1
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        while True:
            self.skip_nl()
            if self.peek().text == ")":
                self.i += 1
                return Call(t.text, args, kwargs, t.loc)
            if self.peek().kind == "name" and self.peek(1).text == "=":
                key = self.next().text
                self.i += 1
                kwargs[key.lower()] = self.expr()
            else:
                if kwargs:
                    raise ConfigError(f"NDL: {t.text}: a positional argument after an optional "
                                      "one", *where(self.peek().loc))
                args.append(self.expr())
            self.skip_nl()
            if self.peek().text == ",":
                self.i += 1
            elif self.peek().text != ")":
                raise ConfigError(f"NDL: {t.text}: expected ',' or ')', got "
                                  f"'{self.peek().text}'", *where(self.peek().loc))


def _number(text: str) -> int | float:
    """``3`` is an integer (a dimension, an index), ``3.0`` and ``1e-3`` are not."""
    return int(text) if text.isdigit() else float(text)


def parse_ndl(text: str, path: str | None = None, line: int = 1, column: int = 1) -> Section:
    """The items of an NDL text (a file, or a section's text), as a :class:`Section`.

    >>> s = parse_ndl('x = Input(3, tag="feature")\\nF(a) { y = Sigmoid(a) }')
    >>> [type(i).__name__ for i in s.items], s.items[0].value.kwargs["tag"].value
    (['Assign', 'MacroDef'], 'feature')
    """
    p = _Parser(_tokens(text, path, line, column))
    items = p.items(None)
    return Section(items, Loc(path, line, column))


def parse_ndl_block(text: str, path: str | None = None, line: int = 1,
                    column: int = 1) -> Section:
    """The items of a bracketed NDL text (``[ items ]`` or ``{ items }``: a config's
    ``NDLNetworkBuilder`` value), or of a bare one."""
    p = _Parser(_tokens(text, path, line, column))
    p.skip_nl()
    if p.peek().text not in ("[", "{"):
        return Section(p.items(None), Loc(path, line, column))
    section = p.section()
    p.skip_nl()
    if p.peek().kind != "end":
        raise ConfigError(f"NDL: unexpected '{p.peek().text}' after the block",
                          *where(p.peek().loc))
    return section


def section_names(item: Any) -> list[str]:
    """The section names an item ``load = a`` / ``run = (a, b)`` lists."""
    if item is None:
        return []
    value = item.value
    values = value.items if isinstance(value, Array) else [value]
    out = []
    for v in values:
        if not isinstance(v, (Ref, Str)):
            raise ConfigError(f"NDL: '{item.name}' must name sections", *where(item.loc))
        out.append(v.name if isinstance(v, Ref) else v.value)
    return out


def builder_settings(text: str) -> tuple[str, dict[str, str]]:
    """The file names of a builder block (paths are not NDL tokens), and its text without
    them (lines kept, so locations stay right)."""
    settings: dict[str, str] = {}
    lines = text.split("\n")
    pattern = re.compile(r"^(\s*\[?\s*)(ndlMacros|networkDescription|dumpFileName)\s*=\s*(.*?)"
                         r"\s*(\]?)\s*$", re.I)
    for k, line in enumerate(lines):
        m = pattern.match(line)
        if m:
            value = m.group(3)
            if value.startswith(("\"", "'")) and value.endswith(value[0]) and len(value) > 1:
                value = value[1:-1]
            settings[m.group(2).lower()] = value
            lines[k] = m.group(1) + " " * (len(line) - len(m.group(1)) - len(m.group(4))) + \
                m.group(4)
    return "\n".join(lines), settings

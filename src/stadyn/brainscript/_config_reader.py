"""Reading ``.cntk`` config text (a file, an include or a command-line override) into the raw
tree of blocks, scalars, arrays and network-description text that :mod:`._config` scopes.

The grammar (``config.lark``) only balances brackets; this module reads items (``key =
value``), values, ``:`` arrays and blocks off the bracket tree, splices ``include`` files, and
locates every error at its file, line and column.

Limits, so that no input can exhaust the stack or the memory: brackets and dotted keys nest at most
:data:`NESTING_LIMIT` levels (``$name$`` references chain at most as deep), and a config file holds
at most :data:`SIZE_LIMIT` bytes (:mod:`._source_files`).  A file whose first item is not ``key =
value`` (or ``key { ... }``, ``include ...``) is not taken for a config: its error names the file,
line and column but shows none of its text, so that ``include "/etc/passwd"`` does not print a
password file's first line.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedToken

from stadyn._errors import ConfigError

from ._ast import SourceLocation, config_error as _err
from ._parser import describe_expected, source_excerpt, unclosed_hint
from ._source_files import SIZE_LIMIT, read_source, resolve_include

__all__ = ["RAW_KEYS", "NESTING_LIMIT", "SIZE_LIMIT"]

_GRAMMAR = Path(__file__).with_name("config.lark")

#: Keys whose value is kept as source text (a network description in its own language).
RAW_KEYS = frozenset({"brainscriptnetworkbuilder", "experimentalnetworkbuilder",
                      "ndlnetworkbuilder"})

#: How deep blocks, arrays and dotted keys may nest (CNTK's own configs use a handful of levels).
NESTING_LIMIT = 100


# ---------------------------------------------------------------------------------------------
# raw tree (before scoping): what the files and overrides say, merged
# ---------------------------------------------------------------------------------------------

class _StrayCloser(Exception):
    """Closing brackets standing alone as an item at the file's level, at ``start:end``."""

    def __init__(self, start: int, end: int) -> None:
        super().__init__(start, end)
        self.start, self.end = start, end


def _lone_closers(text: str, pos: int) -> int | None:
    """Where the run of closing brackets at ``pos`` ends, if they alone make the item (only
    blanks before them on the line, only blanks or a comment after them)."""
    begin = max(text.rfind("\n", 0, pos), text.rfind(";", 0, pos)) + 1
    if text[begin:pos].strip(" \t\r"):
        return None
    end = pos
    while end < len(text) and text[end] in "]})":
        end += 1
    rest = end
    while rest < len(text) and text[rest] in " \t":
        rest += 1
    return end if rest == len(text) or text[rest] in "\r\n;#" else None


@dataclass
class _Scalar:
    text: str
    quoted: bool
    loc: SourceLocation


@dataclass
class _List:
    items: list[Any]
    text: str
    loc: SourceLocation


@dataclass
class _Raw:
    text: str
    loc: SourceLocation


@dataclass
class _Entry:
    key: str
    value: Any
    loc: SourceLocation
    read: bool = False      # some part of Stadyn read the value (see unused_overrides)


@dataclass
class _Block:
    loc: SourceLocation
    entries: dict[str, _Entry] = field(default_factory=dict)

    def set(self, parts: Sequence[str], value: Any, loc: SourceLocation) -> None:
        """Define ``a.b.c = value``: intermediate blocks are created; a block merges into a
        block."""
        block = self
        for part in parts[:-1]:
            entry = block.entries.get(part.lower())
            if entry is None or not isinstance(entry.value, _Block):
                entry = _Entry(part, _Block(loc), loc)
                block.entries[part.lower()] = entry
            block = entry.value
        key = parts[-1]
        old = block.entries.get(key.lower())
        if old is not None and isinstance(old.value, _Block) and isinstance(value, _Block):
            for e in value.entries.values():
                old.value.set([e.key], e.value, e.loc)
        else:
            block.entries[key.lower()] = _Entry(old.key if old else key, value, loc)


# ---------------------------------------------------------------------------------------------
# reading text -> raw tree
# ---------------------------------------------------------------------------------------------

@functools.cache
def _lark() -> Lark:
    return Lark(_GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="basic",
                start=["start", "start_tokens"], maybe_placeholders=False)


def _is(node: Any, *types: str) -> bool:
    return isinstance(node, Token) and node.type in types


class _Reader:
    """Reads one text (a file, an include or an override) into a :class:`_Block`."""

    def __init__(self, text: str, path: str | None, stack: tuple[str, ...] = (),
                 site: SourceLocation | None = None, from_disk: bool = False) -> None:
        self.text = text
        self.path = path
        self.stack = stack
        self.site = site            # the ``include`` that names this file, if one does
        self.from_disk = from_disk  # read from a file (not text a caller passed)

    # ---- helpers ---------------------------------------------------------------------------
    def loc(self, node: Any) -> SourceLocation:
        tok = node if isinstance(node, Token) else _first_token(node)
        return SourceLocation(self.path, tok.line, tok.column)

    def error(self, message: str, node_or_loc: Any) -> ConfigError:
        loc = node_or_loc if isinstance(node_or_loc, SourceLocation) else self.loc(node_or_loc)
        return _err(message + source_excerpt(self.text, loc.line, loc.column), loc)

    def source(self, nodes: Sequence[Any]) -> str:
        start = _first_token(nodes[0]).start_pos
        end = _last_token(nodes[-1]).end_pos
        return self.text[start:end]

    # ---- parse -----------------------------------------------------------------------------
    def read(self, into: _Block | None = None) -> _Block:
        block = into if into is not None else _Block(SourceLocation(self.path, 1, 1))
        try:
            self._items(self._tree().children, block, 0)
        except ConfigError as err:
            if err.path != self.path or not self.from_disk or _reads_as_config(self.text):
                raise
            # Not a config file: say where, and that it is not one, but quote none of it.
            if self.site is None:
                raise _err("not a config file (it does not start with 'key = value' items; "
                           "its text is not shown)", SourceLocation(self.path, err.line, err.column)
                           ) from None
            raise _err(f"cannot include '{self.path}': not a config file (line {err.line}, "
                       f"column {err.column} is not a 'key = value' item; its text is not shown)",
                       self.site) from None
        return block

    def _tree(self) -> Tree:
        while True:
            try:
                return self._parse()
            except _StrayCloser as stray:
                # cntk.exe's ConfigParser::Parse reads a closing bracket standing alone as an
                # item at the file's level as a key without '=' (set to "true", read by
                # nothing): ModelExport/Model0/0.cntk ends with one such ']'
                end = stray.end
                self.text = self.text[:stray.start] + " " * (end - stray.start) + self.text[end:]

    def _parse(self) -> Tree:
        try:
            return _lark().parse(self.text, start="start")
        except UnexpectedToken as err:
            tok = err.token
            if tok.type == "UNTERMINATED_STRING":
                raise self.error("string without closing quotation mark", tok) from None
            expected = describe_expected(_lark(), set(err.expected))
            hint = unclosed_hint(getattr(err.state, "value_stack", []), set(err.expected), tok)
            if tok.type == "$END":
                message = f"unexpected end of file; expected {_closing_only(expected)}{hint}"
                loc = _end_loc(self.text, self.path)
            else:
                closers = _closing_only(expected)
                if closers == expected:       # no bracket is open here
                    end = _lone_closers(self.text, tok.start_pos)
                    if end is not None:
                        raise _StrayCloser(tok.start_pos, end) from None
                message = f"unexpected '{tok.value}'; " + (
                    f"expected {closers}{hint}" if closers != expected
                    else "no bracket is open here")
                loc = SourceLocation(self.path, tok.line or 1, tok.column or 1)
            raise self.error(message, loc) from None
        except UnexpectedCharacters as err:  # cannot happen with this grammar; kept for safety
            loc = SourceLocation(self.path, err.line, err.column)
            raise self.error(f"unexpected character {err.char!r}", loc) from None

    def _items(self, nodes: Sequence[Any], block: _Block, depth: int) -> None:
        for item in _split(nodes, ("SEP", "NL")):
            self._item(item, block, depth)

    def _item(self, item: list[Any], block: _Block, depth: int) -> None:
        head = item[0]
        if not _is(head, "WORD"):
            raise self.error(f"expected a key (as in 'name = value'), got {_describe(head)}", head)
        if str(head).startswith("//"):
            # CNTK's reader took everything before a separator or '=' as a key, so a line such
            # as "// Note: ..." became a key named by its text, which nothing reads: skip it.
            return
        parts = str(head).split(".")
        if not all(p.isidentifier() for p in parts):
            raise self.error(f"invalid key '{head}': a key is a name, or names joined by '.'", head)
        depth += len(parts) - 1
        if depth > NESTING_LIMIT:
            raise self.error(f"blocks nested more than {NESTING_LIMIT} levels deep", head)
        if str(head).lower() == "include":
            self._include(item[1:], head, block)
            return
        loc = self.loc(head)
        if len(item) == 1:  # a bare key means true
            block.set(parts, _Scalar("true", False, loc), loc)
            return
        rest = item[1:]
        if _is(rest[0], "EQ"):
            value_nodes = rest[1:]
            if not value_nodes:
                raise self.error(f"no value given for '{head}'", rest[0])
        elif isinstance(rest[0], Tree) and len(rest) == 1:  # key[ ... ] or key{ ... }
            value_nodes = rest
        else:
            raise self.error(f"expected '=' after key '{head}', got {_describe(rest[0])}", rest[0])
        # a network description, also one renamed to switch it off (CNTK's configs keep
        # ``BrainScriptNetworkBuilder_plain = [ ... ]`` beside the one in use): not config text
        if parts[-1].lower().startswith(tuple(RAW_KEYS)):
            value: Any = _Raw(self.source(value_nodes), self.loc(value_nodes[0]))
        else:
            value = self._value(value_nodes, depth)
        block.set(parts, value, loc)

    def _value(self, nodes: list[Any], depth: int) -> Any:
        for n in nodes:
            if _is(n, "EQ"):
                raise self.error("unexpected '=' inside a value (quote the value if it holds "
                                 "one)", n)
        elements = _split(nodes, ("COLON",), keep_empty=True)
        if len(elements) == 1:
            return self._element(elements[0], depth)
        # CNTK's ConfigArray skips empty items: 'minibatchSize = 64:256:1024:' is 3 values
        items = [e for e in elements if e]
        if not items:
            raise self.error("a ':' array without items", nodes[0])
        return _List([self._element(e, depth) for e in items], self.source(nodes),
                     self.loc(nodes[0]))

    def _element(self, nodes: list[Any], depth: int) -> Any:
        first = nodes[0]
        if len(nodes) == 1 and isinstance(first, Tree):
            opener = first.children[0]
            inner = first.children[1:-1]
            if depth + 1 > NESTING_LIMIT:
                raise self.error(f"brackets nested more than {NESTING_LIMIT} levels deep", opener)
            if opener.type == "LPAR":
                items = [self._value(e, depth + 1) for e in _split(inner, ("COLON", "SEP", "NL"))]
                return _List(items, self.source(nodes), self.loc(first))
            block = _Block(self.loc(first))
            self._items(inner, block, depth + 1)
            return block
        if len(nodes) == 1 and _is(first, "STRING"):
            return _Scalar(str(first)[1:-1], True, self.loc(first))
        return _Scalar(self.source(nodes), False, self.loc(first))

    def _include(self, rest: list[Any], head: Token, block: _Block) -> None:
        if rest and _is(rest[0], "EQ"):
            rest = rest[1:]
        if not rest or any(isinstance(n, Tree) for n in rest):
            raise self.error("'include' needs a file name", rest[0] if rest else head)
        names = [str(rest[0])[1:-1]] if len(rest) == 1 and _is(rest[0], "STRING") \
            else self.source(rest).split("+")
        # cntk.exe opens a config's include as written (Config.cpp:118, ReadConfigFile): the
        # working folder first; the including file's folder is tried after it
        folders = [os.path.dirname(self.path)] if self.path and self.from_disk else []
        for name in names:
            target = resolve_include(name.strip().strip('"'), folders)
            if target is None:
                raise self.error(f"cannot include '{name.strip()}': file not found", rest[0])
            if target in self.stack:
                raise self.error(f"include cycle: {' -> '.join([*self.stack, target])}", rest[0])
            site = self.loc(rest[0])
            _Reader(read_source(target, site), target, (*self.stack, target), site,
                    from_disk=True).read(block)


def _reads_as_config(text: str) -> bool:
    """Does ``text`` start as a config does: a key followed by ``=``, a block, a separator or
    the end (a bare key), or ``include``?  (Decides only whether an error may quote it.)"""
    tokens = []
    try:
        for tok in _lark().lex(text):
            if tok.type not in ("NL", "SEP"):
                tokens.append(tok)
            elif tokens:
                break
            if len(tokens) == 2:
                break
    except Exception:  # noqa: BLE001 - the lexer rejects the text: not a config either
        return False
    if not tokens:
        return True
    head = tokens[0]
    if head.type != "WORD" or not all(p.isidentifier() for p in str(head).split(".")):
        return False
    if len(tokens) == 1:
        return True
    return tokens[1].type in ("EQ", "LBRACE", "LSQB") or (
        str(head).lower() == "include" and tokens[1].type == "STRING")


def _first_token(node: Any) -> Token:
    while isinstance(node, Tree):
        node = node.children[0]
    return node


def _last_token(node: Any) -> Token:
    while isinstance(node, Tree):
        node = node.children[-1]
    return node


def _describe(node: Any) -> str:
    if isinstance(node, Tree):
        return f"a block starting with '{_first_token(node)}'"
    return f"'{node}'"


def _closing_only(expected: str) -> str:
    """The config grammar accepts any token inside brackets; the useful part is the closer."""
    closers = [c for c in ("'}'", "']'", "')'") if c in expected]
    return " or ".join(closers) if closers else expected


def _split(nodes: Sequence[Any], seps: tuple[str, ...],
           keep_empty: bool = False) -> list[list[Any]]:
    parts: list[list[Any]] = [[]]
    for n in nodes:
        if _is(n, *seps):
            parts.append([])
        else:
            parts[-1].append(n)
    return parts if keep_empty else [p for p in parts if p]


def _end_loc(text: str, path: str | None) -> SourceLocation:
    lines = text.split("\n")
    return SourceLocation(path, len(lines), len(lines[-1]) + 1)

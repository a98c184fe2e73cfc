"""A bounded reader of protobuf *text format* that needs no schema (NNabla's ``.nntxt``).

The text format names every field, so a file can be read without the ``.proto`` it was written
from: the result is a :class:`TextMessage`, an ordered list of ``(field name, value)`` pairs where a
value is an ``int``, a ``float``, a ``bool`` (``true``/``false``/``True``/``False``), a ``str``
(quoted strings, C escapes decoded, adjacent strings joined), an :class:`Ident` (any other bare
word: an enum value) or a nested :class:`TextMessage`.  A repeated field is simply a name that
occurs more than once (or the list form ``name: [1, 2]``).

Nothing here recurses: nesting is followed with an explicit stack limited to ``max_depth``, and
every error is a :class:`stadyn.ModelFileError` naming the file and line.

Example:
    >>> from stadyn.serialize._pb_text import parse_text
    >>> m = parse_text('network { name: "n" batch_size: -1 shape { dim: 2 dim: 3 } }', "x.nntxt")
    >>> net = m.get("network"); net.get("name"), net.get("batch_size"), net.get("shape").all("dim")
    ('n', -1, [2, 3])
"""

from __future__ import annotations

import bisect
import re
from typing import Any, Iterator

from ._legacy_ir import fail

__all__ = ["TextMessage", "Ident", "parse_text"]

_TOKEN = re.compile(r"""
    (?P<skip>[ \t\r\n\f\v]+|\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<num>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[fF]?(?![A-Za-z0-9_.]))
  | (?P<word>-?[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[{}<>\[\]:;,])
""", re.VERBOSE)
_ESCAPE = re.compile(rb"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|(.))", re.DOTALL)
_SIMPLE = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"a": b"\a", b"b": b"\b", b"f": b"\f",
           b"v": b"\v", b"\\": b"\\", b"'": b"'", b'"': b'"', b"?": b"?"}
_BOOLS = {"true": True, "True": True, "t": True, "false": False, "False": False, "f": False}
_FLOAT_WORDS = {"inf": float("inf"), "-inf": float("-inf"), "infinity": float("inf"),
                "-infinity": float("-inf"), "nan": float("nan"), "-nan": float("nan")}


class Ident(str):
    """A bare word that is not a boolean: an enum value (``CpuCachedArray`` is a string, but
    ``kind: Buffer`` would be an Ident)."""


class TextMessage:
    """An ordered list of ``(name, value)`` fields."""

    __slots__ = ("fields", "line")

    def __init__(self, line: int = 0):
        self.fields: list[tuple[str, Any]] = []
        self.line = line

    def all(self, name: str) -> list:
        """Every value of field ``name``, in file order."""
        return [v for k, v in self.fields if k == name]

    def get(self, name: str, default: Any = None) -> Any:
        """The last value of ``name`` (protobuf's rule for a field given twice), or ``default``."""
        for k, v in reversed(self.fields):
            if k == name:
                return v
        return default

    def names(self) -> list[str]:
        """The distinct field names, in first-use order."""
        return list(dict.fromkeys(k for k, _ in self.fields))

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self.fields)

    def __repr__(self) -> str:
        return f"TextMessage({self.fields!r})"


def _unescape(body: str, path: str, line: int) -> str:
    raw = body.encode("utf-8")

    def one(m: re.Match) -> bytes:
        octal, hexa, char = m.groups()
        if octal is not None:
            return bytes([int(octal, 8) & 0xFF])
        if hexa is not None:
            return bytes([int(hexa, 16)])
        if char in _SIMPLE:
            return _SIMPLE[char]
        raise fail(path, f"line {line}: unknown escape \\{char.decode('latin-1')} in a string")

    try:
        return _ESCAPE.sub(one, raw).decode("utf-8")
    except UnicodeDecodeError:
        raise fail(path, f"line {line}: a string is not valid UTF-8") from None


def _number(text: str) -> int | float:
    t = text[:-1] if text[-1] in "fF" and not text.lower().startswith(("0x", "-0x", "+0x")) \
        else text
    low = t.lower().lstrip("+-")
    if low.startswith("0x"):
        return int(t, 16)
    if "." in t or "e" in low:
        return float(t)
    return int(t, 10)


def parse_text(text: str | bytes, path: str, max_depth: int = 100,
               max_bytes: int = 1 << 30) -> TextMessage:
    """Parse protobuf text ``text`` (from file ``path``, named in errors)."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > max_bytes:
            raise fail(path, f"{len(text)} bytes of text; more than {max_bytes} are not read")
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise fail(path, f"not UTF-8 text (byte {exc.start})") from None
    if len(text) > max_bytes:
        raise fail(path, f"{len(text)} characters of text; more than {max_bytes} are not read")
    newlines = [m.start() for m in re.finditer("\n", text)]

    def line_of(pos: int) -> int:
        return bisect.bisect_right(newlines, pos - 1) + 1

    root = TextMessage(1)
    stack: list[tuple[TextMessage, str]] = []     # (message, closing bracket)
    current = root
    pos, end = 0, len(text)
    name: str | None = None            # a field name waiting for its value
    colon = False
    in_list = False                    # inside name: [ ... ]
    list_expect_value = True
    list_count = 0
    tokens = _TOKEN.finditer(text)
    pending = None                     # a string token waiting for adjacent strings

    def flush_string():
        nonlocal pending, name, colon, list_count
        if pending is not None:
            value, at = pending
            current.fields.append((name, value))
            list_count += 1
            pending = None
            if not in_list:
                name, colon = None, False

    for m in tokens:
        if m.start() != pos:
            raise fail(path, f"line {line_of(pos)}: unexpected character {text[pos]!r}")
        pos = m.end()
        kind = m.lastgroup
        if kind == "skip":
            continue
        tok = m.group()
        at = m.start()
        if kind == "str":
            if name is None:
                raise fail(path, f"line {line_of(at)}: a string where a field name belongs")
            piece = _unescape(tok[1:-1], path, line_of(at))
            if pending is not None:
                pending = (pending[0] + piece, pending[1])
            else:
                if not colon and not in_list:
                    raise fail(path, f"line {line_of(at)}: missing ':' after {name!r}")
                pending = (piece, at)
                list_expect_value = False
            continue
        flush_string()
        if kind == "punct":
            if tok in "{<":
                if name is None or in_list:
                    raise fail(path, f"line {line_of(at)}: '{tok}' without a field name")
                if len(stack) >= max_depth:
                    raise fail(path, f"line {line_of(at)}: nested deeper than {max_depth}")
                child = TextMessage(line_of(at))
                current.fields.append((name, child))
                stack.append((current, "}" if tok == "{" else ">"))
                current, name, colon = child, None, False
            elif tok in "}>":
                if name is not None or not stack or stack[-1][1] != tok:
                    raise fail(path, f"line {line_of(at)}: unexpected '{tok}'")
                current, _ = stack.pop()
            elif tok == ":":
                if name is None or colon:
                    raise fail(path, f"line {line_of(at)}: unexpected ':'")
                colon = True
            elif tok == "[":
                if name is None or not colon or in_list:
                    raise fail(path, f"line {line_of(at)}: unexpected '['")
                in_list, list_expect_value, list_count = True, True, 0
            elif tok == "]":
                if not in_list or (list_expect_value and list_count):
                    raise fail(path, f"line {line_of(at)}: unexpected ']'")
                in_list, name, colon = False, None, False
            elif tok == ",":
                if in_list:
                    if list_expect_value:
                        raise fail(path, f"line {line_of(at)}: unexpected ','")
                    list_expect_value = True
                elif name is not None:
                    raise fail(path, f"line {line_of(at)}: unexpected ','")
            elif tok == ";":
                if name is not None or in_list:
                    raise fail(path, f"line {line_of(at)}: unexpected ';'")
            continue
        # a number or a word
        if name is None:
            if kind != "word" or tok.startswith("-"):
                raise fail(path, f"line {line_of(at)}: expected a field name, found {tok!r}")
            name, colon = tok, False
            continue
        if not colon and not in_list:
            raise fail(path, f"line {line_of(at)}: missing ':' after {name!r}")
        if in_list and not list_expect_value:
            raise fail(path, f"line {line_of(at)}: missing ',' in a list")
        if kind == "num":
            try:
                value: Any = _number(tok)
            except ValueError:
                raise fail(path, f"line {line_of(at)}: bad number {tok!r}") from None
        elif tok in _BOOLS:
            value = _BOOLS[tok]
        elif tok.lower() in _FLOAT_WORDS:
            value = _FLOAT_WORDS[tok.lower()]
        else:
            value = Ident(tok)
        current.fields.append((name, value))
        if in_list:
            list_expect_value = False
            list_count += 1
        else:
            name, colon = None, False
    if pos != end:
        raise fail(path, f"line {line_of(pos)}: unexpected character {text[pos]!r}")
    flush_string()
    if in_list:
        raise fail(path, f"line {line_of(end)}: the text ends inside a list")
    if name is not None:
        raise fail(path, f"line {line_of(end)}: the text ends after field {name!r}")
    if stack:
        raise fail(path, f"line {line_of(end)}: the text ends inside a message opened at line "
                         f"{current.line}")
    return root

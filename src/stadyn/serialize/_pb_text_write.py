"""Writing protobuf *text format* without a schema (NNabla's ``.nntxt``): the inverse of
:mod:`._pb_text`.

A message is a list of ``(field name, value)`` pairs, in the order they are written; a value is
a ``str`` (quoted, escaped), a ``bool`` (``true``/``false``), an ``int``, a ``float`` (``inf``,
``-inf``, ``nan`` as words), an :class:`~._pb_text.Ident` (an enum value, bare) or a nested
message (a list of pairs).  A repeated field is a name given more than once.

Example:
    >>> from stadyn.serialize._pb_text_write import format_text
    >>> print(format_text([("network", [("name", "n"), ("batch_size", -1),
    ...                                 ("shape", [("dim", 2), ("dim", 3)])])]), end="")
    network {
      name: "n"
      batch_size: -1
      shape {
        dim: 2
        dim: 3
      }
    }
"""

from __future__ import annotations

import math
from typing import Any

from ._pb_text import Ident

__all__ = ["format_text", "Message"]

Message = list  # list[tuple[str, Any]]


def _quote(text: str) -> str:
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _scalar(value: Any) -> str:
    if isinstance(value, Ident):
        return str(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    raise TypeError(f"a protobuf text value cannot be a {type(value).__name__} ({value!r})")


def format_text(message: Message, indent: int = 0) -> str:
    """``message`` (see the module docstring) as protobuf text, two spaces per level."""
    pad = "  " * indent
    lines = []
    for name, value in message:
        if isinstance(value, list):
            lines.append(f"{pad}{name} {{\n{format_text(value, indent + 1)}{pad}}}\n")
        else:
            lines.append(f"{pad}{name}: {_scalar(value)}\n")
    return "".join(lines)

"""CNTK.core.bs's functions of plain config values (numbers, strings, arrays) that cntk.exe's
evaluator computes in C++ (BrainScriptEvaluator.cpp's ``NumericFunction``, ``StringFunction``,
``CompareFunction`` and ``PrintAction``), for :class:`~._stadyn_library.StadynLibrary` (a
mixin).

Example:
    >>> from stadyn.brainscript import StadynLibrary
    >>> lib = StadynLibrary()
    >>> lib.Mod(-7, 3), lib.IntDiv(-7, 2), lib.Substr("network", -4, 2), lib.Chr(65)
    (-1, -3, 'wo', 'A')
    >>> lib.Format(2.5, ".3"), lib.Format(7, "4"), lib.Format("ab", "-4") + "|"
    ('2.500', '   7', 'ab  |')
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import ConfigError
from ._values import BSArray

__all__ = ["ValueFunctions"]


def _integer(x: Any, what: str, whole: bool = True) -> int:
    """``x`` as cntk.exe's ``(int)`` of a config value (``ConfigValuePtr::operator int``: a
    whole number, else "expected expression of type size_t instead of floating-point value");
    ``whole=False``: C++'s cast of the double, towards zero (``Chr``'s ``(wchar_t)(double)``)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x):
        raise ConfigError(f"{what}: needs numbers, got {x!r}")
    if whole and x != int(x):
        raise ConfigError(f"{what}: expected an integer instead of the floating-point value "
                          f"{x!r}")
    return int(x)


def _text(x: Any, what: str) -> str:
    if not isinstance(x, str):
        raise ConfigError(f"{what}: needs a string, got {x!r}")
    return x


class ValueFunctions:
    """``Mod``, ``IntDiv``, ``Chr``, ``Substr``, ``Replace``, ``Format``, ``Print``,
    ``IsArray``, ``IsDouble`` and ``IsBool``."""

    def _init_values(self) -> dict[str, Any]:
        return {"Mod": self.Mod, "IntDiv": self.IntDiv, "Chr": self.Chr, "Substr": self.Substr,
                "Replace": self.Replace, "Format": self.Format, "Print": self.Print,
                "IsArray": self.IsArray, "IsDouble": self.IsDouble, "IsBool": self.IsBool}

    def Mod(self, x, y):
        """The remainder of the two as integers (C++'s ``%``: the sign of ``x``)."""
        a, b = _integer(x, "Mod"), _integer(y, "Mod")
        if b == 0:
            raise ConfigError("Mod: division by zero")
        return int(math.fmod(a, b))

    def IntDiv(self, x, y):
        """The quotient of the two as integers, rounded towards zero (C++'s ``/``)."""
        a, b = _integer(x, "IntDiv"), _integer(y, "IntDiv")
        if b == 0:
            raise ConfigError("IntDiv: division by zero")
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q

    def Chr(self, c):
        """The one-character string of code ``c``."""
        return chr(_integer(c, "Chr", whole=False))

    def Substr(self, s, begin, num):
        """``num`` characters of ``s`` from ``begin`` (negative: from the end); either may
        run past the end, a negative ``num`` takes the rest."""
        text = _text(s, "Substr")
        b, n = _integer(begin, "Substr"), _integer(num, "Substr")
        start = len(text) + b if b < 0 else b
        start = len(text) if start < 0 or start > len(text) else start
        return text[start:] if n < 0 else text[start:start + n]

    def Replace(self, s, from_, to):
        """``s`` with every ``from`` replaced by ``to``."""
        return _text(s, "Replace").replace(_text(from_, "Replace"), _text(to, "Replace"))

    def Format(self, value, format):  # noqa: A002 - CNTK.core.bs's parameter name
        """``value`` as text by cntk.exe's ``FormatConfigValue``: ``format`` is the middle of a
        printf conversion (``".2"`` for ``%.2f``, no ``%``): a string ``%<format>s``, a whole
        number ``%<format>d``, another number ``%<format>f``; an array's items one a line in
        ``( ... )``, a record's ``name = value`` lines (by name) in ``[ ... ]``, indented."""
        return _formatted(value, _text(format, "Format"))

    def Print(self, value, format=""):  # noqa: A002 - CNTK.core.bs's parameter name
        """Write ``value`` (a string as it is, else ``Format (value, '')``) and a newline to
        stderr when evaluated (cntk.exe's ``PrintAction``, which ignores ``format``); the
        text written."""
        text = value if isinstance(value, str) else _formatted(value, "")
        print(text, file=sys.stderr)
        return text

    def IsArray(self, a):
        return isinstance(a, (BSArray, Sequence)) and not isinstance(a, str)

    def IsDouble(self, a):
        return isinstance(a, numbers.Real) and not isinstance(a, bool)

    def IsBool(self, a):
        return isinstance(a, bool)


def _formatted(value: Any, how: str) -> str:
    """cntk.exe's ``FormatConfigValue (value, how)`` (BrainScriptEvaluator.cpp)."""
    if "%" in how:
        raise ConfigError("FormatConfigValue: format string must not contain %")
    try:
        if isinstance(value, str):
            return ("%" + how + "s") % value
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            whole = math.isfinite(value) and value == int(value) and abs(value) < 2 ** 31
            return ("%" + how + "d") % int(value) if whole else ("%" + how + "f") % value
    except (TypeError, ValueError):
        raise ConfigError(f"Format: '{how}' is not the middle of a printf conversion") from None
    if isinstance(value, (BSArray, Sequence)):
        items = [_formatted(v, how) for v in value]
        return _nested("\n".join(items), "(", False, ")")
    if isinstance(value, Mapping):
        lines = [f"{name} = {_formatted(value[name], how)}" for name in sorted(value)]
        return _nested("\n".join(lines), "[", True, "]")
    raise ConfigError(f"Format: cannot format {type(value).__name__} {value!r} (strings, numbers, "
                      "arrays and records only)")


def _nested(text: str, open_: str, newline: bool, close: str) -> str:
    """cntk.exe's ``HasToString::NestString``: ``text`` indented by two, between ``open_`` and
    ``close`` (on lines of their own with ``newline``)."""
    inner = "\n".join("  " + line for line in text.split("\n"))
    inner = " \n" + inner + "\n " if newline else inner + "  "
    return open_ + inner[1:-1] + close

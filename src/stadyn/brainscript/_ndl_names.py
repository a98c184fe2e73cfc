"""cntk.exe's ``unnamed<n>`` names of NDL nodes made inside an argument.

NetworkDescriptionLanguage.h gives every NDL node it creates without a name the next number of
one count per process (``NDLNode::GenerateName``, ``++s_nameCounter``), when the text is
*parsed*, not when the network is built: a function call (also a named one: its node is created
before the item's name is set), a macro call, a number and an array each take one; optional
arguments (``key = value``), names and strings take none.  A macro's definition is parsed
once, when it is read; a call of it copies its body (``NDLScript``'s copy constructor), which
parses the arguments of each body item again (new numbers), copying the bodies of the macros
called there first, and then the call's own arguments are parsed.  A one-line macro
(``M(x) = Fn(x)``) keeps the number its body's call took when it was defined.

:class:`NameCount` walks NDL expressions in that order; :mod:`._ndl` takes a name from it as it
expands a node.
"""

from __future__ import annotations

import re
from typing import Any

from ._ndl_parser import Array, Assign, Call, MacroDef, Num, Section

__all__ = ["Macros", "NameCount", "FRESH", "COPIED", "UNCOUNTED", "older_names"]

FRESH = 2       # parsed here: the expression's own node takes a number
COPIED = 1      # an item of a macro's copied body: only its arguments are parsed again
UNCOUNTED = 0   # an optional argument's value


class Macros(dict):
    """The macros defined so far (lower-case name -> :class:`MacroDef`), with a count of the
    definitions made, so what was worked out from them can tell it is out of date."""

    def __init__(self) -> None:
        super().__init__()
        self.version = 0

    def __setitem__(self, name: str, macro: MacroDef) -> None:
        super().__setitem__(name, macro)
        self.version += 1


class NameCount:
    """The run's count (kept in ``cell``, a one-element list) and the macros it may copy."""

    def __init__(self, cell: list[int], macros: Macros):
        self.cell, self.macros = cell, macros
        self.one_line: dict[str, int] = {}    # macro (lower case) -> its body call's number
        # copy()'s numbers per macro (by id), good while macros.version is _copies_version
        self._copies: dict[int, int] = {}
        self._copies_version = -1

    @property
    def value(self) -> int:
        return self.cell[0]

    @value.setter
    def value(self, n: int) -> None:
        self.cell[0] = n

    def take(self, mode: int) -> int | None:
        """The next number, if a node parsed in ``mode`` takes one."""
        if mode != FRESH:
            return None
        self.cell[0] += 1
        return self.cell[0]

    def count(self, expr: Any, mode: int) -> int:
        """How many numbers parsing ``expr`` takes."""
        if mode == UNCOUNTED:
            return 0
        own = 1 if mode == FRESH else 0
        if isinstance(expr, Num):
            return own
        if isinstance(expr, Array):
            return own + sum(self.count(e, FRESH) for e in expr.items)
        if not isinstance(expr, Call):
            return 0
        args = sum(self.count(a, FRESH) for a in expr.args)
        macro = self.macros.get(expr.function.lower())
        return own + args + (self.copy(macro) if macro is not None else 0)

    def copy(self, macro: MacroDef) -> int:
        """How many numbers copying ``macro``'s body for a call takes (worked out once per
        macro while no macro is defined anew: a body's nested calls copy their macros too)."""
        if self._copies_version != self.macros.version:
            self._copies, self._copies_version = {}, self.macros.version
        known = self._copies.get(id(macro))
        if known is None:
            if isinstance(macro.body, Section):
                known = sum(self.count(i.value, COPIED) for i in macro.body.items
                            if isinstance(i, Assign) and not isinstance(i.value, Section))
            else:
                known = self.count(macro.body, COPIED)
            self._copies[id(macro)] = known
        return known

    def define(self, macro: MacroDef) -> None:
        """Reading ``macro``'s definition: its body's nodes take numbers (no copies)."""
        if isinstance(macro.body, Section):
            self.value += sum(_defining(i.value) for i in macro.body.items
                              if isinstance(i, Assign) and not isinstance(i.value, Section))
        else:
            if isinstance(macro.body, Call):
                self.one_line[macro.name.lower()] = self.value + 1
            self.value += _defining(macro.body)


def _defining(expr: Any) -> int:
    """Numbers taken by an expression of a macro definition (a macro call is not copied)."""
    if isinstance(expr, Num):
        return 1
    if isinstance(expr, Array):
        return 1 + sum(_defining(e) for e in expr.items)
    if isinstance(expr, Call):
        return 1 + sum(_defining(a) for a in expr.args)
    return 0


_PLACEHOLDER = re.compile(r"anonymous(_[0-9]+)?/W")     # (StadynLibrary's, until named)
_UNNAMED = re.compile(r"unnamed[0-9]+")


def older_names(params: dict[str, Any], made: dict[int, str], instances: dict[str, str]
                ) -> dict[str, str]:
    """The names a Stadyn before cntk.exe's ``unnamed<n>`` (d47d4df) gave an NDL network's
    parameters, where they differ (parameter name -> older name): one made inside an argument
    kept the name it was made under (``anonymous_<k>/W``, in ``made``: the parameter's id ->
    that name); one in a macro call made inside an argument was ``unnamed<k>.b`` after a count
    of such calls of its own (``instances``: the call's name now -> then).

    >>> older_names({"unnamed9": 1, "unnamed18.b": 2}, {id(1): "anonymous_1/W"},
    ...             {"unnamed18": "unnamed4"})
    {'unnamed9': 'anonymous_1/W', 'unnamed18.b': 'unnamed4.b'}
    """
    out = {}
    for name, v in params.items():
        first = made.get(id(v), name)
        if first != name and _PLACEHOLDER.fullmatch(first) and \
                _UNNAMED.fullmatch(name.rpartition(".")[2]):
            out[name] = first
            continue
        prefix = max((p for p in instances if name.startswith(p + ".")), key=len, default=None)
        if prefix is not None and instances[prefix] + name[len(prefix):] != name:
            out[name] = instances[prefix] + name[len(prefix):]
    return out

"""The outer ``.cntk`` config language -> a case-insensitive tree of located values.

What CNTK's config reader did, and this module does:

- items ``key = value`` separated by newlines, ``;`` or ``,``; a bare ``key`` means ``true``;
  ``#`` comments; keys are case-insensitive (the spelling of the first definition is kept);
- blocks ``{ ... }`` or ``[ ... ]``; ``( a : b )`` and ``a : b : c`` are arrays; ``v*n`` inside a
  numeric vector repeats ``v`` n times (:func:`expand_repeats`, used by the typed getters);
- a later definition of a key replaces an earlier one, except that a block given for a block
  merges into it; command-line overrides (``key=value``, ``Train.SGD.maxEpochs=2`` or
  ``Train=[SGD=[maxEpochs=2]]``) are read after the files, so they win;
- ``include "file"`` (or ``include = file``) splices a file's items in place, the path
  relative to the working directory as cntk.exe opens it (else to the including file);
- ``$name$`` is replaced by the value of ``name``, looked up in the enclosing blocks outwards,
  when the value is read (so an override of ``rootDir`` reaches ``dataDir = "$rootDir$/data"``);
- the value of ``BrainScriptNetworkBuilder`` (another language) is kept as source text, with its
  position, for :mod:`._parser`.

Every value remembers its file, line and column; every error names them.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stadyn._errors import ConfigError

from ._ast import SourceLocation
from ._config_reader import (NESTING_LIMIT, RAW_KEYS, _Block, _Entry, _err, _List, _Raw, _Reader,
                             _Scalar)
from ._parser import parse_expression
from ._source_files import read_source

__all__ = [
    "ConfigRecord", "ConfigString", "ConfigList", "BrainScriptSource", "ConfigKeyError",
    "parse_config", "load_config", "expand_repeats", "unused_overrides", "RAW_KEYS",
]

#: The most values a numeric vector (``a:b*n:c``) holds once its repeats are expanded.
VECTOR_LIMIT = 1 << 20

# `$name$`: a name starts with a letter or `_` and holds none of CNTK's forbidden characters.
_INF = re.compile(r"[+-]?[0-9.]+#inf", re.I)
_VAR = re.compile(r"\$([A-Za-z_][^,/<>?;':\"\[\]{}\\|!@#%^&*()+=~` \t\n$]*)\$")


class ConfigKeyError(ConfigError, KeyError):
    """A required key is missing (a :class:`ConfigError` that is also a ``KeyError``)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return ConfigError.__str__(self)


# ---------------------------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------------------------

class ConfigString(str):
    """A scalar config value: a ``str`` that also knows where it was written (``loc``)."""

    loc: SourceLocation | None
    quoted: bool

    def __new__(cls, value: str, loc: SourceLocation | None = None,
                quoted: bool = False) -> ConfigString:
        s = super().__new__(cls, value)
        s.loc = loc
        s.quoted = quoted
        return s


class ConfigList(list):
    """An array value (``a:b:c`` or ``( ... )``): a ``list`` with ``loc`` and its source
    ``text``."""

    def __init__(self, items: Iterable[Any] = (), loc: SourceLocation | None = None,
                 text: str = "") -> None:
        super().__init__(items)
        self.loc = loc
        self.text = text


@dataclass(frozen=True)
class BrainScriptSource:
    """The source text of a ``BrainScriptNetworkBuilder`` value and where it starts.

    >>> src = BrainScriptSource("{ a = 1 }", "x.cntk", 3, 31)
    >>> src.parse().members[0].loc.line
    3
    """

    text: str
    path: str | None = None
    line: int = 1
    column: int = 1
    #: every config file's folder: where its ``include`` looks (Config.cpp:66)
    include_dirs: tuple[str, ...] = ()

    @property
    def loc(self) -> SourceLocation:
        return SourceLocation(self.path, self.line, self.column)

    def parse(self):
        """Parse the text as one BrainScript expression (errors point into the config file)."""
        return parse_expression(self.text, self.path, line=self.line, column=self.column,
                                include_dirs=self.include_dirs)


# ---------------------------------------------------------------------------------------------
# scoped tree: ConfigRecord
# ---------------------------------------------------------------------------------------------

_MISSING: Any = object()


class ConfigRecord(Mapping):
    """A config block: case-insensitive keys, values resolved (``$var$``) on access.

    Values are :class:`ConfigString` (scalars), :class:`ConfigList` (arrays), nested
    ``ConfigRecord`` (blocks) and :class:`BrainScriptSource` (network descriptions).  A missing
    key raises :class:`ConfigKeyError` naming the key and the block.  :meth:`lookup` searches the
    enclosing blocks too, as CNTK does for inherited settings such as ``modelPath``.

    >>> cfg = parse_config('dir = "/d"\\nTrain = [ file = "$dir$/x" ; SGD = { maxEpochs = 3 } ]')
    >>> cfg["train"]["FILE"], cfg["Train"]["SGD"].get_int("maxEpochs"), cfg["Train"].path
    ('/d/x', 3, 'Train')
    """

    def __init__(self, block: _Block, parent: ConfigRecord | None, path: str,
                 inherits: ConfigRecord | None = None) -> None:
        self._block = block
        self._parent = parent         # where its $var$ are looked up
        # where its inherited settings are (:meth:`lookup`): a block named by ``$name$`` in
        # another (``SGD = $S$``) is pasted there, as cntk.exe's text substitution, so it
        # inherits that block's settings (``T = [ modelPath = ... ]``), not its definer's
        self._inherits = parent if inherits is None else inherits
        self.path = path
        self.loc = block.loc
        self._cache: dict[str, Any] = {}
        #: the folders of the config files read (a BrainScript ``include`` looks there)
        self.include_dirs: tuple[str, ...] = parent.include_dirs if parent is not None else ()

    # ---- mapping ---------------------------------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        entry = self._block.entries.get(key.lower())
        if entry is None:
            where = f"block '{self.path}'" if self.path else "the config"
            raise _err(f"missing key '{key}' in {where}", self.loc, ConfigKeyError)
        entry.read = True
        return self.peek(key)

    def peek(self, key: str) -> Any:
        """``self[key]`` without counting as a read of it (for sweeps that gather every value
        of a block; see :func:`unused_overrides`)."""
        entry = self._block.entries.get(key.lower())
        if entry is None:
            return self[key]                 # the missing-key error
        if key.lower() not in self._cache:
            # the key being read is "active": a ``$key$`` in its own value means the key of an
            # enclosing block (CNTK's ``modelPath = "$modelPath$"`` in a command block)
            self._cache[key.lower()] = self._resolve(entry.value, self._child_path(entry.key),
                                                     {(id(self), key.lower())})
        return self._cache[key.lower()]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._block.entries

    def __iter__(self) -> Iterator[str]:
        return (e.key for e in self._block.entries.values())

    def __len__(self) -> int:
        return len(self._block.entries)

    def __repr__(self) -> str:
        return f"ConfigRecord({self.path or '<root>'}: {', '.join(self)})"

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    # ---- scoping ---------------------------------------------------------------------------
    @property
    def parent(self) -> ConfigRecord | None:
        return self._parent

    def lookup(self, key: str, default: Any = _MISSING) -> Any:
        """``key`` from this block or the nearest enclosing block that has it."""
        rec: ConfigRecord | None = self
        while rec is not None:
            if key in rec:
                return rec[key]
            rec = rec._inherits
        if default is not _MISSING:
            return default
        where = f"block '{self.path}'" if self.path else "the config"
        raise _err(f"missing key '{key}' in {where} and the blocks around it", self.loc,
                   ConfigKeyError)

    def location(self, key: str) -> SourceLocation:
        """Where ``key`` was (last) defined."""
        entry = self._block.entries.get(key.lower())
        if entry is None:
            raise _err(f"missing key '{key}'", self.loc, ConfigKeyError)
        return entry.loc

    def key_path(self, key: str) -> str:
        """``Block.Sub.key`` for messages."""
        entry = self._block.entries.get(key.lower())
        return self._child_path(entry.key if entry else key)

    def _child_path(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    # ---- $var$ resolution --------------------------------------------------------------------
    def _resolve(self, value: Any, path: str, active: set) -> Any:
        if isinstance(value, _Block):
            return ConfigRecord(value, self, path)
        if isinstance(value, _Scalar):
            whole = None if value.quoted else _VAR.fullmatch(value.text.strip())
            if whole is not None:         # ``input = $readerInputs$``: a block by its name
                rec, entry = self._find_variable(whole.group(1), value.loc, active)
                if isinstance(entry.value, _Block):
                    entry.read = True
                    return ConfigRecord(entry.value, rec, path, inherits=self)
            return ConfigString(self._substitute(value.text, value.loc, active), value.loc,
                                value.quoted)
        if isinstance(value, _List):
            items = [self._resolve(v, f"{path}[{k}]", active) for k, v in enumerate(value.items)]
            # the array's text: a block named in it (``({ input = $inputs$ })``) stays as written
            return ConfigList(items, value.loc,
                              self._substitute(value.text, value.loc, active, keep_blocks=True))
        if isinstance(value, _Raw):
            return BrainScriptSource(self._substitute(value.text, value.loc, active),
                                     value.loc.path, value.loc.line, value.loc.column,
                                     self.include_dirs)
        raise TypeError(value)  # pragma: no cover - the reader makes only the kinds above

    def _substitute(self, text: str, loc: SourceLocation, active: set,
                    keep_blocks: bool = False) -> str:
        if "$" not in text:
            return text
        return _VAR.sub(lambda m: self._variable(m.group(1), loc, active, keep_blocks), text)

    def _find_variable(self, name: str, loc: SourceLocation,
                       active: set) -> tuple[ConfigRecord, Any]:
        """The block defining ``$name$`` and its entry: the nearest one around, passing over a
        definition whose value is being resolved (``x = "$x$"`` reads the ``x`` of an enclosing
        block, as CNTK did)."""
        rec: ConfigRecord | None = self
        skipped = False
        while rec is not None and (name.lower() not in rec._block.entries or
                                   (id(rec), name.lower()) in active):
            skipped = skipped or name.lower() in rec._block.entries
            rec = rec._parent
        if rec is None and skipped:
            raise _err(f"circular variable reference '${name}$'", loc)
        if rec is None:
            raise _err(f"unknown variable '${name}$': no key '{name}' in this block or around it",
                       loc)
        return rec, rec._block.entries[name.lower()]

    def _variable(self, name: str, loc: SourceLocation, active: set,
                  keep_blocks: bool = False) -> str:
        rec, _ = self._find_variable(name, loc, active)
        marker = (id(rec), name.lower())
        if len(active) > NESTING_LIMIT:      # (``active`` holds the key being read, too)
            raise _err(f"variable references ('$name$' in the value of a name) nested more than "
                       f"{NESTING_LIMIT} levels deep, at '${name}$'", loc)
        entry = rec._block.entries[name.lower()]
        entry.read = True
        value = entry.value
        if isinstance(value, _Scalar):
            return rec._substitute(value.text, entry.loc, active | {marker})
        if isinstance(value, _List):
            return rec._substitute(value.text, entry.loc, active | {marker}, keep_blocks)
        if keep_blocks:
            return f"${name}$"
        raise _err(f"variable '${name}$' names a block, not a value", loc)

    # ---- typed getters -----------------------------------------------------------------------
    def _fetch(self, key: str, default: Any, inherited: bool) -> Any:
        if inherited:
            return self.lookup(key, default)
        if key in self:
            return self[key]
        if default is not _MISSING:
            return default
        return self[key]  # raises ConfigKeyError

    def get_str(self, key: str, default: Any = _MISSING, *, inherited: bool = False) -> Any:
        """``key`` as a string (an array is given back as its source text)."""
        v = self._fetch(key, default, inherited)
        if isinstance(v, ConfigList):
            return ConfigString(v.text, v.loc)
        if isinstance(v, (ConfigRecord, BrainScriptSource)):
            raise self._type_error(key, v, "a value")
        return v

    def get_int(self, key: str, default: Any = _MISSING, *, inherited: bool = False) -> Any:
        return self._scalar(key, default, inherited, to_int, "an integer")

    def get_float(self, key: str, default: Any = _MISSING, *, inherited: bool = False) -> Any:
        return self._scalar(key, default, inherited, to_float, "a number")

    def get_bool(self, key: str, default: Any = _MISSING, *, inherited: bool = False) -> Any:
        return self._scalar(key, default, inherited, to_bool, "a boolean (true/false)")

    def get_floats(self, key: str, default: Any = _MISSING, *, inherited: bool = False) -> Any:
        """``key`` as a vector of numbers: ``a:b*n:c`` with ``*n`` repeats expanded."""
        return self._vector(key, default, inherited, to_float, "numbers")

    def get_ints(self, key: str, default: Any = _MISSING, *, inherited: bool = False) -> Any:
        return self._vector(key, default, inherited, to_int, "integers")

    def get_strs(self, key: str, default: Any = _MISSING, *, inherited: bool = False) -> Any:
        """``key`` as a list of strings (a single value gives a list of one)."""
        v = self._fetch(key, default, inherited)
        if v is default and default is not _MISSING:
            return v
        items = v if isinstance(v, ConfigList) else [v]
        for item in items:
            if not isinstance(item, str):
                raise self._type_error(key, item, "a list of values")
        return [ConfigString(str(i), getattr(i, "loc", None)) for i in items]

    def get_record(self, key: str, default: Any = _MISSING, *, inherited: bool = False) -> Any:
        v = self._fetch(key, default, inherited)
        if v is default and default is not _MISSING:
            return v
        if not isinstance(v, ConfigRecord):
            raise self._type_error(key, v, "a block { ... }")
        return v

    def _scalar(self, key, default, inherited, convert, what):
        v = self._fetch(key, default, inherited)
        if v is default and default is not _MISSING:
            return v
        if isinstance(v, ConfigList) and len(v) == 1:
            v = v[0]
        if not isinstance(v, str):
            raise self._type_error(key, v, what)
        try:
            return convert(v)
        except ValueError:
            raise _err(f"'{self.key_path(key)}' must be {what}, got '{v}'", v.loc) from None

    def _vector(self, key, default, inherited, convert, what):
        v = self._fetch(key, default, inherited)
        if v is default and default is not _MISSING:
            return v
        items = v if isinstance(v, ConfigList) else [v]
        for item in items:
            if not isinstance(item, str):
                raise self._type_error(key, item, f"a vector of {what}")
        try:
            return expand_repeats(items, convert)
        except ValueError as err:
            raise _err(f"'{self.key_path(key)}' must be a vector of {what} (a:b*n:c): {err}",
                       getattr(v, "loc", None)) from None

    def _type_error(self, key: str, v: Any, what: str) -> ConfigError:
        kind = {ConfigRecord: "a block", ConfigList: "an array", BrainScriptSource: "BrainScript"}
        got = next((name for cls, name in kind.items() if isinstance(v, cls)), f"'{v}'")
        return _err(f"'{self.key_path(key)}' must be {what}, got {got}", getattr(v, "loc", None))


# ---------------------------------------------------------------------------------------------
# conversions
# ---------------------------------------------------------------------------------------------

_TRUE = {"t", "true", "1"}
_FALSE = {"f", "false", "0", ""}


def to_bool(s: str) -> bool:
    """CNTK's booleans: ``true/t/1`` and ``false/f/0/''``, any case."""
    low = s.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(s)


def to_float(s: str) -> float:
    """A number; ``1#INF`` (how Windows printed infinity) is infinity, as CNTK read it.

    >>> to_float(" 0.5 "), to_float("1#INF")
    (0.5, inf)
    """
    text = s.strip()
    if _INF.fullmatch(text):
        return math.inf
    return float(text)


def to_int(s: str) -> int:
    text = s.strip()
    try:
        return int(text)
    except ValueError:
        value = float(text)
        if not value.is_integer():
            raise
        return int(value)


def expand_repeats(items: Iterable[str], convert=to_float) -> list:
    """Expand a CNTK vector: items are ``v`` or ``v*n`` (``v`` repeated ``n`` times); a string
    item holding ``:`` is split first.

    A vector holds at most :data:`VECTOR_LIMIT` values once expanded (``0.1*1e12`` is an
    error, not a terabyte list).

    >>> expand_repeats(["0.1*2", "0.05"]), expand_repeats(["64:32*2"], to_int)
    ([0.1, 0.1, 0.05], [64, 32, 32])
    """
    out: list = []
    for item in items:
        for piece in str(item).split(":"):
            value, star, count = piece.partition("*")
            n = to_int(count) if star else 1
            if n < 1:
                raise ValueError(f"repeat count must be at least 1 in '{piece.strip()}'")
            if len(out) + n > VECTOR_LIMIT:
                raise ValueError(f"'{piece.strip()}' makes the vector longer than "
                                 f"{VECTOR_LIMIT:,} values")
            out += [convert(value)] * n
    if not out:
        raise ValueError("empty vector")
    return out


# ---------------------------------------------------------------------------------------------
# public entry points
# ---------------------------------------------------------------------------------------------

def parse_config(text: str, path: str | None = None, overrides: Sequence[str] = ()) -> ConfigRecord:
    """Read config text (and ``key=value`` overrides) into a :class:`ConfigRecord`.

    >>> cfg = parse_config("command = Train:Test\\nTrain = { action = train }", overrides=["a.b=2"])
    >>> list(cfg["command"]), cfg["a"].get_int("b")
    (['Train', 'Test'], 2)
    """
    stack = (os.path.normpath(path),) if path else ()
    root = _Reader(text, path, stack).read()
    _apply_overrides(root, overrides)
    record = ConfigRecord(root, None, "")
    record.include_dirs = (os.path.dirname(path),) if path else ()
    return record


def load_config(paths: str | os.PathLike | Sequence[str | os.PathLike],
                overrides: Sequence[str] = ()) -> ConfigRecord:
    """Read one or more ``.cntk`` files (later ones win), then command-line overrides.

    ``overrides`` are CNTK command-line items: ``dataDir=/data``, ``Train.SGD.maxEpochs=2`` or
    ``Train=[SGD=[maxEpochs=2]]``.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    root = _Block(SourceLocation(None, 1, 1))
    for p in paths:
        name = os.fspath(p)
        text = read_source(name, None)
        norm = os.path.normpath(name)
        if root.loc.path is None:
            root.loc = SourceLocation(name, 1, 1)
        _Reader(text, name, (norm,), from_disk=True).read(root)
    _apply_overrides(root, overrides)
    record = ConfigRecord(root, None, "")
    record.include_dirs = tuple(dict.fromkeys(os.path.dirname(os.fspath(p)) for p in paths))
    return record


_OVERRIDE_SOURCE = "<command line "


def _apply_overrides(root: _Block, overrides: Sequence[str]) -> None:
    """Read the overrides in order.  cntk.exe joined its arguments with newlines into one config
    text (Config.cpp, ParseCommandLine), so an item whose brackets are still open continues in
    the next argument (``T=[reader=[a=1`` ``b=2]]``, as a shell splits an unquoted override):
    such arguments are read together, as the lines of one ``<command line N>``."""
    k = 0
    while k < len(overrides):
        text, first = str(overrides[k]), k
        while _open_brackets(text) > 0 and k + 1 < len(overrides):
            k += 1
            text += "\n" + str(overrides[k])
        _Reader(text, f"{_OVERRIDE_SOURCE}{first + 1}>").read(root)
        k += 1


def _open_brackets(text: str) -> int:
    """How many of ``text``'s brackets are still open at its end (quoted text not counted).

    >>> _open_brackets('T=[r=([type="a]" x'), _open_brackets("a=(1:2)")
    (3, 0)
    """
    depth, quoted = 0, False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "[{(":
            depth += 1
        elif not quoted and ch in "]})":
            depth -= 1
    return depth


def unused_overrides(root: ConfigRecord) -> list[tuple[str, list[str]]]:
    """The command-line overrides no part of Stadyn has read so far: ``(key=value, paths)`` for
    each, where ``paths`` are the keys of that name the config did read (``T.SGD.maxEpochs``).

    >>> cfg = parse_config("T = { SGD = { maxEpochs = 3 } }", overrides=["maxEpochs=1"])
    >>> cfg["T"]["SGD"].get_int("maxEpochs")
    3
    >>> unused_overrides(cfg)
    [('maxEpochs=1', ['T.SGD.maxEpochs'])]
    """
    leaves: list[tuple[str, _Entry]] = []

    def walk(block: _Block, prefix: str) -> None:
        for entry in block.entries.values():
            path = f"{prefix}{entry.key}"
            if isinstance(entry.value, _Block):
                walk(entry.value, path + ".")
            else:
                leaves.append((path, entry))
    walk(root._block, "")
    unused = []
    for path, entry in leaves:
        source = entry.loc.path or ""
        if entry.read or not source.startswith(_OVERRIDE_SOURCE):
            continue
        text = getattr(entry.value, "text", "")
        read_as = [p for p, e in leaves if e.read and e is not entry
                   and p.rsplit(".", 1)[-1].lower() == entry.key.lower()]
        unused.append((int(source[len(_OVERRIDE_SOURCE):-1]), f"{path}={text}", read_as))
    return [(item, read_as) for _, item, read_as in sorted(unused, key=lambda u: u[0])]

"""Reading a MEL script (cntk.exe's Model Editing Language, ``_mel.py`` runs it): its
statements, one a line (``#`` starts a comment), ``$var$`` read from the edit command's block;
a command's arguments as values (strings, numbers, booleans) and names (:class:`_Symbol`); a
command Stadyn does not run, or one MEL does not have, is a ConfigError naming its line.
Whether an ``edit`` command runs a MEL script, and the model files it saves, are read here
too (for the checks before a run)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from .._errors import ConfigError
from ._ast import SourceLocation
from ._command_network import record_loc
from ._config import ConfigRecord

__all__ = ["read_mel", "mel_saved_models", "is_mel_block", "is_mel_edit"]

_RUN = {"loadmodel": "LoadModel", "savemodel": "SaveModel", "setdefaultmodel": "SetDefaultModel",
        "setnodeinput": "SetInput", "setinput": "SetInput", "dumpmodel": "Dump", "dump": "Dump",
        "setproperty": "SetProperty", "removenode": "Delete", "remove": "Delete",
        "deletenode": "Delete", "delete": "Delete", "rename": "Rename"}
_REFUSED = ("CreateModel", "CreateModelWithName", "LoadModelWithName", "LoadNDLSnippet",
            "SaveDefaultModel", "UnloadModel", "DumpNode", "CopyNode", "Copy", "CopySubTree",
            "CopyNodeInputs", "CopyInputs", "SetNodeInputs", "SetInputs",
            "SetPropertyForSubTree", "ReviseParameter")
_STATEMENT = re.compile(r"^\s*(?:(?P<target>[A-Za-z_][\w.]*)\s*=\s*)?"
                        r"(?P<function>[A-Za-z_]\w*)\s*\((?P<args>.*)\)\s*$")
_VAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_.]*)\$")
_RUNS = ("LoadModel, SetDefaultModel, NDL items, SetInput, SetProperty, Delete, Rename, "
         "SaveModel and Dump")


@dataclass
class _Statement:
    line: int
    text: str                       # the line ($var$ replaced)
    function: str | None = None     # a MEL command's canonical name; None: an NDL item
    target: str | None = None
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)


class _Symbol(str):
    """A name in a MEL command's arguments (a model, a node, a pattern), not a string."""


def _split(text: str) -> list[str]:
    """A command's arguments: split at the commas outside quotes and parentheses."""
    parts, depth, quote, start = [], 0, "", 0
    for k, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _value(text: str) -> Any:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return _Symbol(text)


def read_mel(path: str, record: ConfigRecord) -> list[_Statement]:
    """The statements of the MEL script ``path``, its ``$var$`` read from ``record`` (the edit
    command's block); a command Stadyn does not run is a ConfigError naming its line."""
    if not os.path.isfile(path):
        raise ConfigError(f"edit: the MEL script '{path}' (editPath) does not exist",
                          *record_loc(record, "editPath"))
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    statements = []
    for number, raw in enumerate(lines, 1):
        text = _without_comment(raw)
        if not text.strip():
            continue
        text = _VAR.sub(lambda m, n=number: record._variable(
            m.group(1), SourceLocation(path, n, m.start() + 1), set()), text)
        statement = _Statement(number, text)
        m = _STATEMENT.match(text)
        if m is not None and m.group("target") is not None and \
                m.group("function").lower() not in ("loadmodel", "createmodel"):
            m = None     # (cntk.exe: 'x = F (...)' is MEL's only for LoadModel, CreateModel;
        if m is not None:                               # any other is an NDL item)
            name = m.group("function")
            if name.lower() in _RUN:
                statement.function, statement.target = _RUN[name.lower()], m.group("target")
                for part in _split(m.group("args")):
                    key, eq, rest = part.partition("=")
                    if eq and re.fullmatch(r"\s*[A-Za-z_]\w*\s*", key) and "(" not in key:
                        statement.kwargs[key.strip().lower()] = _value(rest.strip())
                    else:
                        statement.args.append(_value(part))
            elif any(name.lower() == r.lower() for r in _REFUSED):
                raise ConfigError(f"MEL: {name} is not supported (Stadyn runs {_RUNS})",
                                  path, number, m.start("function") + 1)
            elif m.group("target") is None:     # (cntk.exe: "Unknown Editor function")
                raise ConfigError(f"MEL: unknown command '{name}' (Stadyn runs {_RUNS})",
                                  path, number, m.start("function") + 1)
        statements.append(statement)
    return statements


def is_mel_block(record: ConfigRecord) -> bool:
    """Whether the command block ``record`` is an ``edit`` that runs a MEL script: it names
    ``editPath`` and no ``BrainScriptNetworkBuilder`` of its own (cntk.exe's DoEdit asks for
    the builder first).

    Example:
        >>> from stadyn.brainscript import parse_config
        >>> edit = parse_config('E = [ action = edit ; editPath = "x.mel" ]')["E"]
        >>> bs = parse_config('B = [ action = edit ; editPath = "x.mel" ; '
        ...                   'BrainScriptNetworkBuilder = [ z = 1 ] ]')["B"]
        >>> is_mel_block(edit), is_mel_block(bs)
        (True, False)
    """
    return str(record.get_str("action", "", inherited=True)).lower() == "edit" and \
        "editPath" in record and "BrainScriptNetworkBuilder" not in record


def is_mel_edit(cmd: Any) -> bool:
    """Whether an ``edit`` command (a :class:`CommandConfig`) runs a MEL script
    (:func:`is_mel_block` of its block)."""
    return cmd.action == "edit" and is_mel_block(cmd.record)


def mel_saved_models(path: str, record: ConfigRecord) -> list[str]:
    """The model files a MEL script's ``SaveModel`` commands write (as the config names them)."""
    return [str(s.args[1]) for s in read_mel(path, record)
            if s.function == "SaveModel" and len(s.args) >= 2]


def _without_comment(line: str) -> str:
    quote = ""
    for k, c in enumerate(line):
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c == "#":
            return line[:k]
    return line

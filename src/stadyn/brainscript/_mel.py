"""cntk.exe's Model Editing Language (MEL: ``action = "edit"`` with ``editPath = "x.mel"``,
Source/CNTK/ModelEditLanguage.cpp) on Stadyn model files.

A MEL script is one statement a line (``#`` starts a comment); ``$var$`` is read from the edit
command's block (``CurrModel``, ``NewModel``, ``CurrLayer``, ...), as cntk.exe's
``LoadConfigFileAndResolveVariables``.  The statements Stadyn runs:

* ``m = LoadModel ("path", format = "cntk")``: a model file written by ``stadyn train`` (or an
  earlier edit); it becomes the default model.  ``SetDefaultModel (m)`` chooses another.
* NDL items, ``HDim = 512`` or ``L2 = SBFF (L1.S, HDim, HDim)``: new nodes of the default model,
  built as an NDL network's (the macros of the config's ``ndlMacros``, cntk.exe's seeds and
  names); the model's nodes are reached by their names (``L1.S``, ``outputNodes.z``), and a
  ``tag`` makes a node a criterion, evaluation or output node.
* ``SetInput (node, k, input)`` (or ``SetNodeInput``): input ``k`` (0-based, in cntk.exe's order:
  ``Times (W, x)``'s ``x`` is 1) of ``node`` becomes ``input``; ``node`` may hold one ``*``
  (``CE.*.T``: every node whose name starts with ``CE.`` and ends with ``.T``).  The nodes that
  read an edited node are made again; an edit that would close a loop is refused.  The model
  file must list its nodes' inputs (a model of an NDL network, or of an earlier edit: Stadyn's
  model files tag them).
* ``SaveModel (m, "path", format = "cntk")``: the model file, which a ``train`` command starting
  from it takes its network from (cntk.exe reads a network from its start file).
* ``Dump (m, "path")`` (or ``DumpModel``): a text listing of the model's nodes (name, operation,
  inputs, shape; Stadyn's own layout, not cntk.exe's).

The others (``Delete``, ``Rename``, ``SetProperty``, ``CreateModel``, ``CopyNode``, ...) are
refused, naming the line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._errors import ConfigError, StadynError
from ..graph import Variable, topological_nodes
from ..parametric import current_registry
from ._ast import SourceLocation
from ._command_network import record_loc
from ._config import ConfigRecord
from ._model_files import inputs_tag, save_model, tagged_inputs
from ._ndl import NDLSource, _Builder, _Cell, _Instance, _Node, _Scope
from ._ndl_parser import Assign, parse_ndl
from ._network_library import replay

__all__ = ["MELScript", "read_mel", "mel_saved_models", "is_mel_edit"]

_RUN = {"loadmodel": "LoadModel", "savemodel": "SaveModel", "setdefaultmodel": "SetDefaultModel",
        "setnodeinput": "SetInput", "setinput": "SetInput", "dumpmodel": "Dump", "dump": "Dump"}
_REFUSED = ("CreateModel", "CreateModelWithName", "LoadModelWithName", "LoadNDLSnippet",
            "SaveDefaultModel", "UnloadModel", "DumpNode", "CopyNode", "Copy", "CopySubTree",
            "CopyNodeInputs", "CopyInputs", "SetNodeInputs", "SetInputs", "SetProperty",
            "SetPropertyForSubTree", "RemoveNode", "Remove", "DeleteNode", "Delete", "Rename",
            "ReviseParameter")
_STATEMENT = re.compile(r"^\s*(?:(?P<target>[A-Za-z_][\w.]*)\s*=\s*)?"
                        r"(?P<function>[A-Za-z_]\w*)\s*\((?P<args>.*)\)\s*$")
_VAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_.]*)\$")
_GROUPS = ("criterion", "evaluation", "output")


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


@dataclass
class _Model:
    """A loaded model: its named nodes and inputs, tags, and each node's inputs by name."""

    nodes: dict[str, Variable]
    inputs: dict[str, Variable]
    tags: dict[str, list[str]]
    links: dict[str, list[str]]
    ndl: Any = None                 # the NDL items' builder, made at the first one


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
        if m is not None:
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
                raise ConfigError(f"MEL: {name} is not supported (Stadyn runs LoadModel, "
                                  "SetDefaultModel, NDL items, SetInput, SaveModel and Dump)",
                                  path, number, m.start("function") + 1)
        statements.append(statement)
    return statements


def is_mel_edit(cmd: Any) -> bool:
    """Whether an ``edit`` command (a :class:`CommandConfig`) runs a MEL script: it names
    ``editPath`` and no ``BrainScriptNetworkBuilder`` of its own (cntk.exe's DoEdit asks for
    the builder first)."""
    rec = cmd.record
    return cmd.action == "edit" and "editPath" in rec and (
        cmd.network is None or "BrainScriptNetworkBuilder" not in rec)


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


class MELScript:
    """One run of a MEL script (the edit command's ``editPath``) with ``library`` (a
    :class:`StadynLibrary`, whose ``BS.Network.Load`` loads the models) in the current
    parameter registry.  ``save (path, outputs, inputs, tags)`` writes a model file and
    ``write (path, text)`` a dump (a tool that runs no command, such as
    ``tools/cntk_config_survey.py``, keeps them instead)."""

    def __init__(self, path: str, record: ConfigRecord, library: Any):
        self.path, self.record, self.library = path, record, library
        self.models: dict[str, _Model] = {}
        self.default: _Model | None = None
        self.saved: list[str] = []
        self.save: Callable[[str, dict, dict, dict], None] = save_model
        self.write: Callable[[str, str], None] = _write_text

    def run(self) -> list[str]:
        """Run the script; the model files it saved."""
        for s in read_mel(self.path, self.record):
            try:
                if str(s.kwargs.get("format", "cntk")).lower() != "cntk":
                    raise ConfigError(f"{s.function}: format = \"{s.kwargs['format']}\" is "
                                      "not supported (format = \"cntk\": a Stadyn model file)")
                if s.function is None:
                    self._ndl(s)
                else:
                    getattr(self, "_" + s.function)(s)
            except ConfigError as exc:
                if exc.line is not None:
                    raise
                raise ConfigError(f"MEL: {exc.reason}", self.path, s.line, 1) from None
            except StadynError as exc:
                raise ConfigError(f"MEL: {exc}", self.path, s.line, 1) from None
        return self.saved

    # ---- models ------------------------------------------------------------------------
    def _model(self, s: _Statement, k: int = 0) -> _Model:
        if len(s.args) <= k or not isinstance(s.args[k], _Symbol):
            raise ConfigError(f"{s.function}: argument {k + 1} must name a model")
        model = self.models.get(str(s.args[k]).lower())
        if model is None:
            raise ConfigError(f"{s.function}: no model named '{s.args[k]}' (LoadModel it first)")
        return model

    def _LoadModel(self, s: _Statement) -> None:
        if len(s.args) != 1 or isinstance(s.args[0], _Symbol):
            raise ConfigError("LoadModel (\"path\", format = \"cntk\") takes the model file")
        path = str(s.args[0])
        try:      # (through the library's model loader: a tool may stand in for the file)
            record = self.library._NetworkLoad(path)
        except ConfigError as exc:
            if not exc.reason.startswith("BS.Network.Load: "):
                raise                      # (the network standing in for it: its own error)
            raise ConfigError("LoadModel" + exc.reason[len("BS.Network.Load"):]) from None
        loaded = record.network
        tags = {name: list(t) for name, t in (getattr(loaded, "tags", None) or {}).items()}
        nodes = {name: v for name, v in loaded.outputs.items()}
        links = {}
        for name, items in tags.items():
            found = tagged_inputs(items)
            if found is not None:
                links[name] = found
        model = _Model(nodes, dict(loaded.inputs), tags, links)
        self.models[(s.target or path).lower()] = model
        self.default = model

    def _SetDefaultModel(self, s: _Statement) -> None:
        self.default = self._model(s)

    def _SaveModel(self, s: _Statement) -> None:
        model = self._model(s)
        if len(s.args) < 2 or isinstance(s.args[1], _Symbol):
            raise ConfigError("SaveModel (model, \"path\", format = \"cntk\") needs the path")
        path = str(s.args[1])
        outputs = {n: v for n, v in model.nodes.items() if v.parent is not None}
        inputs = {n: v for n, v in model.inputs.items()}
        names = set(outputs) | set(inputs)
        tags: dict[str, list[str]] = {}
        for name, items in model.tags.items():
            kept = [t for t in items if tagged_inputs([t]) is None]
            if name in names and kept:
                tags[name] = kept
        for name, links in model.links.items():
            if name in outputs:
                tags.setdefault(name, []).append(inputs_tag(links))
        self.save(path, outputs, inputs, tags)
        self.saved.append(path)

    def _Dump(self, s: _Statement) -> None:
        model = self._model(s)
        if len(s.args) < 2 or isinstance(s.args[1], _Symbol):
            raise ConfigError("Dump (model, \"path\") needs the path")
        path = str(s.args[1])
        lines = []
        for name, v in {**model.inputs, **model.nodes}.items():
            operation = self.library.operation_of(v) or ("InputValue" if name in model.inputs
                                                         else "?")
            links = model.links.get(name, [])
            lines.append(f"{name} = {operation}({', '.join(links)}) : "
                         f"{list(v.shape[1:])}")
        for name, p in current_registry().items():
            lines.append(f"{name} = LearnableParameter() : {list(p.shape)}")
        self.write(path, "\n".join(lines) + "\n")

    # ---- nodes ---------------------------------------------------------------------------
    def _lookup(self, model: _Model, name: str, what: str) -> Variable:
        for table in (model.nodes, model.inputs, dict(current_registry().items())):
            if name in table:
                return table[name]
        for table in (model.nodes, model.inputs, dict(current_registry().items())):
            for key, v in table.items():
                if key.lower() == name.lower():
                    return v
        raise ConfigError(f"{what}: the model has no node named '{name}'")

    def _SetInput(self, s: _Statement) -> None:
        model = self.default
        if model is None:
            raise ConfigError("SetInput: no model is loaded (LoadModel)")
        if len(s.args) != 3 or not isinstance(s.args[1], int) or isinstance(s.args[1], bool):
            raise ConfigError("SetInput (node, k, input) takes a node, a 0-based input number "
                              "and the new input")
        pattern, k, source = str(s.args[0]), s.args[1], str(s.args[2])
        new = self._lookup(model, source, "SetInput")
        head, star, tail = pattern.partition("*")
        if star:
            targets = [n for n in model.nodes if n.startswith(head) and n.endswith(tail)]
        else:
            targets = [n for n in model.nodes if n == pattern]
        if not targets:
            raise ConfigError(f"SetInput: no node of the model matches '{pattern}'")
        for name in targets:
            links = model.links.get(name)
            if links is None:
                raise ConfigError(f"SetInput: the model file does not list the inputs of "
                                  f"'{name}' (a model of an NDL network or of a MEL edit "
                                  "written by this Stadyn does)")
            if not 0 <= k < len(links):
                raise ConfigError(f"SetInput: '{name}' has {len(links)} input(s), no input {k}")
            node = model.nodes[name]
            if any(v is node for v in _reached([new])):
                raise ConfigError(f"SetInput: '{source}' is computed from '{name}': the edit "
                                  "would close a loop (not supported)")
            old = self._lookup(model, links[k], "SetInput")
            if old is not new:
                self._rewire(model, name, old, new,
                             {id(self._lookup(model, i, "SetInput")) for i in links})
            model.links[name] = links[:k] + [source] + links[k + 1:]

    def _rewire(self, model: _Model, name: str, old: Variable, new: Variable,
                boundary: set[int]) -> None:
        """Node ``name`` made again reading ``new`` where it read ``old`` (its own ops only,
        up to its inputs ``boundary``), then every node that reads it made again."""
        node = model.nodes[name]
        own, stack, seen = set(), [node], set()
        while stack:
            v = stack.pop()
            if id(v) in seen or v.parent is None or (id(v) in boundary and v is not node):
                continue
            seen.add(id(v))
            own.add(id(v.parent))
            stack.extend(i for i in v.parent.inputs if i is not None)
        roots = list(model.nodes.values())
        before = {id(v): v for v in _reached(roots)}
        first = replay([node], [(old, new)], only=own)
        remade = first.get(id(node), node)
        made = replay(roots, [(node, remade)])
        for mapping in (first, made):          # the nodes made again keep their operations
            for key, v in mapping.items():
                operation = self.library.operation_of(before[key]) if key in before else None
                if operation is not None and self.library.operation_of(v) is None:
                    self.library._node(v, operation)
        for key, v in list(model.nodes.items()):
            model.nodes[key] = made.get(id(v), v)
        if model.ndl is not None:
            model.ndl.renew(model.nodes)

    def _ndl(self, s: _Statement) -> None:
        model = self.default
        if model is None:
            raise ConfigError("an NDL item before any model is loaded (LoadModel)")
        items = parse_ndl(s.text, self.path, s.line).items
        if model.ndl is None:
            model.ndl = _Editor(NDLSource("", self.path, s.line, 1, self.record), self.library,
                                model)
        for name, v, tag, links in model.ndl.define([i for i in items if isinstance(i, Assign)]):
            if v.parent is None:           # a new Input joins the model's inputs
                if any(v is i for i in self.library.inputs):
                    model.inputs[name] = v
                continue
            model.nodes[name] = v
            if links is not None:
                model.links[name] = links
            if tag in _GROUPS:
                model.tags.setdefault(name, []).append(tag)


def _write_text(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _reached(roots: list[Variable]) -> list[Variable]:
    """``roots`` and every Variable their graph reads or makes."""
    out = list(roots)
    for n in topological_nodes(roots):
        out.extend(o for o in (*n.inputs, *n.outputs) if o is not None)
    return out


class _Editor(_Builder):
    """The NDL builder of a MEL script's NDL items: the config's ``ndlMacros``, and the loaded
    model's nodes (and parameters) by name, ``a.b.c`` reached as a macro instance's members."""

    def __init__(self, source: NDLSource, library: Any, model: _Model):
        super().__init__(source, library)
        macros = source.record.lookup("ndlMacros", None)
        for name in str(macros).split("+") if macros is not None else []:
            if name.strip():
                self._load_file(self._read(name, "ndlMacros"), run=False)
        self.existing: dict[str, _Node] = {}
        self.renew(model.nodes, model.inputs)

    def renew(self, nodes: dict[str, Variable], inputs: dict[str, Variable] | None = None) -> None:
        """The model's nodes (again, after an edit made some anew) in the names' scopes."""
        table = dict(current_registry().items())
        table.update(inputs or {})
        table.update(nodes)
        for name, v in table.items():
            node = self.existing.get(name)
            if node is not None:
                node.built = v
                continue
            node = self.existing[name] = _Node(name, "Existing", [], {}, self.sections, None,
                                               built=v)
            scope, parts = self.sections, name.split(".")
            for k, part in enumerate(parts[:-1]):
                cell = scope.names.get(part.lower())
                if cell is None or not isinstance(cell.value, _Instance):
                    inner = _Scope(self.globals, ".".join(parts[:k + 1]))
                    instance = _Instance(inner, cell)       # (a node of that name: its value)
                    cell = scope.names[part.lower()] = _Cell(inner.prefix, None)
                    cell.value = instance
                scope = cell.value.scope
            last = scope.names.get(parts[-1].lower())
            cell = _Cell(name, None)
            cell.value = node
            if last is not None and isinstance(last.value, _Instance):
                last.value.last = cell                      # a.b is a node and a prefix
            else:
                scope.names[parts[-1].lower()] = cell

    def define(self, items: list[Assign]) -> list[tuple[str, Variable, str | None,
                                                        list[str] | None]]:
        """Build the nodes of NDL ``items``: ``(name, node, tag, inputs by name)`` of each."""
        first, tags = len(self.nodes), len(self.tags)
        self._run_items(items, self.sections, None)
        made = self.nodes[first:]
        for node in made:
            self._build(node)
        named = {n.name: self.library.resolve(n.built) for n in made if n.name is not None}
        self.library.name_parameters(named)
        tag_of: dict[int, str] = {}
        for value, tag, loc in self.tags[tags:]:
            target = self._node_of(value, loc)
            text = str(self._constant(tag, _Node(None, "tag", [], {}, self.sections, loc), "tag"))
            low = "evaluation" if text.lower().startswith("eval") else \
                "criterion" if text.lower() in ("criteria", "criterion") else text.lower()
            if isinstance(target, _Node):
                tag_of[id(target)] = low
        out = []
        for node in made:
            if node.name is None or node.function in ("LearnableParameter", "ImageParameter"):
                continue
            links: list[str] | None = []
            for arg in node.args:
                target = self._node_of(arg, node)
                for item in target if isinstance(target, list) else [target]:
                    item = self._node_of(item, node)
                    if isinstance(item, _Node):
                        if item.name is None:
                            links = None
                            break
                        links.append(item.name)
                if links is None:
                    break
            out.append((node.name, self.library.resolve(node.built), tag_of.get(id(node)),
                        links))
            self.existing[node.name] = node
        return out

"""cntk.exe's Model Editing Language (MEL: ``action = "edit"`` with ``editPath = "x.mel"``,
Source/CNTK/ModelEditLanguage.cpp) on Stadyn model files.

A MEL script is one statement a line (``#`` starts a comment); ``$var$`` is read from the edit
command's block (``CurrModel``, ``NewModel``, ``CurrLayer``, ...), as cntk.exe's
``LoadConfigFileAndResolveVariables``.  The statements Stadyn runs:

* ``m = LoadModel ("path", format = "cntk")``: a model file written by ``stadyn train`` (or an
  earlier edit); the first becomes the default model (cntk.exe's
  OverrideModelNameAndSetDefaultModel), ``SetDefaultModel (m)`` chooses another; a plain
  ``LoadModel (...)`` is the model named ``default`` (a second one replaces it).  Each is a
  model of its own (cntk.exe's LoadModelWithName), saved under the file's names; ``m.L1.S``
  names a node of the model ``m``.
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
* ``SetProperty (node, property, value)``: a node into (``true``) or out of (``false``) the
  ``criterion``, ``evaluation``, ``output``, ``feature`` or ``label`` group; a parameter's
  ``computeGradient`` / ``learningRateMultiplier`` (any value not negative).
* ``Delete (node, ...)`` (``Remove``): nodes, inputs or parameters out of the model (one no
  other node reads: cntk.exe would leave the reader's input empty).
* ``Rename (old, new)``: a node, input or parameter (or every name of a ``*`` pattern) renamed,
  its groups and the inputs lists that name it with it.
* ``SaveModel (m, "path", format = "cntk")``: the model file, which a ``train`` command starting
  from it takes its network from (cntk.exe reads a network from its start file).
* ``Dump (m, "path")`` (or ``DumpModel``): a text listing of the model's nodes (name, operation,
  inputs, shape; Stadyn's own layout, not cntk.exe's).

The others (``CreateModel``, ``CopyNode``, ``SetPropertyForSubTree``, ...) are refused, naming
the line, and so is a call of a command MEL does not have (``SaveModle (m1, "x")``: cntk.exe's
"Unknown Editor function"; only ``x = F (...)`` is an NDL item).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._errors import ConfigError, StadynError
from ..graph import Variable, topological_nodes
from ..parametric import current_registry
from ._config import ConfigRecord
from ._library import learning_rate_multiplier
from ._model_files import (inputs_tag, multiplier_tags, operation_tag, save_model,
                           tagged_inputs, tagged_multipliers, tagged_operation,
                           without_multipliers)
from ._mel_ndl import MELItems
from ._mel_read import _Statement, _Symbol, read_mel
from ._ndl import NDLSource
from ._ndl_parser import Assign, parse_ndl
from ._network_library import replay

__all__ = ["MELScript"]

# SetProperty's names (ModelEditLanguage.cpp: the legacy ones first) -> the group it sets
_PROPERTIES = {"criterion": "criterion", "finalcriterion": "criterion", "criteria": "criterion",
               "evaluation": "evaluation", "eval": "evaluation", "output": "output",
               "feature": "feature", "label": "label", "computegradient": "gradient",
               "needgradient": "gradient", "needsgradient": "gradient",
               "learningratemultiplier": "gradient", "recurrent": None,
               "freezeparameters": "freeze"}
_GROUPS = ("criterion", "evaluation", "output")


@dataclass
class _Model:
    """A loaded model: its named nodes, inputs and parameters (by the model's own names: the
    file's, though the same file loaded twice holds its second copy under a ``Load/`` scope in
    the parameter registry), tags, and each node's inputs by name."""

    nodes: dict[str, Variable]
    inputs: dict[str, Variable]
    parameters: dict[str, Variable]
    tags: dict[str, list[str]]
    links: dict[str, list[str]]
    ndl: Any = None                 # the NDL items' builder, made at the first one
    # each parameter's learningRateMultiplier other than 0 and 1, by the model's name
    multipliers: dict[str, float] = field(default_factory=dict)


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
        if self.library.sequences is None and any(
                v.sequence_lengths is not None for v in loaded.inputs.values()):
            # (an NDL item's Input has the default sequence axis, as the model's inputs: a
            # BrainScript network's, which CNTK's readers feed one-step sequences)
            self.library.sequences = True
        tags = {name: list(t) for name, t in (getattr(loaded, "tags", None) or {}).items()}
        multipliers, tags = tagged_multipliers(tags), without_multipliers(tags)
        nodes = {name: v for name, v in loaded.outputs.items()}
        links = {}
        for name, items in tags.items():
            found = tagged_inputs(items)
            if found is not None:
                links[name] = found
        # (cntk.exe: 'm = LoadModel' is LoadModelWithName, a network of its own, its names the
        # file's)
        own = dict(loaded.registry.items()) if getattr(loaded, "registry", None) is not None \
            else {}
        model = _Model(nodes, dict(loaded.inputs), own, tags, links,
                       multipliers={k: m for k, m in multipliers.items() if k in own})
        key = (s.target or "default").lower()   # (cntk.exe names a plain LoadModel 'default')
        if self.default is not None and self.default is self.models.get(key):
            self.default = None              # (a name loaded again: the old model goes)
        self.models[key] = model
        if self.default is None:             # cntk.exe: the default only if none is set yet
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
            kept = [t for t in items if tagged_inputs([t]) is None and
                    tagged_operation([t]) is None]
            if name in names and kept:
                tags[name] = kept
        for name, v in outputs.items():       # each node's operation, a new one's too
            operation = self.library.operation_of(v) or tagged_operation(model.tags.get(name, ()))
            if operation is not None:
                tags.setdefault(name, []).append(operation_tag(operation))
        for name, links in model.links.items():
            if name in outputs:
                tags.setdefault(name, []).append(inputs_tag(links))
        multiplier_tags(tags, outputs, {name: m for name, m in model.multipliers.items()
                                        if name in model.parameters})
        names = {id(p): p.name for p in model.parameters.values()}
        try:                     # the parameters saved under the model's own names
            for name, p in model.parameters.items():
                p.name = name
            self.save(path, outputs, inputs, tags)
        finally:
            for p in model.parameters.values():
                p.name = names[id(p)]
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
        for name, p in model.parameters.items():
            lines.append(f"{name} = LearnableParameter() : {list(p.shape)}")
        self.write(path, "\n".join(lines) + "\n")

    # ---- nodes ---------------------------------------------------------------------------
    def _lookup(self, model: _Model, name: str, what: str) -> Variable:
        tables = (model.nodes, model.inputs, model.parameters)
        for table in tables:
            if name in table:
                return table[name]
        for table in tables:
            for key, v in table.items():
                if key.lower() == name.lower():
                    return v
        raise ConfigError(f"{what}: the model has no node named '{name}'")

    def _model_of(self, s: _Statement, k: int) -> _Model:
        """The model argument ``k`` of ``s`` names a node of: ``m1.L1.S`` a node of the model
        ``m1`` (cntk.exe's ParseName: the name before the first ``.``, where it is a model's;
        the argument keeps the rest, ``m1`` alone every node), else the default model."""
        if len(s.args) <= k or not isinstance(s.args[k], str):
            raise ConfigError(f"{s.function}: argument {k + 1} must name a node")
        text = str(s.args[k])
        first, dot, rest = text.partition(".")
        model = self.models.get(first.lower()) if "*" not in first else None
        if model is None:
            return self._default(s.function)
        s.args[k] = _Symbol(rest if dot and rest else "*")
        return model

    def _matching(self, s: _Statement, k: int, tables: tuple[dict[str, Variable], ...]
                  ) -> list[str]:
        """The names in ``tables`` that argument ``k`` of ``s`` names: a name (any case where
        none matches exactly) or a pattern with one ``*`` (``CE.*.T``)."""
        if len(s.args) <= k or not isinstance(s.args[k], str):
            raise ConfigError(f"{s.function}: argument {k + 1} must name a node")
        pattern = str(s.args[k])
        names = [n for table in tables for n in table]
        head, star, tail = pattern.partition("*")
        if star:
            found = [n for n in names if n.startswith(head) and n.endswith(tail)
                     and len(n) >= len(head) + len(tail)]
        else:
            found = [n for n in names if n == pattern] or \
                [n for n in names if n.lower() == pattern.lower()]
        if not found:
            raise ConfigError(f"{s.function}: no node of the model matches '{pattern}'")
        return list(dict.fromkeys(found))

    def _default(self, what: str | None) -> _Model:
        if self.default is None:
            raise ConfigError(f"{what}: no model is loaded (LoadModel)")
        return self.default

    def _SetProperty(self, s: _Statement) -> None:
        """cntk.exe's SetProperty (node, property, value): a node joins or leaves the group
        of ``criterion``, ``evaluation``, ``output``, ``feature`` or ``label`` nodes; a
        parameter's ``computeGradient`` (``needGradient``: its multiplier 1 or 0) or
        ``learningRateMultiplier`` (any value not negative: 0 leaves it out of training,
        another scales its learning rate) says how training changes it, kept in the model file;
        ``recurrent`` does nothing (as cntk.exe)."""
        if len(s.args) != 3:
            raise ConfigError("SetProperty (node, property, value) takes three arguments")
        model = self._model_of(s, 0)
        prop, value = str(s.args[1]), s.args[2]
        if prop.lower() not in _PROPERTIES:
            raise ConfigError(f"SetProperty: no property '{prop}' (criterion, evaluation, "
                              "output, feature, label, computeGradient, "
                              "learningRateMultiplier, recurrent)")
        group = _PROPERTIES[prop.lower()]
        if group is None:
            return
        if group == "freeze":
            raise ConfigError("SetProperty: freezeParameters is not supported (Stadyn "
                              "freezes a BatchNormalization's statistics through its config)")
        if isinstance(value, _Symbol) or not (isinstance(value, (bool, int, float))):
            raise ConfigError(f"SetProperty: the value of '{prop}' must be true, false or a "
                              f"number (not '{value}')")
        if group == "gradient":
            # cntk.exe: computeGradient sets the multiplier to 1 or 0, learningRateMultiplier
            # to its value (a float32, not negative)
            multiplier = learning_rate_multiplier(value, "SetProperty") \
                if prop.lower() == "learningratemultiplier" else float(bool(value))
            for name in self._matching(s, 0, (model.parameters,)):
                model.parameters[name].need_grad = multiplier > 0
                model.multipliers.pop(name, None)
                if multiplier not in (0.0, 1.0):
                    model.multipliers[name] = multiplier
            return
        tables = (model.inputs,) if group in ("feature", "label") else (model.nodes,)
        for name in self._matching(s, 0, tables):
            tags = model.tags.setdefault(name, [])
            if value and group not in tags:
                tags.append(group)
            elif not value:
                tags[:] = [t for t in tags if t != group]

    def _Delete(self, s: _Statement) -> None:
        """cntk.exe's Delete (node, ...) (or Remove): each node (or pattern) leaves the model
        and its groups.  A node another node still reads is refused: cntk.exe leaves that
        input empty, a network no file can hold (SetInput its readers to another node
        first)."""
        if not s.args:
            raise ConfigError("Delete (node, ...) takes the nodes to delete")
        for k in range(len(s.args)):
            model = self._model_of(s, k)
            parameters = model.parameters
            for name in self._matching(s, k, (model.nodes, model.inputs, parameters)):
                v = model.nodes.get(name, model.inputs.get(name, parameters.get(name)))
                kept = [n for n in model.nodes if n != name]
                readers = [n for n in kept if name in model.links.get(n, [])]
                if not readers and any(r is v for r in _reached([model.nodes[n] for n in kept])):
                    graphs = {n: _reached([model.nodes[n]]) for n in kept}
                    readers = sorted((n for n in kept if any(r is v for r in graphs[n])),
                                     key=lambda n: len(graphs[n]))     # the nearest first
                if readers:
                    raise ConfigError(f"Delete: '{readers[0]}' still reads '{name}' (cntk.exe "
                                      "would leave that input empty): SetInput it to another "
                                      "node first")
                model.nodes.pop(name, None)
                model.inputs.pop(name, None)
                model.parameters.pop(name, None)
                model.tags.pop(name, None)
                model.links.pop(name, None)
                registry = current_registry()
                for key in [key for key, p in registry.items() if p is v and v is not None]:
                    registry.pop(key)
                if model.ndl is not None:
                    model.ndl.forget(name)

    def _Rename(self, s: _Statement) -> None:
        """cntk.exe's Rename (old, new): a node (or input) takes the name ``new`` with its
        groups; ``Rename (L1.*, L9.*)`` renames every node matching the pattern, its ``*``
        kept.  A name the model holds already is refused."""
        if len(s.args) != 2:
            raise ConfigError("Rename (oldNodeName, newNodeName) takes two names")
        model = self._model_of(s, 0)
        if self._model_of(s, 1) is not model:        # (cntk.exe's message says CopyInputs)
            raise ConfigError(f"Rename: '{s.args[0]}' and '{s.args[1]}' belong to different "
                              "models")
        old_pattern, new_pattern = str(s.args[0]), str(s.args[1])
        if (old_pattern.count("*"), new_pattern.count("*")) not in ((0, 0), (1, 1)):
            raise ConfigError(f"Rename: '{old_pattern}' and '{new_pattern}' must hold one '*' "
                              "each, or none")
        head, _, tail = old_pattern.partition("*")
        parameters = model.parameters
        taken = set(model.nodes) | set(model.inputs) | set(parameters)
        for old in self._matching(s, 0, (model.nodes, model.inputs, parameters)):
            middle = old[len(head):len(old) - len(tail)] if "*" in old_pattern else ""
            new = new_pattern.replace("*", middle)
            if new in taken:
                raise ConfigError(f"Rename: the model has a node named '{new}' already")
            for table in (model.nodes, model.inputs, parameters, model.tags, model.links,
                          model.multipliers):
                if old in table:
                    table[new] = table.pop(old)
            for links in model.links.values():
                links[:] = [new if n == old else n for n in links]
            taken.discard(old)
            taken.add(new)
            if model.ndl is not None:
                model.ndl.forget(old)
                renamed = model.nodes.get(new, model.inputs.get(new, parameters.get(new)))
                model.ndl.renew({new: renamed})

    def _SetInput(self, s: _Statement) -> None:
        if len(s.args) != 3 or not isinstance(s.args[1], int) or isinstance(s.args[1], bool):
            raise ConfigError("SetInput (node, k, input) takes a node, a 0-based input number "
                              "and the new input")
        model = self._model_of(s, 0)
        if self._model_of(s, 2) is not model:
            raise ConfigError(f"SetInput: '{s.args[2]}' is a node of another model than "
                              f"'{s.args[0]}' (a network reading another's node is not "
                              "supported)")
        k, source = s.args[1], str(s.args[2])
        new = self._lookup(model, source, "SetInput")
        for name in self._matching(s, 0, (model.nodes,)):
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
            model.ndl = MELItems(NDLSource("", self.path, s.line, 1, self.record), self.library,
                                 model.nodes, model.inputs, model.parameters)
        before = {id(p) for _, p in current_registry().items()}
        made = model.ndl.define([i for i in items if isinstance(i, Assign)])
        for name, p in current_registry().items():     # the items' parameters join the model's
            if id(p) not in before:
                model.parameters[name] = p
        for name, v, tag, links in made:
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

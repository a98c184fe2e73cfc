"""cntk.exe's ``NDLNetworkBuilder``: a network written in NDL (Network Description Language),
built with :class:`~._stadyn_library.StadynLibrary` as a ``BrainScriptNetworkBuilder`` is.

The builder block names its NDL (``NDLNetworkBuilder.cpp``/``NDLNetworkBuilder.h``):
``ndlMacros = a.ndl+b.ndl`` (files whose macros are global; their values are seen by
nothing, as cntk.exe drops the rest of a macros file once read), ``networkDescription =
net.ndl`` (its ``load = Sec`` section adds macros and values, its ``run = Sec`` section is the
network; ``run``/``load`` in the block override the file's), or, without a file, ``run`` and
``load`` naming sections of the block itself.  ``$var$`` in the files is read from the config
around the block (cntk.exe's ``LoadConfigFileAndResolveVariables``).

Evaluation follows ``NetworkDescriptionLanguage.h``: a section's items in order; a macro call
``L1 = SBFF(x, 512, 792)`` evaluates the macro's items with the names ``L1.<item>`` (its value,
``L1`` used as a node, is its last item; ``L1.BFF.W`` reaches inside); a name may be used before
its item (the network is wired after all nodes exist), through a ``Delay``/``PastValue`` a
recurrence.  Names are case-insensitive.  Nodes are named as cntk.exe names them, and so are
the parameters in the registry (``L1.BFF.W``), so model files match by name.

Random parameters take cntk.exe's NDL seeds: a count that starts at 1 in the run and goes on
through all its NDL networks (``NDLNodeEvaluatorImpl::Evaluate``'s ``static int randomSeed``),
one per ``uniform``/``gaussian``/``heNormal`` parameter in the order of the NDL items, plus the
``randomSeedOffset`` of the config (``ComputationNetwork::InitLearnableParameters``);
``randomSeed = n`` fixes one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from .._errors import ConfigError, StadynError
from ..parametric import current_registry
from ._ast import SourceLocation
from ._config import ConfigRecord
from ._library import ForwardRef
from ._ndl_counts import name_count, seed_count
from ._ndl_functions import FUNCTIONS, function_name
from ._ndl_names import COPIED, FRESH, UNCOUNTED, Macros, NameCount, older_names
from ._ndl_parser import where, Array, Assign, Call, MacroDef, Num, Ref, Section, Str, parse_ndl, \
    parse_ndl_block, section_names as _names, builder_settings as _builder_settings
from ._network import Network

__all__ = ["NDLSource", "ndl_source"]

# the tags of CNTK's node groups and the special arrays that name them (NDLUtil.h)
_GROUPS = {"featurenodes": "feature", "labelnodes": "label", "criterionnodes": "criterion",
           "evalnodes": "evaluation", "outputnodes": "output", "criterianodes": "criterion"}
_BUILDER_KEYS = ("ndlmacros", "networkdescription", "dumpfilename")
_VAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_.]*)\$")


@dataclass(frozen=True)
class NDLSource:
    """A command's ``NDLNetworkBuilder`` block: its text (``$var$`` already replaced by the
    config reader), where it is, and the command block around it (for ``$var$`` in the NDL
    files, ``randomSeedOffset`` and the run's seed count)."""

    text: str
    path: str | None
    line: int
    column: int
    record: ConfigRecord = field(compare=False, repr=False)

    @property
    def loc(self) -> SourceLocation:
        return SourceLocation(self.path, self.line, self.column)

    def build(self, library: Any) -> Network:
        """The network, built with ``library`` (a :class:`StadynLibrary`)."""
        return _Builder(self, library).build()


def ndl_source(record: ConfigRecord) -> NDLSource:
    """The ``NDLNetworkBuilder`` of a command block (or of the nearest block around it)."""
    raw = record.lookup("NDLNetworkBuilder")
    source = NDLSource(raw.text, raw.path, raw.line, raw.column, record)
    _, settings = _builder_settings(raw.text)
    for key in ("ndlmacros", "networkdescription"):   # their $var$ are read (so an override
        for name in settings.get(key, "").split("+"):  # they use is not reported unused)
            path = name.strip().replace("\\", os.sep)
            if name and os.path.isfile(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    for m in _VAR.finditer(f.read()):
                        record.lookup(m.group(1), None)
    return source


# ---------------------------------------------------------------------------------------------
# what names stand for while a network is expanded
# ---------------------------------------------------------------------------------------------
class _Scope:
    """Names (lower case) of one section or macro call; a macro's body sees its own names,
    then the global ones (not its caller's)."""

    def __init__(self, parent: _Scope | None, prefix: str):
        self.parent, self.prefix = parent, prefix
        self.names: dict[str, Any] = {}

    def full(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def find(self, name: str) -> Any:
        scope: _Scope | None = self
        while scope is not None:
            if name.lower() in scope.names:
                return scope.names[name.lower()]
            scope = scope.parent
        return None


class _Cell:
    """An item whose value is filled in when it is expanded (a name may be used earlier)."""

    def __init__(self, name: str, loc: Any):
        self.name, self.loc, self.value = name, loc, None


@dataclass
class _Node:
    """One node to build: a built-in function with its arguments (still names)."""

    name: str | None
    function: str
    args: list[Any]
    kwargs: dict[str, Any]
    scope: _Scope
    loc: Any
    seed: int | None = None
    built: Any = None
    building: bool = False


class _Instance:
    """A macro call: its scope (``L1.BFF``) and its value, the last item."""

    def __init__(self, scope: _Scope, last: Any):
        self.scope, self.last = scope, last


@dataclass
class _Lazy:
    """A name used as an argument, looked up when the node is built."""

    ref: Ref
    scope: _Scope


def _loc(x: Any) -> tuple:
    loc = getattr(x, "loc", None)
    return where(loc) if isinstance(loc, SourceLocation) else ()


class _Builder:
    def __init__(self, source: NDLSource, library: Any):
        self.source, self.library = source, library
        self.globals = _Scope(None, "")                  # (cntk.exe's global script: macros)
        self.dropped: dict[str, Any] = {}                # the macros files' values (unseen)
        self.sections = _Scope(self.globals, "")         # the load and run sections' items
        self.macros = Macros()
        self.nodes: list[_Node] = []
        self.tags: list[tuple[Any, str, Any]] = []       # (value, tag, loc)
        self.waiting: dict[int, list[ForwardRef]] = {}
        # Times' weights: (node, input dims) of each Times in turn; (Times, dims before) of a
        # weight the legacy patch reshaped (_ndl_functions._times)
        self.times_inputs: dict[int, list[tuple[_Node, tuple]]] = {}
        self.patched_weights: dict[int, tuple[_Node, str]] = {}
        rec = source.record
        self.seed_offset = int(rec.get_int("randomSeedOffset", 0, inherited=True))
        # cntk.exe's count is per process; Stadyn's per run (one config read)
        self.seeds = seed_count(rec)
        self.names = NameCount(name_count(rec), self.macros)
        # the names an older Stadyn (before cntk.exe's unnamed<n>) gave: a count of the calls
        # made inside an argument, per network; a macro call's was its instance's name
        self.older_count = 0
        self.older_instances: dict[str, str] = {}

    # ---- files -------------------------------------------------------------------------
    def _read(self, name: str, key: str) -> Section:
        name = name.strip().strip('"').strip("'")
        path = name.replace("\\", os.sep)
        if not os.path.exists(path):
            raise ConfigError(f"NDLNetworkBuilder: the {key} file '{name}' does not exist",
                              *self._where())
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        text = self._variables(text, path)
        return parse_ndl(text, path)

    def _variables(self, text: str, path: str) -> str:
        """``$var$`` in an NDL file: the config's value around the builder block."""
        rec = self.source.record

        def value(m: re.Match) -> str:
            line = text.count("\n", 0, m.start()) + 1
            column = m.start() - text.rfind("\n", 0, m.start())
            return rec._variable(m.group(1), SourceLocation(path, line, column), set())
        return _VAR.sub(value, text)

    def _where(self) -> tuple:
        s = self.source
        return (s.path, s.line, s.column)

    # ---- the whole network -------------------------------------------------------------
    def build(self) -> Network:
        s = self.source
        block_text, settings = _builder_settings(s.text)
        block = parse_ndl_block(block_text, s.path, s.line, s.column)
        own = {i.name.lower(): i for i in block.items if isinstance(i, Assign)}
        if "ndlmacros" not in settings:     # cntk.exe's config lookups go outwards
            outer = s.record.lookup("ndlMacros", None)
            if outer is not None:
                settings["ndlmacros"] = str(outer)
        for name in settings.get("ndlmacros", "").split("+") if settings.get("ndlmacros") else []:
            self._load_file(self._read(name, "ndlMacros"), run=False)
        if settings.get("networkdescription"):
            description = self._read(settings["networkdescription"], "networkDescription")
        else:
            description = block
        sections = {i.name.lower(): i for i in description.items if isinstance(i, Assign)}
        for key in ("load", "run"):
            if key in own and description is not block:
                sections[key] = own[key]
        for item in description.items:
            if isinstance(item, MacroDef):
                self.macros[item.name.lower()] = item
        if "run" not in sections:
            if description is block and not settings.get("networkdescription"):
                # the block itself is the network (cntk.exe's Simple2d tests)
                return self._finish(self._run_items(block.items, self.sections, block))
            raise ConfigError("NDLNetworkBuilder: no 'run = section' names the network "
                              "(networkDescription's file or the block)", *self._where())
        for name in _names(sections.get("load")):
            self._run_items(self._section(sections, name, "load").items, self.sections, None)
        run = self._section(sections, _names(sections["run"])[0], "run")
        return self._finish(self._run_items(run.items, self.sections, run))

    def _load_file(self, section: Section, run: bool) -> None:
        """A macros file: its macros and values are global; its ``load`` sections too."""
        sections = {i.name.lower(): i for i in section.items if isinstance(i, Assign)}
        for item in section.items:
            if isinstance(item, MacroDef):
                self.macros[item.name.lower()] = item
        # cntk.exe parses a macros file into a script of its own, which it drops once read
        # (NDLNetworkBuilder.h:486-500): only its macros (NDLScript::ParseDefinition adds them
        # to the global script) are kept; its values and nodes are seen by nothing and never
        # built (no seeds), though parsing them takes unnamed<n> numbers
        nodes, tags, seed = len(self.nodes), len(self.tags), self.seeds[0]
        dropped = _Scope(None, "")
        for name in _names(sections.get("load")):
            self._run_items(self._section(sections, name, "load").items, dropped, None)
        # cntk.exe reads a file without load/run as one section (its macros defined in turn)
        plain = [i for i in section.items if isinstance(i, MacroDef) or isinstance(i, Assign) and
                 i.name.lower() not in ("load", "run") and not isinstance(i.value, Section)]
        counted = "load" not in sections and "run" not in sections
        self._run_items(plain, dropped, None, FRESH if counted else UNCOUNTED)
        del self.nodes[nodes:], self.tags[tags:]
        self.seeds[0] = seed
        self.dropped.update(dropped.names)

    def _section(self, sections: dict, name: str, key: str) -> Section:
        item = sections.get(name.lower())
        if item is None or not isinstance(item.value, Section):
            raise ConfigError(f"NDL: '{key} = {name}' names no section ({name} = [ ... ])",
                              *_loc(sections.get(key)))
        return item.value

    # ---- expansion ---------------------------------------------------------------------
    def _run_items(self, items: list, scope: _Scope, section: Any, mode: int = FRESH) -> _Scope:
        """Expand a section's items (``mode`` FRESH) or a macro call's (COPIED) into
        ``scope``, in order; each item's ``unnamed<n>`` numbers start where cntk.exe's
        parse of it starts (:mod:`._ndl_names`)."""
        cells = []
        start = self.names.value
        for item in items:
            if isinstance(item, MacroDef):
                self.macros[item.name.lower()] = item
                if mode == FRESH:
                    self.names.value = start
                    self.names.define(item)
                    start = self.names.value
            elif isinstance(item, Assign) and not isinstance(item.value, Section):
                cell = _Cell(scope.full(item.name), item.loc)
                scope.names[item.name.lower()] = cell
                cells.append((item, cell, start))
                start += self.names.count(item.value, mode)
        # ``A = B`` renames the node of item B to A (NDLScript::ParseValue: SetName), so
        # CIFAR's ``OutputNodes = ol`` names the macro's items OutputNodes.W, ...
        renames = {i.value.name.lower(): i.name for i, _, _ in cells
                   if isinstance(i.value, Ref) and "." not in i.value.name}
        for item, cell, first in cells:
            if item.name.lower() in _GROUPS:
                cell.value = item.value
                continue
            name = renames.get(item.name.lower(), item.name) if isinstance(item.value, Call) \
                else item.name
            self.names.value = first
            cell.value = self._expand(item.value, scope, scope.full(name), mode)
        self.names.value = start
        return scope

    def _expand(self, expr: Any, scope: _Scope, name: str | None, mode: int = FRESH) -> Any:
        """What an expression stands for: a number or string, a :class:`_Node`, an
        :class:`_Instance` of a macro, or a name to look up later.  ``mode``: how cntk.exe
        parses it here (:mod:`._ndl_names`), which gives a call inside an argument its name
        ``unnamed<n>``."""
        inner = UNCOUNTED if mode == UNCOUNTED else FRESH
        if isinstance(expr, Num):
            self.names.take(mode)
            return expr.value
        if isinstance(expr, Str):
            return expr.value
        if isinstance(expr, Ref):
            return _Lazy(expr, scope)
        if isinstance(expr, Array):
            self.names.take(mode)
            return [self._expand(e, scope, None, inner) for e in expr.items]
        if not isinstance(expr, Call):  # pragma: no cover - the parser gives only the above
            raise TypeError(expr)
        macro = self.macros.get(expr.function.lower())
        if macro is not None:
            return self._call_macro(macro, expr, scope, name, mode)
        function = function_name(expr)
        number = self.names.take(mode)
        if name is None:
            self.older_count += 1
        if name is None and number is not None:
            name = scope.full(f"unnamed{number}")
        args = [self._expand(a, scope, None, inner) for a in expr.args]
        kwargs = {k: self._expand(v, scope, None, UNCOUNTED) for k, v in expr.kwargs.items()}
        node = _Node(name, function, args, kwargs, scope, expr.loc)
        if function in ("LearnableParameter", "ImageParameter"):
            node.seed = self._seed(node)
        self.nodes.append(node)
        if "tag" in expr.kwargs:
            self.tags.append((node, kwargs["tag"], expr.loc))
        return node

    def _seed(self, node: _Node) -> int | None:
        init = str(self._constant(node.kwargs.get("init", "uniform"), node, "init")).lower()
        if init not in ("uniform", "gaussian", "henormal"):
            return None
        forced = self._constant(node.kwargs.get("randomseed", -1), node, "randomSeed")
        if float(forced) >= 0:
            return int(forced) + self.seed_offset
        seed = self.seeds[0]
        self.seeds[0] += 1
        return seed + self.seed_offset

    def _call_macro(self, macro: MacroDef, call: Call, scope: _Scope, name: str | None,
                    mode: int) -> Any:
        if len(call.args) < len(macro.params):
            raise ConfigError(f"NDL: macro {macro.name} needs {len(macro.params)} arguments "
                              f"({', '.join(macro.params)}), got {len(call.args)}",
                              *where(call.loc))
        # cntk.exe: the call's number, then its copy of the body, then its arguments
        number = self.names.take(mode)
        if name is None:
            name = scope.full(f"unnamed{number if number is not None else ''}")
            self.older_count += 1
            self.older_instances[name] = f"unnamed{self.older_count}"
        body = self.names.value
        self.names.value += self.names.copy(macro)
        inner = _Scope(self.globals, name)
        for param, arg in zip(macro.params, call.args):
            value = self._expand(arg, scope, None, UNCOUNTED if mode == UNCOUNTED else FRESH)
            cell = _Cell(inner.full(param), call.loc)
            cell.value = value
            inner.names[param.lower()] = cell
        after, self.names.value = self.names.value, body
        if isinstance(macro.body, Section):
            self._run_items(macro.body.items, inner, macro.body, COPIED)
            cells = [inner.names[i.name.lower()] for i in macro.body.items
                     if isinstance(i, Assign) and not isinstance(i.value, Section)]
            if not cells:
                raise ConfigError(f"NDL: macro {macro.name} defines nothing", *where(macro.loc))
            last: Any = cells[-1]
        else:   # a one-line macro's node keeps the number it took when defined
            defined = self.names.one_line.get(macro.name.lower())
            last = self._expand(macro.body, inner,
                                name if defined is None else inner.full(f"unnamed{defined}"),
                                COPIED)
        self.names.value = after
        instance = _Instance(inner, last)
        tag = call.kwargs.get("tag")
        if tag is not None:
            self.tags.append((instance, self._expand(tag, scope, None, UNCOUNTED), call.loc))
        return instance

    # ---- looking names up --------------------------------------------------------------
    def _resolve(self, value: Any, where: Any) -> Any:
        """A value with its names looked up: a number, string, list, _Node or _Instance."""
        for _ in range(10000):
            if isinstance(value, _Cell):
                if value.value is None:
                    raise ConfigError(f"NDL: '{value.name}' is used before it has a value",
                                      *_loc(where))
                value = value.value
            elif isinstance(value, _Lazy):
                value = self._lookup(value.ref, value.scope)
            else:
                return value
        raise ConfigError("NDL: names refer to each other in a circle", *_loc(where))

    def _lookup(self, ref: Ref, scope: _Scope) -> Any:
        parts = ref.name.split(".")
        value = scope.find(parts[0])
        if value is None and scope.prefix:
            value = self._from_macro(ref, parts[0])
        if value is None:
            if parts[0].lower() in self.dropped:
                raise ConfigError(f"NDL: undefined Variable, '{parts[0]}' found, must be "
                                  "declared before first use (a value of an ndlMacros file is "
                                  "seen by nothing: cntk.exe keeps only a macros file's "
                                  "macros)", *where(ref.loc))
            if len(parts) == 1:      # an unquoted word: a string (init = Gaussian)
                return ref.name
            raise ConfigError(f"NDL: unknown name '{parts[0]}' in '{ref.name}'", *where(ref.loc))
        for k, part in enumerate(parts[1:], 1):
            value = self._resolve(value, ref)
            if not isinstance(value, _Instance) or part.lower() not in value.scope.names:
                raise ConfigError(f"NDL: '{'.'.join(parts[:k])}' has no member '{part}'",
                                  *where(ref.loc))
            value = value.scope.names[part.lower()]
        return value

    def _from_macro(self, ref: Ref, name: str) -> Any:
        """A load/run section's item named in a macro's body, which sees only its parameters,
        its own items and the macros' scope (NetworkDescriptionLanguage.h: NDLNode::FindNode
        looks in the macro's script, then the global one).  cntk.exe finds a section's node
        still, by its name in the network (EvaluateParameter's lookup "needed for MEL
        processing"); a value (a number, a string) it does not: "undefined Variable"."""
        value = self.sections.find(name)
        if value is None:
            return None
        target = self._resolve(value, ref)
        if isinstance(target, _Node) or (isinstance(target, _Instance) and "." in ref.name):
            return value
        raise ConfigError(f"NDL: undefined Variable, '{name}' found, must be declared before "
                          "first use (a macro's body sees its parameters, its own items and the "
                          "macros files' values, not a section's)", *where(ref.loc))

    def _node_of(self, value: Any, where: Any) -> _Node | Any:
        value = self._resolve(value, where)
        while isinstance(value, _Instance):
            value = self._resolve(value.last, where)
        return value

    def _constant(self, value: Any, node: _Node, what: str) -> Any:
        value = self._node_of(value, node)
        if isinstance(value, list):        # {5, 5, 3}: a shape (or flags)
            return tuple(self._constant(v, node, what) for v in value)
        if isinstance(value, _Node):
            raise ConfigError(f"NDL: {node.function}: {what} must be a number or a string, not "
                              "a node", *_loc(node))
        return value

    # ---- building ------------------------------------------------------------------------
    def _finish(self, scope: _Scope) -> Network:
        if self.library.sequences is None:   # NDL's inputs are sequences (of one frame, for a
            self.library.sequences = any(    # frame-mode reader): a recurrence needs them
                n.function in ("PastValue", "FutureValue") for n in self.nodes)
        for node in self.nodes:
            self._build(node)
        net = Network(record=None)
        for node in self.nodes:
            if node.name is not None:
                net.nodes[node.name] = node.built
        net.nodes = dict(zip(net.nodes, self.library.resolve_all(list(net.nodes.values()))))
        registry = current_registry()
        made = {id(v): name for name, v in registry.items()}
        self.library.name_parameters(net.nodes)
        net.cntk_nodes = self._cntk_nodes()
        net.older_names = older_names(dict(registry.items()), made, self.older_instances)
        net.reshaped_weights = frozenset(n for n, v in registry.items()
                                         if id(v) in self.patched_weights)
        groups: dict[str, list] = {t: [] for t in set(_GROUPS.values())}
        for value, tag, loc in self.tags:
            tag = str(self._constant(tag, _Node(None, "tag", [], {}, scope, loc), "tag"))
            low = tag.lower()
            if low == "multiseq":
                continue
            low = "criterion" if low == "criteria" else "evaluation" if low[:4] == "eval" \
                else low
            if low not in groups:
                raise ConfigError(f"NDL: unknown tag '{tag}' (feature, label, criterion, "
                                  "evaluation, output)", *_loc(loc))
            groups[low].append(self._variable(value, loc))
        for key, tag in _GROUPS.items():
            cell = scope.names.get(key)
            if cell is None:
                continue
            items = cell.value.items if isinstance(cell.value, Array) else [cell.value]
            for item in items:
                groups[tag].append(self._variable(self._expand_ref(item, scope), cell))
        for tag, attr in (("feature", "feature_nodes"), ("label", "label_nodes"),
                          ("criterion", "criterion_nodes"), ("evaluation", "evaluation_nodes"),
                          ("output", "output_nodes")):
            unique: list = []
            for v in groups[tag]:
                if not any(v is u for u in unique):
                    unique.append(v)
            setattr(net, attr, unique)
        return net

    def _cntk_nodes(self) -> list[tuple[Any, list[int], bool]]:
        """cntk.exe's nodes, one per NDL function call (:attr:`Network.cntk_nodes`): its
        Variable, its inputs' indices (a ``PastValue``'s too) and whether it is a trained
        parameter."""
        index = {id(n): k for k, n in enumerate(self.nodes)}
        out = []
        for node in self.nodes:
            inputs = []
            for arg in node.args:
                target = self._node_of(arg, node)
                for item in target if isinstance(target, list) else [target]:
                    item = self._node_of(item, node)
                    if isinstance(item, _Node):
                        inputs.append(index[id(item)])
            var = self.library.resolve(node.built)
            trained = node.function in ("LearnableParameter", "ImageParameter") and \
                bool(getattr(var, "need_grad", False))
            out.append((var, inputs, trained))
        return out

    def _expand_ref(self, item: Any, scope: _Scope) -> Any:
        return _Lazy(item, scope) if isinstance(item, Ref) else item

    def _variable(self, value: Any, where: Any) -> Any:
        node = self._node_of(value, where)
        if not isinstance(node, _Node):
            raise ConfigError(f"NDL: a node group lists {node!r}, not a node", *_loc(where))
        return self.library.resolve(self._build(node))

    def _build(self, node: _Node) -> Any:
        if node.built is not None:
            return node.built
        if node.building:
            raise ConfigError(f"NDL: '{node.name}' depends on itself without a Delay/PastValue "
                              "in the loop", *_loc(node))
        node.building = True
        delay = node.function in ("PastValue", "FutureValue")
        args = []
        for k, arg in enumerate(node.args):
            target = self._node_of(arg, node)
            if isinstance(target, _Node):
                if delay and target.built is None:
                    ref = ForwardRef(None, target.name or "")
                    self.waiting.setdefault(id(target), []).append(ref)
                    args.append(ref)
                    continue
                args.append(self._build(target))
            elif isinstance(target, list):      # (a, b) of RowStack, or a shape {5, 5, 3}
                items = [self._node_of(t, node) for t in target]
                args.append([self._build(t) if isinstance(t, _Node) else t for t in items])
            else:
                args.append(target)
        kwargs = {k: self._constant(v, node, k) for k, v in node.kwargs.items() if k != "tag"}
        for arg in args:
            if isinstance(arg, list):
                self.library.prepare_args(arg, {})
        self.library.prepare_args(args, {})
        self.library.path = node.name or ""
        try:
            node.built = FUNCTIONS[node.function](self, node, args, kwargs)
        except ConfigError as exc:
            if exc.line is not None:
                raise
            raise ConfigError(_message(node, exc.reason), *_loc(node)) from None
        except StadynError as exc:
            raise ConfigError(_message(node, str(exc)), *_loc(node)) from None
        finally:
            self.library.path = ""
            node.building = False
        for ref in self.waiting.pop(id(node), []):
            self.library.define_forward(ref, node.built)
        return node.built


def _message(node: _Node, reason: str) -> str:
    """A library's complaint about an NDL node, named after the node's function once."""
    return f"NDL: {reason}" if reason.startswith(node.function) else \
        f"NDL: {node.function}: {reason}"

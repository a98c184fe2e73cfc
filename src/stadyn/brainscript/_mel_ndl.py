"""The NDL items of a MEL script (``L2 = SBFF (L1.S, HDim, HDim)`` in an ``edit`` action's
``editPath``): built by the NDL builder with the loaded model's nodes in its scopes."""

from __future__ import annotations

from typing import Any

from ..graph import Variable
from ._ndl import NDLSource, _Builder, _Cell, _Instance, _Node, _Scope
from ._ndl_parser import Assign

__all__ = ["MELItems"]


class MELItems(_Builder):
    """The NDL builder of a MEL script's NDL items: the config's ``ndlMacros``, and the loaded
    model's nodes (and parameters) by name, ``a.b.c`` reached as a macro instance's members."""

    def __init__(self, source: NDLSource, library: Any, nodes: dict[str, Variable],
                 inputs: dict[str, Variable], parameters: dict[str, Variable]):
        super().__init__(source, library)
        macros = source.record.lookup("ndlMacros", None)
        for name in str(macros).split("+") if macros is not None else []:
            if name.strip():
                self._load_file(self._read(name, "ndlMacros"), run=False)
        self.existing: dict[str, _Node] = {}
        self.renew({**parameters, **inputs, **nodes})

    def renew(self, nodes: dict[str, Variable]) -> None:
        """The model's nodes (again, after an edit made some anew) in the names' scopes."""
        for name, v in nodes.items():
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

    def forget(self, name: str) -> None:
        """Take the node ``name`` out of the names' scopes (Delete, Rename): a later NDL
        item may define that name anew."""
        self.existing.pop(name, None)
        scope, parts = self.sections, name.split(".")
        for part in parts[:-1]:
            cell = scope.names.get(part.lower())
            if cell is None or not isinstance(cell.value, _Instance):
                return
            scope = cell.value.scope
        cell = scope.names.get(parts[-1].lower())
        if cell is not None and isinstance(cell.value, _Instance):
            cell.value.last = None
        elif cell is not None:
            del scope.names[parts[-1].lower()]

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

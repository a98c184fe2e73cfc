"""A :class:`GraphView` as Graphviz DOT source, in one expansion state, and Graphviz's layout
of it (``dot``, through the ``graphviz`` Python package).

A state is the set of scopes drawn open: an open scope is a frame (a DOT cluster) around what
it holds; a closed one is a single box naming the scope, its op types and its parameter count,
and the edges into and out of it carry the tensors that cross its border.  Scopes holding a
single op are never closed (their box would say no less than the op's own).
"""

from __future__ import annotations

import html
from typing import Collection, Iterable

from .._errors import StadynError
from ._view import Box, GraphView, Param, Scope, Tensor, shape_text

__all__ = ["to_dot", "collapsible", "layout", "GraphvizMissing", "FORMATS", "DIRECTIONS"]

FORMATS = ("svg", "png")
DIRECTIONS = ("TB", "LR")
_FONT = "Helvetica,Arial,sans-serif"
_FRAME_FILLS = ("#f3f6fc", "#e7eef9", "#dce6f6", "#d2def2")
_COLORS = {"op": "#cfe0fb", "input": "#d6f0d6", "output": "#fbe0c6", "parameter": "#fff3cc",
           "constant": "#eeeeee", "closed": "#e3dcf5", "params": "#fff8e0"}
_MAX_ATTRS = 4


class GraphvizMissing(StadynError, RuntimeError):
    """Graphviz's ``dot`` program (or the ``graphviz`` Python package) is not installed."""


def collapsible(view: GraphView, scope: Scope) -> bool:
    """Whether ``scope`` can be drawn closed: it is not the root and holds two ops or more."""
    return scope.parent is not None and len(view.ops_below(scope)) >= 2


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _value(value: object) -> str:
    text = str(value)
    if isinstance(value, tuple) and all(isinstance(v, int) for v in value):
        text = "×".join(map(str, value)) if len(value) > 1 else str(value[0]) if value else "()"
    return text if len(text) <= 28 else text[:27] + "…"


def _param_line(p: Param) -> str:
    fixed = "" if p.trainable else " (fixed)"
    return f"{_esc(p.short_name)} {_esc(shape_text(p.shape))} · {p.size:,}{fixed}"


def _table(rows: Iterable[tuple[str, str]], border_color: str = "#5b6b8c") -> str:
    cells = "".join(f'<TR><TD ALIGN="LEFT" BALIGN="LEFT" BGCOLOR="{bg}">{body}</TD></TR>'
                    for body, bg in rows)
    return (f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="4" '
            f'COLOR="{border_color}" STYLE="ROUNDED">{cells}</TABLE>>')


def _op_label(box: Box) -> str:
    head = f"<B>{_esc(box.label)}</B>"
    if box.heading and box.heading != box.label:
        head = f'<FONT POINT-SIZE="9">{_esc(box.heading)}</FONT><BR/>' + head
    rows = [(head, _COLORS["op"])]
    attrs = [f"{_esc(k)}={_esc(_value(v))}" for k, v in list(box.attrs.items())[:_MAX_ATTRS]]
    if len(box.attrs) > _MAX_ATTRS:
        attrs.append("…")
    attrs += [f"const {_esc(shape_text(c.shape))}" for c in box.constants[:2]]
    if attrs:
        rows.append(('<FONT POINT-SIZE="10">' + "<BR/>".join(attrs) + "</FONT>", "white"))
    if box.params:
        rows.append(('<FONT POINT-SIZE="10">' + "<BR/>".join(_param_line(p) for p in box.params)
                     + "</FONT>", _COLORS["params"]))
    return _table(rows)


def _leaf_label(box: Box) -> str:
    tensor = box.outputs[0] if box.outputs else Tensor(None)
    body = f"<B>{_esc(box.label)}</B><BR/>{_esc(tensor)}"
    if box.kind == "parameter":
        body = f"<B>{_esc(box.label)}</B><BR/>" + "<BR/>".join(_param_line(p) for p in box.params)
    return _table([(body, _COLORS[box.kind])], "#7a7a7a")


def _closed_label(view: GraphView, scope: Scope, interactive: bool) -> str:
    ops = view.ops_below(scope)
    types: list[str] = []
    for b in ops:
        if b.label not in types:
            types.append(b.label)
    n_params = sum(b.n_parameters for b in ops)
    mark = "⊕ " if interactive else ""
    lines = [f"<B>{mark}{_esc(scope.name)}</B>",
             f'<FONT POINT-SIZE="10">{len(ops)} ops · {n_params:,} params</FONT>',
             '<FONT POINT-SIZE="9">' + _esc(", ".join(types[:3]) + (", …" if len(types) > 3
                                                                     else "")) + "</FONT>"]
    return _table([("<BR/>".join(lines), _COLORS["closed"])], "#6a55a0")


def _tooltip(box: Box) -> str:
    lines = [f"{box.label} ({box.kind})"]
    if box.scope:
        lines.append(f"scope: {box.scope}")
    lines += [f"{k} = {v}" for k, v in box.all_attrs.items()]
    lines += [f"{p.name}: {shape_text(p.shape)} {p.dtype} ({p.size:,})" for p in box.params]
    lines += [f"-> {t}" for t in box.outputs]
    if box.macs:
        lines.append(f"multiply-adds: {box.macs:,}")
    return "\n".join(lines)


def _is_open(view: GraphView, scope: Scope, expanded: Collection[str] | None) -> bool:
    return expanded is None or scope.path in expanded or not collapsible(view, scope)


def to_dot(view: GraphView, expanded: Collection[str] | None = None,
           interactive: bool = False, direction: str = "TB"):
    """The ``graphviz.Digraph`` of ``view`` with the scopes in ``expanded`` open (paths; ``None``:
    all open).  ``interactive`` marks closed boxes and open frames that a click toggles (ids
    ``scope_N_box`` / ``scope_N`` with N the scope's index, ⊕/⊖ in their labels).
    ``direction`` is where the data flows: ``"TB"`` (down) or ``"LR"`` (to the right).

    Example:
        >>> import stadyn as sd, stadyn.functions as F, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()), sd.parameter_scope("net"):
        ...     y = F.relu(PF.affine(sd.Variable((4, 3)), 2))
        >>> from stadyn.inspect import view_of
        >>> src = to_dot(view_of(y)).source
        >>> "subgraph cluster_1" in src and "affine" in src and "4×2 f32" in src
        True
    """
    if direction not in DIRECTIONS:
        raise StadynError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    graphviz = _graphviz()
    g = graphviz.Digraph("stadyn", format="svg")
    g.attr(rankdir=direction, fontname=_FONT, nodesep="0.25", ranksep="0.3", newrank="true")
    if view.title:
        g.attr(label=view.title, labelloc="t", fontsize="16")
    g.attr("node", fontname=_FONT, fontsize="11", shape="none", margin="0")
    g.attr("edge", fontname=_FONT, fontsize="9", fontcolor="#4a4a4a", color="#6b6b6b",
           arrowsize="0.7")
    rep: dict[str, str] = {}

    def emit(graph, scope: Scope, closed_under: str | None) -> None:
        for key in scope.boxes:
            if closed_under is not None:
                rep[key] = closed_under
                continue
            box = view.boxes[key]
            rep[key] = key
            label = _op_label(box) if box.kind == "op" else _leaf_label(box)
            graph.node(key, label=label, tooltip=_tooltip(box), id=f"box_{key}")
        for child in scope.children.values():
            if closed_under is not None:
                emit(graph, child, closed_under)
            elif _is_open(view, child, expanded):
                toggles = interactive and collapsible(view, child)
                with graph.subgraph(name=f"cluster_{child.index}") as c:
                    fill = _FRAME_FILLS[min(child.depth - 1, len(_FRAME_FILLS) - 1)]
                    c.attr(label=("⊖ " if toggles else "") + child.name, labeljust="l",
                           style="rounded,filled", fillcolor=fill, color="#8a9abb",
                           fontsize="11", tooltip=child.path,
                           id=f"scope_{child.index}" if toggles else f"group_{child.index}")
                    emit(c, child, None)
            else:
                key = f"s{child.index}"
                graph.node(key, label=_closed_label(view, child, interactive),
                           tooltip=f"{child.path} (click to open)" if interactive else child.path,
                           id=f"scope_{child.index}_box")
                emit(graph, child, key)

    emit(g, view.root, None)
    seen: set[tuple[str, str, str]] = set()
    for e in view.edges:
        src, dst = rep[e.src], rep[e.dst]
        label = str(e.tensor)
        if src == dst or (src, dst, label) in seen:
            continue
        seen.add((src, dst, label))
        g.edge(src, dst, label=label)
    return g


def _graphviz():
    try:
        import graphviz
    except ImportError as exc:   # a dependency of stadyn; missing only in a broken install
        raise GraphvizMissing("drawing a graph needs the 'graphviz' Python package "
                              "(pip install graphviz)") from exc
    return graphviz


def layout(dot_source: str, fmt: str = "svg") -> bytes:
    """Run Graphviz's ``dot`` on ``dot_source``; the picture as bytes (``fmt``: svg or png)."""
    graphviz = _graphviz()
    if fmt not in FORMATS:
        raise StadynError(f"dot output format {fmt!r}: expected one of {FORMATS}")
    try:
        return graphviz.pipe("dot", fmt, dot_source.encode("utf-8"))
    except graphviz.ExecutableNotFound as exc:
        raise GraphvizMissing("drawing a graph needs Graphviz's 'dot' program, which is not "
                              "installed (Debian/Ubuntu: apt-get install graphviz; macOS: brew "
                              "install graphviz); a .dot file can still be written") from exc
    except graphviz.CalledProcessError as exc:   # pragma: no cover - dot rejected our source
        raise StadynError(f"Graphviz's dot failed: {exc.stderr.decode(errors='replace')[-500:]}"
                          ) from exc

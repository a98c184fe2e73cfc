"""The interactive page: one self-contained HTML file in which scopes open and close on a click.

Graphviz lays out every state the page can reach by clicks ahead of time; the page embeds
those SVG pictures (one ``<template>`` each) with a small script of our own (``page.js``) that
swaps them.  Which states are laid out:

* if the network has few scopes (at most :data:`MAX_ALL_STATES` combinations of open scopes),
  every combination: any set of frames can be open at once;
* otherwise the first view, everything open, everything closed, and for each scope the state
  in which it is open (with the scopes around it) and the one in which it is closed again.
  Opening a second scope then closes the first one's siblings -- one layer is read at a time.

The first view opens scopes down to ``depth`` levels, or by default opens a scope while it is
the only one at its level (a network wrapped in one ``cnn`` scope shows its layers at once).
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Iterable

from ._dot import collapsible, layout, to_dot
from ._view import GraphView, Scope

__all__ = ["page", "page_states", "initial_state", "MAX_ALL_STATES"]

MAX_ALL_STATES = 32


def _collapsible_scopes(view: GraphView) -> list[Scope]:
    return [s for s in view.root.walk() if collapsible(view, s)]


def _toggle_ancestors(view: GraphView, scope: Scope) -> list[Scope]:
    return [a for a in scope.ancestors() if collapsible(view, a)]


def initial_state(view: GraphView, depth: int | None = None) -> frozenset[str]:
    """The scopes open in the first view (see the module docstring).

    Example:
        >>> import stadyn as sd
        >>> from stadyn.models import digits_mlp
        >>> from stadyn.inspect import view_of
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     v = view_of(digits_mlp(sd.Variable((2, 64))))
        >>> sorted(initial_state(v)), sorted(initial_state(v, depth=0))
        (['mlp'], [])
    """
    scopes = _collapsible_scopes(view)
    if depth is not None:
        return frozenset(s.path for s in scopes if s.depth <= depth)
    opened: set[str] = set()
    level = view.root
    while True:
        ops_here = any(view.boxes[k].kind == "op" for k in level.boxes)
        toggles = [c for c in level.children.values() if collapsible(view, c)]
        if ops_here or len(toggles) != 1:
            break
        level = toggles[0]
        opened.add(level.path)
    return frozenset(opened)


def _count_states(view: GraphView, scope: Scope, cap: int) -> int:
    """How many sets of open scopes there are below ``scope`` (open), up to ``cap``."""
    total = 1
    for child in scope.children.values():
        inner = _count_states(view, child, cap)
        total *= (inner + 1) if collapsible(view, child) else inner
        if total > cap:
            return cap + 1
    return total


def _all_states(view: GraphView, scope: Scope) -> list[frozenset[str]]:
    states = [frozenset()]
    for child in scope.children.values():
        inner = [s | ({child.path} if collapsible(view, child) else set())
                 for s in _all_states(view, child)]
        options = inner + ([frozenset()] if collapsible(view, child) else [])
        states = [a | b for a in states for b in options]
    return states


def page_states(view: GraphView, initial: frozenset[str]
                ) -> tuple[list[frozenset[str]], dict[int, frozenset[str]],
                           dict[int, frozenset[str]]]:
    """The states to lay out, and for each scope (by index) the state to show when it is opened
    or closed from a state that was not laid out."""
    scopes = _collapsible_scopes(view)
    everything = frozenset(s.path for s in scopes)
    opened: dict[int, frozenset[str]] = {}
    closed: dict[int, frozenset[str]] = {}
    for s in scopes:
        around = initial | {a.path for a in _toggle_ancestors(view, s)}
        opened[s.index] = frozenset(around | {s.path})
        below = {b.path for b in s.walk()}
        closed[s.index] = frozenset(around - below)
    if _count_states(view, view.root, MAX_ALL_STATES) <= MAX_ALL_STATES:
        states = _all_states(view, view.root)
    else:
        states = [initial, everything, frozenset(), *opened.values(), *closed.values()]
    unique: list[frozenset[str]] = []
    for s in [initial, *states]:
        if s not in unique:
            unique.append(s)
    return unique, opened, closed


def _key(view: GraphView, state: Iterable[str]) -> str:
    index = {s.path: s.index for s in view.root.walk()}
    return ",".join(str(i) for i in sorted(index[p] for p in state))


def _svg_body(svg: bytes) -> str:
    text = svg.decode("utf-8")
    return text[text.index("<svg"):]


def page(view: GraphView, depth: int | None = None, direction: str = "TB") -> str:
    """The self-contained HTML page of ``view`` (see the module docstring)."""
    initial = initial_state(view, depth)
    states, opened, closed = page_states(view, initial)
    untitled = dataclasses.replace(view, title="")      # the page's header names it
    sources = [to_dot(untitled, state, True, direction).source for state in states]
    # each layout is one run of dot, a process of its own: run as many at once as there are CPUs
    with ThreadPoolExecutor(max_workers=max(1, min(len(sources), os.cpu_count() or 1))) as pool:
        svgs = list(pool.map(lambda source: layout(source, "svg"), sources))
    templates = [f'<template id="stadyn-state-{k}">{_svg_body(svg)}</template>'
                 for k, svg in enumerate(svgs)]
    data = {
        "scopes": [{"index": s.index, "path": s.path,
                    "parent": s.parent.index if s.parent is not None and s.parent.parent
                    is not None else None, "toggles": collapsible(view, s)}
                   for s in view.root.walk() if s.parent is not None],
        "states": {_key(view, s): k for k, s in enumerate(states)},
        "initial": _key(view, initial),
        "all": _key(view, {s.path for s in _collapsible_scopes(view)}),
        "open": {str(i): _key(view, s) for i, s in opened.items()},
        "close": {str(i): _key(view, s) for i, s in closed.items()},
    }
    blob = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")   # no tag in it
    title = html.escape(view.title or "Stadyn graph")
    assets = resources.files(__package__)
    css = assets.joinpath("page.css").read_text(encoding="utf-8")
    script = assets.joinpath("page.js").read_text(encoding="utf-8")
    n_params = view.n_parameters
    n_ops = sum(1 for b in view.boxes.values() if b.kind == "op")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="generator" content="stadyn.show">
<title>{title}</title>
<style>
{css}</style>
</head>
<body>
<header>
<h1>{title}</h1>
<span class="facts">{n_ops:,} ops · {n_params:,} parameters</span>
<span class="tools">
<button type="button" id="stadyn-close-all">close all</button>
<button type="button" id="stadyn-open-all">open all</button>
<button type="button" id="stadyn-zoom-out" title="smaller">−</button>
<button type="button" id="stadyn-zoom-in" title="larger">+</button>
<button type="button" id="stadyn-zoom-fit" title="fit the width">fit</button>
</span>
<p class="hint">Click a <b>⊕</b> box to open a group, a <b>⊖</b> frame to close it; hover a box
for its attributes. <span id="stadyn-status"></span></p>
</header>
<main id="stadyn-view"></main>
{chr(10).join(templates)}
<script type="application/json" id="stadyn-graph-data">{blob}</script>
<script>
{script}</script>
</body>
</html>
"""

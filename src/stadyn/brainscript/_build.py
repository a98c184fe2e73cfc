"""Building a network from its BrainScript description: parse, then evaluate against a library."""

from __future__ import annotations

from typing import Any

from ._config import BrainScriptSource
from ._network import Network, evaluate_network
from ._library import Library

__all__ = ["build_network"]


def build_network(source: BrainScriptSource | Any | str, library: Library,
                  path: str | None = None) -> Network:
    """Parse and evaluate a network description (a ``BrainScriptNetworkBuilder`` value).

    >>> from stadyn.brainscript import Library, build_network
    >>> net = build_network("{ x = 1 ; y = x + 1 }", Library())
    >>> net.record["y"]
    2
    """
    if isinstance(source, str):
        source = BrainScriptSource(source, path)
    if not isinstance(source, BrainScriptSource):   # an NDLNetworkBuilder's (._ndl.NDLSource)
        return source.build(library)
    network = evaluate_network(source.parse(), library)
    name_nodes = getattr(source, "name_nodes", None)   # SimpleNetworkBuilder's node names
    if name_nodes is not None:
        name_nodes(network)
    return network

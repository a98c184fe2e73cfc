"""Small questions about a traced program (``torch.fx``) that several plan passes ask."""

from __future__ import annotations

import torch.fx as fx

__all__ = ["output_node", "output_values"]


def output_node(gm: fx.GraphModule) -> fx.Node:
    """The program's ``output`` node (the last).

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> gm = make_fx(lambda x: (x + 1, x * 2), tracing_mode="fake")(torch.ones(2))
        >>> output_node(gm).op, sorted(n.name for n in output_values(gm))
        ('output', ['add', 'mul'])
    """
    return next(n for n in reversed(gm.graph.nodes) if n.op == "output")


def output_values(gm: fx.GraphModule) -> set:
    """The nodes a program returns."""
    found: set = set()
    fx.node.map_arg(output_node(gm).args, found.add)
    return found

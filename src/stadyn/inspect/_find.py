"""Finding parts of a graph by name -- what CNTK's ``logging.graph.find_by_name`` will call."""

from __future__ import annotations

from typing import Any

from ..graph import Variable, topological_nodes
from ._view import named_outputs

__all__ = ["find_by_name"]


def find_by_name(outputs: Any, name: str) -> list[Variable]:
    """The Variables of the graph computing ``outputs`` that are called ``name``: leaves and
    results whose ``name`` is ``name`` (a parameter's full path, ``cnn/conv1/conv/W``, or a
    name set by hand), and the outputs of the ops created in scope ``name`` -- the full path or
    its last part (``conv1`` finds the ops of ``cnn/conv1``, not those of scopes inside it).
    In graph order, each once; an empty list if none.

    Example:
        >>> import stadyn as sd, stadyn.functions as F, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()), sd.parameter_scope("fc"):
        ...     y = F.relu(PF.affine(sd.Variable((4, 3)), 2))
        >>> [v.shape for v in find_by_name(y, "fc/affine/W")], find_by_name(y, "fc")[0] is y
        ([(3, 2)], True)
    """
    roots = list(named_outputs(outputs).values()) if not hasattr(outputs, "inputs") else list(
        outputs.outputs.values())
    found: list[Variable] = []
    seen: set[int] = set()

    def add(v: Variable | None) -> None:
        if v is not None and id(v) not in seen:
            seen.add(id(v))
            found.append(v)

    for node in topological_nodes(roots):
        for v in node.inputs:
            if v.parent is None and v.graph_name == name:
                add(v)
        scope = node.scope.strip("/")
        by_scope = scope == name or scope.rsplit("/", 1)[-1] == name
        for v in node.outputs:
            if v is not None and (by_scope or v.graph_name == name):
                add(v)
    for v in roots:
        if v.graph_name == name:
            add(v)
    return found

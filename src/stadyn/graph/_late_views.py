"""Views a static forward reads after their source's op ran: NNabla 1.39's depth-first order.

A view (:meth:`Variable.unlinked`, NNabla's ``h.get_unlinked_variable()``) of an op output
``h`` is a leaf holding ``h``'s array.  NNabla's forward runs a graph's functions depth first
from the root, a function's first input first (``visit_function_recursive``,
src/nbla/computation_graph/variable.cpp), each reading the arrays its inputs hold then: a
reader of the view reached after ``h``'s function reads the values this forward gave ``h``; one
reached before it, those of the forward before.  A plan's nodes run in that order
(:func:`~stadyn.graph.topological_nodes`), but feeds every leaf at its start: such a view gets
its value from ``h``'s run instead (:func:`late_views`, an :class:`~stadyn.graph.EagerPlan`'s
``interpret`` hook; case ``nnabla_views_36.unlinked__read_after_its_source``).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([1.0, 2.0]))
    >>> h = F.mul_scalar(x, 2.0)
    >>> y = F.add2(F.sum(h), F.sum(F.mul_scalar(h.unlinked(), 5.0)))
    >>> y.forward(); float(y.d)            # 6 + 5 * 6, in the first forward already
    36.0
"""

from __future__ import annotations

from typing import Callable, Sequence

from ._subgraph import leaf_tensor, output_key
from ._variable import FunctionNode, Variable

__all__ = ["late_views", "view_hooks"]


def _source(v: Variable) -> Variable | None:
    target = v._alias
    while target is not None and target._alias is not None:
        target = target._alias
    return target


def late_views(nodes: Sequence[FunctionNode], leaves: Sequence[Variable]) -> dict[int, list]:
    """Node position -> the views among ``leaves`` whose source is that node's output and whose
    first reader runs after it, each as ``(view, source)``; empty where there is none."""
    at = None
    found: dict[int, list] = {}
    for v in leaves:
        h = _source(v)
        if h is None or h.parent is None:
            continue
        if at is None:
            at = {id(n): i for i, n in enumerate(nodes)}
        made = at.get(id(h.parent))
        first = next((i for i, n in enumerate(nodes) if any(u is v for u in n.inputs)), None)
        if made is not None and first is not None and made < first:
            found.setdefault(made, []).append((v, h))
    return found


def view_hooks(nodes: Sequence[FunctionNode], leaves: Sequence[Variable]
               ) -> dict[int, Callable[[dict], None]] | None:
    """``interpret``'s ``after`` hooks giving each of :func:`late_views` its source's value of
    the run as the source's node has run (None where there is no such view)."""
    found = late_views(nodes, leaves)
    if not found:
        return None

    def hook(views: list) -> Callable[[dict], None]:
        def give(env: dict) -> None:
            for v, h in views:
                env[id(v)] = leaf_tensor(v, env[output_key(h.parent, h._index)])
        return give
    return {i: hook(views) for i, views in found.items()}

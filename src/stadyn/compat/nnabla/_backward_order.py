"""The order in which NNabla 1.39's backward runs a graph's functions (``variable.cpp``
~870-930): highest rank first -- a function's rank is one more than the highest of its inputs'
parents' --, among equal ranks the one the walk found first; the walk goes down only through
inputs whose ``need_grad`` is set.  Read by what must act in that order after or around
Stadyn's backward: the views sharing an op output's gradient (``_shared_grads``) and the
spectral norms writing ``u`` again (``_spectral_u``)."""

from __future__ import annotations

import heapq
from typing import Any

__all__ = ["backward_order"]


def backward_order(first: Any, nodes: list) -> list:
    """The functions of ``nodes`` (a graph's function nodes in topological order) a backward
    starting at function ``first`` runs, in NNabla 1.39's order.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> import stadyn.compat.nnabla.functions as F
        >>> from stadyn.graph import topological_nodes
        >>> x = nn.Variable((2,), need_grad=True)
        >>> a = F.exp(x); b = F.sin(a); y = F.add2(b, a * 2)
        >>> [n.spec.name for n in backward_order(y.parent, topological_nodes([y]))]
        ['add2', 'sin', 'mul_scalar', 'exp']
    """
    rank: dict[int, int] = {}
    for n in nodes:
        rank[id(n)] = 1 + max((rank.get(id(u.parent), 0) for u in n.inputs
                               if u is not None and u.parent is not None), default=0)
    found = {id(first): 0}
    heap = [(-rank[id(first)], 0, first)]
    order, done = [], set()
    while heap:
        _, _, n = heapq.heappop(heap)
        if id(n) in done:
            continue
        done.add(id(n))
        order.append(n)
        for u in n.inputs:
            if u is None or u.parent is None or not u.need_grad:
                continue
            found.setdefault(id(u.parent), len(found))
            heapq.heappush(heap, (-rank[id(u.parent)], found[id(u.parent)], u.parent))
    return order

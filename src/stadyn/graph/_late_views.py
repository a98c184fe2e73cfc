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

A front end's leaf that holds an op output's array in another shape (NNabla's
``h.reshape(shape, unlink=True)``: a leaf over a view of ``h``'s tensor, no ``_alias``) is
told to the graph by :func:`holds_array_of`; read after ``h``'s op, it gets the run's value of
``h`` written into the memory it holds (which ``h``'s run fills at its end anyway), its
gradient plumbing unchanged (case ``nnabla_views_36.unlinked__reshape_read_after_its_source``).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([1.0, 2.0]))
    >>> h = F.mul_scalar(x, 2.0)
    >>> y = F.add2(F.sum(h), F.sum(F.mul_scalar(h.unlinked(), 5.0)))
    >>> y.forward(); float(y.d)            # 6 + 5 * 6, in the first forward already
    36.0
"""

from __future__ import annotations

import weakref
from typing import Callable, Sequence

import torch

from ._subgraph import leaf_tensor, output_key
from ._tensors import data_of
from ._variable import FunctionNode, Variable
from ._identity_keys import IdentityKeyDict

__all__ = ["late_views", "view_hooks", "holds_array_of"]

# a leaf -> (a weak reference to) the op output whose array it holds in its own shape
_ARRAYS: "IdentityKeyDict[Variable, weakref.ref]" = IdentityKeyDict()


def holds_array_of(view: Variable, source: Variable) -> None:
    """Tell the graph that the leaf ``view`` holds the op output ``source``'s array in its own
    shape (its tensor a view of ``source``'s: NNabla's ``source.reshape(shape, unlink=True)``),
    so that a static forward reading ``view`` after ``source``'s op reads that run's value.
    Nothing is kept once the two no longer share memory.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([1.0, 2.0]))
        >>> h = F.mul_scalar(x, 2.0); h.forward()
        >>> v = sd.Variable((2, 1)); v.data = h.data.view(2, 1); holds_array_of(v, h)
        >>> y = F.add2(F.sum(h), F.sum(F.mul_scalar(v, 5.0)))
        >>> x.d = np.array([3.0, 4.0]); y.forward(); float(y.d)     # 14 + 5 * 14
        84.0
    """
    _ARRAYS[view] = weakref.ref(source)


def _array_source(v: Variable) -> Variable | None:
    """The op output whose array the leaf ``v`` holds (:func:`holds_array_of`) while the two
    still share memory, else None."""
    ref = _ARRAYS.get(v)
    h = None if ref is None else ref()
    if h is None or h.parent is None:
        return None
    mine, theirs = v._data, h._data
    if (mine is None or theirs is None or mine.data_ptr() != theirs.data_ptr()
            or mine.numel() != theirs.numel() or mine.dtype != theirs.dtype):
        return None
    return h


def _source(v: Variable) -> Variable | None:
    target = v._alias
    if target is None:
        return _array_source(v) if _ARRAYS else None
    while target._alias is not None:
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
                value = env[output_key(h.parent, h._index)]
                if v._alias is not None:
                    env[id(v)] = leaf_tensor(v, value)
                    continue
                mine = env.get(id(v))       # the memory it holds, which the run reads
                if (mine is not None and mine.numel() == value.numel()
                        and mine.dtype == value.dtype):
                    with torch.no_grad():
                        mine.copy_(value.detach().reshape(mine.shape))
                else:
                    env[id(v)] = value.detach().reshape(tuple(data_of(v).shape))
        return give
    return {i: hook(views) for i, views in found.items()}

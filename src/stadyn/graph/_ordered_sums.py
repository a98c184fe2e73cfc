"""A value read by three or more functions gets their gradients added up in NNabla 1.39's order.

NNabla runs the backward function by function (``CgVariable::visit_function_backward``,
src/nbla/computation_graph/variable.cpp; the order: :func:`~stadyn.graph.backward_order`), each
writing its input's gradient (the first) or adding into it (the others), one rounding per
addition in the array's type.  Torch's autograd adds the parts up as they arrive, in the order
its readers' backwards run (the last made first).  Addition is commutative, so two readers give
the same sum either way; from three on the order shows in the last bit (float32) or one float16
step (NNabla's ``cpu:half``, where the readers of a float32 leaf read one half copy of it,
``_precision.HalfCopies``): ``tanh(w) * sigmoid(w) + exp(w)`` gives ``exp``'s part, then
``tanh``'s, then ``sigmoid``'s.

:func:`ordered_sums` arranges it for one backward: for each value read by three or more
functions the backward reaches (the tensor they read: a half copy where they read one), it
catches each reader's part on its autograd edges into that tensor (post-hooks on the reader's
nodes) and has a hook on the tensor return the parts added in NNabla's order instead of
torch's sum.  A value is left to torch where some reader's part cannot be caught on its own
(its edges not found, or some readers read the half copy and others the float32 value), and
where a reader keeps its backward for later (``readers_before``).  Only NNabla's functions
(nodes bound to a context, ``FunctionNode.context``) are arranged: Stadyn's own ops and
CNTK's keep torch's sum.  The hooks run when traced
too (``make_fx`` records the sum they return), so a static plan's backward program adds in
the same order.

Example: ``w * 1 + w * e + w * e`` with ``e = 2**-24``: NNabla adds the last reader's part
first, then the first's (``e + 1`` rounds to 1), then the second's (1 again); torch's autograd
gave ``(e + e) + 1``, one float32 step above 1:
    >>> import numpy as np, torch, stadyn.compat.nnabla as nn
    >>> from stadyn.graph import topological_nodes
    >>> e = 2.0 ** -24
    >>> with nn.auto_forward():
    ...     w = nn.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
    ...     y = w * 1.0 + w * e + w * e
    >>> with ordered_sums(y.parent, topological_nodes([y]), lambda v: v._data):
    ...     torch.autograd.backward(y._data, torch.ones(2))
    >>> w.g.tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import torch

from ._reader_order import backward_order
from ._reader_leaves import TensorOf, output_grad_fns
from ._variable import FunctionNode, Variable

__all__ = ["ordered_sums"]

CopyOf = Callable[[Variable, torch.Tensor], "torch.Tensor | None"]


def _many_readers(nodes: Sequence[FunctionNode]) -> list[tuple[Variable, list]]:
    """The Variables three or more of ``nodes`` read, each with its readers."""
    readers: dict[int, tuple[Variable, list]] = {}
    for n in nodes:
        seen = set()
        for u in n.inputs:
            if isinstance(u, Variable) and id(u) not in seen:
                seen.add(id(u))
                readers.setdefault(id(u), (u, []))[1].append(n)
    return [(u, rs) for u, rs in readers.values() if len(rs) >= 3]


@contextmanager
def ordered_sums(root: FunctionNode | None, nodes: Sequence[FunctionNode],
                 tensor_of: TensorOf, copy_of: CopyOf | None = None) -> Iterator[dict]:
    """For one backward from ``root``'s output through ``nodes`` (topological order): each
    value three or more of them read has their gradient parts added in NNabla's order (see
    the module docstring).  ``tensor_of(v)``: ``v``'s tensor in the run; ``copy_of(v, t)``:
    the half copy of ``t`` its readers read, if any.  Yields ``{id(tensor): gradient}``, the
    sums it gave (``torch.autograd.grad`` returns an intermediate's gradient as it was before
    the tensor's hooks)."""
    many = _many_readers(nodes) if root is not None else []
    sums: dict[int, torch.Tensor] = {}
    if not many:
        yield sums
        return

    def follows(u: Variable) -> bool:
        t = tensor_of(u)
        return t is not None and t.requires_grad

    order = backward_order(root, nodes, follows)
    at = {id(n): k for k, n in enumerate(order)}
    handles: list[Any] = []
    try:
        for u, rs in many:
            if any(r.context is None or hasattr(r.kwargs.get("function"), "defer_input")
                   for r in rs):
                continue                # (Stadyn's and CNTK's ops; readers_before's)
            reached = sorted((r for r in rs if id(r) in at), key=lambda r: at[id(r)])
            t = tensor_of(u)
            if len(reached) < 3 or t is None or not t.requires_grad:
                continue
            copy = copy_of(u, t) if copy_of is not None else None
            stops = {id(copy.grad_fn)} if copy is not None and copy.grad_fn is not None \
                else set()
            for target in (copy, t):
                if target is not None and target.requires_grad \
                        and _arrange(target, reached, tensor_of, stops, handles, sums):
                    break
        yield sums
    finally:
        for handle in handles:
            handle.remove()


def _edges_into(reader: FunctionNode, target: torch.Tensor, tensor_of: TensorOf,
                stops: set) -> list[tuple]:
    """The autograd nodes of ``reader``'s op with an edge into ``target`` (its node, or its
    gradient accumulator for a leaf): (node, edge number) pairs, in the order found."""
    fn, nr = target.grad_fn, target.output_nr

    def into(nxt, n) -> bool:
        if fn is None:
            return getattr(nxt, "variable", None) is target
        return nxt is fn and n == nr

    bounds = {id(t.grad_fn) for u in reader.inputs if u is not None
              and (t := tensor_of(u)) is not None and t.grad_fn is not None} | stops
    starts = [s for s in output_grad_fns(reader, tensor_of) if id(s) not in bounds]
    edges, seen, todo = [], set(), starts[::-1]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for j, (nxt, n) in enumerate(node.next_functions):
            if nxt is None:
                continue
            if into(nxt, n):
                edges.append((node, j))
            elif id(nxt) not in bounds:
                todo.append(nxt)
    return edges


def _arrange(target: torch.Tensor, readers: list, tensor_of: TensorOf, stops: set,
             handles: list, sums: dict) -> bool:
    """Catch each of ``readers``' (in NNabla's order) parts of ``target``'s gradient and have
    a hook on ``target`` add them in that order; False (nothing arranged) where a reader has
    no edge into it, or one of its own.  The first part caught goes on into torch's sum as it
    is, the others are taken out of it (the post-hook gives None for them): torch adds
    nothing, and the hook on ``target`` (run when every reader has run) returns the parts
    added in NNabla's order."""
    found = [_edges_into(r, target, tensor_of, stops) for r in readers]
    owners: dict[int, int] = {}
    for k, edges in enumerate(found):
        for node, _ in edges:
            if owners.setdefault(id(node), k) != k:
                return False    # (a reader's part not on its own: a cast all of them read)
    if not all(found):
        return False
    parts: list[list] = [[] for _ in readers]
    first = [True]
    dtype, shape = target.dtype, target.shape

    def catch(k: int, j: int) -> Callable:
        def hook(grad_inputs, grad_outputs):
            g = grad_inputs[j]
            if g is None or g.dtype != dtype or g.shape != shape:
                return None     # (left to torch: not a part this hook can add)
            parts[k].append(g)
            if first[0]:
                first[0] = False
                return None
            return tuple(None if i == j else h for i, h in enumerate(grad_inputs))
        return hook

    for k, edges in enumerate(found):
        for node, j in edges:
            handles.append(node.register_hook(catch(k, j)))

    def complete(given: torch.Tensor) -> torch.Tensor:
        got = [g for gs in parts for g in gs]
        for gs in parts:
            gs.clear()
        first[0] = True
        if not got:
            return given
        total = got[0]
        for g in got[1:]:
            total = total + g
        sums[id(target)] = total
        return total

    handles.append(target.register_hook(complete))
    return True

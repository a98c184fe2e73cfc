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

A leaf's ``.g`` not zeroed before the backward (gradients accumulated over several backwards)
is where NNabla adds each part onto the gradient it holds, ``((g0 + p1) + p2)``, and torch
adds the parts' sum, ``g0 + (p1 + p2)``: from two readers on the last bit shows.  In a backward
into the leaves' ``.grad`` (``accumulate``: dynamic mode, an eager plan) such a leaf's parts
are added onto it in place, in NNabla's order, by the hook on its tensor (which then gives
torch negative zeros to add).  A static plan's program returns the sum (case
``nnabla_grad_44.nn_backward__onto_a_gradient_not_zeroed``, known rows).

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

from ._grad_buffers import is_zeroing
from ._reader_order import backward_order
from ._reader_leaves import TensorOf, output_grad_fns
from ._variable import FunctionNode, Variable

__all__ = ["ordered_sums"]

CopyOf = Callable[[Variable, torch.Tensor], "torch.Tensor | None"]


def _many_readers(nodes: Sequence[FunctionNode], tensor_of: TensorOf | None
                  ) -> list[tuple[Variable, list]]:
    """The Variables three or more of ``nodes`` read, and the leaves two read whose tensor
    holds a gradient already (:func:`_accumulating`), each with its readers."""
    readers: dict[int, tuple[Variable, list]] = {}
    for n in nodes:
        seen = set()
        for u in n.inputs:
            if isinstance(u, Variable) and id(u) not in seen:
                seen.add(id(u))
                readers.setdefault(id(u), (u, []))[1].append(n)
    return [(u, rs) for u, rs in readers.values() if len(rs) >= 3 or (
        len(rs) == 2 and tensor_of is not None and u.parent is None
        and _accumulating(tensor_of(u)) is not None)]


def _accumulating(t: "torch.Tensor | None") -> "torch.Tensor | None":
    """The gradient a leaf's tensor ``t`` holds, which a backward adds onto: NNabla adds each
    function's part onto it in its backward order (``((g0 + p1) + p2)``), where torch adds
    the parts' sum (``g0 + (p1 + p2)``); None for none (or for a non-leaf ``t``)."""
    if t is None or t.grad_fn is not None or not t.requires_grad:
        return None
    g = t.grad
    # (one zeroed and not written since: 0 + p1 is p1, the parts' ordered sum is the same)
    return g if g is not None and g.dtype == t.dtype and g.shape == t.shape \
        and not is_zeroing(g) else None


@contextmanager
def ordered_sums(root: FunctionNode | None, nodes: Sequence[FunctionNode],
                 tensor_of: TensorOf, copy_of: CopyOf | None = None,
                 accumulate: bool = False) -> Iterator[dict]:
    """For one backward from ``root``'s output through ``nodes`` (topological order): each
    value three or more of them read has their gradient parts added in NNabla's order (see
    the module docstring).  ``tensor_of(v)``: ``v``'s tensor in the run; ``copy_of(v, t)``:
    the half copy of ``t`` its readers read, if any.  Yields ``{id(tensor): gradient}``, the
    sums it gave (``torch.autograd.grad`` returns an intermediate's gradient as it was before
    the tensor's hooks).  ``accumulate`` (a ``torch.autograd.backward`` into the leaves'
    ``.grad``): a leaf holding a gradient already gets its readers' parts added onto it one
    by one (two readers on)."""
    many = _many_readers(nodes, tensor_of if accumulate else None) if root is not None else []
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
            start = _accumulating(t) if accumulate and u.parent is None else None
            if len(reached) < (2 if start is not None else 3) or t is None \
                    or not t.requires_grad:
                continue
            copy = copy_of(u, t) if copy_of is not None else None
            stops = {id(copy.grad_fn)} if copy is not None and copy.grad_fn is not None \
                else set()
            for target in (copy if len(reached) >= 3 else None, t):
                if target is not None and target.requires_grad and _arrange(
                        target, reached, tensor_of, stops, handles, sums,
                        start if target is t else None):
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
             handles: list, sums: dict, start: "torch.Tensor | None" = None) -> bool:
    """Catch each of ``readers``' (in NNabla's order) parts of ``target``'s gradient and have
    a hook on ``target`` add them in that order; False (nothing arranged) where a reader has
    no edge into it, or one of its own.  The first part caught goes on into torch's sum as it
    is, the others are taken out of it (the post-hook gives None for them): torch adds
    nothing, and the hook on ``target`` (run when every reader has run) returns the parts
    added in NNabla's order.  With ``start`` (the gradient a leaf ``target`` holds already)
    the hook adds the parts onto it in place, one by one, and returns negative zeros, which
    torch's accumulation adds exactly (``x + -0.0`` is ``x``, signed zeros included)."""
    found = [_edges_into(r, target, tensor_of, stops) for r in readers]
    owners: dict[int, int] = {}
    for k, edges in enumerate(found):
        for node, _ in edges:
            if owners.setdefault(id(node), k) != k:
                return False    # (a reader's part not on its own: a cast all of them read)
    if not all(found):
        return False
    parts: list[list] = [[] for _ in readers]
    first, missed = [True], [False]
    dtype, shape = target.dtype, target.shape

    def catch(k: int, j: int) -> Callable:
        def hook(grad_inputs, grad_outputs):
            g = grad_inputs[j]
            if g is None or g.dtype != dtype or g.shape != shape:
                missed[0] = missed[0] or g is not None
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
        first[0], was_missed, missed[0] = True, missed[0], False
        if not got:
            return given
        if start is not None and not was_missed and start is target.grad:
            with torch.no_grad():
                for g in got:
                    start.add_(g)
            return torch.full_like(given, -0.0)
        total = got[0]
        for g in got[1:]:
            total = total + g
        sums[id(target)] = total
        return total

    handles.append(target.register_hook(complete))
    return True

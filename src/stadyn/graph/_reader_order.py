"""NNabla 1.39's order of a backward's functions, and what an op whose backward reads its input's
gradient as it stands (NNabla's ``PythonFunction``: ``backward_impl`` gets ``inputs[i].g`` and
``accum[i]``) sees in it.

NNabla runs the backward function by function into each Variable's gradient array
(``CgVariable::visit_function_backward``, src/nbla/computation_graph/variable.cpp): the one of
highest rank first (a function's rank is one more than its inputs' parents' highest, 1 on
leaves alone), among equal ranks the one found first (the root's function first, then each
function's inputs' parents in input order).  A function reading an input that functions before
it also read sees their gradients there, added up, with ``accum`` True.  Torch's autograd adds
the readers' parts up out of sight and hands each only its outputs' gradients, so such an op's
backward sees none of them.

:func:`readers_before` arranges it for one backward: for each such op whose one input needing a
gradient was read by functions NNabla runs before it, it catches those functions' parts on
their autograd nodes' edges into the input (post-hooks), has the op keep its backward for later
(``function.defer_input(k)``), and runs it when the input's gradient is complete (a pre-hook on
the node the edges lead to: every reader has run), given the parts caught
(``function.run_deferred(before)``, which returns what to add to the input's gradient; an op
reading that one input at several positions too).  Ops whose inputs needing a gradient are all
leaves, several maybe (``Mul2(x, z)``), keep their backward until the backward is done (a
leaf's gradient goes nowhere further) and then run in NNabla's order, each seeing its leaves'
gradients with the parts of the readers run before it (``function.run_leaves``).  An op whose
inputs needing a gradient are an intermediate and other Variables (``Mul2(h, z)``) keeps its
backward until the first of its intermediates' gradients is complete and runs it then, each
input's gradient holding the parts of the readers NNabla runs before it caught so far (the
intermediate's are all there); the other intermediates' gradients and, after the backward, the
leaves' are then what NNabla leaves in them (``arrange_mixed``); several such ops reading
one input (two ``Mul2(h, z)``, or ``Mul2(Mul2(h, z), z)``) run one after the other in NNabla's
order as their inner inputs complete, each seeing what those before it left (one torch reaches
only later than NNabla runs it, ``Mul2(2x, z)`` beside ``Mul2(3x, z)``, runs then, after
them).  A reader of another input
that NNabla runs before the op but torch only after that moment is missing from what the op
sees (a static plan of ``Mul2(h, g)``, ``g = 3z`` made after ``h * 3``).
These two arrangements, where leaves are among the inputs, are in ``_reader_leaves.py``.

Example, in the graph layer alone: ``sum(x * 3) + sum(square(x))``, ``x * 3`` made first, so
NNabla runs its backward before ``square``'s, whose function keeps its backward for later and
then sees that part in ``x``'s gradient (``accum`` True), as NNabla's ``PythonFunction`` would:
    >>> import numpy as np, torch
    >>> from stadyn.graph import OpSpec, Variable, apply, auto_forward, topological_nodes
    >>> class Square(torch.autograd.Function):    # leaves its backward to the node's function
    ...     @staticmethod
    ...     def forward(ctx, x, function):
    ...         ctx.function, function.x = function, x.detach().numpy()
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         f = ctx.function
    ...         if f.k is None:                   # not deferred: torch's gradient
    ...             return 2 * g * torch.as_tensor(f.x), None
    ...         f.g = g.numpy()
    ...         return torch.zeros_like(g), None
    >>> class Keeps:                              # the node's ``function``
    ...     k = None
    ...     def defer_input(self, k): self.k = k
    ...     def held_gradient(self, k): return None
    ...     def run_deferred(self, partial, accum):
    ...         print(accum, partial.tolist())
    ...         return partial + 2 * self.x * self.g
    >>> def op(name, f, n=1): return OpSpec.from_function(f, n, name=name, traceable=False)
    >>> square = op("square_kept", lambda x, function=None: Square.apply(x, function))
    >>> triple, total = op("triple", lambda x: x * 3), op("total", lambda x: x.sum())
    >>> add = op("add_two", lambda a, b: a + b, 2)
    >>> with auto_forward():
    ...     x = Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
    ...     a = apply(total, (apply(triple, (x,), {}),), {})
    ...     b = apply(total, (apply(square, (x,), {"function": Keeps()}),), {})
    ...     y = apply(add, (a, b), {})
    >>> order = backward_order(y.parent, topological_nodes([y]), lambda v: v.need_grad)
    >>> [n.spec.name for n in order]
    ['add_two', 'total', 'total', 'triple', 'square_kept']
    >>> y.backward()
    True [3.0, 3.0]
    >>> x.g.tolist()
    [5.0, 7.0]
"""

from __future__ import annotations

import heapq
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch

from ._reader_leaves import (TensorOf, arrange_leaves, arrange_mixed, entry_edges,
                             leaf_inputs, mixed_groups, mixed_inputs, numpy_dtype,
                             output_grad_fns, part_catcher, read_by_others)
from ._variable import FunctionNode, Variable

__all__ = ["backward_order", "readers_before"]


def backward_order(root: FunctionNode, nodes: Sequence[FunctionNode],
                   follows: Callable[[Variable], bool]) -> list[FunctionNode]:
    """The functions of ``nodes`` (in topological order) a backward from ``root`` runs, in
    NNabla 1.39's order (see the module docstring): highest rank first, among equal ranks the
    one found first; the walk goes down only through an op output ``u`` with ``follows(u)``
    (its tensor requiring a gradient here; ``need_grad`` for compat.nnabla's walks)."""
    rank: dict[int, int] = {}
    for n in nodes:
        rank[id(n)] = 1 + max((rank.get(id(u.parent), 0) for u in n.inputs
                               if u is not None and u.parent is not None), default=0)
    found = {id(root): 0}
    heap = [(-rank.get(id(root), 1), 0, root)]
    order, done = [], set()
    while heap:
        _, _, n = heapq.heappop(heap)
        if id(n) in done:
            continue
        done.add(id(n))
        order.append(n)
        for u in n.inputs:
            if u is None or u.parent is None or not follows(u):
                continue
            p = u.parent
            found.setdefault(id(p), len(found))
            heapq.heappush(heap, (-rank.get(id(p), 1), found[id(p)], p))
    return order


def _requiring_grad(tensor_of: TensorOf) -> Callable[[Variable], bool]:
    def follows(u: Variable) -> bool:
        t = tensor_of(u)
        return t is not None and t.requires_grad
    return follows


@contextmanager
def readers_before(root: FunctionNode | None, nodes: Sequence[FunctionNode],
                   tensor_of: TensorOf) -> Iterator[None]:
    """For one backward from ``root``'s output: an op of ``nodes`` whose ``function`` keeps its
    backward for later (``defer_input``) sees the gradients of its input's readers that NNabla
    runs before it (see the module docstring)."""
    waiting = [n for n in nodes if hasattr(n.kwargs.get("function"), "defer_input")]
    if root is None or not waiting:
        yield
        return
    order = backward_order(root, nodes, _requiring_grad(tensor_of))
    at = {id(n): k for k, n in enumerate(order)}
    groups: dict[tuple, list] = {}          # per input (its autograd edge): the ops reading it
    leaf_ops = []                           # the ops whose inputs needing a gradient are leaves
    mixed_ops = []                          # those of an inner input and another Variable
    for node in waiting:
        leaves = leaf_inputs(node, at, tensor_of)
        if leaves is not None:
            leaf_ops.append((node, leaves))
            continue
        found = _deferrable_input(node, at, tensor_of)
        if found is not None:
            groups.setdefault((id(found[0][0]), found[0][1]), []).append((node, *found))
            continue
        mixed = mixed_inputs(node, at, tensor_of)
        if mixed is not None:
            mixed_ops.append((node, mixed))
    handles: list[Any] = []
    deferred: list[Any] = []
    try:
        for group in groups.values():
            _arrange(group, order, tensor_of, handles, deferred)
        finish = arrange_leaves(leaf_ops, order, tensor_of, handles, deferred)
        waiting_ids = {id(n) for n in waiting}
        finishes = [arrange_mixed(group, order, tensor_of, handles, deferred)
                    for group in mixed_groups(mixed_ops, tensor_of)
                    if not read_by_others(group, order, waiting_ids, tensor_of)]
        yield
        finish()                # (only after a backward that ran through)
        for done in finishes:
            done()
    finally:
        for handle in handles:
            handle.remove()
        for function in deferred:
            function.defer_input(None)


def _deferrable_input(node: FunctionNode, at: dict, tensor_of: TensorOf) -> tuple | None:
    """``node``'s one input needing a gradient: (its autograd edge, its position, its value);
    None where the backward does not reach ``node`` or it has none or several."""
    if id(node) not in at:
        return None
    outs = output_grad_fns(node, tensor_of)
    values = [tensor_of(u) if isinstance(u, Variable) else None for u in node.inputs]
    needing = [k for k, t in enumerate(values) if t is not None and t.requires_grad]
    # (one Variable needing a gradient, at one position or several: Mul2(h, h))
    if not outs or len({id(node.inputs[k]) for k in needing}) != 1:
        return None
    k = needing[0]
    edges = outs[0].next_functions
    if len(edges) != len(values) or edges[k][0] is None:
        return None
    return edges[k], k, values[k]


def _arrange(group: list, order: list, tensor_of: TensorOf, handles: list,
             deferred: list) -> None:
    """Catch the parts of the readers of one input and run the deferred backwards of ``group``
    (ops reading it) in NNabla's order when its gradient is complete."""
    first, target, k0, like = group[0]
    x = first.inputs[k0]
    mine = {id(node): (node.kwargs["function"], k) for node, _, k, _ in group}
    readers = [r for r in order if any(u is x for u in r.inputs)]
    if len(group) == 1 and readers[0] is first:
        return                  # it runs first: it sees what it sees without waiting
    parts: dict[int, list] = {}
    catch = part_catcher(parts)
    for r in readers:
        if id(r) not in mine:
            for n, j in entry_edges(r, target, tensor_of):
                handles.append(n.register_hook(catch(id(r), j)))
    for function, k in mine.values():
        function.defer_input(k)
        deferred.append(function)
    nr = target[1]

    def complete(given):
        ref = given if given is not None else like
        caught = [g for gs in parts.values() for g in gs]
        # what reached the input but no reader's edge caught (added last, as torch did)
        rest = given - sum(caught, torch.zeros_like(given)) if given is not None else None
        function, k = mine[id(group[0][0])]
        held = function.held_gradient(k)
        start = held[0] if held is not None \
            else np.zeros(tuple(ref.shape), numpy_dtype(ref.dtype))
        value, accum = start, held is not None and held[1]
        for r in readers:
            if id(r) in mine:
                function, k = mine[id(r)]
                written = function.run_deferred(value.copy(), accum)
                if written is None:
                    continue
                value = written
            elif id(r) in parts:
                value = value + sum(parts[id(r)][1:], parts[id(r)][0]).cpu().numpy()
            else:
                continue
            accum = True
        out = torch.as_tensor(np.ascontiguousarray(value - start), device=ref.device)
        return out.to(ref.dtype) if rest is None else out.to(ref.dtype) + rest

    if like.grad_fn is target[0] and like.output_nr == nr:
        # the input is that node's output: a hook on the tensor runs before the ones
        # retain_grad registers, so a kept (persistent) input's gradient holds the whole
        handles.append(like.register_hook(complete))
    else:
        handles.append(target[0].register_prehook(
            lambda grads: tuple(complete(g) if i == nr else g for i, g in enumerate(grads))))

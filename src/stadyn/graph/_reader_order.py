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
leaves' are then what NNabla leaves in them (``_arrange_mixed``).  A reader of another input
that NNabla runs before the op but torch only after that moment is missing from what the op
sees (a static plan of ``Mul2(h, g)``, ``g = 3z`` made after ``h * 3``).

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
    >>> order = backward_order(y.parent, topological_nodes([y]), lambda v: v._data)
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

from ._variable import FunctionNode, Variable

__all__ = ["backward_order", "readers_before"]

TensorOf = Callable[[Variable], "torch.Tensor | None"]


def backward_order(root: FunctionNode, nodes: Sequence[FunctionNode], tensor_of: TensorOf
                   ) -> list[FunctionNode]:
    """The functions of ``nodes`` (in topological order) a backward from ``root`` runs, in
    NNabla 1.39's order (see the module docstring); an input whose value (``tensor_of``) needs
    no gradient is not followed."""
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
            t = tensor_of(u) if u is not None and u.parent is not None else None
            if t is None or not t.requires_grad:
                continue
            p = u.parent
            if id(p) not in found:
                found[id(p)] = len(found)
            heapq.heappush(heap, (-rank.get(id(p), 1), found[id(p)], p))
    return order


def _output_grad_fns(node: FunctionNode, tensor_of: TensorOf) -> list:
    """The autograd nodes that made ``node``'s live outputs' values, in output order."""
    return [t.grad_fn for ref in node._outputs if (v := ref()) is not None
            and (t := tensor_of(v)) is not None and t.grad_fn is not None]


def _entry_edges(reader: FunctionNode, target: tuple, tensor_of: TensorOf) -> list[tuple]:
    """The autograd nodes of ``reader``'s op with an edge to ``target`` (an autograd node and
    its output number): (node, edge number) pairs."""
    starts = _output_grad_fns(reader, tensor_of)
    bounds = {id(t.grad_fn) for u in reader.inputs if u is not None
              and (t := tensor_of(u)) is not None and t.grad_fn is not None}
    edges, seen, todo = [], set(), [s for s in starts if id(s) not in bounds]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for j, (nxt, nr) in enumerate(node.next_functions):
            if nxt is None:
                continue
            if nxt is target[0] and nr == target[1]:
                edges.append((node, j))
            elif id(nxt) not in bounds:
                todo.append(nxt)
    return edges


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
    order = backward_order(root, nodes, tensor_of)
    at = {id(n): k for k, n in enumerate(order)}
    groups: dict[tuple, list] = {}          # per input (its autograd edge): the ops reading it
    leaf_ops = []                           # the ops whose inputs needing a gradient are leaves
    mixed_ops = []                          # those of an inner input and another Variable
    for node in waiting:
        leaves = _leaf_inputs(node, at, tensor_of)
        if leaves is not None:
            leaf_ops.append((node, leaves))
            continue
        found = _deferrable_input(node, at, tensor_of)
        if found is not None:
            groups.setdefault((id(found[0][0]), found[0][1]), []).append((node, *found))
            continue
        mixed = _mixed_inputs(node, at, tensor_of)
        if mixed is not None:
            mixed_ops.append((node, mixed))
    handles: list[Any] = []
    deferred: list[Any] = []
    try:
        for group in groups.values():
            _arrange(group, order, tensor_of, handles, deferred)
        finish = _arrange_leaves(leaf_ops, order, tensor_of, handles, deferred)
        waiting_ids = {id(n) for n in waiting}
        finishes = [_arrange_mixed(node, found, order, tensor_of, handles, deferred)
                    for node, found in mixed_ops
                    if not _read_by_others(node, found, order, waiting_ids, tensor_of)]
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
    outs = _output_grad_fns(node, tensor_of)
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

    def catch(key: int, j: int):
        def hook(grad_inputs, grad_outputs):
            if grad_inputs[j] is not None:
                parts.setdefault(key, []).append(grad_inputs[j].detach())
        return hook

    for r in readers:
        if id(r) not in mine:
            for n, j in _entry_edges(r, target, tensor_of):
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
            else np.zeros(tuple(ref.shape), _numpy_dtype(ref.dtype))
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


def _leaf_inputs(node: FunctionNode, at: dict, tensor_of: TensorOf) -> list | None:
    """``node``'s inputs needing a gradient where all are leaves (a Variable of no parent whose
    value is an autograd leaf, its gradient held by NNabla's rules: ``held_gradient``):
    (position, Variable, autograd edge) each; None where the backward does not reach ``node``
    or one is not such a leaf."""
    function = node.kwargs["function"]
    if id(node) not in at or not hasattr(function, "run_leaves"):
        return None
    outs = _output_grad_fns(node, tensor_of)
    if not outs:
        return None
    edges = outs[0].next_functions
    if len(edges) != len(node.inputs):
        return None
    found = []
    for k, u in enumerate(node.inputs):
        t = tensor_of(u) if isinstance(u, Variable) else None
        if t is None or not t.requires_grad:
            continue
        if (u.parent is not None or t.grad_fn is not None or edges[k][0] is None
                or function.held_gradient(k) is None):
            return None
        found.append((k, u, edges[k]))
    return found or None


def _arrange_leaves(ops: list, order: list, tensor_of: TensorOf, handles: list,
                    deferred: list) -> Callable[[], None]:
    """For the ops of ``ops`` (reading leaves alone, (node, its leaf inputs) each), possibly
    several leaves each (NNabla's ``Mul2(x, z)``): keep their backwards (``defer_input(-1)``),
    catch the parts the other readers of those leaves send them, and give the function that
    runs them all, after the backward, in NNabla's order (a leaf's gradient is complete only
    when the backward is done, and its value goes nowhere further): each kept backward sees in
    its inputs' ``grad`` the leaf's gradient as it held it plus what the functions before it
    left there (one array for the positions holding one leaf), its ``accum`` NNabla's
    (``get_accum``, src/nbla/computation_graph/variable.cpp: True unless the array is zeroed,
    and True on a leaf held by two positions); what they leave is then the leaf's gradient.
    A leaf is told by its value (``tensor_of``, as it stands now, before the backward): a
    view of it (a registered parameter read through another Variable holding its value) is
    the same leaf."""
    if not ops:
        return lambda: None
    keys: dict[int, int | None] = {}        # id(Variable) -> id(its value now)
    alive: list = []                        # (those values, held: their ids stay theirs)

    def key(u: Any) -> int | None:
        if id(u) not in keys:
            t = tensor_of(u) if isinstance(u, Variable) else None
            alive.append((u, t))
            keys[id(u)] = None if t is None else id(t)
        return keys[id(u)]
    leaves: dict[int, tuple] = {}           # key(leaf) -> (tensor, edge, start, accum)
    mine = {}
    for node, found in ops:
        function = node.kwargs["function"]
        mine[id(node)] = (function, found)
        for k, u, edge in found:
            if key(u) not in leaves:
                start, accum = function.held_gradient(k)
                leaves[key(u)] = (tensor_of(u), edge, start, accum)
        function.defer_input(-1)
        deferred.append(function)
    parts: dict[tuple, list] = {}           # (id(reader), key(leaf)) -> the parts caught

    def catch(key: tuple, j: int):
        def hook(grad_inputs, grad_outputs):
            if grad_inputs[j] is not None:
                parts.setdefault(key, []).append(grad_inputs[j].detach())
        return hook

    for r in order:
        if id(r) in mine:
            continue
        for lid in {key(u) for u in r.inputs if key(u) in leaves}:
            for n, j in _entry_edges(r, leaves[lid][1], tensor_of):
                handles.append(n.register_hook(catch((id(r), lid), j)))

    def caught(key: tuple) -> np.ndarray:
        # (in the gradient's own dtype: a float64 graph's parts keep their digits)
        got = parts[key]
        return sum((g.cpu().numpy() for g in got[1:]), got[0].cpu().numpy())

    def finish() -> None:
        value = {lid: leaf[2].copy() for lid, leaf in leaves.items()}
        written = {lid: leaf[3] for lid, leaf in leaves.items()}
        added = {lid: np.zeros_like(leaf[2]) for lid, leaf in leaves.items()}
        for r in order:
            if id(r) in mine:
                function, found = mine[id(r)]
                at = [key(u) for _, u, _ in found]
                done = function.run_leaves(
                    {k: value[key(u)] for k, u, _ in found},
                    {k: written[key(u)] or at.count(key(u)) > 1 for k, u, _ in found})
                for k, u, _ in found if done is not None else ():
                    value[key(u)], written[key(u)] = done[k], True
                continue
            for lid in {key(u) for u in r.inputs if (id(r), key(u)) in parts}:
                part = caught((id(r), lid))
                value[lid], written[lid] = value[lid] + part, True
                added[lid] += part
        for lid, (t, _, start, _) in leaves.items():
            # torch added the parts caught (the kept backwards gave zeros) to the gradient
            change = torch.as_tensor(value[lid] - start - added[lid])
            if t.grad is None:
                t.grad = change.to(t.device, t.dtype).reshape(t.shape)
            else:
                with torch.no_grad():
                    t.grad.add_(change.to(t.grad.device, t.grad.dtype).reshape(t.grad.shape))

    return finish


def _mixed_inputs(node: FunctionNode, at: dict, tensor_of: TensorOf) -> list | None:
    """``node``'s inputs needing a gradient where they are several Variables, an inner one
    among them (``Mul2(h, z)``, ``h = x * 2``): (position, Variable, autograd edge, whether it
    is a leaf) each; None where the backward does not reach ``node``, they are one Variable or
    leaves alone (the other arrangements), or one is neither an inner Variable nor a leaf
    whose gradient NNabla's rules hold (``held_gradient``)."""
    function = node.kwargs["function"]
    if id(node) not in at or not hasattr(function, "run_leaves"):
        return None
    outs = _output_grad_fns(node, tensor_of)
    if not outs or len(outs[0].next_functions) != len(node.inputs):
        return None
    edges = outs[0].next_functions
    found = []
    for k, u in enumerate(node.inputs):
        t = tensor_of(u) if isinstance(u, Variable) else None
        if t is None or not t.requires_grad:
            continue
        leaf = u.parent is None and t.grad_fn is None
        if edges[k][0] is None or (leaf and function.held_gradient(k) is None) \
                or (not leaf and u.parent is None):
            return None
        found.append((k, u, edges[k], leaf))
    if len({id(u) for _, u, _, _ in found}) < 2 or all(leaf for *_, leaf in found):
        return None
    return found


def _input_key(u: Any, leaf: bool, tensor_of: TensorOf) -> int:
    """A key for the Variable ``u``: a leaf's is its value's (a view of it, a registered
    parameter read through another Variable holding its value, is the same leaf), an inner
    Variable's its own."""
    t = tensor_of(u) if leaf and isinstance(u, Variable) else None
    return id(t) if t is not None else id(u)


def _reads(r: FunctionNode, key: int, leaf: bool, tensor_of: TensorOf) -> bool:
    return any(isinstance(v, Variable) and _input_key(v, leaf, tensor_of) == key
               for v in r.inputs)


def _read_by_others(node: FunctionNode, found: list, order: list, waiting: set,
                    tensor_of: TensorOf) -> bool:
    """Whether another op keeping its backward reads one of ``node``'s inputs (the mixed
    arrangement then leaves ``node`` to run as torch reaches it)."""
    return any(id(r) in waiting and r is not node and _reads(r, _input_key(u, leaf, tensor_of),
                                                           leaf, tensor_of)
               for _, u, _, leaf in found for r in order)


def _arrange_mixed(node: FunctionNode, found: list, order: list, tensor_of: TensorOf,
                   handles: list, deferred: list) -> Callable[[], None]:
    """For ``node`` (an op whose inputs needing a gradient are an inner Variable and others,
    ``found`` by :func:`_mixed_inputs`): keep its backward (``defer_input(-1)``), catch the
    parts the other readers of its inputs send them, and run it once, in NNabla's order, when
    the first of its inner inputs' gradients is complete (every reader of it has run), each
    input's ``grad`` holding what the functions NNabla runs before it left there (a leaf's as
    it held it plus theirs; an inner Variable's theirs alone, ``accum`` True where one wrote).
    Each inner input's gradient is then what NNabla leaves in it (the readers' parts and what
    the backward left, in NNabla's order); the leaves' are set so after the backward (the
    returned function), as :func:`_arrange_leaves` sets them.  A reader NNabla runs before
    ``node`` that torch reaches only after its inner input's gradient is complete (a reader
    of a leaf input) is added after it instead."""
    function = node.kwargs["function"]
    at = {id(r): j for j, r in enumerate(order)}
    inputs: dict[int, dict] = {}            # key -> the input's positions, edge, start, ...
    for k, u, edge, leaf in found:
        key = _input_key(u, leaf, tensor_of)
        if key in inputs:
            inputs[key]["positions"].append(k)
            continue
        t = tensor_of(u)
        start, accum = function.held_gradient(k) if leaf else (None, False)
        inputs[key] = {"positions": [k], "edge": edge, "leaf": leaf, "value": t,
                       "start": start, "accum": accum,
                       "readers": [r for r in order if _reads(r, key, leaf, tensor_of)]}
    parts: dict[tuple, list] = {}           # (id(reader), key) -> the parts caught

    def catch(part_key: tuple, j: int):
        def hook(grad_inputs, grad_outputs):
            if grad_inputs[j] is not None:
                parts.setdefault(part_key, []).append(grad_inputs[j].detach())
        return hook

    for key, info in inputs.items():
        for r in info["readers"]:
            if r is not node:
                for n, j in _entry_edges(r, info["edge"], tensor_of):
                    handles.append(n.register_hook(catch((id(r), key), j)))
    function.defer_input(-1)
    deferred.append(function)
    ran: dict[str, Any] = {}

    def caught(r: FunctionNode, key: int) -> np.ndarray | None:
        got = parts.get((id(r), key))
        return None if not got else sum(g.cpu().numpy() for g in got[1:]) \
            + got[0].cpu().numpy()

    def run() -> dict | None:
        """The kept backward's result (run once, at the first call)."""
        if "done" not in ran:
            partial, accum = {}, {}
            for key, info in inputs.items():
                value, written = info["start"], info["accum"]
                for r in info["readers"]:
                    if at[id(r)] >= at[id(node)]:
                        break
                    part = caught(r, key)
                    if part is not None:
                        value = part if value is None else value + part
                        written = True
                if value is None:
                    value = np.zeros(tuple(info["value"].shape),
                                     _numpy_dtype(info["value"].dtype))
                for n, k in enumerate(info["positions"]):
                    partial[k], accum[k] = value, written or n > 0
            ran["done"] = function.run_leaves(partial, accum)
        return ran["done"]

    def replayed(key: int, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What NNabla leaves in the input ``key`` (from ``start``), and the parts of it
        torch added itself (the readers' caught)."""
        info = inputs[key]
        value, added = start, np.zeros_like(start)
        for r in info["readers"]:
            if r is node:
                done = run()
                if done is not None:
                    value = done[info["positions"][0]].astype(start.dtype)
                continue
            part = caught(r, key)
            if part is not None:
                value, added = value + part, added + part
        return value, added

    def complete(key: int, given: torch.Tensor | None) -> torch.Tensor | None:
        like = inputs[key]["value"]
        ref = given if given is not None else like
        value, added = replayed(key, np.zeros(tuple(ref.shape), _numpy_dtype(ref.dtype)))
        out = torch.as_tensor(np.ascontiguousarray(value), device=ref.device).to(ref.dtype)
        # what reached the input but no reader's edge caught (added last, as torch did)
        return out if given is None else out + (given - torch.as_tensor(
            np.ascontiguousarray(added), device=ref.device).to(ref.dtype))

    for key, info in inputs.items():
        if info["leaf"]:
            continue
        like, target = info["value"], info["edge"]
        if like.grad_fn is target[0] and like.output_nr == target[1]:
            # (as in _arrange: a kept input's gradient holds the whole)
            handles.append(like.register_hook(lambda g, key=key: complete(key, g)))
        else:
            handles.append(target[0].register_prehook(
                lambda grads, key=key, nr=target[1]: tuple(
                    complete(key, g) if i == nr else g for i, g in enumerate(grads))))

    def finish() -> None:
        for key, info in inputs.items():
            if not info["leaf"]:
                continue
            t, start = info["value"], info["start"]
            value, added = replayed(key, start.copy())
            # torch added the parts caught (the kept backward gave zeros) to the gradient
            change = torch.as_tensor(value - start - added)
            if t.grad is None:
                t.grad = change.to(t.device, t.dtype).reshape(t.shape)
            else:
                with torch.no_grad():
                    t.grad.add_(change.to(t.grad.device, t.grad.dtype).reshape(t.grad.shape))

    return finish


def _numpy_dtype(dtype: torch.dtype) -> Any:
    """NumPy's dtype of the torch floating-point ``dtype`` (float32 for the others)."""
    return {torch.float64: np.float64, torch.float16: np.float16}.get(dtype, np.float32)

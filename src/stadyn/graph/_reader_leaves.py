"""What an op whose backward reads its inputs' gradients as they stand (NNabla's
``PythonFunction``) sees there when leaves are among its inputs needing a gradient, for
:func:`~stadyn.graph._reader_order.readers_before` (see that module's docstring for NNabla's
order): ops whose inputs needing a gradient are all leaves keep their backward until the
backward is done and then run in NNabla's order (:func:`arrange_leaves`); ops of an
intermediate and other inputs (in groups reading shared inputs, :func:`mixed_groups`) run in
NNabla's order as their intermediates' gradients complete, the leaves' gradients set after
the backward (:func:`arrange_mixed`).  The helpers both modules
use (an op's autograd nodes, its readers' edges into an input) are here too.

Example, the autograd nodes of each op's outputs (what the readers' hooks go on):
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> from stadyn.graph import topological_nodes
    >>> from stadyn.graph._reader_leaves import output_grad_fns
    >>> with sd.auto_forward():
    ...     x = sd.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
    ...     y = F.sum(x * 3.0)
    >>> [len(output_grad_fns(n, lambda v: v._data)) for n in topological_nodes([y])]
    [1, 1]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from ._variable import FunctionNode, Variable

__all__ = ["TensorOf", "arrange_leaves", "arrange_mixed", "entry_edges", "leaf_inputs",
           "mixed_groups", "mixed_inputs", "numpy_dtype", "output_grad_fns", "part_catcher",
           "read_by_others"]

TensorOf = Callable[[Variable], "torch.Tensor | None"]


def output_grad_fns(node: FunctionNode, tensor_of: TensorOf) -> list:
    """The autograd nodes that made ``node``'s live outputs' values, in output order."""
    return [t.grad_fn for ref in node._outputs if (v := ref()) is not None
            and (t := tensor_of(v)) is not None and t.grad_fn is not None]


def entry_edges(reader: FunctionNode, target: tuple, tensor_of: TensorOf) -> list[tuple]:
    """The autograd nodes of ``reader``'s op with an edge to ``target`` (an autograd node and
    its output number): (node, edge number) pairs."""
    starts = output_grad_fns(reader, tensor_of)
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


def part_catcher(parts: dict) -> Callable[[Any, int], Callable]:
    """``catch(key, j)``: a post-hook for an autograd node that adds the gradient it sends
    along its edge ``j`` (a reader's part of an input's gradient) to ``parts[key]``."""
    def catch(key: Any, j: int) -> Callable:
        def hook(grad_inputs, grad_outputs):
            if grad_inputs[j] is not None:
                parts.setdefault(key, []).append(grad_inputs[j].detach())
        return hook
    return catch


def _kept_edges(node: FunctionNode, at: dict, tensor_of: TensorOf) -> tuple | None:
    """``node``'s function and its autograd edges, one per input (those of its first output's
    node); None where the backward does not reach ``node``, its function cannot run a kept
    backward given the inputs' gradients (``run_leaves``) or the edges do not match them."""
    function = node.kwargs["function"]
    if id(node) not in at or not hasattr(function, "run_leaves"):
        return None
    outs = output_grad_fns(node, tensor_of)
    if not outs or len(outs[0].next_functions) != len(node.inputs):
        return None
    return function, outs[0].next_functions


def _add_to_grad(t: torch.Tensor, change: np.ndarray) -> None:
    """Add ``change`` to the autograd leaf ``t``'s gradient (made where it has none)."""
    change = torch.as_tensor(change)
    if t.grad is None:
        t.grad = change.to(t.device, t.dtype).reshape(t.shape)
    else:
        with torch.no_grad():
            t.grad.add_(change.to(t.grad.device, t.grad.dtype).reshape(t.grad.shape))


def leaf_inputs(node: FunctionNode, at: dict, tensor_of: TensorOf) -> list | None:
    """``node``'s inputs needing a gradient where all are leaves (a Variable of no parent whose
    value is an autograd leaf, its gradient held by NNabla's rules: ``held_gradient``):
    (position, Variable, autograd edge) each; None where the backward does not reach ``node``
    or one is not such a leaf."""
    kept = _kept_edges(node, at, tensor_of)
    if kept is None:
        return None
    function, edges = kept
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


def arrange_leaves(ops: list, order: list, tensor_of: TensorOf, handles: list,
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
    catch = part_catcher(parts)
    for r in order:
        if id(r) in mine:
            continue
        for lid in {key(u) for u in r.inputs if key(u) in leaves}:
            for n, j in entry_edges(r, leaves[lid][1], tensor_of):
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
            _add_to_grad(t, value[lid] - start - added[lid])

    return finish


def mixed_inputs(node: FunctionNode, at: dict, tensor_of: TensorOf) -> list | None:
    """``node``'s inputs needing a gradient where they are several Variables, an inner one
    among them (``Mul2(h, z)``, ``h = x * 2``): (position, Variable, autograd edge, whether it
    is a leaf) each; None where the backward does not reach ``node``, they are one Variable or
    leaves alone (the other arrangements), or one is neither an inner Variable nor a leaf
    whose gradient NNabla's rules hold (``held_gradient``)."""
    kept = _kept_edges(node, at, tensor_of)
    if kept is None:
        return None
    function, edges = kept
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


def mixed_groups(mixed: list, tensor_of: TensorOf) -> list[list]:
    """The ops of ``mixed`` ((node, its inputs by :func:`mixed_inputs`) each) in groups, two
    ops reading one input in one group (NNabla runs such ops' backwards one after the other
    into the shared gradient arrays: :func:`arrange_mixed` runs a group's together)."""
    groups: list[tuple[set, list]] = []
    for entry in mixed:
        keys = {_input_key(u, leaf, tensor_of) for _, u, _, leaf in entry[1]}
        joined = [g for g in groups if g[0] & keys]
        for g in joined:
            groups.remove(g)
            keys |= g[0]
        groups.append((keys, [e for g in joined for e in g[1]] + [entry]))
    return [members for _, members in groups]


def read_by_others(group: list, order: list, waiting: set, tensor_of: TensorOf) -> bool:
    """Whether an op keeping its backward other than the ops of ``group`` ((node, its inputs)
    each) reads one of their inputs (the mixed arrangement then leaves them to run as torch
    reaches them)."""
    ours = {id(node) for node, _ in group}
    return any(id(r) in waiting and id(r) not in ours
               and _reads(r, _input_key(u, leaf, tensor_of), leaf, tensor_of)
               for _, found in group for _, u, _, leaf in found for r in order)


def arrange_mixed(group: list, order: list, tensor_of: TensorOf, handles: list,
                  deferred: list) -> Callable[[], None]:
    """For the ops of ``group`` ((node, its inputs found by :func:`mixed_inputs`) each: ops
    whose inputs needing a gradient are an inner Variable and others, reading shared inputs,
    ``Mul2(h, z)`` twice): keep their backwards (``defer_input(-1)``), catch the parts the
    other readers of their inputs send them, and run them in NNabla's order as their inner
    inputs' gradients complete (when one is, every reader of it has run: the walk goes up to
    its last reader), each input's ``grad`` holding what the functions NNabla runs before that
    op left there (a leaf's as it held it plus theirs; an inner Variable's theirs alone,
    ``accum`` True where one wrote; an op of the group run before wrote what its backward
    left); an op torch has not run yet when the walk reaches it (``Mul2(Mul2(h, z), z)``: the
    inner one's backward needs the outer one's) runs once it has.  Each inner
    input's gradient is then what NNabla leaves in it (the readers' parts and what the
    backwards left, in NNabla's order); the leaves' are set so after the backward (the
    returned function), as :func:`arrange_leaves` sets them.  A reader NNabla runs before an
    op of the group that torch reaches only after the first inner input's gradient is
    complete (a reader of a leaf input) is added after it instead."""
    at = {id(r): j for j, r in enumerate(order)}
    mine: dict[int, tuple] = {}             # id(node) -> (function, {key: its positions})
    inputs: dict[int, dict] = {}            # key -> the input's edge, start, readers, ...
    for node, found in group:
        function = node.kwargs["function"]
        positions: dict[int, list] = {}
        for k, u, edge, leaf in found:
            key = _input_key(u, leaf, tensor_of)
            positions.setdefault(key, []).append(k)
            if key not in inputs:
                start, accum = function.held_gradient(k) if leaf else (None, False)
                inputs[key] = {"edge": edge, "leaf": leaf, "value": tensor_of(u),
                               "start": start, "accum": accum,
                               "readers": [r for r in order if _reads(r, key, leaf, tensor_of)]}
        mine[id(node)] = (function, positions)
        function.defer_input(-1)
        deferred.append(function)
    parts: dict[tuple, list] = {}           # (id(reader), key) -> the parts caught
    catch = part_catcher(parts)
    for key, info in inputs.items():
        for r in info["readers"]:
            if id(r) not in mine:
                for n, j in entry_edges(r, info["edge"], tensor_of):
                    handles.append(n.register_hook(catch((id(r), key), j)))
    value_of: dict[int, np.ndarray] = {}    # key -> the gradient NNabla's walk holds there
    written: dict[int, bool] = {}           # key -> its ``accum``
    for key, info in inputs.items():
        like = info["value"]
        value_of[key] = info["start"] if info["start"] is not None else np.zeros(
            tuple(like.shape), numpy_dtype(like.dtype))
        written[key] = info["accum"]
    passed: set = set()                     # (id(reader), key): the parts the walk added
    walked = [0]                            # how far along ``order`` the walk has gone
    pending: list = []                      # ops of the group it passed before torch ran them

    def caught(r: FunctionNode, key: int) -> np.ndarray | None:
        got = parts.get((id(r), key))
        return None if not got else sum(g.cpu().numpy() for g in got[1:]) \
            + got[0].cpu().numpy()

    def run_kept(r: FunctionNode) -> bool:
        """Run ``r``'s kept backward on what the walk holds; False where torch has not run
        its backward yet (nothing kept: it runs at a later call of :func:`walk`)."""
        function, positions = mine[id(r)]
        partial, accum = {}, {}
        for key, ks in positions.items():
            for n, k in enumerate(ks):
                partial[k], accum[k] = value_of[key], written[key] or n > 0
        done = function.run_leaves(partial, accum)
        if done is None:
            return False
        for key, ks in positions.items():
            value_of[key] = done[ks[0]].astype(value_of[key].dtype)
            written[key] = True
        return True

    def walk(last: int) -> None:
        """Run NNabla's backward of the group's ops, in its order, up to ``order[last]``, each
        seeing what the readers and the ops of the group before it left.  An op the walk
        passes before torch has run its backward (one whose inner inputs are not the one just
        completed: ``Mul2(h, z)`` beside ``Mul2(3h, z)`` or ``Mul2(Mul2(h, z), z)``) runs at
        a later call, once torch has (at the latest when its own inner input is complete:
        it reads that input, so torch has run it), on what the walk holds then."""
        pending[:] = [r for r in pending if not run_kept(r)]
        for r in order[walked[0]:last + 1]:
            if id(r) in mine:
                if not run_kept(r):
                    pending.append(r)
                continue
            for key in inputs:
                part = caught(r, key)
                if part is not None:
                    value_of[key], written[key] = value_of[key] + part, True
                    passed.add((id(r), key))
        walked[0] = max(walked[0], last + 1)

    def replayed(key: int, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What NNabla leaves in the input ``key`` (``start``'s dtype): what the walk left
        there (the group's backwards in the order they ran, the readers' parts it passed);
        and the parts torch added itself (the readers' caught).  A part torch gave only after
        the walk passed its reader (a builtin reader of a leaf input) is added where no op of
        the group reads the input after that reader in NNabla's order; one that does wrote
        the input's gradient without it (what NNabla leaves for a backward that overwrites
        it; one that adds misses the part)."""
        readers = inputs[key]["readers"]
        walk(at[id(readers[-1])])
        value, added = value_of[key].astype(start.dtype), np.zeros_like(start)
        for j, r in enumerate(readers):
            part = caught(r, key) if id(r) not in mine else None
            if part is not None:
                added = added + part
                if (id(r), key) not in passed and not any(id(q) in mine
                                                          for q in readers[j + 1:]):
                    value = value + part
        return value, added

    def complete(key: int, given: torch.Tensor | None) -> torch.Tensor | None:
        like = inputs[key]["value"]
        ref = given if given is not None else like
        value, added = replayed(key, np.zeros(tuple(ref.shape), numpy_dtype(ref.dtype)))
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
            # torch added the parts caught (the kept backwards gave zeros) to the gradient
            _add_to_grad(t, value - start - added)

    return finish


def numpy_dtype(dtype: torch.dtype) -> Any:
    """NumPy's dtype of the torch floating-point ``dtype`` (float32 for the others)."""
    return {torch.float64: np.float64, torch.float16: np.float16}.get(dtype, np.float32)

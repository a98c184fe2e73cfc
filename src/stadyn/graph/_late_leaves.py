"""Leaves set ``need_grad=True`` after a dynamic op used them: their gradient, as NNabla 1.39's.

In dynamic mode (:func:`stadyn.auto_forward`) torch's autograd records each op as it runs, for
the inputs that need a gradient then.  NNabla decides in the same way which functions take
part in a backward (those with an input needing a gradient when they ran), but reads each
input's ``need_grad`` when the backward reaches the function: a leaf switched on after an op
that took part used it gets a gradient through that op (``w`` in ``x * w`` where ``x`` needs
one), and none through an op that took no part (``F.exp(w)`` alone).

The recorded graph holds nothing for such a leaf.  :func:`run_again_for_late_leaves` runs each
op that used one directly once more, on the values its inputs hold, with only the late leaves
needing a gradient (every other input detached), and hooks the recorded outputs to catch the
gradient the backward gives them; :meth:`LateLeaves.finish` then sends those gradients
through the new run.  By the chain rule the leaf gets, summed over the ops that used it,
d root / d output times d output / d leaf: NNabla's gradient, and nothing else changes (the
other inputs' gradients come from the recorded graph, once).  Nothing after those ops runs
again, and the common backward pays nothing: the search runs only where a gradient mark
changed since an op ran (``FunctionNode.ran_under``).

An op that would draw random numbers when run again, or that keeps state from run to run,
refuses with a :class:`~stadyn.StadynError` before it runs
(:class:`~stadyn.graph._grad_marks.ReplayGuard`): its values would not be those of its run.
Running statistics it writes (a training batch normalisation's) get back the values its
forward left them, as NNabla 1.39's backward, which runs no forward again, leaves them, and
``mean_subtraction`` run again updates nothing (``replaying_a_forward``).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
    >>> w = sd.Variable.from_numpy_array(np.array([3.0, 4.0]))
    >>> with sd.auto_forward():
    ...     y = F.sum(x * w)
    >>> w.need_grad = True
    >>> y.backward()
    >>> x.g.tolist(), w.g.tolist()
    ([3.0, 4.0], [1.0, 2.0])
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

import torch

from .._errors import StadynError
from ._apply import _value
from ._context import get_current_context
from ._draw_states import replays, same_draws
from ._grad_marks import grad_marks_of_now, leaves_switched_on_late, ReplayGuard, SideEffect
from ._precision import cast_for_node
from ._static_boundary import any_stand_in, stand_ins
from ._variable import FunctionNode, topological_nodes, Variable

__all__ = ["LateLeaves", "run_again_for_late_leaves", "grad_of_dynamic_graph", "grad_seed"]


class LateLeaves:
    """The ops run again for leaves switched on late, and the gradients their recorded outputs
    get in the backward (caught by tensor hooks until :meth:`finish` or :meth:`close`)."""

    __slots__ = ("runs", "leaves", "caught", "handles")

    def __init__(self, runs: list[tuple[list[torch.Tensor | None], list[torch.Tensor]]],
                 leaves: Sequence[Variable], hooked: bool = True):
        # runs: per op, (its recorded outputs' tensors, None where the backward must not pass;
        # its outputs run again); hooked: catch the gradients a backward gives the recorded
        # outputs (else :meth:`gradients` asks for them)
        self.runs = runs
        self.leaves = list(leaves)          # the late leaves, each once
        self.caught: dict[tuple[int, int], torch.Tensor] = {}
        self.handles = [t.register_hook(self._catch(i, j))
                        for i, (recorded, _) in enumerate(runs)
                        for j, t in enumerate(recorded) if t is not None] if hooked else []

    def _catch(self, i: int, j: int):
        def catch(g: torch.Tensor) -> None:
            self.caught[(i, j)] = g.detach()
        return catch

    def close(self) -> None:
        """Remove the hooks (the backward ran, or failed)."""
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def _caught(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """The new runs' outputs that the backward reached, and the gradients caught for them."""
        self.close()
        outs, grads = [], []
        for i, (_, again) in enumerate(self.runs):
            for j, t in enumerate(again):
                g = self.caught.get((i, j))
                if g is not None and t.requires_grad:
                    outs.append(t)
                    grads.append(g.to(t.dtype))
        self.caught = {}
        return outs, grads

    def finish(self) -> None:
        """After the backward: send each caught gradient through the op's new run (the late
        leaves' gradients accumulate as the backward's did)."""
        outs, grads = self._caught()
        if outs:
            torch.autograd.backward(outs, grads)

    def gradients(self, outputs: Sequence[torch.Tensor], seeds: Sequence[torch.Tensor]
                  ) -> Sequence[torch.Tensor | None]:
        """The late leaves' share of the gradient of ``outputs`` seeded with ``seeds``, one per
        leaf of :attr:`leaves` (None where there is none), with history (it can be
        differentiated again, as ``nn.grad``'s)."""
        recorded = [(i, j, t) for i, (rec, _) in enumerate(self.runs)
                    for j, t in enumerate(rec) if t is not None]
        if outputs and recorded:
            found = torch.autograd.grad(outputs, [t for _, _, t in recorded], seeds,
                                        create_graph=True, retain_graph=True, allow_unused=True)
            self.caught = {(i, j): g for (i, j, _), g in zip(recorded, found) if g is not None}
        outs, grads = self._caught()
        if not outs:
            return [None] * len(self.leaves)
        return torch.autograd.grad(outs, [v._data for v in self.leaves], grads,
                                   create_graph=True, allow_unused=True)


def run_again_for_late_leaves(nodes: Sequence[FunctionNode],
                              root: torch.Tensor | Sequence[torch.Tensor],
                              only: Sequence[Variable] | None = None,
                              keep_graph: bool = False) -> LateLeaves | None:
    """Run again, once, each op of ``nodes`` that took part in the autograd graph recorded from
    ``root`` (or several roots) and used a leaf switched on since (``leaves_switched_on_late``;
    with ``only``, one of those), for that leaf only; None where there is none (the common
    case).  Call :meth:`LateLeaves.finish` after the backward from ``root``; with
    ``keep_graph`` (the other inputs keep their history), :meth:`LateLeaves.gradients`.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
        >>> w = sd.Variable.from_numpy_array(np.array([2.0, 3.0]))
        >>> with sd.auto_forward():
        ...     y = F.sum(x * w)
        >>> run_again_for_late_leaves([y.parent], y.data) is None
        True
        >>> w.need_grad = True
        >>> late = run_again_for_late_leaves([y.parent.inputs[0].parent], y.data)
        >>> y.data.backward(); late.finish(); w.g.tolist()
        [1.0, 1.0]
    """
    found = leaves_switched_on_late(nodes, root)
    if only is not None:
        wanted = {id(v) for v in only}
        found = [(leaf, node) for leaf, node in found if id(leaf) in wanted]
    if not found:
        return None
    late: dict[int, list[Variable]] = {}
    by_node: dict[int, FunctionNode] = {}
    for leaf, node in found:
        by_node[id(node)] = node
        if not any(leaf is u for u in late.setdefault(id(node), [])):
            late[id(node)].append(leaf)
    runs = []
    for key, node in by_node.items():
        recorded = [None if v is None or v._stops_grad or v._data is None
                    or v._data.grad_fn is None else v._data
                    for v in (ref() for ref in node._outputs)]
        runs.append((recorded, _run_again(node, late[key], keep_graph)))
    leaves = {id(leaf): leaf for leaf, _ in found}
    return LateLeaves(runs, leaves.values(), hooked=not keep_graph)


def grad_of_dynamic_graph(outputs: Sequence[Variable], inputs: Sequence[Variable],
                          seeds: Sequence[Any], compute: Callable[[], Any]) -> Any:
    """NNabla's ``nn.grad`` of a dynamic graph: ``compute()`` (which differentiates
    ``outputs``, seeded with ``seeds`` (None: ones), w.r.t. ``inputs`` by torch's autograd
    and returns one Variable per input, or the one) run under the gradient marks of now
    (``grad_marks_of_now``: stops set after the consumers ran), and a late leaf's share (set
    ``need_grad=True`` after an op that took part used it) added to its result, from that op
    run again.

    Example (``b`` switched on after ``x + b`` ran: its gradient, 2 (x + b)):
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([1.0, -1.0]), need_grad=True)
        >>> b = sd.Variable.from_numpy_array(np.array([0.5, 0.5]))
        >>> with sd.auto_forward():
        ...     s = F.sum((x + b) ** 2)
        >>> b.need_grad = True
        >>> with sd.auto_forward():
        ...     db, = sd.grad(s, b)
        >>> db.d.tolist()
        [3.0, -1.0]
    """
    seeded = [g is not None for g in seeds]
    nodes = topological_nodes(list(outputs))
    roots = [t for o in outputs if (t := o._data) is not None and t.grad_fn is not None]
    late = run_again_for_late_leaves(nodes, roots, inputs, keep_graph=True) if roots else None
    boundary = stand_ins(nodes) if any_stand_in() else []
    with grad_marks_of_now(outputs, seeded, nodes):
        result = compute()
        if late is None and not boundary:
            return result
        # an output given a seed reads its own stop (grad_marks_of_now)
        diff = [(t, grad_seed(g, t)) for o, g in zip(outputs, seeds)
                if (t := o._data) is not None and t.requires_grad
                and not (o._stops_grad and g is not None)]
        outs, tangents = [t for t, _ in diff], [s for _, s in diff]
        shares = [] if late is None else list(zip(late.leaves,
                                                  late.gradients(outs, tangents)))
        if boundary and outs:
            shares += _static_shares(boundary, outs, tangents, inputs)
    results = [result] if isinstance(result, Variable) else list(result)
    for leaf, g in shares:
        if g is None:
            continue
        for v, r in zip(inputs, results):
            if v is leaf:
                r._data = r._data + g.to(r._data.dtype)
    return result


def _static_shares(boundary: list[tuple[Variable, torch.Tensor]], outs: list[torch.Tensor],
                   tangents: list[torch.Tensor], inputs: Sequence[Variable]
                   ) -> list[tuple[Variable, torch.Tensor | None]]:
    """The share of ``inputs``' gradients (``nn.grad`` in dynamic mode) that goes on from the
    stand-ins of static outputs (``boundary``: :func:`~._static_boundary.stand_ins`) into
    their static graphs, as NNabla 1.39's one gradient graph: the static ops under them run
    again with history, on their inputs' values (a leaf's own tensor, needing a gradient),
    and the gradients the dynamic graph gives the stand-ins sent through that run."""
    leaves = [v for v in inputs if v.parent is None and v._data is not None
              and v._data.requires_grad]
    if not leaves:
        return []
    given = torch.autograd.grad(outs, [a for _, a in boundary], tangents, create_graph=True,
                                retain_graph=True, allow_unused=True)
    reached = [(u, g) for (u, _), g in zip(boundary, given) if g is not None]
    if not reached:
        return []
    env: dict[int, torch.Tensor] = {id(v): v._data for v in leaves}
    # (a dynamic op under the static graph is not run: its value has its history)
    static = [n for n in topological_nodes([u for u, _ in reached]) if n.ran_under is None]
    again = replays(static)             # random ops draw what their last static run drew
    with same_draws(static) if again else contextlib.nullcontext():
        for node in static:
            outputs = _run_static_again(node, env, again)
            for ref, t in zip(node._outputs, outputs):
                if (o := ref()) is not None and not o._stops_grad:
                    env[id(o)] = t
    ends = [(env[id(u)], g) for u, g in reached if id(u) in env and env[id(u)].requires_grad]
    if not ends:
        return []
    found = torch.autograd.grad([t for t, _ in ends], [v._data for v in leaves],
                                [g.to(t.dtype) for t, g in ends], create_graph=True,
                                allow_unused=True)
    return list(zip(leaves, found))


def _run_static_again(node: FunctionNode, env: dict, draws_again: bool
                      ) -> list[torch.Tensor]:
    """A static op's outputs run again, with history, on the values ``env`` gives its inputs
    (else their own, as they are): :func:`_static_shares`'; a random op refused unless
    ``draws_again`` (its last run's draws replayed)."""
    def value(a):
        if not isinstance(a, Variable):
            return a
        if id(a) in env:
            return env[id(a)]
        t = _value(a)
        if t is None:
            raise StadynError(f"grad: op '{node.spec.name}' of a static graph that a dynamic "
                              "op read reads an input whose value was cleared; its gradient "
                              "cannot be computed (forward without clearing the buffers)")
        return t

    targs = [value(a) for a in node.args]
    tkw = {k: value(v) for k, v in node.kwargs.items()}
    targs, tkw = cast_for_node(node, get_current_context().half_dtype, targs, tkw)
    written = [u._data for u in node.inputs if u.parent is None and u._data is not None]
    try:
        with torch.enable_grad(), ReplayGuard(written, draws_again):
            out = node.spec.impl(*targs, **tkw)
    except SideEffect as exc:
        raise StadynError(f"grad: op '{node.spec.name}' of a static graph that a dynamic op "
                          f"read would have to run again and {exc.args[0]}; its gradient "
                          "cannot be computed") from None
    return [out] if isinstance(out, torch.Tensor) else list(out)


def grad_seed(g: Any, like: torch.Tensor) -> torch.Tensor:
    """The seed ``nn.grad`` gives an output ``like``: ones for None, else ``g`` (a number or an
    array) broadcast to its shape.

    Example:
        >>> import torch
        >>> grad_seed(2.0, torch.zeros(2)).tolist()
        [2.0, 2.0]
    """
    if g is None:
        return torch.ones_like(like)
    return torch.as_tensor(g, dtype=like.dtype, device=like.device).expand_as(like)


def _run_again(node: FunctionNode, leaves: list[Variable], keep_graph: bool
               ) -> list[torch.Tensor]:
    """The outputs of ``node``'s op run again on its inputs' values, only ``leaves`` needing a
    gradient (with ``keep_graph`` the other inputs keep their history too, for a gradient that
    is differentiated again); refuses (before it runs) an op whose run again would not give
    its values."""
    if node.state is not None:
        _refuse(node, leaves[0], "run the op again, and it keeps state from run to run")
    mine = {id(v) for v in leaves}

    def value(a):
        if not isinstance(a, Variable):
            return a
        if id(a) in mine:
            return a._data
        t = _value(a)
        if t is None:
            _refuse(node, leaves[0], "read an input whose value was cleared")
        return t if keep_graph else t.detach()

    spec = node.spec
    targs = [value(a) for a in node.args]
    tkw = {k: value(v) for k, v in node.kwargs.items()}
    targs, tkw = cast_for_node(node, get_current_context().half_dtype, targs, tkw)
    written = [u._data for u in node.inputs if u.parent is None and u._data is not None]
    try:
        # (running statistics it writes get back the values the forward left them,
        # as NNabla 1.39's backward, which runs no forward again, leaves them)
        with torch.enable_grad(), ReplayGuard(written):
            out = spec.impl(*targs, **tkw)
    except SideEffect as exc:
        _refuse(node, leaves[0], f"run the op again and {exc.args[0]}")
    return [out] if isinstance(out, torch.Tensor) else list(out)


def _refuse(node: FunctionNode, leaf: Variable, why: str) -> None:
    name = f"{leaf.graph_name!r}" if leaf.graph_name else f"a leaf of shape {leaf.shape}"
    where = f" (created at {node.where})" if node.where else ""
    raise StadynError(
        f"backward: need_grad=True was set on {name} after op '{node.spec.name}'{where} used it "
        f"in dynamic mode (auto_forward); NNabla gives it a gradient through that op, and "
        f"computing it would {why}: set need_grad before the op runs (or compute again)")

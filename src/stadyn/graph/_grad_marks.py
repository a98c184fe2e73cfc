"""What a forward decided about gradients, and what a backward after it honours (NNabla's rule).

A plan is lowered for one set of *gradient marks*: which leaves need a gradient and which op
outputs were set ``need_grad=False`` (the gradient stops there) or ``True`` (it starts there).
NNabla 1.39 decides in the forward which functions take part in a backward (those with an
input needing a gradient, ``CgFunction::need_grad``) and reads each Variable's ``need_grad``
again when the backward runs.  So ``need_grad`` set between ``forward()`` and ``backward()``
counts: set ``False`` on an intermediate, no gradient goes through it; set on a leaf, the leaf
gets (or stops getting) one through the functions the forward made take part; but a function
none of whose inputs needed a gradient in the forward stays out of that backward.

:func:`gradient_marks` reads the marks of a plan's graph; :func:`marks_to_replay` says which
outputs a forward run again under the marks of now must also mark so that its backward is
NNabla's (the runner sets them for that forward only, ``_runner.py``).  A forward run again must
give the values of the first: :func:`program_side_effects` finds what a lowered program would
change beyond them (random numbers not drawn as that forward drew them, a value computed from
running statistics it wrote), :class:`ReplayGuard` refuses it, before it happens, in a forward
run again eagerly; running statistics written get back the values that forward left them
(:func:`given_back`, :class:`ReplayGuard`), and an op updating a statistic it then reads
computes from them (:func:`replaying_a_forward`), as NNabla's backward, which runs no forward
again, leaves and differentiates them.

Dynamic mode (:func:`stadyn.auto_forward`) follows the same rule with torch's autograd graph
of the run: an output set ``need_grad=False`` after its consumers ran is cut there
(:func:`cut_stopped`); a leaf set ``need_grad=True`` after an op that took part used it gets a
gradient in NNabla that the recorded graph does not hold (:func:`leaves_switched_on_late`: the
backward runs that op again for it, ``_late_leaves.py``).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
    >>> h = F.tanh(x)
    >>> e = F.exp(h)
    >>> y = F.sum(e)
    >>> y.forward()
    >>> h.need_grad = False              # after the forward: e still gets its gradient
    >>> plan = y._plan
    >>> now = gradient_marks(plan.nodes, plan.leaves)
    >>> marks_to_replay(plan.nodes, plan.leaves, plan.marks, now) == ([], [e])
    True
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator, Sequence

import torch
import torch.fx as fx
from torch.utils._python_dispatch import TorchDispatchMode

from ._subgraph import leaf_tensor
from ._variable import FunctionNode, topological_nodes, Variable
from ._versions import _layout, _marks

__all__ = ["gradient_marks", "output_marks", "marks_to_replay", "mark_gradients_changed",
           "program_side_effects", "READS_WRITTEN_LEAF", "written_leaves", "given_back",
           "ReplayGuard", "SideEffect", "replaying_a_forward", "cut_stopped",
           "leaves_switched_on_late", "grad_marks_of_now"]


def mark_gradients_changed() -> None:
    """Record that some gradient mark changed (the runner's own, for one forward and backward:
    plans are looked up again)."""
    _marks[0] += 1
    _layout[0] += 1


def gradient_marks(nodes: Sequence[FunctionNode], leaves: Sequence[Variable]) -> tuple:
    """The gradient marks of a graph: each leaf's ``need_grad``, then ``(node position, output
    position, stops, starts)`` for every op output set ``need_grad=False`` / ``True``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((2,), need_grad=True)
        >>> h = F.relu(x); h.need_grad = False
        >>> gradient_marks([h.parent], [x])
        ((True,), ((0, 0, True, False),))
    """
    return tuple(v._need_grad for v in leaves), output_marks(nodes)


def output_marks(nodes: Sequence[FunctionNode]) -> tuple:
    """``(node position, output position, stops, starts)`` for every op output of ``nodes``
    set ``need_grad=False`` / ``True`` (the op outputs' share of :func:`gradient_marks`)."""
    return tuple((i, j, v._stops_grad, v._starts_grad)
                 for i, node in enumerate(nodes) for j, ref in enumerate(node._outputs)
                 if (v := ref()) is not None and (v._stops_grad or v._starts_grad))


def marks_to_replay(nodes: Sequence[FunctionNode], leaves: Sequence[Variable], built: tuple,
                    now: tuple) -> tuple[list[Variable], list[Variable]]:
    """The op outputs to mark for a forward under the marks ``now`` whose backward is NNabla's
    after a forward under ``built``: ``(stop, start)``.  An output none of whose node's inputs
    needed a gradient under ``built`` gets none (its node stays out of the backward: stopped
    where it would now take part), one whose node took part gets one even where its inputs
    need none now (started), unless it is marked itself now.

    Example (``c`` set ``need_grad=True`` after a forward: ``b``'s node took no part):
        >>> import stadyn as sd, stadyn.functions as F
        >>> x, c = sd.Variable((2,), need_grad=True), sd.Variable((2,))
        >>> a, b = F.relu(x), F.relu(c)
        >>> marks_to_replay([a.parent, b.parent], [x, c], ((True, False), ()),
        ...                 ((True, True), ())) == ([b], [])
        True
    """
    built_needs = {id(v): n for v, n in zip(leaves, built[0])}
    built_marks = {(i, j): (stops, starts) for i, j, stops, starts in built[1]}
    needs = {id(v): n for v, n in zip(leaves, now[0])}
    marked = {(i, j): (stops, starts) for i, j, stops, starts in now[1]}
    stop: list[Variable] = []
    start: list[Variable] = []
    for i, node in enumerate(nodes):
        took_part = any(built_needs.get(id(u), False) for u in node.inputs if u is not None)
        active = any(needs.get(id(u), False) for u in node.inputs if u is not None)
        for j, ref in enumerate(node._outputs):
            v = ref()
            if v is None:
                continue
            stops, starts = built_marks.get((i, j), (False, False))
            built_needs[id(v)] = not stops and (starts or took_part)
            if (i, j) in marked:
                stops, starts = marked[(i, j)]
                needs[id(v)] = not stops and (starts or active)
            elif took_part:
                if not active:
                    start.append(v)
                needs[id(v)] = True
            else:
                if active:
                    stop.append(v)
                needs[id(v)] = False
    return stop, start


_RANDOM = "draw new random numbers"
#: What :func:`program_side_effects` returns for a lowered forward that reads a leaf's value
#: it wrote (``min_max_quantize``'s moving range): not refused, that forward runs again eagerly,
#: guarded (``_forward_again``); compared by identity.
READS_WRITTEN_LEAF = "compute with running statistics it updated (read a leaf's value it wrote)"


def program_side_effects(fw: fx.GraphModule, n_leaves: int, draws_again: bool = False
                         ) -> str | None:
    """What running the lowered forward ``fw`` (whose first ``n_leaves`` inputs are the leaves;
    the plan's own buffers follow, which a half-precision plan's parameter casts write, no side
    effect) again for a backward would change beyond its values, or None.  ``draws_again``: the
    run draws what the forward it repeats drew (``_draw_states.same_draws``), so its random
    numbers change nothing.  The leaves it writes (:func:`written_leaves`: running statistics)
    get their values back after the run (:func:`given_back`), so writing them changes nothing;
    but a value it computes from a leaf after writing it (``min_max_quantize``'s moving range,
    updated again) would not be the first run's, and the backward would differentiate it: that
    outcome is :data:`READS_WRITTEN_LEAF` (the message of the others: draws, ``_RANDOM``).

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> program_side_effects(make_fx(lambda x: x * torch.rand(2))(torch.ones(2)), 1)
        'draw new random numbers'
        >>> program_side_effects(make_fx(lambda x, m: x * m.add_(1.0))(torch.ones(2),
        ...                                                             torch.zeros(2)), 2)
        "compute with running statistics it updated (read a leaf's value it wrote)"
    """
    leaves = set([n for n in fw.graph.nodes if n.op == "placeholder"][:n_leaves])
    tainted: set = set()        # the leaves' values after a write, and what is computed of them
    for node in fw.graph.nodes:
        target = node.target
        ins = node.all_input_nodes
        if node.op == "output":
            return READS_WRITTEN_LEAF if any(a in tainted for a in ins) else None
        if node.op != "call_function":
            continue
        if isinstance(target, torch._ops.OpOverload):
            if torch.Tag.nondeterministic_seeded in target.tags and not draws_again:
                return _RANDOM
            if target._schema.is_mutable and any(a in leaves for a in ins):
                tainted.add(node)       # (a lowered program reads a written leaf through it)
        if any(a in tainted for a in ins):
            tainted.add(node)
    return None


def written_leaves(fw: fx.GraphModule, leaves: Sequence[Variable]) -> list[Variable]:
    """Those of ``leaves`` (the first inputs of the lowered forward ``fw``, in order) that an op
    of it writes (a batch normalisation's running statistics).

    Example:
        >>> import numpy as np, torch, stadyn as sd
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> x, m = (sd.Variable.from_numpy_array(np.zeros(2)) for _ in range(2))
        >>> fw = make_fx(lambda x, m: (m.add_(1.0), x * 2)[1])(torch.ones(2), torch.zeros(2))
        >>> [v is m for v in written_leaves(fw, [x, m])]
        [True]
    """
    inputs = [n for n in fw.graph.nodes if n.op == "placeholder"][:len(leaves)]
    written: set = set()
    for node in fw.graph.nodes:
        target = node.target
        if node.op == "call_function" and isinstance(target, torch._ops.OpOverload) \
                and target._schema.is_mutable:
            written.update(a for a in node.all_input_nodes if a in inputs)
    return [v for v, n in zip(leaves, inputs) if n in written]


@contextmanager
def given_back(leaves: Sequence[Variable]) -> Iterator[None]:
    """Within it ``leaves`` may be written (a lowered forward run again for a backward updates
    its running statistics again); when it is left they get back the values they held at its
    start, as NNabla 1.39's backward, which runs no forward again, leaves them.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> mean = sd.Variable.from_numpy_array(np.zeros(2, np.float32))
        >>> with given_back([mean]):
        ...     _ = mean.data.add_(1.0)
        >>> mean.d.tolist()
        [0.0, 0.0]
    """
    saved = [(v, leaf_tensor(v).detach().clone()) for v in leaves]
    try:
        yield
    finally:
        with torch.no_grad():
            for v, values in saved:
                leaf_tensor(v).detach().copy_(values)


# ReplayGuards entered in this thread: a forward that ran runs again for its backward
_replaying = threading.local()


def replaying_a_forward() -> bool:
    """Whether the ops run now run again a forward that ran, for a backward (within a
    :class:`ReplayGuard`): an op updating a statistic it then reads (``mean_subtraction``)
    computes from the state its forward left, without updating it again, as NNabla 1.39's
    backward differentiates the forward that ran.

    Example:
        >>> replaying_a_forward()
        False
        >>> with ReplayGuard([]):
        ...     replaying_a_forward()
        True
    """
    return getattr(_replaying, "depth", 0) > 0


class SideEffect(Exception):
    """Raised by :class:`ReplayGuard` before an op with a side effect runs (``args[0]``: what
    it would do)."""


class ReplayGuard(TorchDispatchMode):
    """Within it (a forward run again eagerly for a backward), an ATen op that would draw
    random numbers raises :class:`SideEffect` instead of running, unless ``draws_again`` (the
    run draws what the forward it repeats drew, ``_draw_states.same_draws``).  Writes of
    ``leaf_tensors`` (a batch normalisation's running statistics) run, and those leaves get
    back the values they held at the start when the guard is left, as NNabla 1.39's backward
    leaves them (it runs no forward again); an op that then reads a leaf's written value
    without writing it (its output would not be the first run's) raises instead.

    Example:
        >>> import torch
        >>> mean = torch.zeros(2)
        >>> with ReplayGuard([mean]):
        ...     _ = mean.mul_(0.5).add_(torch.ones(2))
        >>> mean.tolist()
        [0.0, 0.0]
        >>> with ReplayGuard([mean]):
        ...     _ = mean.add_(1.0)
        ...     try:
        ...         _ = torch.ones(2) * mean
        ...     except SideEffect as e:
        ...         print(e)
        compute with running statistics it updated (read a leaf's value it wrote) (aten.mul.Tensor)
    """

    def __init__(self, leaf_tensors: Sequence[torch.Tensor], draws_again: bool = False):
        super().__init__()
        self.leaves = [t for t in leaf_tensors if isinstance(t, torch.Tensor) and _storage(t)]
        self.storages = {_storage(t) for t in self.leaves}
        self.draws_again = draws_again
        self.written: set = set()
        self.saved: list = []

    def __enter__(self):
        self.saved = [(t, t.detach().clone()) for t in self.leaves]
        _replaying.depth = getattr(_replaying, "depth", 0) + 1
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            _replaying.depth -= 1
            with torch.no_grad():
                for t, values in self.saved:
                    if _storage(t) in self.written:
                        t.detach().copy_(values)
            self.saved = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch.Tag.nondeterministic_seeded in func.tags and not self.draws_again:
            raise SideEffect(f"{_RANDOM} ({func})")
        schema = func._schema
        viewing = any(r.alias_info is not None for r in schema.returns)
        writes = set()
        for k, a in enumerate(schema.arguments):
            value = args[k] if k < len(args) else kwargs.get(a.name)
            tensors = value if isinstance(value, (list, tuple)) else [value]
            stores = {_storage(t) for t in tensors if isinstance(t, torch.Tensor)}
            if a.alias_info is not None and a.alias_info.is_write:
                writes |= stores & self.storages
            elif not viewing and stores & self.written:
                raise SideEffect(f"{READS_WRITTEN_LEAF} ({func})")
        self.written |= writes
        return func(*args, **kwargs)


def _storage(t: torch.Tensor) -> int:
    try:
        return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):     # a tensor without storage
        return 0


def cut_stopped(variables: Sequence[Variable]) -> list:
    """Make a backward of torch's autograd stop at each of ``variables`` set ``need_grad=False``
    after their consumers ran (dynamic mode): no gradient goes through them, none is computed
    behind them (their node gets an undefined gradient).  Returns the hooks' handles, to remove
    after the backward.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
        >>> with sd.auto_forward():
        ...     h = F.tanh(x); y = F.sum(h + x)
        >>> h.need_grad = False
        >>> handles = cut_stopped([h])
        >>> y.data.backward(); [hd.remove() for hd in handles] and x.data.grad.tolist()
        [1.0, 1.0]
    """
    handles = []
    for v in variables:
        t = v._data
        if v._stops_grad and t is not None and t.grad_fn is not None:
            handles.append(t.grad_fn.register_prehook(_cut_at(t.output_nr)))
    return handles


@contextmanager
def grad_marks_of_now(outputs: Sequence[Variable], seeded: Sequence[bool],
                      nodes: Sequence[FunctionNode] | None = None) -> Iterator[None]:
    """Within it, torch's autograd differentiates the dynamic graph of ``outputs`` under the
    gradient marks of now, as NNabla 1.39's ``nn.grad`` reads them: an op output set
    ``need_grad=False`` after its consumers ran stops the gradient there (:func:`cut_stopped`),
    except an output differentiated without a seed (``seeded`` False), whose own
    ``need_grad`` NNabla does not read (with a seed it multiplies the output first, an op that
    reads it).  ``nodes``: the ops ``outputs`` depend on, where the caller has them.

    Example (``y`` stopped itself and differentiated without a seed: nothing is cut):
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> w = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
        >>> with sd.auto_forward():
        ...     y = F.sum(w * w)
        >>> y.need_grad = False
        >>> with grad_marks_of_now([y], [False]):
        ...     y._stops_grad, torch.autograd.grad(y.data, w.data)[0].tolist()
        (False, [2.0, 4.0])
        >>> y._stops_grad
        True
    """
    lifted = [o for o, s in zip(outputs, seeded) if o._stops_grad and not s]
    skip = {id(o) for o in lifted}
    if nodes is None:
        nodes = topological_nodes(list(outputs))
    inters = [v for node in nodes for ref in node._outputs
              if (v := ref()) is not None and id(v) not in skip]
    handles = cut_stopped(inters)
    for o in lifted:
        o._stops_grad = False
    try:
        yield
    finally:
        for o in lifted:
            o._stops_grad = True
        for handle in handles:
            handle.remove()


def _cut_at(k: int):
    def cut(grads: tuple) -> tuple:
        return grads[:k] + (None,) + grads[k + 1:]
    return cut


def leaves_switched_on_late(nodes: Sequence[FunctionNode],
                            root: torch.Tensor | Sequence[torch.Tensor]
                            ) -> list[tuple[Variable, FunctionNode]]:
    """The leaves that need a gradient now, but did not when an op of ``nodes`` that takes part
    in the backward (an output has autograd history) used them in dynamic mode: NNabla gives
    them a gradient through that op; the autograd graph recorded from ``root`` (or each of
    several roots) holds none.  Looked for only where a gradient mark changed since a node ran.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
        >>> w = sd.Variable.from_numpy_array(np.ones(2))
        >>> with sd.auto_forward():
        ...     y = F.sum(x * w)
        >>> w.need_grad = True
        >>> [(u is w, n.spec.name) for u, n in leaves_switched_on_late([y.parent.inputs[0].parent,
        ...                                                              y.parent], y.data)]
        [(True, 'mul2')]
    """
    version = _marks[0]
    found = []
    for node in nodes:
        if node.ran_under is None or node.ran_under == version:
            continue
        if not any((v := ref()) is not None and v._data is not None
                   and v._data.grad_fn is not None for ref in node._outputs):
            continue
        found.extend((u, node) for u in node.inputs
                     if u.parent is None and u._alias is None and u._need_grad
                     and u._data is not None and u._data.requires_grad)
    if not found:
        return []
    recorded: set[int] = set()
    seen: set = set()
    stack = [t.grad_fn for t in ((root,) if isinstance(root, torch.Tensor) else root)]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        held = getattr(fn, "variable", None)          # AccumulateGrad: a leaf's tensor
        if held is not None:
            recorded.add(id(held))
        stack.extend(f for f, _ in fn.next_functions)
    return [(u, node) for u, node in found if id(u._data) not in recorded]

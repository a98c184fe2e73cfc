"""Plans: a static graph lowered to generated code, or run eagerly when it cannot be.

:func:`build_plan` lowers a :class:`~stadyn.graph.Subgraph`:

1. its nodes are replayed through their op implementations (:func:`~stadyn.graph.interpret`)
   under :func:`torch.fx.experimental.proxy_tensor.make_fx` on *fake* tensors — no computation,
   no side effects, no random numbers drawn.  The result is straight-line ATen code: Stadyn's
   own per-op Python does not run in a replay;
2. when a backward may follow (some leaf needs a gradient and grad mode is on) the trace is of
   the *joint* function (forward values and the gradients of the roots w.r.t. the leaves), and
   :func:`~stadyn.graph.partition` splits it into a forward program, which also returns the
   residuals the gradients need, and a backward program;
3. the passes of ``_passes.py`` tidy the programs and route large gradients and parameter
   copies into reused buffers (``_grad_buffers.py``).

A :class:`StaticPlan` replays the forward under ``no_grad`` and runs the backward program on
``backward()``, accumulating into the leaves' ``.grad``: no autograd tape per iteration, which
is where static beats dynamic.  An :class:`~stadyn.graph.EagerPlan` (``_eager_plan.py``) has
the same interface and interprets the nodes with torch's autograd (an op declared
``traceable=False``, or a failed trace).  Plans are cached by the runner (``_runner.py``).
"""

from __future__ import annotations

import warnings
from typing import Sequence

import torch
import torch.fx as fx

from .._errors import NumericsError, StadynError
from .._memory import keep_freed_cpu_memory
from ._backward_seed import input_seeds
from ._grad_buffers import accumulate_grads, grad_out_buffer
from ._held_values import count_tables, free_passed
from ._intermediate_grads import (backward_returning, intermediates_beyond,
                                  keep_grads_of_roots, kept_positions, roots_read)
from ._interpret import Shapes, interpret, refresh_shapes
from ._labels import tidy_ranges
from ._late_views import late_views
from ._deferred_layout import channels_last_only, defer
from ._eager_plan import EagerPlan, differentiates, inner_graphs
from ._layout import plan_layout, standard_layout
from ._numerics import _depth as _checking
from ._numerics import not_finite
from ._ordered_sums import ordered_sums
from ._partition import partition
from ._passes import (aliased_outputs, cast_parameters_into_buffers, defer_output_casts,
                      drop_dead_code, plan_passes, write_products_into_buffers)
from ._subgraph import Subgraph, leaf_tensor, value_key
from ._tracing import collector_paused, realize, trace_fake
from ._shared_values import outputs_saved, saved_as_held, set_output
from ._variable import FunctionNode, Variable

__all__ = ["StaticPlan", "build_plan", "untraceable_ops", "holds_loop"]


def untraceable_ops(nodes) -> list[str]:
    """The names of the ops among ``nodes`` declared ``traceable=False`` (sorted, once each):
    a static plan runs such a graph eagerly, a step program refuses it.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import Subgraph, untraceable_ops
        >>> untraceable_ops(Subgraph([F.relu(sd.Variable((2,)))]).nodes)
        []
    """
    return sorted({n.spec.name for n in nodes if not n.spec.traceable})


class StaticPlan:
    """A lowered static graph: a forward program and (when needed) a backward program.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones((2, 3)), need_grad=True)
        >>> y = F.sum(F.tanh(x))
        >>> y.forward()
        >>> plan = y._plan
        >>> type(plan).__name__, plan.has_backward, "torch.ops.aten.tanh" in plan.code
        ('StaticPlan', True, True)
    """

    __slots__ = ("roots", "leaves", "fill", "fw", "bw", "n_fill", "grad_leaves", "diff_roots",
                 "saved", "_fw_call", "_bw_call", "nodes", "_copy_grad", "has_backward",
                 "_out_slots", "_cast_slots", "_owned", "shapes", "grad_inters", "_copy_inter",
                 "marks", "marks_seen", "keep_all", "all_inters", "_raw_bw", "_positions",
                 "_programs", "kept", "deferred", "_tabled", "seed_shapes", "_given",
                 "restore_layout", "_restore", "_root_inters", "_upstream", "__weakref__")

    def __init__(self, roots, nodes, leaves, fill, fw, bw, grad_leaves, diff_roots,
                 copy_grad: list[bool] | None = None,
                 out_slots: Sequence[tuple[int, torch.dtype | None]] = (),
                 cast_slots: Sequence[tuple[int, torch.dtype]] = (),
                 grad_inters: Sequence[Variable] = (), copy_inter: Sequence[bool] = (),
                 all_inters: Sequence[Variable] | None = None, raw_bw: fx.GraphModule | None = None,
                 positions: tuple | None = None, kept: Sequence[Variable] = (),
                 restore_layout: bool = False):
        self.roots: list[Variable] = roots
        self.nodes: list[FunctionNode] = nodes
        self.leaves: list[Variable] = leaves
        self.fill: list[Variable] = list(fill)   # its own: a shared table counts twice
        self.n_fill = len(fill)
        self.fw: fx.GraphModule = realize(fw)      # its code, generated after the last pass
        self.bw: fx.GraphModule | None = realize(bw) if bw is not None else None
        self.grad_leaves: list[Variable] = grad_leaves
        self.diff_roots: list[Variable] = diff_roots
        self.saved: tuple | None = None
        self._fw_call = fw.forward
        self._bw_call = bw.forward if bw is not None else None
        if copy_grad is None:
            copy_grad = aliased_outputs(bw) if bw is not None else []
        self._copy_grad = copy_grad
        self._out_slots = tuple(out_slots)    # gradients the program writes into given buffers
        self._cast_slots = tuple(cast_slots)  # leaves the forward casts into given buffers
        self._owned: dict = {}                # buffers the plan keeps, by slot
        self.has_backward = bw is not None
        self.shapes = Shapes(nodes)           # its Variables' shapes, put back on each replay
        self.grad_inters = list(grad_inters)  # intermediates whose gradients bw also returns
        self._copy_inter = list(copy_inter)
        # The gradient marks it was built for, their version at its last forward, and whether
        # that forward kept every value (set by the runner; _grad_marks.py).
        self.marks: tuple | None = None
        self.marks_seen = -1
        self.keep_all = True
        # A plan that keeps only some values: every intermediate whose gradient a backward may
        # give (``all_inters``), the untouched backward returning them all (``_raw_bw``), from
        # which a program returning another choice of them is made when a backward asks for it
        # (``_programs``, by their positions; ``_positions``: the current program's choice),
        # and the values it keeps because the backward reads them (``kept``).
        self.all_inters = list(all_inters) if all_inters is not None else self.grad_inters
        self._raw_bw = raw_bw
        self._positions = positions if positions is not None else tuple(
            range(len(self.grad_inters)))
        self._programs: dict = {}
        self.kept = list(kept)
        self.deferred = None                  # a backward left for later (_deferred_backward.py)
        # the inputs' shapes of the random ops of their own plain seed in its first run (set by
        # the runner, _own_streams.record): what they are set up with before it replays
        self.seed_shapes: list | None = None
        # the values the backward reads that the forward gives Variables too, where those
        # Variables' class reads held values (NNabla's): it reads what they hold when it runs
        # (memory handed to the user: _shared_values.saved_as_held); others read their saves
        self._given = tuple(
            (j, k) for j, k in outputs_saved(self.fw, self.n_fill)
            if type(self.fill[k]).reads_held_values) if bw is not None else ()
        # a channels-last plan gives the values it computed in that layout as they are, their
        # conversion to NCHW left to their first reader (_deferred_layout.py): which values
        # those are, found on the first run
        self.restore_layout = restore_layout
        self._restore: tuple | None = None
        self._tabled = count_tables(self)     # Stadyn's references, not the program's
        # the ids of the roots whose gradients a backward gives (roots_read; ids only: a
        # reference would count as the program's, _held_values.py); what each root depends on
        self._root_inters = {id(r) for r in roots} & {id(v) for v in self.all_inters}
        self._upstream: dict[int, set[int]] = {}

    @property
    def code(self) -> str:
        """The generated Python of the forward (and backward) program, for inspection."""
        text = self.fw.code
        if self.bw is not None:
            text += "\n# backward\n" + self.bw.code
        return text

    def run(self) -> None:
        self.shapes.restore()
        tensors = [leaf_tensor(v) for v in self.leaves]
        if self._cast_slots:
            tensors += [self._buffer(("cast", i), tensors[i], dtype)
                        for i, dtype in self._cast_slots]
        try:
            with torch.no_grad():
                outs = self._fw_call(*tensors)
        except Exception:
            # The generated program does not know the ops; replaying the graph op by op on the
            # same inputs finds the one that fails and names it, as dynamic mode would.
            with torch.no_grad():
                interpret(self.nodes, self.leaves, tensors[:len(self.leaves)], [],
                          name_errors=True)
            raise
        n = self.n_fill
        if self.restore_layout:
            if self._restore is None:
                self._restore = tuple(k for k, t in enumerate(outs[:n])
                                      if channels_last_only(t))
            for k in self._restore:
                defer(outs[k])
        if _checking[0]:
            self._check_forward(tensors, outs[:n])
        for v, t in zip(self.fill, outs):
            set_output(v, t)
        self.saved = tuple(outs[n:]) if self.bw is not None else None

    def _check_forward(self, tensors: list, outs: Sequence[torch.Tensor]) -> None:
        """Under check_numerics: if a value the program gave is not finite, replay the graph
        op by op (checking each op's outputs) to name the op that made it."""
        bad = next(((v, w) for v, t in zip(self.fill, outs) if (w := not_finite(t))), None)
        if bad is None:
            return
        with torch.no_grad():
            interpret(self.nodes, self.leaves, tensors[:len(self.leaves)], [], name_errors=True)
        v, what = bad
        shown = v.graph_name or v.parent.spec.name
        raise NumericsError(f"the static graph's value {shown!r} holds "
                            f"{what} in the forward pass, but no op made it when replayed op by "
                            "op", phase="forward")

    def run_backward(self, root: Variable, seed: torch.Tensor, clear_buffer: bool) -> None:
        if self.saved is None:
            raise StadynError("backward: the buffers of the last forward were cleared "
                              "(backward(clear_buffer=True) ran already); run forward again")
        if self._raw_bw is not None:
            self._choose_program(clear_buffer)
        extra = input_seeds(root)   # (sink(one_input_grad=False): its inputs' own gradients)
        tangents = [seed if r is root else extra[id(r)][1] if id(r) in extra
                    else torch.zeros_like(r._data) for r in self.diff_roots]
        buffers = [self._buffer(("grad", k), self.grad_leaves[k]._data, owned) if owned
                   else grad_out_buffer(self.grad_leaves[k]._data)
                   for k, owned in self._out_slots]
        saved = saved_as_held(self.saved, self._given, self.fill) if self._given else self.saved
        with torch.no_grad():
            grads = self._bw_call(*saved, *tangents, *buffers)
        if _checking[0]:   # check_numerics: name the op that made a non-finite gradient
            check_gradients(self.nodes, self.leaves, self.grad_leaves, grads, root, seed)
        if clear_buffer:
            self.saved = None
            # NNabla frees the values and gradients of the intermediates its backward passes
            # through (those held for it only too: clear_no_need_grad's ``kept``); a clearing
            # forward's plan keeps those it gave values to (what the program held then)
            given = None if self.keep_all else self.fill[:len(self.fill) - len(self.kept)]
            free_passed((*self.kept, *(v for v in self.all_inters
                                       if id(v) not in self._root_inters)), self.nodes, given)
        accumulate_grads(self.grad_leaves, grads, self._copy_grad)
        if self.grad_inters:        # (another root's gradient only where root depends on it)
            keep_grads_of_roots(root, self.grad_inters, grads[len(self.grad_leaves):],
                                self._copy_inter, clear_buffer, self._root_inters, self._upstream)

    def _choose_program(self, clear_buffer: bool) -> None:
        """Run the backward program that returns the intermediates' gradients this backward
        keeps: every one, or with ``clear_buffer`` the ``persistent`` ones' (as they are now),
        made from the untouched backward the first time it is asked for."""
        inters = self.all_inters
        positions = kept_positions(inters, self._root_inters, clear_buffer)
        if positions == self._positions:
            return
        program = self._programs.get(positions)
        if program is None:
            bw = backward_returning(self._raw_bw, len(self.grad_leaves), positions)
            bw, copy_grad, out_slots, copy_inter = finish_backward(bw, self.grad_leaves)
            program = self._programs[positions] = (realize(bw), copy_grad, out_slots,
                                                   copy_inter)
        if self._positions not in self._programs:
            self._programs[self._positions] = (self.bw, self._copy_grad, self._out_slots,
                                               self._copy_inter)
        self.bw, self._copy_grad, self._out_slots, self._copy_inter = program
        self._bw_call = self.bw.forward
        # the old table lives until the count is of the new one (a check between sees more
        # references than counted: it keeps, never frees)
        old, self.grad_inters = self.grad_inters, [inters[k] for k in positions]
        self._positions = positions
        count_tables(self, self._tabled)
        del old

    def _buffer(self, key: tuple, like: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """The plan's own buffer for a slot (shaped like ``like``), made on first use and
        kept."""
        buffer = self._owned.get(key)
        if buffer is None:
            buffer = self._owned[key] = torch.empty(like.shape, dtype=dtype, device=like.device)
        return buffer


def check_gradients(nodes: Sequence[FunctionNode], leaves: Sequence[Variable],
                    grad_leaves: Sequence[Variable], grads: Sequence, root: Variable,
                    seed: torch.Tensor) -> None:
    """If a gradient in ``grads`` (of ``grad_leaves``, from a backward of ``root`` seeded with
    ``seed``) is not finite, replay the graph and its backward op by op under the dynamic-mode
    checks of :func:`~stadyn.check_numerics`, which raise naming the op that made it."""
    bad = next(((k, w) for k, g in enumerate(grads) if (w := not_finite(g))), None)
    if bad is None:
        return
    wanted = set(id(v) for v in grad_leaves)
    replay = []
    for v in leaves:
        t = leaf_tensor(v).detach()
        replay.append(t.requires_grad_(True) if id(v) in wanted and t.is_floating_point() else t)
    with torch.enable_grad():
        values = interpret(nodes, leaves, replay, [root], name_errors=True)
        needs = [t for t in replay if t.requires_grad]
        if values[0].requires_grad and needs:
            torch.autograd.grad(values[0], needs, seed, allow_unused=True)
    k, what = bad
    name = grad_leaves[k].graph_name
    raise NumericsError(f"the gradient of {name or 'a parameter'!r} holds {what} in the backward "
                        "pass, but no op made it when replayed op by op", phase="backward")


def needs_backward_pass(nodes: Sequence[FunctionNode], leaf_tensors: Sequence) -> bool:
    """Whether a plan of ``nodes`` needs a backward: grad mode is on and a leaf needs a
    gradient, or an op output was set ``need_grad=True`` (gradients start there even where no
    leaf needs one: NNabla's ``y.g``)."""
    return torch.is_grad_enabled() and (
        any(t.requires_grad for t in leaf_tensors)
        or any((v := ref()) is not None and v._starts_grad for n in nodes for ref in n._outputs))


def build_plan(subgraph: Subgraph, keep_all: bool, backward: bool = True
               ) -> StaticPlan | EagerPlan:
    """Lower ``subgraph`` (see the module docstring); an :class:`EagerPlan` for a graph that
    cannot be traced.  ``keep_all`` gives every intermediate a value (else only the roots and
    ``persistent`` Variables); ``backward=False`` lowers the forward only (a static plan's
    backward left for later, ``_deferred_backward.py``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import Subgraph, build_plan
        >>> x = sd.Variable.from_numpy_array(np.array([1.0, -2.0]), need_grad=True)
        >>> y = F.sum(F.relu(x))
        >>> plan = build_plan(Subgraph([y]), keep_all=False)
        >>> plan.run(); float(y.d), plan.has_backward
        (1.0, True)
    """
    roots, nodes, leaves = subgraph.roots, subgraph.nodes, subgraph.leaves
    leaf_tensors = subgraph.leaf_tensors()
    refresh_shapes(nodes, leaves)            # inputs may have changed size since the build
    fill = subgraph.filled(keep_all)
    needs_backward = needs_backward_pass(nodes, leaf_tensors)
    if any(t.device.type == "cpu" for t in leaf_tensors):
        keep_freed_cpu_memory()              # a plan's step reuses its freed tensors' pages
    valued = sorted({f"{n.spec.name} ({n.spec.value_shape})" for n in nodes
                     if n.spec.value_shape})
    if valued:
        return EagerPlan(roots, list(nodes), list(leaves), fill, needs_backward,
                         f"an output shape depends on values: {', '.join(valued)}")
    if late_views(nodes, leaves):
        return EagerPlan(roots, list(nodes), list(leaves), fill, needs_backward,
                         "reads a view of an op output after that op ran (NNabla's forward "
                         "reads the new value: _late_views.py)")
    untraceable = untraceable_ops(nodes)
    if untraceable:
        return EagerPlan(roots, list(nodes), list(leaves), fill, needs_backward,
                         f"holds op(s) that cannot be traced: {', '.join(untraceable)}")
    try:
        with collector_paused():         # a build's objects live until it ends (_tracing.py)
            return _lower(roots, nodes, leaves, leaf_tensors, fill, needs_backward and backward,
                          keep_all)
    except Exception as exc:  # noqa: BLE001 - any tracing failure falls back, loudly
        reason = f"tracing failed ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
        warnings.warn(f"a static graph runs eagerly: {reason}", RuntimeWarning, stacklevel=4)
        return EagerPlan(roots, list(nodes), list(leaves), fill, needs_backward, reason)


def _lower(roots, nodes, leaves, leaf_tensors, fill, needs_backward, keep_all) -> StaticPlan:
    # Every intermediate a keep_all plan hands out would need converting back: it stays NCHW.
    layout = frozenset() if keep_all else plan_layout(nodes, leaf_tensors)

    def values_of(ts):      # (NCHW when read: StaticPlan.run, _deferred_layout.py)
        return interpret(nodes, leaves, ts, fill, channels_last=layout)

    if not needs_backward:
        def forward_only(*ts):
            return tuple(values_of(ts))
        # A forward run without gradients is traced without them: autograd records nothing,
        # so no op's saved output is detached into the trace (an unrolled LSTM saves most of
        # its values).  A graph holding a ``grad`` op differentiates inside its forward,
        # whatever the mode: traced with gradients on.
        grad = torch.is_grad_enabled() or differentiates(nodes)
        with torch.set_grad_enabled(grad):
            fw = trace_fake(forward_only, *leaf_tensors)
        plan_passes(fw)
        cast_slots = cast_parameters_into_buffers(fw, leaf_tensors, len(fill))
        return StaticPlan(roots, list(nodes), list(leaves), fill, fw, None, [], [],
                          cast_slots=cast_slots, restore_layout=bool(layout))

    grad_idx = [i for i, t in enumerate(leaf_tensors) if t.requires_grad]
    # (positions by identity: a front end's Variables may compare equal to others, as NNabla's
    # view and its source do)
    fill_pos = {id(v): i for i, v in reversed(list(enumerate(fill)))}
    root_pos = [fill_pos[id(r)] for r in roots if r.parent is not None]
    # Every intermediate gets its gradient, as NNabla keeps them (_intermediate_grads.py);
    # a plan that keeps only some values also computes the others' (``rest``), which leave the
    # forward only where the backward reads them anyway (NNabla's clear_no_need_grad).
    rest = [] if keep_all else intermediates_beyond(nodes, fill)
    wanted = fill + rest
    first_inter = len(set(root_pos))
    read = [fill_pos[id(r)] for r in roots_read(roots, nodes)]   # (their gradients too)
    traced: dict[str, list[int]] = {}

    def joint(*ts):
        primals = ts[:len(leaves)]
        tangents = ts[len(leaves):]
        seen: dict = {}
        values = interpret(nodes, leaves, primals, wanted, channels_last=layout, seen=seen)
        diff = [k for k, p in enumerate(root_pos) if values[p].requires_grad]
        inputs = [primals[i] for i in grad_idx]
        inter = [p for p in (*range(first_inter, len(wanted)), *read)
                 if values[p].requires_grad]
        # (a root that needs a gradient over leaves that need none, ``z.need_grad = True``
        # on ``F.exp(a)``: nothing to differentiate with respect to, no backward to trace)
        # (one root: its readers' parts added in NNabla's order, _ordered_sums.py)
        env, copies = seen["env"], seen["copies"]
        with ordered_sums(fill[root_pos[diff[0]]].parent if len(diff) == 1 else None, nodes,
                          lambda v: env.get(value_key(v)), lambda v, t: copies.held(t)) as sums:
            grads = torch.autograd.grad([values[root_pos[k]] for k in diff],
                                        inputs + [values[p] for p in inter],
                                        [tangents[k] for k in diff], allow_unused=True) \
                if diff and (inputs or inter) else []
        if sums:
            grads = [sums.get(id(t), g) if j >= len(inputs) else g
                     for j, (t, g) in enumerate(zip(inputs + [values[p] for p in inter], grads))]
        used = [j for j, g in enumerate(grads) if g is not None and j < len(inputs)]
        got = [j for j, g in enumerate(grads) if g is not None and j >= len(inputs)]
        traced["diff"], traced["used"] = diff, used
        traced["inter"] = [inter[j - len(inputs)] for j in got]
        out = [grads[j] for j in used + got]
        if layout:      # values leave as they are (NCHW when read: StaticPlan.run)
            out = [standard_layout(g) for g in out]
        return (*values, *out)

    tangent_examples = [torch.zeros(tuple(fill[p]._shape), dtype=fill[p]._dtype,
                                    device=leaf_tensors[0].device if leaf_tensors else None)
                        for p in root_pos]
    with torch.enable_grad():
        gm = trace_fake(joint, *leaf_tensors, *tangent_examples)
    # Tangents of roots that do not need a gradient are unused placeholders: drop them.
    diff, used = traced["diff"], traced["used"]
    keep = set(diff)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for k, ph in enumerate(placeholders[len(leaves):]):
        if k not in keep:
            gm.graph.erase_node(ph)
    fw, bw, _ = partition(gm, len(leaves), len(wanted))
    kept = keep_read_values(fw, len(fill), rest)
    plan_passes(fw)
    grad_leaves = [leaves[grad_idx[j]] for j in used]
    diff_roots = [fill[root_pos[k]] for k in diff]
    cast_slots = cast_parameters_into_buffers(fw, leaf_tensors, len(fill) + len(kept))
    inters = [wanted[p] for p in traced["inter"]]
    positions = tuple(range(len(inters)))
    raw = None
    if not keep_all:   # the backward returns the persistent ones' (others' when asked: below)
        raw, positions = bw, kept_positions(inters, {id(fill[p]) for p in read}, True)
        bw = backward_returning(raw, len(grad_leaves), positions)
    bw, copy_grad, out_slots, copy_inter = finish_backward(bw, grad_leaves)
    return StaticPlan(roots, list(nodes), list(leaves), fill + kept, fw, bw, grad_leaves,
                      diff_roots, copy_grad, out_slots, cast_slots,
                      grad_inters=[inters[k] for k in positions], copy_inter=copy_inter,
                      all_inters=inters, raw_bw=raw, positions=positions, kept=kept,
                      restore_layout=bool(layout))


def holds_loop(node) -> bool:
    """Whether the op ``node`` holds a graph as an attribute, which it runs step after step (a
    recurrence's step): a trace of a graph holding it unrolls that loop.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> holds_loop(F.tanh(sd.Variable((2,))).parent)
        False
    """
    return bool(inner_graphs(node))


def keep_read_values(fw: fx.GraphModule, n_fill: int, rest: Sequence[Variable]
                     ) -> list[Variable]:
    """Of the forward program's values of ``rest`` (after the ``n_fill`` values it gives out),
    keep those the backward reads (a residual too: NNabla's ``clear_no_need_grad`` keeps
    them, and holding them costs nothing more) and drop the others from its outputs, so they
    are freed as the program runs.  Returns the Variables kept, in order."""
    output = next(n for n in reversed(fw.graph.nodes) if n.op == "output")
    outs = list(output.args[0])
    values, residuals = outs[n_fill:n_fill + len(rest)], outs[n_fill + len(rest):]
    read = set(residuals)
    kept = [(v, n) for v, n in zip(rest, values) if n in read]
    output.args = (tuple(outs[:n_fill]) + tuple(n for _, n in kept) + tuple(residuals),)
    drop_dead_code(fw.graph)
    return [v for v, _ in kept]


def finish_backward(bw: fx.GraphModule, grad_leaves: Sequence[Variable]) -> tuple:
    """The passes a backward program gets (``_passes.py``), in place; returns ``(bw,
    copy_grad, out_slots, copy_inter)``: which leaf gradients may alias (copied before they
    accumulate), the slots written into buffers, and which intermediates' gradients may alias
    another output."""
    plan_passes(bw, fuse=False)              # a backward holds no forward activation to fuse
    tidy_ranges(bw)                          # a labelled plan's (profiler ranges, _labels.py)
    defer_output_casts(bw)
    out_slots = write_products_into_buffers(bw, [leaf_tensor(v) for v in grad_leaves])
    # A gradient that may share memory with an input or another output (which accumulates in
    # place) is copied, judged on the final program: a product written into a leaf's buffer
    # is that leaf's own, and any other output over that buffer (another leaf's gradient
    # reshaping it) is copied.
    aliased = aliased_outputs(bw)
    copy_grad, copy_inter = aliased[:len(grad_leaves)], aliased[len(grad_leaves):]
    for k, _ in out_slots:
        copy_grad[k] = False
    return bw, copy_grad, out_slots, copy_inter

"""Running static graphs: the plan cache, ``forward`` and ``backward``.

:func:`run_forward` finds (or builds, ``_plan.py``) the plan for a set of roots and runs it.  The
cache lives on the first root: one entry per set of roots, holding the
:class:`~stadyn.graph.Subgraph` (collected again when the graph version changes: a graph was
rewired or an attribute set) and its plans keyed by the leaves' signature, grad mode, phase,
context and buffer flags.  While no leaf changed layout (``layout_version``)
a replay skips even the signature.

A new signature of a graph that has a plan for the same flags (another batch size or
sequence length) is not lowered at once: it runs eagerly (:class:`~stadyn.graph.TrialPlan`,
the same results) until its runs have cost as much as the graph's cheapest build so far, and
only then gets a plan of its own.  A graph fed minibatches of ever new shapes (sequences)
runs at eager speed instead of paying a build per minibatch; a shape that keeps coming gets
its plan; a graph whose plan runs eagerly anyway (an op that cannot be traced) runs a new
shape as a trial for good.  At most :data:`MAX_PLANS` plans and :data:`MAX_TRIALS` trial
signatures are kept per set of roots, the least recently used dropped first.

A graph holding a loop (an op whose attribute is a graph run step after step: a recurrence)
rents its first signature too: a trace unrolls every step of the loop, so its build costs
what about :data:`BUILD_RUNS` eager runs cost (CNTK's Sequence2Sequence.py: 3-6 s per plan of
its decoders, 0.04-0.1 s per eager forward).  Its runs are trials, and until a plan is built
for its flags the fastest of their forwards, times ``BUILD_RUNS``, stands for the build's
seconds: an evaluation run a few times (a greedy decoder, an attention matrix printed once)
is never lowered, a graph run as many times as its build costs is.

An evaluation (a forward no backward can follow: grad mode off, CNTK's ``eval``, ``no_grad``,
or a graph none of whose leaves needs a gradient) rents its first signature for one run when
no graph of its structure ran before (``_plan_reuse.sighted``): it runs eagerly, and
its next run, or the next graph built alike, is lowered (the graphs alike after it replay that
plan).  A function built and evaluated once never pays a trace.

:func:`backward` runs the backward program of the plan of a root's last forward, or torch's
autograd in dynamic mode; a forward it must run again first (the marks changed since, or a
Variable not the root of its last forward) is ``_forward_again.py``'s.
"""

from __future__ import annotations

import contextlib
import math
import re
import time
import warnings
from collections import OrderedDict
from typing import Any, Sequence

import torch

from ._context import context_scope, get_current_context
from ._function_hooks import _POST as _POST_HOOKS
from ._function_hooks import _PRE as _PRE_HOOKS
from ._function_hooks import HookedPlan
from ._autograd_backward import autograd_backward
from ._eager_owners import marks_changed_since_run, note_eager_run
from ._forward_again import backward_under_marks_of_now, guarded, marks_of_forward, refuse_kept
from ._grad_marks import gradient_marks, output_marks
from ._mode import is_training, training
from ._labels import _active as _labelling
from ._labels import BUILD_LABEL, LABEL_PREFIX
from ._numerics import _policy as _checks
from ._layout import plan_layout
from ._eager_plan import EagerPlan
from ._plan import StaticPlan, build_plan, needs_backward_pass
from ._backward_seed import backward_seed, filled_with_ones, unit_inputs
from ._deferred_backward import Deferred, deferrable, outputs_held
from ._draw_states import drawing, keep, replays, same_draws
from ._own_streams import own_seed_nodes, record, set_up
from ._plan_reuse import (loop_and_own_stream, remember, reuse, sighted,
                          structure)
from ._static_boundary import any_stand_in, seed_output, static_seeds
from ._subgraph import Subgraph
from ._tracing import collector_paused
from ._trial_plan import TrialPlan
from ._variable import topological_nodes, Variable
from ._versions import gradient_marks_version, graph_version, layout_version

__all__ = ["run_forward", "forward_all", "backward", "MAX_PLANS", "MAX_TRIALS", "BUILD_RUNS"]

#: Plans kept per set of roots (each holds generated code and, in a half-precision context,
#: buffers); the least recently used is dropped past it.
MAX_PLANS = 32
#: New signatures per set of roots whose eager runs are counted towards a build.
MAX_TRIALS = 64
#: About how many eager runs of a graph holding a loop cost as much as lowering it (the price
#: its first signature's trial runs pay before a build).  0 lowers every graph on its first
#: run: one holding a loop, a first evaluation and a new shape of a graph with a plan, too
#: (docs/performance.md).
BUILD_RUNS = 50

_FORWARD_AGAIN = "backward() from a Variable that was not the root of its last forward"

#: A structure not looked for yet (``structure`` gives None for a graph it cannot key).
_UNSEEN = object()


class _PlanCache:
    """The subgraph of a set of roots, its lowered plans (by leaf signature and flags, least
    recently used first) and the seconds spent on trial runs of new signatures
    (``TrialPlan``).

    ``last``/``last_key`` skip recomputing the leaf signature while no leaf changed layout
    (``layout_changed`` is called by every API that could).  ``built`` holds, per set of
    flags a plan was built for, the fastest build's seconds: what a trial must spend first
    (infinite where the plan runs eagerly anyway: ``eager`` holds why).  Only the latest
    trial plan is kept (``trial``, its key ``trial_key``): an earlier one would hold on to
    its last run's values and autograd graph.  ``pricing`` holds the flags whose build's
    seconds the trial runs estimate (a graph holding a loop, nothing built for them yet)."""

    __slots__ = ("graph_version", "subgraph", "plans", "trials", "built", "eager", "last",
                 "last_key", "trial", "trial_key", "marks", "marks_version", "differentiated",
                 "pricing", "own_seeds", "draws")

    def __init__(self, subgraph: Subgraph):
        self.graph_version = graph_version()
        self.subgraph = subgraph
        self.marks: tuple = ()
        self.marks_version = -1
        self.plans: OrderedDict = OrderedDict()
        self.trials: OrderedDict = OrderedDict()
        self.built: dict = {}
        self.eager: dict = {}
        self.last: StaticPlan | EagerPlan | None = None
        self.last_key: tuple | None = None
        self.trial: TrialPlan | None = None
        self.trial_key: tuple | None = None
        # Plans of these roots are built with their backward (one was, or a backward was asked
        # of a plan that had none): no forward-only plan (_deferred_backward.py) any more.
        self.differentiated = False
        self.pricing: dict = {}
        # the ops with a plain seed of their own (_own_streams.py): a static plan records their
        # inputs' shapes in its first run (StaticPlan.seed_shapes), set up again before a replay
        self.own_seeds = own_seed_nodes(subgraph.nodes)
        # (their generators' states noted per run, for a front end that reads them)
        self.draws = drawing(subgraph.nodes, subgraph.roots)

    def plan_for(self, flags: tuple, keep_all: bool) -> StaticPlan | EagerPlan:
        """The plan for the leaves' current signature under ``flags``: cached, a trial run of
        a new signature, or built now (see the module docstring)."""
        key = flags + (self.subgraph.signature(), self._gradient_marks())
        if self.trial is not None:          # what the latest trial cost, runs and backwards
            if self.trial_key in self.trials:
                self.trials[self.trial_key] = self.trial.spent
            self.trial = self.trial_key = None
        plan = self.plans.get(key)
        if plan is not None:
            self.plans.move_to_end(key)
            return plan
        spent = self.trials.get(key)
        runs, form = self._rent_first(key, flags, keep_all) if spent is None else (None, _UNSEEN)
        if runs is not None:
            self.built[flags] = math.inf            # priced by its trials' runs
            self.pricing[flags] = runs
        if spent is None and self._try_first(flags, keep_all):
            spent = self.trials[key] = 0.0
            if len(self.trials) > MAX_TRIALS:
                self.trials.popitem(last=False)
        if spent is not None and spent < self.built[flags]:
            self.trials.move_to_end(key)
            trial = TrialPlan(self.subgraph.roots, self.subgraph.nodes, self.subgraph.leaves,
                              self.subgraph.filled(keep_all), _needs_backward(self.subgraph),
                              self.eager.get(flags) or _rented(self.pricing.get(flags)))
            trial.spent = spent
            self.trial, self.trial_key = trial, key
            return trial
        self.trials.pop(key, None)
        plan, seconds = self._build(key, flags, keep_all, form)
        estimated = flags in self.pricing
        self.pricing.pop(flags, None)
        if isinstance(plan, StaticPlan):
            # a measured build replaces the trial runs' estimate (which may be far below it:
            # else every new signature of a graph holding a loop would build again after a
            # fraction of a build's seconds); later builds keep the fastest
            self.built[flags] = seconds if estimated else min(seconds, self.built.get(flags,
                                                                                      seconds))
        elif estimated or flags not in self.built:
            # A graph that runs eagerly anyway: new shapes are trials that never pay a build
            # (which would infer every shape again only to run eagerly).
            self.built[flags] = math.inf
            self.eager[flags] = plan.reason
        self.plans[key] = plan
        if len(self.plans) > MAX_PLANS:
            self.plans.popitem(last=False)
        return plan

    def _build(self, key: tuple, flags: tuple, keep_all: bool, form: Any) -> tuple:
        """A new plan for ``key`` and its build's seconds (``form``: the graph's
        :func:`structure` where :meth:`_rent_first` found it, else ``_UNSEEN``).  A graph
        rebuilt alike (new roots, same structure) replays the plan built for the first
        (_plan_reuse.py; a labelled plan is not shared: its ranges name scopes).  A graph that
        may be differentiated, but whose parameters another graph differentiated already, gets
        its forward only (_deferred_backward.py).  Python's cyclic garbage collector is paused
        throughout, not only while ``build_plan`` lowers (``collector_paused``): the structure
        key and the kept template allocate per node too, and a full collection then walks every
        object the graph and its programs hold (nnabla-examples' PointNet++, graphs of 11,000
        functions: 1.4-1.5 s of collection while each template was made, 3-5% of the build)."""
        with collector_paused():
            return self._build_paused(key, flags, keep_all, form)

    def _build_paused(self, key: tuple, flags: tuple, keep_all: bool, form: Any) -> tuple:
        subgraph = self.subgraph
        defer = (not self.differentiated and not flags[4] and flags[1]
                 and _needs_backward(subgraph) and deferrable(subgraph.leaves, subgraph.nodes))
        if form is _UNSEEN:
            form = None if flags[4] else structure(subgraph)
        shared = None if form is None else key + (form,)
        reused = reuse(shared and shared + (False,), subgraph, keep_all)
        if reused is None and defer:
            reused = reuse(shared + (True,), subgraph, keep_all) if shared else None
        if reused is not None:
            plan, seconds = reused
        else:
            start = time.perf_counter()
            if flags[4]:   # the trace runs the labelled ops once: one range for it all
                with torch.profiler.record_function(LABEL_PREFIX + BUILD_LABEL):
                    plan = build_plan(subgraph, keep_all)
            else:
                plan = build_plan(subgraph, keep_all, backward=not defer)
            seconds = time.perf_counter() - start
            remember(shared and shared + (defer,), plan, seconds)
        if defer and isinstance(plan, StaticPlan) and not plan.has_backward:
            plan.deferred = Deferred(self, key, flags, plan)
        elif isinstance(plan, StaticPlan) and plan.has_backward:
            self.differentiated = True
        return plan, seconds

    def priced(self, plan, flags: tuple, seconds: float) -> None:
        """After a forward of ``plan`` under ``flags`` that took ``seconds``: a trial run of a
        first signature, nothing built for its flags yet, prices the build at the runs it
        rents times its fastest run (``BUILD_RUNS`` for a graph holding a loop: a first run's
        one-time costs, lazy imports, count once; 0 for a first evaluation: the next run
        builds)."""
        if plan is self.trial and flags in self.pricing:
            self.built[flags] = min(self.built[flags], self.pricing[flags] * seconds)

    def _gradient_marks(self) -> tuple:
        """Which op outputs of the graph stop (``need_grad=False``) or start (``True``) the
        gradient, by position: a plan is built for one set of marks (read again only when some
        output's need_grad changed)."""
        if self.marks_version != gradient_marks_version():
            self.marks_version = gradient_marks_version()
            self.marks = output_marks(self.subgraph.nodes)
        return self.marks

    def _try_first(self, flags: tuple, keep_all: bool) -> bool:
        """Whether a new signature under ``flags`` runs eagerly first: a static plan was built
        for these flags, the profiler labels nothing, and the plan would keep the standard
        layout (a channels-last plan's convolutions sum in another order than eager ones).  A
        random op's own generator is the node's (``_own_streams.py``), which the trial runs
        draw from as the plans do, so a graph holding one is tried like any other.
        Never while ``BUILD_RUNS`` is 0: every graph is then lowered on its first run, a new
        shape's too."""
        if flags not in self.built or flags[4] or BUILD_RUNS <= 0:
            return False
        return keep_all or not plan_layout(self.subgraph.nodes, self.subgraph.leaf_tensors())

    def _rent_first(self, key: tuple, flags: tuple, keep_all: bool) -> tuple[int | None, Any]:
        """How many of its fastest eager runs the first signature under ``key`` (``flags``)
        runs before a build, or None to build at once; and the graph's :func:`structure`
        where it was found on the way (else ``_UNSEEN``), for the build to key its plan by.
        Only while nothing was built for the flags, the profiler labels nothing and the graph
        runs in the standard layout (as :meth:`_try_first`), and ``BUILD_RUNS`` is not 0: a
        graph holding a loop (which a trace unrolls) rents ``BUILD_RUNS``; an evaluation (grad
        mode off, or no leaf needing a gradient: no backward can follow) of a structure that
        no graph ran before (``_plan_reuse.sighted``) rents one run, its next run builds.  A
        graph without a loop drawing from a random op's own generator is lowered at once (a
        rule from when an eager run drew from a generator of its own; the runs now share the
        node's, so renting would keep the draws, but the first run's timing would change).
        One walk of the nodes finds both (``loop_and_own_stream``)."""
        nodes = self.subgraph.nodes
        if flags in self.built or flags[4] or BUILD_RUNS <= 0:
            return None, _UNSEEN
        loop, own = loop_and_own_stream(nodes)
        if not loop and (own or (flags[1] and _needs_backward(self.subgraph))):
            return None, _UNSEEN
        if not keep_all and plan_layout(nodes, self.subgraph.leaf_tensors()):
            return None, _UNSEEN
        if loop:
            return BUILD_RUNS, _UNSEEN
        form = structure(self.subgraph)     # None: graphs alike unknown, its own next run builds
        return (0 if form is None or not sighted(key + (form,)) else None), form


def _rented(runs: int | None) -> str | None:
    """Why a trial runs where nothing was built for its flags yet (``runs``: the runs its
    :meth:`_PlanCache._rent_first` rented), or None for a new shape of a graph with a plan (the
    trial's own reason)."""
    if runs is None:
        return None
    if runs == 0:
        return ("a first evaluation of a graph unlike any run before (lowered on its next "
                "run, or the next graph built alike)")
    return (f"a graph holding a loop, before its first build (lowered once its runs have cost "
            f"BUILD_RUNS = {runs} times its fastest forward)")


def _needs_backward(subgraph: Subgraph) -> bool:
    return needs_backward_pass(subgraph.nodes, subgraph.leaf_tensors())


def run_forward(roots: Sequence[Variable], clear_buffer: bool = False,
                clear_no_need_grad: bool = False, function_pre_hook=None,
                function_post_hook=None) -> StaticPlan | EagerPlan | HookedPlan | None:
    """Forward the static graph of ``roots`` through a cached plan (built on first use, and again
    when the graph, a leaf's signature, the phase, grad mode, the context or the buffer flags
    change); returns the plan, or None for roots that no op computes.  With function hooks (set
    globally, or given here for this forward) it runs op by op instead (``_function_hooks.py``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph._runner import run_forward
        >>> x = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
        >>> y = F.sum(x * x)
        >>> run_forward([y]) is run_forward([y]), float(y.d)
        (True, 5.0)
    """
    head = roots[0]
    head._plans = {} if head._plans is None else head._plans
    roots_key = tuple(id(r) for r in roots)
    entry = head._plans.get(roots_key)
    if entry is None or entry.graph_version != graph_version():
        differentiated = entry is not None and entry.differentiated
        entry = _PlanCache(Subgraph(roots))
        entry.differentiated = differentiated
        head._plans[roots_key] = entry
        for node in entry.subgraph.nodes:   # its values are now this plan's, not a dynamic
            node.ran_under = None           # run's (a backward from an inner Variable runs
                                            # the graph again); only a node's making sets it
    subgraph = entry.subgraph
    if not subgraph.nodes:
        return None
    if _PRE_HOOKS or _POST_HOOKS or function_pre_hook or function_post_hook:
        plan = HookedPlan(subgraph,
                          list(_PRE_HOOKS.values()) + [h for h in [function_pre_hook] if h],
                          list(_POST_HOOKS.values()) + [h for h in [function_post_hook] if h])
        keep(entry.draws)
        plan.run()      # (not noted: its Variables' histories are cut op by op, so a
        for r in roots:  # backward from an inner one keeps to the eager owner's path)
            r._plan = plan
        return plan
    keep_all = not (clear_buffer or clear_no_need_grad)
    if _checks and _checks[-1][2]:      # check_numerics(op_by_op=True): each op checked as run
        plan = TrialPlan(subgraph.roots, subgraph.nodes, subgraph.leaves,
                         subgraph.filled(keep_all), _needs_backward(subgraph), "checked op by op")
        keep(entry.draws)
        plan.run()
        return _ran(plan, roots, keep_all)
    ctx = get_current_context()
    # A plan built while the profiler labels op calls carries the labels in its program.
    fast = (keep_all, torch.is_grad_enabled(), is_training(), ctx, _labelling[0] > 0,
            layout_version())
    plan = entry.last if entry.last_key == fast else None
    if plan is None or (isinstance(plan, TrialPlan) and plan.spent >= entry.built[fast[:5]]):
        plan = entry.plan_for(fast[:5], keep_all)
        entry.last, entry.last_key = plan, fast
    if getattr(plan, "deferred", None) is not None:
        plan.deferred.keep(plan)
    pricing = bool(entry.pricing) and isinstance(plan, TrialPlan)
    spent = plan.spent if pricing else 0.0
    own = entry.own_seeds and isinstance(plan, StaticPlan)
    if own and plan.seed_shapes is not None:     # a replay calls no op: set up its seeds
        set_up(plan.seed_shapes)
    keep(entry.draws)
    plan.run()
    if own and plan.seed_shapes is None:
        plan.seed_shapes = record(entry.own_seeds)
    if pricing:
        entry.priced(plan, fast[:5], plan.spent - spent)
    return _ran(plan, roots, keep_all)


def _ran(plan: StaticPlan | EagerPlan, roots: Sequence[Variable],
         keep_all: bool) -> StaticPlan | EagerPlan:
    """``plan`` after its run for ``roots``: its gradient marks (a plan is built for one set;
    an eager one's are those of its run), noted as its nodes' owner (an eager plan's inner
    Variables hold autograd history: ``_eager_owners.py``) and the roots' plan."""
    if plan.marks is None:
        plan.marks = gradient_marks(plan.nodes, plan.leaves)
    plan.marks_seen, plan.keep_all = gradient_marks_version(), keep_all
    note_eager_run(plan)
    for r in roots:
        r._plan = plan
    return plan


def forward_roots(var: Variable) -> list[Variable]:
    """The roots of ``var.forward()``: ``var``, and the inputs of its op when that forwards
    its inputs (``sink(loss, acc)``: ``OpSpec.forwards_inputs``), so that ``loss.backward()``
    after it reads that forward's values (its dropout masks) instead of running ``loss``'s
    forward again, as NNabla's does.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((2,))
        >>> a, b = x * 2.0, x * 3.0
        >>> roots = forward_roots(F.sink(a, b))
        >>> len(roots), roots[1] is a, roots[2] is b, len(forward_roots(a))
        (3, True, True, 1)
    """
    parent = var.parent
    if parent is None or not parent.spec.forwards_inputs:
        return [var]
    return list({id(v): v for v in (var, *parent.inputs)}.values())


def forward_all(variables: Sequence[Variable], clear_buffer: bool = False,
                clear_no_need_grad: bool = False, function_pre_hook=None,
                function_post_hook=None) -> None:
    """Run the graph for several outputs at once (they share the common part of the graph).
    ``function_pre_hook`` / ``function_post_hook`` are called with each op's node before /
    after it runs, as in ``Variable.forward`` (NNabla's ``nn.forward_all`` takes them too).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([1.0, 2.0]))
        >>> a, b = F.sum(x), F.max(x)
        >>> sd.forward_all([a, b])
        >>> float(a.d), float(b.d)
        (3.0, 2.0)
    """
    # a root given twice is one root (NNabla's forward_all([y, y]) then y.backward() gives the
    # gradient once; a repeated root seeded its backward twice).  Only here: a single-root
    # forward (Variable.forward, every step) has nothing to drop.
    roots = list({id(v): v for v in variables}.values())
    run_forward(roots, clear_buffer=clear_buffer, clear_no_need_grad=clear_no_need_grad,
                function_pre_hook=function_pre_hook, function_post_hook=function_post_hook)


def backward(var: Variable, grad: Any = 1, clear_buffer: bool = False,
             function_pre_hook=None, function_post_hook=None) -> None:
    """Backward from ``var`` (:meth:`Variable.backward`): the backward program of the plan of
    its last forward, or torch's autograd (dynamic mode, eager plans).  With function hooks, a
    static graph's backward runs op by op (``_function_hooks.py``; a forward that ran the
    lowered program is run again op by op first); a dynamic graph calls no hook, as NNabla's.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph._runner import backward
        >>> w = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
        >>> y = F.sum(w * w)
        >>> y.forward(); backward(y)
        >>> w.g.tolist()
        [2.0, 4.0]
    """
    units = unit_inputs(var)     # sink(one_input_grad=True): its inputs' gradients are 1
    if not units:
        _backward(var, grad, clear_buffer, function_pre_hook, function_post_hook)
        return
    with filled_with_ones(units):
        _backward(var, grad, clear_buffer, function_pre_hook, function_post_hook)


def _backward(var: Variable, grad: Any, clear_buffer: bool, function_pre_hook,
              function_post_hook) -> None:
    """:func:`backward`, its inputs' gradients of a ``sink`` aside."""
    plan = var._plan
    if plan is not None and (function_pre_hook or function_post_hook):
        if not isinstance(plan, HookedPlan) or plan.saved is None:
            plan = HookedPlan(Subgraph([var]), [], [])   # the ops' values, op by op
            plan.run()
            var._plan = plan
        if plan.has_backward and any(r is var for r in plan.diff_roots):
            plan.run_backward(var, backward_seed(var, grad, var._data), clear_buffer,
                              [h for h in [function_pre_hook] if h],
                              [h for h in [function_post_hook] if h])
        return
    if plan is not None and getattr(plan, "deferred", None) is not None:
        now = gradient_marks(plan.nodes, plan.leaves) \
            if plan.marks_seen != gradient_marks_version() else plan.marks
        if now != plan.marks:
            # need_grad set since the forward: its plan with a backward is built, and
            # differentiated, under that forward's marks (NNabla's: a function that took no
            # part stays out); the forward's marks stay the ones a later backward compares with
            with marks_of_forward(plan, now):
                new = _with_backward(plan)
                if new.has_backward and any(r is var for r in new.diff_roots):
                    new.run_backward(var, backward_seed(var, grad, var._data), clear_buffer)
            new.marks = plan.marks
            return
        plan = _with_backward(plan)
    data = var._data
    if plan is not None and plan.has_backward and data is not None:
        if not any(r is var for r in plan.diff_roots):
            return
        if (not isinstance(plan, HookedPlan)                # need_grad set since the forward
                and plan.marks_seen != gradient_marks_version()):
            now = gradient_marks(plan.nodes, plan.leaves)
            if now != plan.marks:
                backward_under_marks_of_now(var, plan, now, grad, clear_buffer, run_forward)
                return
            plan.marks_seen = gradient_marks_version()
        plan.run_backward(var, backward_seed(var, grad, data), clear_buffer)
        return
    stale = (plan is None and var.parent is not None and var.parent.ran_under is None
             and marks_changed_since_run(var.parent))   # an eager run's history, marks since
    if data is not None and data.grad_fn is not None and not stale:
        autograd_backward(var, data, grad, clear_buffer)
        # dynamic ops that read static outputs: on into their plans (_static_boundary.py)
        seeds = static_seeds(topological_nodes([var])) if any_stand_in() else []
        for k, (u, seed, below) in enumerate(seeds):
            seed_output(u, seed, below)
            # (a plan with several of them as roots clears its buffers after the last; an
            # inner output of a plan runs its part again, unasked for: no warning of it)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", re.escape(_FORWARD_AGAIN), RuntimeWarning)
                backward(u, seed, clear_buffer and k == len(seeds) - 1)
        return
    if var.parent is None or (plan is not None and not plan.has_backward):
        return  # nothing this Variable depends on needs a gradient
    if plan is None and data is not None and var.parent.ran_under is not None:
        return  # computed in dynamic mode by ops none of which took part: NNabla's nothing
    if type(var).warns_forward_again:
        warnings.warn(_FORWARD_AGAIN + " re-runs its forward first", RuntimeWarning,
                      stacklevel=3)
    graph = Subgraph([var])         # (its nodes in order, and the leaves a stale run guards)
    nodes = graph.nodes
    # the run draws what the last forward of these ops drew (NNabla's backward reads the masks
    # of the forward that ran), the generators left where that forward left them; where it
    # stands for the eager run's stale history it is refused as the roots' would be (NNabla
    # runs no forward again: running statistics and an op's state must not move twice)
    if stale:
        refuse_kept(nodes)
    with (outputs_held([o for n in nodes for o in n.outputs]), same_draws(nodes) as hook,
          guarded(graph.leaves, replays(nodes)) if stale
          else contextlib.nullcontext()):
        run_forward(forward_roots(var), function_pre_hook=hook)   # (a sink's inputs too)
    _backward(var, grad, clear_buffer, None, None)


def _with_backward(plan: StaticPlan) -> StaticPlan:
    """The plan with a backward that replaces ``plan`` (a forward-only plan whose backward was
    left for later, ``_deferred_backward.py``), its forward run again on what ``plan``'s last
    run started from, under that run's flags."""
    deferred = plan.deferred
    entry = deferred.entry
    entry.differentiated = True
    entry.plans.pop(deferred.key, None)
    entry.built.pop(deferred.flags, None)     # built now, not run as a trial of a new shape
    entry.last = entry.last_key = None
    keep_all, grad, phase, ctx = deferred.flags[:4]
    now = deferred.state(plan) if deferred.before is not None else None
    deferred.put_back(plan, deferred.before)
    try:        # (NNabla's backward reads the outputs' values as the user left them)
        with (torch.set_grad_enabled(grad), training(phase), context_scope(ctx),
              outputs_held(plan.fill)):
            new = run_forward(plan.roots, clear_buffer=not keep_all)
    finally:
        deferred.put_back(plan, now)
    return new

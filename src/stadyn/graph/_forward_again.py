"""A static graph's forward run again for a backward (NNabla runs none): after ``need_grad``
changed on one of its Variables since the forward (:func:`backward_under_marks_of_now`, under
the marks of now), or from a Variable whose last forward was not its own (the runner's
``backward``, guarded where it stands for an eager run's stale history).  The marks it runs
under (:func:`marks_of_forward`) are those the runner builds a forward-only plan's backward
under too (``_deferred_backward.py``), when ``need_grad`` changed since that forward.  What such
a run must not do -- read a running statistic it wrote, draw anew, move an op's own state --
is refused with one error (:func:`refuse`, :func:`refuse_kept`, :func:`guarded`).

The runner (``_runner.py``) sits above this module: it hands its ``run_forward`` in.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

import torch

from .._errors import StadynError
from ._backward_seed import backward_seed
from ._draw_states import replays, same_draws
from ._grad_marks import (gradient_marks, given_back, marks_to_replay, mark_gradients_changed,
                          program_side_effects, READS_WRITTEN_LEAF, ReplayGuard, SideEffect,
                          written_leaves)
from ._eager_plan import EagerPlan
from ._plan import StaticPlan
from ._subgraph import leaf_tensor
from ._trial_plan import TrialPlan
from ._variable import FunctionNode, Variable

__all__ = ["backward_under_marks_of_now", "marks_of_forward", "refuse_kept", "guarded", "refuse"]


def backward_under_marks_of_now(var: Variable, plan: StaticPlan | EagerPlan, now: tuple,
                                grad: Any, clear_buffer: bool,
                                run_forward: Callable[..., Any]) -> None:
    """Backward from ``var`` after ``need_grad`` was set on a Variable of ``plan``'s graph since
    its forward, honouring it as NNabla does (``_grad_marks.py``): the forward runs again
    under the marks of ``now``, with the nodes ``plan``'s forward left out of the backward
    still out and those it let take part still in (``marks_to_replay``; marks set for this
    forward and backward only) -- through the plan for those marks, or eagerly where ``plan``
    ran eagerly.  Random numbers are drawn again as that forward drew them where its draws
    were noted (``replays``, ``same_draws``); running statistics it writes get back the values
    the forward left them (``given_back``; NNabla runs no forward again); a graph whose forward
    has other side effects (an op's own state, draws not noted) refuses.  An op that cannot be
    traced, or a program reading a leaf it wrote (``min_max_quantize``), runs again guarded."""
    lowered = isinstance(plan, StaticPlan)  # (run again through a program: not eagerly)
    if lowered:                         # (the forward's draws again, where they were noted)
        effect = program_side_effects(plan.fw, len(plan.leaves), replays(plan.nodes))
        refuse(effect is not READS_WRITTEN_LEAF and effect)
        lowered = effect is not READS_WRITTEN_LEAF
    else:
        refuse_kept(plan.nodes)
    try:
        with marks_of_forward(plan, now):
            if lowered:
                with (same_draws(plan.nodes) as hook,
                      given_back(written_leaves(plan.fw, plan.leaves))):
                    run_forward(plan.roots, clear_no_need_grad=not plan.keep_all,
                                function_pre_hook=hook)
            else:
                _replay_eagerly(plan, replays(plan.nodes), run_forward)
            new = var._plan
            if new.has_backward and any(r is var for r in new.diff_roots):
                new.run_backward(var, backward_seed(var, grad, var._data), clear_buffer)
    finally:
        # the forward the program ran stays the one a later backward compares the marks with
        # (NNabla's: no forward ran again; the replay's plan was built under this backward's
        # own marks, under which a node cut now took no part)
        for r in plan.roots:
            r._plan = plan


@contextlib.contextmanager
def marks_of_forward(plan: StaticPlan | EagerPlan, now: tuple):
    """Within it, the op outputs of ``plan``'s graph are marked so that a forward run under the
    marks of ``now`` (``need_grad`` set since ``plan``'s forward) leaves out of its backward the
    nodes ``plan``'s forward left out and keeps those it let take part (``marks_to_replay``);
    the marks are lifted after."""
    stop, start = marks_to_replay(plan.nodes, plan.leaves, plan.marks, now)
    for v in stop:
        v._stops_grad = True
    for v in start:
        v._starts_grad = True
    try:
        mark_gradients_changed()
        yield
    finally:
        for v in stop:
            v._stops_grad = False
        for v in start:
            v._starts_grad = False
        mark_gradients_changed()


def _replay_eagerly(plan: EagerPlan | StaticPlan, draws_again: bool,
                    run_forward: Callable[..., Any]) -> None:
    """Run ``plan``'s forward again eagerly under the marks of now, guarded (``guarded``;
    ``draws_again``: it draws what that forward drew, ``same_draws``); the roots' plan is the
    new's.  ``plan``: an eager one (a new shape's trial, an unlowerable graph, its ``reason``
    kept), or a static one whose lowered program reads a leaf it wrote
    (:data:`READS_WRITTEN_LEAF`: ``min_max_quantize(ema=True)``; no ``reason``)."""
    with same_draws(plan.nodes) if draws_again else contextlib.nullcontext() as hook:
        with guarded(plan.leaves, draws_again):
            if hook is not None:
                run_forward(plan.roots, clear_no_need_grad=not plan.keep_all,
                            function_pre_hook=hook)
                return
            new = TrialPlan(plan.roots, plan.nodes, plan.leaves, plan.fill, True,
                            getattr(plan, "reason", None))
            new.run()
    new.marks, new.keep_all = gradient_marks(new.nodes, new.leaves), plan.keep_all
    for r in plan.roots:
        r._plan = new


def refuse_kept(nodes: Sequence[FunctionNode]) -> None:
    """Refuse to run ``nodes`` again when one of their ops keeps state from run to run."""
    kept = sorted({n.spec.name for n in nodes if n.spec.state is not None})
    refuse(kept and "run op(s) that keep state from run to run again: " + ", ".join(kept))


@contextlib.contextmanager
def guarded(leaves: Sequence[Variable], draws_again: bool):
    """A forward run again eagerly for a backward (grad enabled): ``leaves`` (running statistics)
    written get their values back after it; refused (:func:`refuse`) before an op reads one it
    wrote or, unless ``draws_again``, draws (``ReplayGuard``; an op updating a statistic it reads
    computes from the state its forward left there, ``replaying_a_forward``)."""
    guard = ReplayGuard([leaf_tensor(v) for v in leaves], draws_again)
    try:
        with torch.enable_grad(), guard:
            yield
    except StadynError as exc:
        cause = exc.__cause__
        if isinstance(cause, SideEffect):
            refuse(cause.args[0])
        raise


def refuse(why: Any) -> None:
    """Refuse the forward run again for a backward when ``why`` (what it would do) is given;
    nothing for an empty one.

    Example:
        >>> refuse("")
        >>> try:
        ...     refuse("draw random numbers anew")
        ... except StadynError as exc:
        ...     print(str(exc).split("would ")[1])
        draw random numbers anew; set need_grad before forward() (or run forward() again)
    """
    if why:
        raise StadynError(
            "backward: need_grad was set on a Variable of this graph after its forward, and "
            f"running the forward again to honour it would {why}; set need_grad before "
            "forward() (or run forward() again)")

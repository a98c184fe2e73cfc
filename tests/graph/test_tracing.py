"""Lowering's fixed costs per node (``graph/_tracing.py``, ``drop_dead_code``): a plan's
programs get their Python generated once each, after the last pass (before: the joint trace,
its copy, the forward/backward split and every rewriting pass regenerated them, six times for
a plan with a backward); the trace without make_fx's torch-function metadata mode is the same
program; the dead-code pass erases what ``eliminate_dead_code`` erases."""

import logging
import os

import numpy as np
import pytest
import torch
import torch.fx as fx
from torch.fx.experimental.proxy_tensor import make_fx

import stadyn as sd
import stadyn.functions as F
import stadyn.parametric_functions as PF
from stadyn.graph import drop_dead_code, trace_fake

pytestmark = pytest.mark.usefixtures("fresh_parameters")


def _count_codegen(monkeypatch) -> list:
    made = []
    original = fx.Graph.python_code

    def counted(self, *args, **kwargs):
        made.append(len(self.nodes))
        return original(self, *args, **kwargs)
    monkeypatch.setattr(fx.Graph, "python_code", counted)
    return made


def _recurrent_loss(steps: int):
    """A small unrolled recurrence (tanh cell) with a loss per step."""
    x = sd.Variable.from_numpy_array(np.random.RandomState(0).rand(3, steps, 4))
    h = sd.Variable.from_numpy_array(np.zeros((3, 5)))
    loss = 0
    for t in F.split(x, axis=1):
        h = F.tanh(PF.affine(F.concatenate(t, h, axis=1), 5, name="cell"))
        loss = loss + F.sum(h * h)
    return loss


@pytest.mark.parametrize("backward", [True, False])
def test_each_program_is_generated_once(monkeypatch, backward):
    loss = _recurrent_loss(4)
    made = _count_codegen(monkeypatch)
    if not backward:            # a first evaluation runs eagerly: no program (graph/_runner.py)
        with sd.no_grad():
            loss.forward()
        assert not made
    with sd.no_grad() if not backward else sd.auto_forward(False):
        loss.forward()
    programs = 2 if backward else 1
    assert loss._plan.has_backward is backward
    assert len(made) == programs
    # Running the plan again (and its backward) generates nothing more.
    if backward:
        loss.backward()
    with sd.no_grad() if not backward else sd.auto_forward(False):
        loss.forward()
    assert len(made) == programs
    assert "torch.ops.aten.tanh" in loss._plan.code


def test_plan_values_match_dynamic_mode():
    loss = _recurrent_loss(4)
    loss.forward()
    loss.backward()
    static = float(loss.d), {k: p.g.copy() for k, p in sd.get_parameters().items()}
    for p in sd.get_parameters().values():
        p.grad.zero_()
    with sd.auto_forward():
        dyn = _recurrent_loss(4)
    dyn.backward()
    assert float(dyn.d) == static[0]
    for k, p in sd.get_parameters().items():
        np.testing.assert_array_equal(p.g, static[1][k])


def test_trace_fake_is_make_fx_program():
    def joint(x, w, g):
        y = torch.tanh(x @ w).sum(1) * 2
        gx, gw = torch.autograd.grad(y, (x, w), g)
        return y, gx, gw
    args = (torch.ones(3, 4, requires_grad=True), torch.ones(4, 5, requires_grad=True),
            torch.ones(3))
    with torch.enable_grad():
        ours = trace_fake(joint, *args)
        theirs = make_fx(joint, tracing_mode="fake")(*args)
    assert ours.code == theirs.code
    x, w, g = (torch.randn(3, 4), torch.randn(4, 5), torch.randn(3))
    for a, b in zip(ours(x, w, g), theirs(x, w, g)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_drop_dead_code_erases_what_eliminate_dead_code_does():
    def f(x, buf):
        torch.exp(x) * 3                       # pure, read by nothing: erased
        buf.copy_(x)                           # a mutation nothing reads: kept
        torch.bernoulli(x)                     # random, read by nothing: kept (impure)
        return x + 1

    def targets(gm):
        return [n.target for n in gm.graph.nodes if n.op == "call_function"]
    ours = make_fx(f)(torch.rand(3), torch.zeros(3))
    theirs = make_fx(f)(torch.rand(3), torch.zeros(3))
    drop_dead_code(ours.graph)
    theirs.graph.eliminate_dead_code()
    assert targets(ours) == targets(theirs)
    names = [t.__name__ for t in targets(ours)]
    assert "exp.default" not in names and "copy_.default" in names and "add.Tensor" in names


def test_collector_paused_during_build_only(monkeypatch):
    import gc

    from stadyn.graph import _plan
    seen = []
    original = _plan._lower

    def lower(*args, **kwargs):
        seen.append(gc.isenabled())
        if len(seen) == 2:
            raise RuntimeError("a trace that fails")
        return original(*args, **kwargs)
    monkeypatch.setattr(_plan, "_lower", lower)
    assert gc.isenabled()
    loss = _recurrent_loss(2)
    loss.forward()
    assert seen == [False] and gc.isenabled()
    with pytest.warns(RuntimeWarning, match="a trace that fails"):
        F.sum(loss * 2).forward()       # the failed build falls back to running eagerly
    assert seen == [False, False] and gc.isenabled()



def test_collector_paused_for_the_structure_key_and_the_template(monkeypatch):
    """The runner's whole build runs with the collector paused: the structure key and the
    template kept for graphs rebuilt alike (_plan_reuse.py) as well as the lowering; before,
    a full collection while the template was made walked a large graph's every object."""
    import gc

    from stadyn.graph import _runner
    seen = []
    for name in ("structure", "remember"):
        original = getattr(_runner, name)

        def recording(*args, _original=original, _name=name, **kwargs):
            seen.append((_name, gc.isenabled()))
            return _original(*args, **kwargs)
        monkeypatch.setattr(_runner, name, recording)
    assert gc.isenabled()
    loss = _recurrent_loss(2)
    loss.forward()
    assert seen == [("structure", False), ("remember", False)] and gc.isenabled()
    assert type(loss._plan).__name__ == "StaticPlan"

def _traced(monkeypatch) -> list:
    from stadyn.graph import _plan
    seen = []
    original = _plan.trace_fake

    def recording(fn, *args):
        gm = original(fn, *args)
        seen.append([str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
        return gm
    monkeypatch.setattr(_plan, "trace_fake", recording)
    return seen


def test_a_forward_run_without_gradients_is_traced_without_them(monkeypatch):
    """A static forward run under ``torch.no_grad`` (CNTK's ``eval``) is traced so: autograd
    records nothing, so no saved output is detached into the trace at every op that saves
    one; the values are the loss's own."""
    seen = _traced(monkeypatch)
    loss = _recurrent_loss(4)
    with torch.no_grad():
        loss.forward()          # a first evaluation runs eagerly, the second is lowered
        assert not seen
        loss.forward()
    assert len(seen) == 1 and "aten.tanh.default" in seen[0]
    assert "aten.detach.default" not in seen[0]
    x = np.random.RandomState(0).rand(3, 4, 4)
    params = sd.get_parameters()
    w, b = params["cell/affine/W"].d, params["cell/affine/b"].d
    h, want = np.zeros((3, 5)), 0.0
    for t in range(4):
        h = np.tanh(np.concatenate([x[:, t], h], axis=1) @ w + b)
        want += (h * h).sum()
    assert float(loss.d) == pytest.approx(want, rel=1e-5)


def test_a_grad_op_run_without_gradients_still_differentiates():
    """``sd.grad`` in a static graph run under ``torch.no_grad`` gives the gradient (its
    forward differentiates: traced with gradients on), as before forward-only plans were
    traced in the forward's own grad mode."""
    x = sd.Variable.from_numpy_array(np.array([1.0, 3.0]), need_grad=True)
    (g,) = sd.grad([F.sum(x * x)], [x])
    with torch.no_grad():
        g.forward()
    assert g.d.tolist() == [2.0, 6.0]



@pytest.mark.skipif(bool(os.environ.get("TORCH_TRACE")),
                    reason="TORCH_TRACE asks torch for its structured trace")
def test_a_trace_under_pytest_builds_no_structured_trace_records(monkeypatch):
    """torch describes each fake tensor for its structured trace (``torch.__trace``) whenever
    that logger has a handler; pytest's logging plugin hangs one on every logger that does not
    propagate, which tests/conftest.py avoids (docs/testing.md): a trace then builds none."""
    from torch.utils._traceback import CapturedTraceback
    summaries = []
    original = CapturedTraceback.summary

    def counted(self):
        summaries.append(self)
        return original(self)
    monkeypatch.setattr(CapturedTraceback, "summary", counted)
    trace_fake(lambda x: torch.tanh(x) * 2, torch.ones(3))     # the handler torch adds goes
    summaries.clear()                                           # at its first record
    trace_fake(lambda x: torch.tanh(x) * 2 + 1, torch.ones(4))
    assert summaries == []
    assert not [h for h in logging.getLogger("torch.__trace").handlers
                if type(h).__module__.startswith("_pytest")]

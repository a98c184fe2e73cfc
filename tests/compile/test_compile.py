"""compile_step: forward + backward + update as one program gives the static graph's losses."""

import os
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.solvers as S
from stadyn.models import digits_cnn, digits_mlp


def _build(model, solver_cls, batch=16, **solver_kw):
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        sd.seed(0)
        x, t = sd.Variable((batch, 1, 8, 8)), sd.Variable((batch, 1))
        loss = F.mean(F.softmax_cross_entropy(model(x), t))
        solver = solver_cls(**solver_kw)
        solver.set_parameters(sd.get_parameters())
    return x, t, loss, solver, registry


def _batches(n, batch=16):
    rng = np.random.RandomState(1)
    return [(rng.rand(batch, 1, 8, 8) * 16, rng.randint(0, 10, (batch, 1))) for _ in range(n)]


def _train_beside_static(model, solver_cls, n_steps, tolerance, solver_kw=None, **step_kw):
    """Train one copy of ``model`` with static forward/backward/update and another with
    ``compile_step(**step_kw)`` on the same batches; each step's losses must agree within
    ``tolerance`` (``pytest.approx`` arguments).  Returns both sides' objects."""
    x1, t1, loss1, solver1, reg1 = _build(model, solver_cls, **(solver_kw or {}))
    x2, t2, loss2, solver2, reg2 = _build(model, solver_cls, **(solver_kw or {}))
    step = sd.compile_step(loss2, solver2, **step_kw)
    for xb, tb in _batches(n_steps):
        x1.d, t1.d = xb, tb
        loss1.forward(clear_no_need_grad=True)
        solver1.zero_grad()
        loss1.backward(clear_buffer=True)
        solver1.update()
        x2.d, t2.d = xb, tb
        step()
        assert float(loss2.d) == pytest.approx(float(loss1.d), **tolerance)
    return SimpleNamespace(solver1=solver1, reg1=reg1, solver2=solver2, reg2=reg2, step=step)


@pytest.mark.parametrize("model, solver_cls, kw", [
    (digits_mlp, S.Adam, {}),
    (digits_mlp, S.Momentum, {"lr": 0.05}),
    (digits_cnn, S.Adam, {}),
])
def test_uncompiled_step_program_matches_static_training(model, solver_cls, kw):
    run = _train_beside_static(model, solver_cls, 4, {"rel": 1e-5, "abs": 1e-6}, kw,
                               compile=False)
    # The step counts advance like update()'s, so bias corrections match.
    assert all(s.t == 4 for s in run.solver2.get_states().values())
    # BN running statistics (mutated inside the program) follow too.
    if model is digits_cnn:
        mean = run.reg2.get("cnn/conv1/bn/mean")
        assert np.abs(mean.d).sum() > 0


def test_step_program_feeds_a_changing_learning_rate_without_rebuilding():
    x, t, loss, solver, _ = _build(digits_mlp, S.Sgd, lr=0.1)
    step = sd.compile_step(loss, solver, compile=False)
    xb, tb = _batches(1)[0]
    x.d, t.d = xb, tb
    step()
    program = step.graph_module
    solver.set_learning_rate(0.0)
    before = {k: v.d.copy() for k, v in solver.get_parameters().items()}
    step()
    assert step.graph_module is program
    for k, v in solver.get_parameters().items():
        np.testing.assert_array_equal(v.d, before[k])     # lr 0: nothing moves


@pytest.mark.slow
@pytest.mark.parametrize("model, update", [(digits_mlp, "auto"), (digits_cnn, "auto"),
                                           (digits_mlp, "inside")])
def test_compiled_step_matches_static_training(model, update):
    """Compiled by inductor; on CPU Adam's fused kernel updates after the program, and the
    CNN's large weight gradient is multiplied outside it (see the tests above).  'inside':
    the update compiled into the program, its state and parameters mutated in place."""
    run = _train_beside_static(model, S.Adam, 3, {"rel": 1e-4}, update=update)
    assert run.step._outside == (update == "auto")
    assert bool(run.step._deferred) == (model is digits_cnn)
    if model is digits_cnn:
        # Not compared element by element: Adam normalises each gradient, so where one is
        # near zero (a convolution bias before batch norm: zero in exact arithmetic) the
        # rounding of inductor's reordered sums decides the step.  The losses above agree.
        return
    # Parameters agree to 1% of an Adam step (1e-3).
    for name, v in run.solver1.get_parameters().items():
        np.testing.assert_allclose(run.reg2.get(name).d, v.d, rtol=1e-3, atol=1e-5,
                                   err_msg=name)


@pytest.mark.parametrize("model, solver_cls, kw", [
    (digits_mlp, S.Adam, {}),
    (digits_cnn, S.Adam, {}),
    (digits_mlp, S.Momentum, {"lr": 0.05}),
])
def test_update_after_the_program_matches_static_training(model, solver_cls, kw):
    """update='outside' (the CPU default when compiling with a fused solver): the program
    returns gradients and the solver's own kernel updates; same losses and parameters."""
    run = _train_beside_static(model, solver_cls, 3, {"rel": 1e-5, "abs": 1e-6}, kw,
                               compile=False, update="outside")
    assert all(s.t == 3 for s in run.solver2.get_states().values())
    for name, v in run.reg1.items():
        np.testing.assert_allclose(run.reg2.get(name).d, v.d, rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def test_large_weight_gradient_is_computed_after_the_program_into_one_buffer():
    """The CNN's 8192 x 1024 affine weight gradient (32 MB) leaves the program as its two
    operands and is multiplied into the same buffer every step."""
    x, t, loss, solver, reg = _build(digits_cnn, S.Adam)
    step = sd.compile_step(loss, solver, compile=False, update="outside")
    pointers = []
    for xb, tb in _batches(3):
        x.d, t.d = xb, tb
        step()
        pointers.append([b.data_ptr() for key, b in step._buffers.items() if key[0] != "dense"])
    names = [step._names[k] for k, _, _ in step._deferred]
    assert names == ["cnn/fc/affine/W"]
    assert pointers[0] == pointers[1] == pointers[2] and len(pointers[0]) == 1
    # The program keeps the other products — the small affine's weight gradient (1024 x 10)
    # and the input gradients of both affines (an ``mm``, or on a oneDNN build the large one's
    # own op, see stadyn.ops._kernels) — and no longer computes the large weight gradient.
    products = [n for n in step.graph_module.graph.nodes
                if n.target is torch.ops.aten.mm.default or "linear_onednn" in str(n.target)]
    shapes = [tuple(n.meta["val"].shape) for n in products]
    assert (8192, 1024) not in shapes
    assert {(1024, 10), (16, 1024), (16, 8192)} <= set(shapes)


def test_compile_step_rejects_an_unknown_update_placement():
    _, _, loss, solver, _ = _build(digits_mlp, S.Sgd, lr=0.1)
    with pytest.raises(sd.StadynError, match="update must be"):
        sd.compile_step(loss, solver, update="before")


def test_inductor_cache_moves_to_stadyn_unless_the_user_chose_a_directory(monkeypatch, tmp_path):
    from stadyn.compile import _step
    stadyn_dir = str(tmp_path / "home" / ".cache" / "stadyn" / "inductor")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # Inductor fills the variable with its own default the first time it looks it up.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", _step._inductor_default_cache())
    _step._use_persistent_cache()
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == stadyn_dir
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    _step._use_persistent_cache()
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == stadyn_dir
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "mine"))
    _step._use_persistent_cache()
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")


def test_another_backend_goes_through_torch_compile():
    """backend='eager' (no inductor): TorchDynamo captures the program and runs its ATen ops;
    the first steps equal the uncompiled program's."""
    x1, t1, loss1, solver1, _ = _build(digits_mlp, S.Adam)
    x2, t2, loss2, solver2, _ = _build(digits_mlp, S.Adam)
    plain = sd.compile_step(loss1, solver1, compile=False)
    eager = sd.compile_step(loss2, solver2, backend="eager")
    for xb, tb in _batches(2):
        x1.d, t1.d = xb, tb
        x2.d, t2.d = xb, tb
        plain()
        eager()
        assert float(loss2.d) == pytest.approx(float(loss1.d), rel=1e-5)
    assert type(eager._program).__name__ == "OptimizedModule"


def test_a_graph_holding_an_untraceable_op_gets_one_clear_error():
    """A CNTK LSTM over sequences under ``Trainer(..., compile="program")`` failed with pages of
    torch's ``GuardOnDataDependentSymNode`` (the packed recurrence reads lengths on the host);
    a static plan runs such a graph eagerly, a step program says it cannot and why."""
    import stadyn.layers as L
    registry = sd.ParameterRegistry()
    rng = np.random.RandomState(0)
    with sd.parameter_registry(registry):
        x = sd.sequence.sequence_input((4,))
        x.d = [rng.randn(n, 4).astype(np.float32) for n in (3, 5, 2)]
        t = sd.Variable((3, 1))
        h = L.Recurrence(L.LSTM(8))(x)
        loss = F.mean(F.softmax_cross_entropy(L.Dense(2)(sd.sequence.last(h)), t))
        solver = S.Sgd(0.1)
        solver.set_parameters(sd.get_parameters())
    t.d = np.array([[0], [1], [0]])
    step = sd.compile_step(loss, solver, compile=False)
    with pytest.raises(sd.StadynError, match="cannot be traced into a step program: .*lstm"):
        step()


def test_step_program_follows_the_state_arrays_set_states_gives_the_solver():
    """NNabla's set_states makes the solver hold the given state arrays: a compiled step
    built before it updates those (it rebuilds), as an eager update() does."""
    runs = []
    for compiled in (False, True):
        x, t, loss, solver, _ = _build(digits_mlp, S.Adam)
        step = sd.compile_step(loss, solver, compile=False) if compiled else None
        batches = _batches(3)
        other = S.Adam()
        other.set_parameters(solver.get_parameters())
        given = other.get_states()
        for state in given.values():
            for v in state.pstate.values():
                v.d[...] = 0.5
            state.t = 3
        for i, (xb, tb) in enumerate(batches):
            if i == 1:
                solver.set_states(given)
            x.d, t.d = xb, tb
            if compiled:
                step()
            else:
                loss.forward()
                solver.zero_grad()
                loss.backward()
                solver.update()
        name = next(iter(given))
        runs.append((np.array(given[name].pstate["mean"].d),
                     {k: np.array(v.d) for k, v in solver.get_parameters().items()}))
    (mean_eager, params_eager), (mean_step, params_step) = runs
    assert not np.allclose(mean_eager, 0.5)             # the solver updated the given array
    np.testing.assert_allclose(mean_step, mean_eager, rtol=1e-5, atol=1e-7)
    for k in params_eager:
        np.testing.assert_allclose(params_step[k], params_eager[k], rtol=1e-5, atol=1e-6)

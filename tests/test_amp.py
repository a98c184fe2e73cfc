"""fp16 loss scaling: scaled backward, unscaling, skipped overflowing steps, scale updates."""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.solvers as S
from stadyn.amp import LossScaler


def _problem():
    w = sd.Variable.from_numpy_array(np.array([1.0, -2.0, 0.5]), need_grad=True)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters({"w": w})
    return w, solver, F.sum(w * w)


def test_scaled_steps_equal_unscaled_ones():
    w1, s1, l1 = _problem()
    w2, s2, l2 = _problem()
    scaler = LossScaler(init_scale=256.0)
    for _ in range(3):
        l1.forward(); s1.zero_grad(); l1.backward(); s1.update()
        l2.forward(); s2.zero_grad(); scaler.backward(l2)
        assert scaler.step(s2)
    np.testing.assert_allclose(w2.d, w1.d, rtol=1e-6)


def test_an_overflow_skips_the_step_and_halves_the_scale():
    w, solver, loss = _problem()
    scaler = LossScaler(init_scale=1024.0, growth_interval=2)
    loss.forward(); solver.zero_grad(); scaler.backward(loss)
    w.grad[1] = float("inf")
    before = w.d.copy()
    assert not scaler.step(solver)
    np.testing.assert_array_equal(w.d, before)
    assert scaler.scale == 512.0 and scaler.skipped_steps == 1
    for _ in range(2):
        loss.forward(); solver.zero_grad(); scaler.backward(loss)
        assert scaler.step(solver)
    assert scaler.scale == 1024.0          # two good steps: grown back


def test_fp16_context_with_scaling_trains_a_small_model_on_cuda_or_runs_bf16_on_cpu():
    dtype = "float16" if torch.cuda.is_available() else "bfloat16"
    ctx = sd.context("cuda" if torch.cuda.is_available() else "cpu", dtype=dtype)
    with sd.context_scope(ctx), sd.parameter_registry(sd.ParameterRegistry()):
        import stadyn.parametric_functions as PF
        sd.seed(0)
        x = sd.Variable.from_numpy_array(np.random.RandomState(0).randn(32, 8))
        t = sd.Variable.from_numpy_array(np.random.RandomState(1).randint(0, 4, (32, 1)))
        hidden = F.tanh(PF.affine(x, 16, name="fc1"))
        loss = F.mean(F.softmax_cross_entropy(PF.affine(hidden, 4, name="fc2"), t))
        solver = S.Adam(alpha=0.05)
        solver.set_parameters(sd.get_parameters())
        scaler = LossScaler(init_scale=2.0 ** 10)
        first = None
        for _ in range(20):
            loss.forward(); solver.zero_grad(); scaler.backward(loss); scaler.step(solver)
            first = float(loss.d) if first is None else first
        assert float(loss.d) < first
        assert all(p.data.dtype == torch.float32 for p in sd.get_parameters().values())


@pytest.mark.parametrize("state, message", [
    ({"scale": float("nan"), "good_steps": 3}, "scale must be a finite number > 0, got nan"),
    ({"scale": 0.0, "good_steps": 3}, "scale must be a finite number > 0"),
    ({"scale": 64.0, "good_steps": -1}, "good_steps must be an integer >= 0"),
    ({"scale": 64.0}, "good_steps must be an integer >= 0, got None"),
])
def test_a_bad_loss_scaler_state_is_refused_and_changes_nothing(state, message):
    scaler = LossScaler(init_scale=1024.0)
    with pytest.raises(sd.StadynError, match=message):
        scaler.load_state_dict(state)
    assert scaler.state_dict() == {"scale": 1024.0, "good_steps": 0, "skipped_steps": 0}

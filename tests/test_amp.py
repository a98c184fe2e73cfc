"""fp16 loss scaling: scaled backward, unscaling, skipped overflowing steps, scale updates.

Expected values are computed by hand: for ``L = sum(c * w)`` the gradient is ``c``, for
``L = sum(w * w)`` it is ``2 w``; the scale schedule is written out step by step.  fp16 runs on
the CPU too (torch 2.13's CPU kernels take half-precision products), so the underflow and
overflow that loss scaling exists for are real fp16 arithmetic here, not planted values.
"""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.learners as CL
import stadyn.solvers as S
from stadyn.amp import LossScaler

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _problem():
    w = sd.Variable.from_numpy_array(np.array([1.0, -2.0, 0.5]), need_grad=True)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters({"w": w})
    return w, solver, F.sum(w * w)


def _step(loss, solver, scaler):
    loss.forward()
    solver.zero_grad()
    scaler.backward(loss)
    return scaler.step(solver)


def test_scaled_steps_equal_unscaled_ones():
    w1, s1, l1 = _problem()
    w2, s2, l2 = _problem()
    scaler = LossScaler(init_scale=256.0)
    for _ in range(3):
        l1.forward(); s1.zero_grad(); l1.backward(); s1.update()
        assert _step(l2, s2, scaler)
    np.testing.assert_allclose(w2.d, w1.d, rtol=1e-6)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("scale", [1024.0, 3.0])
def test_backward_multiplies_the_gradient_by_the_scale_and_unscale_divides_it(dynamic, scale):
    w = sd.Variable.from_numpy_array(np.array([1.0, -2.0, 0.5]), need_grad=True)
    with sd.auto_forward(dynamic):
        loss = F.sum(w * w)
    if not dynamic:
        loss.forward()
    scaler = LossScaler(init_scale=scale)
    scaler.backward(loss)
    np.testing.assert_allclose(w.g, scale * 2 * w.d, rtol=1e-6)       # scale * dL/dw
    assert scaler.unscale([w]) is True
    np.testing.assert_allclose(w.g, 2 * w.d, rtol=1e-6)               # dL/dw
    assert scaler.scale == scale                                     # unscale keeps the scale


def test_unscale_takes_a_dict_or_a_list_and_flags_any_non_finite_gradient():
    a = sd.Variable.from_numpy_array(np.ones(2), need_grad=True)
    b = sd.Variable.from_numpy_array(np.ones(3), need_grad=True)
    unused = sd.Variable.from_numpy_array(np.ones(1), need_grad=True)   # no gradient at all
    scaler = LossScaler(init_scale=8.0)
    a.grad, b.grad = torch.full((2,), 8.0), torch.tensor([16.0, 24.0, 32.0])
    assert scaler.unscale({"a": a, "b": b, "unused": unused}) is True
    np.testing.assert_array_equal(a.g, [1.0, 1.0])
    np.testing.assert_array_equal(b.g, [2.0, 3.0, 4.0])
    assert unused.grad is None
    b.grad = torch.tensor([8.0, float("nan"), 8.0])        # one bad element in the second one
    assert scaler.unscale([a, b]) is False
    a.grad, b.grad = torch.full((2,), float("inf")), torch.ones(3)
    assert scaler.unscale([a, b]) is False
    assert scaler.unscale([unused]) is True                  # nothing to unscale: nothing bad


def _controlled():
    """``L = sum(c * w)``: the gradient is the input ``c``, so a step can be made to overflow
    by feeding an infinite ``c``."""
    w = sd.Variable.from_numpy_array(np.zeros(3), need_grad=True)
    c = sd.Variable((3,))
    solver = S.Sgd(lr=0.5)
    solver.set_parameters({"w": w})
    return w, c, solver, F.sum(c * w)


def test_the_dynamic_scale_follows_its_growth_and_backoff_schedule():
    w, c, solver, loss = _controlled()
    scaler = LossScaler(init_scale=16, growth_factor=4.0, backoff_factor=0.5,
                        growth_interval=3, min_scale=2)   # ints: the scale is a float all the same
    # O: finite gradient, X: overflow.  By hand: the scale grows x4 after 3 good steps in a
    # row, halves on each overflow (restarting the count) and never goes below min_scale.
    pattern = "OOOOXOOXXXXXOOO"
    expected = [16, 16, 64, 64, 32, 32, 32, 16, 8, 4, 2, 2, 2, 2, 8]
    scales, updated = [], []
    for k, kind in enumerate(pattern):
        c.d = np.full(3, 1.0 if kind == "O" else np.inf)
        loss.forward()
        solver.zero_grad()
        seed = scaler.scale
        scaler.backward(loss)
        if kind == "O":
            np.testing.assert_array_equal(w.g, np.full(3, seed))   # the seed was this step's scale
        updated.append(scaler.step(solver))
        scales.append(scaler.scale)
    assert scales == expected and all(type(s) is float for s in scales)
    assert updated == [kind == "O" for kind in pattern]
    assert scaler.skipped_steps == pattern.count("X")
    # only the 9 good steps moved w: each by lr * dL/dw = 0.5 * 1
    np.testing.assert_array_equal(w.d, np.full(3, -0.5 * pattern.count("O"), np.float32))


def test_state_dict_resumes_the_schedule_where_it_stopped():
    def run(scaler, pattern):
        w, c, solver, loss = _controlled()
        out = []
        for kind in pattern:
            c.d = np.full(3, 1.0 if kind == "O" else np.inf)
            loss.forward(); solver.zero_grad(); scaler.backward(loss); scaler.step(solver)
            out.append(scaler.scale)
        return out

    kwargs = dict(init_scale=64.0, growth_factor=2.0, backoff_factor=0.25, growth_interval=3)
    whole = LossScaler(**kwargs)
    first_part = run(whole, "OOXOO")
    state = whole.state_dict()
    assert state == {"scale": 16.0, "good_steps": 2, "skipped_steps": 1}
    resumed = LossScaler(**kwargs)
    resumed.load_state_dict(state)
    assert run(resumed, "OOX") == run(whole, "OOX") == [32.0, 32.0, 8.0]
    assert first_part == [64.0, 64.0, 16.0, 16.0, 16.0]
    assert resumed.skipped_steps == whole.skipped_steps == 2
    old = LossScaler()
    old.load_state_dict({"scale": 4, "good_steps": 1})      # a state saved before skipped_steps
    assert (old.scale, old.skipped_steps, old.state_dict()["good_steps"]) == (4.0, 0, 1)


def test_defaults_are_dynamic_scaling_with_torchs_schedule():
    scaler = LossScaler()
    assert (scaler.scale, scaler.growth_factor, scaler.backoff_factor, scaler.growth_interval,
            scaler.min_scale, scaler.skipped_steps) == (32768.0, 2.0, 0.5, 2000, 1.0, 0)


@pytest.mark.parametrize("kwargs", [dict(init_scale=0.0), dict(init_scale=-1.0),
                                    dict(backoff_factor=1.0), dict(backoff_factor=0.0),
                                    dict(growth_factor=1.0)])
def test_a_scaler_that_could_not_work_is_refused(kwargs):
    with pytest.raises(sd.StadynError, match="LossScaler"):
        LossScaler(**kwargs)


def test_a_cntk_learner_gets_the_sample_count():
    """With a per-minibatch rate the update depends on the sample count given to step()."""
    def make():
        w = sd.Variable.from_numpy_array(np.array([1.0, -2.0, 0.5]), need_grad=True)
        learner = CL.sgd([w], CL.learning_rate_schedule(0.4, CL.UnitType.minibatch))
        return w, learner, F.sum(w * w)

    w1, l1, loss1 = make()
    w2, l2, loss2 = make()
    loss1.forward(); l1.zero_grad(); loss1.backward(); l1.update(4)
    loss2.forward(); l2.zero_grad()
    scaler = LossScaler(init_scale=512.0)
    scaler.backward(loss2)
    assert scaler.step(l2, sample_count=4)
    np.testing.assert_allclose(w2.d, w1.d, rtol=1e-6)
    assert not np.allclose(w2.d, np.array([1.0, -2.0, 0.5]) - 0.4 * 2 * np.array([1, -2, 0.5]))


# ---------------------------------------------------------------------------------------------
# Real fp16 arithmetic (CPU or CUDA)
# ---------------------------------------------------------------------------------------------
def _fp16_affine(dynamic, factor):
    """``L = factor * sum(x W)`` with ``x W`` in fp16: dL/dW[i, j] = factor * sum_n x[n, i]."""
    x = sd.Variable.from_numpy_array(np.arange(12.0).reshape(4, 3) / 4)
    w = sd.Variable.from_numpy_array(np.ones((3, 2)), need_grad=True)
    with sd.auto_forward(dynamic):
        loss = F.sum(F.affine(x, w)) * factor
    if not dynamic:
        loss.forward()
    exact = factor * np.repeat((np.arange(12.0).reshape(4, 3) / 4).sum(0)[:, None], 2, axis=1)
    return w, loss, exact


@pytest.mark.parametrize("dynamic", [False, True])
def test_scaling_is_what_keeps_a_small_fp16_gradient_from_underflowing(dynamic):
    with sd.context(DEVICE, dtype="float16"):
        # dL/d(xW) = 1e-8 is below fp16's smallest subnormal (6e-8): unscaled it becomes 0
        w, loss, exact = _fp16_affine(dynamic, 1e-8)
        LossScaler(init_scale=1.0).backward(loss, clear_buffer=False)
        assert w.g.dtype == np.float32 and not w.g.any()
        w.grad = None
        scaler = LossScaler(init_scale=2.0 ** 16)
        scaler.backward(loss, clear_buffer=False)
        np.testing.assert_allclose(w.g, 2.0 ** 16 * exact, rtol=2e-3)   # fp16 rounding only
        assert scaler.unscale([w])
        np.testing.assert_allclose(w.g, exact, rtol=2e-3)


def test_fp16_overflows_skip_steps_until_the_scaled_gradient_fits():
    with sd.context(DEVICE, dtype="float16"):
        # dL/d(xW) = 1 and dL/dW = column sums of x = (4.5, 5.5, 6.5).  fp16's largest value is
        # 65504: at 2^16 the seed itself overflows, at 2^15 and 2^14 the product 6.5 * scale
        # does; at 2^13 (6.5 * 8192 = 53248) everything fits.
        w, loss, exact = _fp16_affine(False, 1.0)
        solver = S.Sgd(lr=0.01)
        solver.set_parameters({"w": w})
        scaler = LossScaler(init_scale=2.0 ** 16)
        for k in range(3):
            assert not _step(loss, solver, scaler)
            np.testing.assert_array_equal(w.d, np.ones((3, 2)))
        assert scaler.scale == 2.0 ** 13 and scaler.skipped_steps == 3
        assert _step(loss, solver, scaler)
        np.testing.assert_allclose(w.d, 1 - 0.01 * exact, rtol=1e-3)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_half_precision_context_with_scaling_trains_a_small_model(dtype):
    ctx = sd.context(DEVICE, dtype=dtype)
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
        losses = []
        for _ in range(20):
            _step(loss, solver, scaler)
            losses.append(float(loss.d))
        assert losses[-1] < 0.5 * losses[0]
        assert scaler.skipped_steps == 0
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

"""CNTK learners (``stadyn.learners``) against updates computed by hand in NumPy.

Every expectation below is written from the formulas of ``shared/reference/cntk.md`` ("Learners
and schedules") and CNTK's kernels (``CPUMatrix::FSAdagrad/Adam/RmsProp/AdaDelta/Adagrad``), in
float64 NumPy, independently of Stadyn's code: the learner receives the gradient *summed* over an
``M``-sample minibatch; the effective learning rate is ``lr / R`` (``R > 0``) or ``lr / M``;
momenta become ``m ** (M / R)``; inside an update: clipping (``T * M``) -> L2 (``l2 * M * w``)
-> update -> Gaussian noise -> L1 (soft threshold ``lr_eff * l1 * M``); schedule values are looked
up with the samples seen before the minibatch.
"""

from __future__ import annotations

import copy
import doctest
import importlib
import json
import math

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.learners as L
import stadyn.schedules as S
from stadyn import ParameterError, StadynError
from stadyn.solvers import _functional as Fn

SHAPES = {"a": (3,), "b": (2, 4), "c": (2, 3, 2)}
VM = 0.9999986111120757          # CNTK's default per-sample variance momentum


# Tiny tensors: one intra-op thread avoids thread-pool waits on a loaded 2-core machine.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ---------------------------------------------------------------------------------------------
# helpers: float64 parameters, seeded gradients, NumPy bookkeeping
# ---------------------------------------------------------------------------------------------
def init_values(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {k: rng.normal(size=s) for k, s in SHAPES.items()}


def grad_values(step: int, scale: float = 1.0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1000 + step)
    return {k: rng.normal(size=s) * scale for k, s in SHAPES.items()}


def make_vars(values: dict[str, np.ndarray]) -> dict[str, sd.Variable]:
    return {k: sd.Variable.from_tensor(torch.tensor(v, dtype=torch.float64), need_grad=True)
            for k, v in values.items()}


def set_grads(variables, grads) -> None:
    for k, v in variables.items():
        v.grad = torch.tensor(grads[k], dtype=torch.float64)


def weights(variables) -> dict[str, np.ndarray]:
    return {k: v.data.detach().numpy().copy() for k, v in variables.items()}


def run(learner, variables, steps) -> None:
    """``steps``: a list of (M, gradients)."""
    for M, grads in steps:
        set_grads(variables, grads)
        assert learner.update(M) is True


def assert_weights(variables, expected, rtol=1e-11, atol=1e-13, what=""):
    for k in SHAPES:
        np.testing.assert_allclose(variables[k].data.detach().numpy(), expected[k], rtol=rtol,
                                   atol=atol, err_msg=f"{what} parameter {k}")


def zeros() -> dict[str, np.ndarray]:
    return {k: np.zeros(s) for k, s in SHAPES.items()}


def soft(w, th):
    return np.sign(w) * np.maximum(np.abs(w) - th, 0.0)


# ---------------------------------------------------------------------------------------------
# learning-rate units
# ---------------------------------------------------------------------------------------------
LR_UNITS = {  # lr argument, effective rate on the summed gradient of an M-sample minibatch
    "per-sample (UnitType.sample)": (lambda: S.learning_rate_schedule(0.01, S.UnitType.sample),
                                     lambda M: 0.01),
    "per-minibatch (UnitType.minibatch)": (
        lambda: S.learning_rate_schedule(0.5, S.UnitType.minibatch), lambda M: 0.5 / M),
    "per-sample (2.2+ API)": (lambda: S.learning_parameter_schedule_per_sample(0.02),
                              lambda M: 0.02),
    "reference minibatch of 32": (lambda: S.learning_parameter_schedule(0.32, minibatch_size=32),
                                  lambda M: 0.01),
    "plain number (per minibatch)": (lambda: 0.5, lambda M: 0.5 / M),
}


@pytest.mark.parametrize("unit", list(LR_UNITS))
def test_sgd_learning_rate_units(unit):
    make_lr, effective = LR_UNITS[unit]
    variables = make_vars(init_values())
    learner = L.sgd(list(variables.values()), make_lr())
    w = init_values()
    steps = [(M, grad_values(i)) for i, M in enumerate([64, 10, 1, 33])]
    for M, g in steps:
        w = {k: w[k] - effective(M) * g[k] for k in SHAPES}
    run(learner, variables, steps)
    assert_weights(variables, w, what=unit)
    assert learner.total_number_of_samples_seen == 108
    assert learner.minibatches_seen == 4


def test_per_sample_lr_on_summed_gradient_is_a_step_on_the_mean():
    """The reference's example: per-sample 0.0015625 with M = 64 moves by 0.1 x mean gradient."""
    variables = make_vars(init_values())
    learner = L.sgd(list(variables.values()),
                    S.learning_rate_schedule(0.0015625, S.UnitType.sample))
    per_sample = [grad_values(i) for i in range(64)]
    mean = {k: np.mean([g[k] for g in per_sample], axis=0) for k in SHAPES}
    summed = {k: 64 * mean[k] for k in SHAPES}
    run(learner, variables, [(64, summed)])
    assert_weights(variables, {k: init_values()[k] - 0.1 * mean[k] for k in SHAPES})


def test_learner_minibatch_size_and_use_mean_gradient():
    """CNTK 2.2+: a learner's minibatch_size fills schedules that do not give one; the legacy
    use_mean_gradient=True turns a per-sample lr into a per-minibatch one."""
    cases = [(dict(lr=0.5, minibatch_size=2), lambda M: 0.25),
             (dict(lr=S.learning_parameter_schedule(0.5), minibatch_size=4), lambda M: 0.125),
             (dict(lr=S.learning_parameter_schedule(0.5, minibatch_size=10), minibatch_size=4),
              lambda M: 0.05),
             (dict(lr=S.learning_parameter_schedule_per_sample(0.5), use_mean_gradient=True),
              lambda M: 0.5 / M),
             (dict(lr=0.5, minibatch_size=S.IGNORE), lambda M: 0.5 / M)]
    for kwargs, effective in cases:
        variables = make_vars(init_values())
        learner = L.sgd(list(variables.values()), **kwargs)
        w = init_values()
        steps = [(M, grad_values(i)) for i, M in enumerate([8, 3])]
        for M, g in steps:
            w = {k: w[k] - effective(M) * g[k] for k in SHAPES}
        run(learner, variables, steps)
        assert_weights(variables, w, what=str(kwargs))


# ---------------------------------------------------------------------------------------------
# momentum
# ---------------------------------------------------------------------------------------------
def test_momentum_time_constant_600_formula():
    """Per-sample lr 0.01, time constant 600, M = 64 is ``v = m v + (1 - m) g_sum;
    w -= 0.01 v`` with ``m = exp(-64/600)`` (worked by hand; CNTK 2.7's own numbers for this
    case are checked in test_learners_vs_cntk.py::test_learner_matches_cntk_27)."""
    variables = make_vars(init_values())
    learner = L.momentum_sgd(list(variables.values()),
                             S.learning_rate_schedule(0.01, unit=S.UnitType.sample),
                             S.momentum_as_time_constant_schedule(600))
    m = math.exp(-64 / 600)
    w, v = init_values(), zeros()
    steps = [(64, grad_values(i)) for i in range(5)]
    for _, g in steps:
        v = {k: m * v[k] + (1 - m) * g[k] for k in SHAPES}
        w = {k: w[k] - 0.01 * v[k] for k in SHAPES}
    run(learner, variables, steps)
    assert_weights(variables, w)


@pytest.mark.parametrize("unit_gain", [True, False])
def test_momentum_time_constant_with_changing_minibatch_sizes(unit_gain):
    variables = make_vars(init_values())
    learner = L.momentum_sgd(list(variables.values()),
                             S.learning_parameter_schedule_per_sample(0.01),
                             S.momentum_as_time_constant_schedule(600), unit_gain=unit_gain)
    w, v = init_values(), zeros()
    steps = [(M, grad_values(i)) for i, M in enumerate([64, 17, 100, 3, 64])]
    for M, g in steps:
        m = math.exp(-M / 600)
        u = 1 - m if unit_gain else 1.0
        v = {k: m * v[k] + u * 0.01 * g[k] for k in SHAPES}
        w = {k: w[k] - v[k] for k in SHAPES}
    run(learner, variables, steps)
    assert_weights(variables, w)


def test_momentum_per_minibatch_and_per_reference_minibatch():
    for momentum, per_mb in [(S.momentum_schedule(0.9), lambda M: 0.9),
                             (0.9, lambda M: 0.9),
                             (S.momentum_schedule(0.9, minibatch_size=32),
                              lambda M: 0.9 ** (M / 32)),
                             (S.momentum_schedule_per_sample(0.99), lambda M: 0.99 ** M)]:
        variables = make_vars(init_values())
        learner = L.momentum_sgd(list(variables.values()), 0.1, momentum)
        w, v = init_values(), zeros()
        steps = [(M, grad_values(i)) for i, M in enumerate([32, 8, 50])]
        for M, g in steps:
            m, lr = per_mb(M), 0.1 / M
            v = {k: m * v[k] + (1 - m) * lr * g[k] for k in SHAPES}
            w = {k: w[k] - v[k] for k in SHAPES}
        run(learner, variables, steps)
        assert_weights(variables, w, what=repr(momentum))


def test_default_unit_gain_value_is_read_when_the_learner_is_created():
    assert L.default_unit_gain_value() is True
    L.set_default_unit_gain_value(False)
    try:
        variables = make_vars(init_values())
        learner = L.momentum_sgd(list(variables.values()), 0.1, 0.5)
    finally:
        L.set_default_unit_gain_value(True)
    assert learner.unit_gain is False
    g = grad_values(0)
    run(learner, variables, [(1, g)])
    assert_weights(variables, {k: init_values()[k] - 0.1 * g[k] for k in SHAPES})


def test_nesterov_with_and_without_unit_gain():
    for unit_gain in (True, False):
        variables = make_vars(init_values())
        learner = L.nesterov(list(variables.values()),
                             S.learning_parameter_schedule_per_sample(0.005),
                             S.momentum_schedule_per_sample(0.995), unit_gain=unit_gain)
        w, v = init_values(), zeros()
        steps = [(M, grad_values(i)) for i, M in enumerate([16, 40, 7, 16])]
        for M, g in steps:
            m = 0.995 ** M
            u = 1 - m if unit_gain else 1.0
            v = {k: m * v[k] + u * 0.005 * g[k] for k in SHAPES}
            w = {k: w[k] - (m * v[k] + u * 0.005 * g[k]) for k in SHAPES}
        run(learner, variables, steps)
        assert_weights(variables, w, what=f"unit_gain={unit_gain}")


def test_missing_gradient_counts_as_zero_and_momentum_decays():
    variables = make_vars(init_values())
    learner = L.momentum_sgd(list(variables.values()), 0.1, 0.5)
    g = grad_values(0)
    run(learner, variables, [(1, g)])
    for v in variables.values():
        v.grad = None
    assert learner.update(1)
    v1 = {k: 0.5 * 0.1 * g[k] for k in SHAPES}
    w = {k: init_values()[k] - v1[k] - 0.5 * v1[k] for k in SHAPES}
    assert_weights(variables, w)


# ---------------------------------------------------------------------------------------------
# schedules inside learners
# ---------------------------------------------------------------------------------------------
def test_schedule_boundary_inside_a_minibatch_uses_samples_seen_before():
    """lr changes after 100 samples; minibatches of 64 start at 0, 64, 128, 192: the one over
    samples 64..127 still uses the first value."""
    variables = make_vars(init_values())
    learner = L.momentum_sgd(list(variables.values()),
                             S.learning_parameter_schedule_per_sample([0.1, 0.01],
                                                                      epoch_size=100),
                             S.momentum_as_time_constant_schedule([0, 600], epoch_size=100))
    w, v = init_values(), zeros()
    lrs, ms = [0.1, 0.1, 0.01, 0.01], [0.0, 0.0] + [math.exp(-64 / 600)] * 2
    for i, (lr, m) in enumerate(zip(lrs, ms)):
        g = grad_values(i)
        assert learner.learning_rate() == lr
        v = {k: m * v[k] + (1 - m) * lr * g[k] for k in SHAPES}
        w = {k: w[k] - v[k] for k in SHAPES}
        run(learner, variables, [(64, g)])
    assert_weights(variables, w)


def test_seed_script_configuration():
    """The seed's learner (lr per sample in epochs, momentum time constants 0 then 600, L2
    0.002, minibatches of 64) with epochs shrunk to 128 samples."""
    lr_per_sample = [0.0015625] * 2 + [0.00046875]
    variables = make_vars(init_values())
    lr_schedule = S.learning_rate_schedule(lr_per_sample, unit=S.UnitType.sample,
                                           epoch_size=128)
    mm_schedule = S.momentum_as_time_constant_schedule([0] * 1 + [600], epoch_size=128)
    learner = L.momentum_sgd(list(variables.values()), lr_schedule, mm_schedule,
                             l2_regularization_weight=0.002)
    w, v = init_values(), zeros()
    for i in range(7):
        seen = 64 * i
        lr = lr_per_sample[min(seen // 128, 2)]
        m = 0.0 if seen < 128 else math.exp(-64 / 600)
        g = grad_values(i)
        g2 = {k: g[k] + 0.002 * 64 * w[k] for k in SHAPES}
        v = {k: m * v[k] + (1 - m) * lr * g2[k] for k in SHAPES}
        w = {k: w[k] - v[k] for k in SHAPES}
        run(learner, variables, [(64, g)])
    assert_weights(variables, w)


def test_epoch_size_none_is_resolved_from_the_sweep_size():
    variables = make_vars(init_values())
    learner = L.sgd(list(variables.values()),
                    S.learning_parameter_schedule_per_sample([0.1, 0.01]))
    # Until the sweep size is known, the schedule moves on by sweeps that ended (CNTK 2.7's
    # Trainer: a reader's sweep_end), not by samples
    other = L.sgd(list(make_vars(init_values()).values()),
                  S.learning_parameter_schedule_per_sample([0.1, 0.01]))
    assert other.learning_rate() == 0.1
    other.update(1000)
    assert other.learning_rate() == 0.1
    other.end_sweep()
    assert other.learning_rate() == 0.01
    learner.resolve_epoch_size(20)
    w = init_values()
    steps = [(10, grad_values(i)) for i in range(3)]
    for i, (M, g) in enumerate(steps):
        lr = 0.1 if 10 * i < 20 else 0.01
        w = {k: w[k] - lr * g[k] for k in SHAPES}
    run(learner, variables, steps)
    assert_weights(variables, w)


def test_epoch_size_of_the_learner_applies_to_list_arguments():
    variables = make_vars(init_values())
    learner = L.momentum_sgd(list(variables.values()), [0.4, 0.2], [0.5, 0.0], epoch_size=4)
    w, v = init_values(), zeros()
    steps = [(2, grad_values(i)) for i in range(3)]
    for i, (M, g) in enumerate(steps):
        lr, m = (0.4, 0.5) if 2 * i < 4 else (0.2, 0.0)
        v = {k: m * v[k] + (1 - m) * lr / M * g[k] for k in SHAPES}
        w = {k: w[k] - v[k] for k in SHAPES}
    run(learner, variables, steps)
    assert_weights(variables, w)


def test_reset_learning_rate_starts_the_new_schedule_at_the_current_position():
    variables = make_vars(init_values())
    learner = L.sgd(list(variables.values()), S.learning_parameter_schedule_per_sample(0.1))
    run(learner, variables, [(30, grad_values(0))])
    learner.reset_learning_rate(S.learning_parameter_schedule_per_sample([0.05, 0.01],
                                                                         epoch_size=40))
    assert learner.learning_rate() == 0.05
    w = weights(variables)
    steps = [(30, grad_values(i)) for i in (1, 2)]
    for i, (M, g) in enumerate(steps):
        lr = 0.05 if 30 * i < 40 else 0.01
        w = {k: w[k] - lr * g[k] for k in SHAPES}
    run(learner, variables, steps)
    assert_weights(variables, w)
    assert learner.learning_rate() == 0.01


def test_reset_learning_rate_of_a_schedule_per_sweep_counts_sweeps_from_the_reset():
    # CNTK 2.7 (compat case reset_learning_rate__per_sweep): a schedule per data sweep whose
    # sweep size is unknown starts at the reset's sweep count, and a checkpoint keeps that
    variables = make_vars(init_values())
    learner = L.sgd(list(variables.values()), S.learning_parameter_schedule([0.1, 0.01, 0.001]))
    run(learner, variables, [(3, grad_values(0))])
    learner.end_sweep()
    learner.end_sweep()
    learner.reset_learning_rate(S.learning_parameter_schedule([0.5, 0.05, 0.005]))
    assert learner.learning_rate() == 0.5
    w = weights(variables)
    run(learner, variables, [(4, grad_values(1))])
    w = {k: w[k] - 0.5 / 4 * grad_values(1)[k] for k in SHAPES}
    assert_weights(variables, w)
    learner.end_sweep()
    assert learner.learning_rate() == 0.05
    state = learner.state_dict()
    restored = L.sgd(list(make_vars(init_values()).values()), S.learning_parameter_schedule(
        [0.1, 0.01, 0.001]))
    restored.load_state_dict(copy.deepcopy(state))
    assert restored.learning_rate() == 0.05
    restored.end_sweep()
    assert restored.learning_rate() == 0.005


def test_zero_learning_rate_does_not_update_or_count():
    variables = make_vars(init_values())
    learner = L.sgd(list(variables.values()), S.piecewise([10], [0.0, 0.1]))
    set_grads(variables, grad_values(0))
    assert learner.update(5) is False
    assert learner.samples_seen == 0 and learner.minibatches_seen == 0
    assert_weights(variables, init_values())


# ---------------------------------------------------------------------------------------------
# regularisation, clipping, noise
# ---------------------------------------------------------------------------------------------
def test_l2_is_per_sample():
    variables = make_vars(init_values())
    learner = L.sgd(list(variables.values()), S.learning_parameter_schedule_per_sample(0.01),
                    l2_regularization_weight=0.05)
    w = init_values()
    steps = [(M, grad_values(i)) for i, M in enumerate([4, 10, 1])]
    for M, g in steps:
        w = {k: w[k] - 0.01 * (g[k] + 0.05 * M * w[k]) for k in SHAPES}
    run(learner, variables, steps)
    assert_weights(variables, w)


@pytest.mark.parametrize("per_sample", [True, False])
def test_l1_is_a_proximal_soft_threshold_after_the_update(per_sample):
    values = init_values()
    values["a"] = np.array([0.001, -0.0015, 0.5])       # end inside the threshold -> exactly 0
    variables = make_vars(values)
    lr = S.learning_parameter_schedule_per_sample(0.1) if per_sample else 0.1
    learner = L.sgd(list(variables.values()), lr, l1_regularization_weight=0.05)
    w = dict(values)
    steps = [(M, grad_values(i, scale=0.01)) for i, M in enumerate([4, 8])]
    for M, g in steps:
        lr_eff = 0.1 if per_sample else 0.1 / M
        w = {k: soft(w[k] - lr_eff * g[k], lr_eff * 0.05 * M) for k in SHAPES}
    run(learner, variables, steps)
    assert_weights(variables, w)
    a = variables["a"].data.detach().numpy()
    assert a[0] == 0.0 and a[1] == 0.0 and a[2] != 0.0


def test_clipping_by_truncation_is_per_sample_times_M():
    variables = make_vars(init_values())
    learner = L.sgd(list(variables.values()), S.learning_parameter_schedule_per_sample(0.01),
                    gradient_clipping_threshold_per_sample=0.05)
    w = init_values()
    steps = [(M, grad_values(i)) for i, M in enumerate([8, 20])]
    for M, g in steps:
        w = {k: w[k] - 0.01 * np.clip(g[k], -0.05 * M, 0.05 * M) for k in SHAPES}
    assert np.abs(grad_values(0)["b"]).max() > 0.4          # something is clipped
    run(learner, variables, steps)
    assert_weights(variables, w)


def test_clipping_by_norm_rescales_each_tensor_above_the_limit():
    variables = make_vars(init_values())
    learner = L.sgd(list(variables.values()), S.learning_parameter_schedule_per_sample(0.01),
                    gradient_clipping_threshold_per_sample=0.1,
                    gradient_clipping_with_truncation=False)
    w = init_values()
    steps = []
    for i, M in enumerate([8, 20]):
        g = grad_values(i)
        g["a"] = g["a"] * 0.01                                 # below the limit: untouched
        steps.append((M, g))
    for M, g in steps:
        limit = 0.1 * M
        clipped = {}
        for k in SHAPES:
            norm = np.sqrt(np.sum(g[k] ** 2))
            clipped[k] = g[k] * (limit / norm) if norm > limit else g[k]
        assert np.sqrt(np.sum(g["a"] ** 2)) < limit
        w = {k: w[k] - 0.01 * clipped[k] for k in SHAPES}
    assert np.sqrt(np.sum(steps[0][1]["b"] ** 2)) > 0.8        # something is rescaled
    run(learner, variables, steps)
    assert_weights(variables, w)


def test_order_clipping_l2_update_l1():
    variables = make_vars(init_values())
    learner = L.momentum_sgd(list(variables.values()),
                             S.learning_parameter_schedule_per_sample(0.01),
                             S.momentum_as_time_constant_schedule(100),
                             l1_regularization_weight=0.01, l2_regularization_weight=0.03,
                             gradient_clipping_threshold_per_sample=0.06)
    w, v = init_values(), zeros()
    steps = [(M, grad_values(i)) for i, M in enumerate([10, 5, 10])]
    for M, g in steps:
        m = math.exp(-M / 100)
        g2 = {k: np.clip(g[k], -0.06 * M, 0.06 * M) + 0.03 * M * w[k] for k in SHAPES}
        v = {k: m * v[k] + (1 - m) * 0.01 * g2[k] for k in SHAPES}
        w = {k: soft(w[k] - v[k], 0.01 * 0.01 * M) for k in SHAPES}
    run(learner, variables, steps)
    assert_weights(variables, w)


def test_gaussian_noise_is_added_after_the_update():
    variables = make_vars(init_values())
    learner = L.sgd(list(variables.values()), S.learning_parameter_schedule_per_sample(0.01),
                    gaussian_noise_injection_std_dev=0.1)
    learner.generator = torch.Generator().manual_seed(5)
    g = grad_values(0)
    run(learner, variables, [(4, g)])
    gen = torch.Generator().manual_seed(5)
    noise = {k: torch.randn(s, dtype=torch.float64, generator=gen).numpy() for k, s in
             SHAPES.items()}
    assert_weights(variables, {k: init_values()[k] - 0.01 * g[k] + 0.1 * noise[k]
                               for k in SHAPES})


# ---------------------------------------------------------------------------------------------
# adaptive learners
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("unit_gain, adamax", [(True, False), (False, False), (True, True)])
def test_adam_rescales_betas_and_corrects_bias_per_minibatch(unit_gain, adamax):
    variables = make_vars(init_values())
    learner = L.adam(list(variables.values()), S.learning_parameter_schedule_per_sample(0.001),
                     S.momentum_schedule_per_sample(0.99), unit_gain=unit_gain, epsilon=1e-6,
                     adamax=adamax)
    w, m1, m2 = init_values(), zeros(), zeros()
    steps = [(M, grad_values(i)) for i, M in enumerate([16, 8, 16, 32])]
    for t, (M, g) in enumerate(steps, start=1):
        b1, b2 = 0.99 ** M, VM ** M
        u = 1 - b1 if unit_gain else 1.0
        m1 = {k: b1 * m1[k] + u * g[k] for k in SHAPES}
        if adamax:
            m2 = {k: np.maximum(b2 * m2[k], np.abs(g[k])) for k in SHAPES}
            step = 0.001 / (1 - b1 ** t)
            w = {k: w[k] - step * m1[k] / (m2[k] + 1e-6) for k in SHAPES}
        else:
            m2 = {k: b2 * m2[k] + (1 - b2) * g[k] ** 2 for k in SHAPES}
            step = 0.001 * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
            w = {k: w[k] - step * m1[k] / (np.sqrt(m2[k]) + 1e-6) for k in SHAPES}
    run(learner, variables, steps)
    assert_weights(variables, w, rtol=1e-9)


@pytest.mark.parametrize("need_ave_multiplier", [True, False])
def test_adagrad(need_ave_multiplier):
    variables = make_vars(init_values())
    learner = L.adagrad(list(variables.values()), 0.1, need_ave_multiplier=need_ave_multiplier)
    w, acc = init_values(), zeros()
    steps = [(M, grad_values(i)) for i, M in enumerate([4, 9, 4])]
    for M, g in steps:
        acc = {k: acc[k] + g[k] ** 2 for k in SHAPES}
        for k in SHAPES:
            r = 1 / np.sqrt(acc[k] + 1e-16)
            ave = r.mean() if need_ave_multiplier else 1.0
            w[k] = w[k] - (0.1 / M) / ave * r * g[k]
    run(learner, variables, steps)
    assert_weights(variables, w)


def test_adadelta_default_lr_is_one_per_sample():
    variables = make_vars(init_values())
    learner = L.adadelta(list(variables.values()), rho=0.9, epsilon=1e-6)
    w, eg, ex = init_values(), zeros(), zeros()
    steps = [(M, grad_values(i)) for i, M in enumerate([4, 9, 4])]
    for M, g in steps:
        for k in SHAPES:
            eg[k] = 0.9 * eg[k] + 0.1 * g[k] ** 2
            dx = np.sqrt(ex[k] + 1e-6) / np.sqrt(eg[k] + 1e-6) * g[k]
            ex[k] = 0.9 * ex[k] + 0.1 * dx ** 2
            w[k] = w[k] - 1.0 * dx
    run(learner, variables, steps)
    assert_weights(variables, w)


def test_rmsprop_adapts_each_step_size_by_sign_agreement():
    variables = make_vars(init_values())
    learner = L.rmsprop(list(variables.values()), 0.1, gamma=0.9, inc=1.5, dec=0.5, max=0.05,
                        min=0.008)
    w = init_values()
    avars, signs, sizes = zeros(), zeros(), {k: np.full(s, 0.02) for k, s in SHAPES.items()}
    base = grad_values(0)
    steps = []
    for i in range(6):       # "a" keeps its signs (sizes grow to max), others vary
        g = grad_values(i + 1)
        g["a"] = np.abs(g["a"]) * np.sign(base["a"])
        steps.append((8, g))
    for i, (M, g) in enumerate(steps):
        for k in SHAPES:
            if i == 0:
                avars[k] = g[k] ** 2
            avars[k] = 0.9 * avars[k] + 0.1 * g[k] ** 2
            s = np.sign(g[k])
            sizes[k] = np.where(signs[k] * s > 0, np.minimum(sizes[k] * 1.5, 0.05),
                                np.maximum(sizes[k] * 0.5, 0.008))
            signs[k] = s
            r = sizes[k] / np.sqrt(avars[k] + 1e-6)
            w[k] = w[k] - (0.1 / M) / r.mean() * r * g[k]
    assert np.all(sizes["a"] == 0.05) and np.any(sizes["b"] == 0.008)
    run(learner, variables, steps)
    assert_weights(variables, w)


@pytest.mark.parametrize("momentum", [0.9, 0.0])
def test_fsadagrad(momentum):
    variables = make_vars(init_values())
    learner = L.fsadagrad(list(variables.values()),
                          S.learning_parameter_schedule_per_sample(0.002),
                          S.momentum_schedule_per_sample(momentum))
    w, v, mom, count = init_values(), zeros(), zeros(), 0.0
    steps = [(M, grad_values(i)) for i, M in enumerate([16, 4, 16])]
    for M, g in steps:
        b, vm = momentum ** M, VM ** M
        count = vm * count + (1 - vm) * M
        for k in SHAPES:
            v[k] = vm * v[k] + (1 - vm) * g[k] ** 2
            r = np.where(v[k] != 0, np.minimum(math.sqrt(count) / np.sqrt(v[k]), 10.0), 1.0)
            step = r * g[k]
            if b > 0:
                mom[k] = b * mom[k] + (1 - b) * step
                step = mom[k]
            w[k] = w[k] - 0.002 * step
    run(learner, variables, steps)
    assert_weights(variables, w, rtol=1e-9)
    if momentum == 0:
        assert all(np.all(s["m"].numpy() == 0) for s in learner._states)


# ---------------------------------------------------------------------------------------------
# every learner: checkpoints and foreach == per-tensor loop
# ---------------------------------------------------------------------------------------------
COMMON = dict(l1_regularization_weight=0.001, l2_regularization_weight=0.01,
              gradient_clipping_threshold_per_sample=0.08)

LEARNERS = {
    "sgd": lambda p, **kw: L.sgd(p, S.learning_parameter_schedule_per_sample(
        [0.01, 0.005], epoch_size=24), **kw),
    "momentum_sgd": lambda p, **kw: L.momentum_sgd(
        p, S.learning_parameter_schedule_per_sample(0.01),
        S.momentum_as_time_constant_schedule([0, 100], epoch_size=16), **kw),
    "nesterov": lambda p, **kw: L.nesterov(p, 0.05, S.momentum_schedule(0.9, minibatch_size=8),
                                           gradient_clipping_with_truncation=False, **kw),
    "adam": lambda p, **kw: L.adam(p, 0.01, 0.9, **kw),
    "adamax": lambda p, **kw: L.adam(p, 0.01, 0.9, adamax=True, unit_gain=False, **kw),
    "adagrad": lambda p, **kw: L.adagrad(p, 0.05, **kw),
    "adadelta": lambda p, **kw: L.adadelta(p, **kw),
    "rmsprop": lambda p, **kw: L.rmsprop(p, 0.1, 0.9, 1.2, 0.5, 0.05, 0.001, **kw),
    "fsadagrad": lambda p, **kw: L.fsadagrad(p, 0.05, S.momentum_schedule_per_sample(0.95),
                                             **kw),
}
SIZES = [8, 4, 8, 16, 8, 8]


@pytest.mark.parametrize("name", list(LEARNERS))
def test_state_dict_round_trip_continues_identically(name):
    first = make_vars(init_values())
    learner = LEARNERS[name](first, **COMMON)
    run(learner, first, [(M, grad_values(i)) for i, M in enumerate(SIZES[:3])])
    if name == "sgd":
        learner.reset_learning_rate(S.learning_parameter_schedule_per_sample([0.02, 0.001],
                                                                             epoch_size=8))
    state = learner.state_dict()
    json.dumps({k: v for k, v in state.items() if k != "tensors"})   # plain metadata
    saved = weights(first)
    rest = [(M, grad_values(10 + i)) for i, M in enumerate(SIZES[3:])]
    run(learner, first, rest)              # the saved state must not follow these updates

    second = make_vars(saved)
    restored = LEARNERS[name](second, **COMMON)
    restored.load_state_dict(copy.deepcopy(state))
    assert restored.samples_seen == sum(SIZES[:3]) and restored.minibatches_seen == 3
    run(restored, second, rest)
    for k in SHAPES:
        assert torch.equal(first[k].data, second[k].data), f"{name}: parameter {k}"
    assert restored.learning_rate() == learner.learning_rate()
    assert set(state["tensors"]) == {f"{k}/{s}" for k in SHAPES for s in learner._state_names}


def test_parameters_given_as_a_dict_are_the_learners_own_list():
    """A learner made from ``{name: parameter}`` keeps those parameters (and their names in its
    state) whatever the caller does to the dict afterwards."""
    variables = make_vars(init_values())
    given = dict(variables)
    learner = L.sgd(given, 0.5)
    given.clear()
    set_grads(variables, grad_values(0))
    assert learner.update(4) is True
    assert_weights(variables, {k: init_values()[k] - 0.5 / 4 * grad_values(0)[k] for k in SHAPES})
    assert len(learner.parameters) == len(SHAPES)
    assert set(learner.state_dict()["tensors"]) <= {f"{k}/{n}" for k in SHAPES
                                                    for n in learner._state_names}


@pytest.mark.parametrize("as_numpy", [False, True])
def test_state_dict_round_trip_resumes_the_noise_stream(as_numpy):
    """The Gaussian noise's generator state travels in the state dict: a restored learner adds
    the same noise as the one that went on (also from a state read back as NumPy arrays)."""
    def make(variables, seed):
        learner = L.sgd(list(variables.values()), 0.01, gaussian_noise_injection_std_dev=0.1)
        learner.generator = torch.Generator().manual_seed(seed)
        return learner

    first = make_vars(init_values())
    learner = make(first, 3)
    run(learner, first, [(M, grad_values(i)) for i, M in enumerate(SIZES[:2])])
    state, saved = learner.state_dict(), weights(first)
    rest = [(M, grad_values(10 + i)) for i, M in enumerate(SIZES[2:4])]
    run(learner, first, rest)
    second = make_vars(saved)
    restored = make(second, 99)               # another stream until the state is loaded
    state = copy.deepcopy(state)
    if as_numpy:
        state["generator_state"] = state["generator_state"].numpy()
    restored.load_state_dict(state)
    run(restored, second, rest)
    for k in SHAPES:
        assert torch.equal(first[k].data, second[k].data), k


@pytest.mark.parametrize("name", list(LEARNERS))
def test_foreach_equals_per_tensor_loop(name):
    results = []
    for foreach in (True, False):
        variables = make_vars(init_values())
        learner = LEARNERS[name](list(variables.values()), gaussian_noise_injection_std_dev=0.01,
                                 **COMMON)
        learner.foreach = foreach
        learner.generator = torch.Generator().manual_seed(3)
        run(learner, variables, [(M, grad_values(i)) for i, M in enumerate(SIZES)])
        results.append((weights(variables),
                        [{k: t.numpy().copy() for k, t in s.items()} for s in learner._states]))
    (w_fast, s_fast), (w_loop, s_loop) = results
    for k in SHAPES:
        np.testing.assert_allclose(w_fast[k], w_loop[k], rtol=1e-12, atol=1e-15,
                                   err_msg=f"{name}: parameter {k}")
    for fast, loop in zip(s_fast, s_loop):
        for key in fast:
            np.testing.assert_allclose(fast[key], loop[key], rtol=1e-12, atol=1e-15,
                                       err_msg=f"{name}: state {key}")


@pytest.mark.parametrize("name", ["momentum_sgd", "rmsprop", "fsadagrad"])
def test_update_maths_accepts_0d_tensor_scalars(name):
    """A compiled step feeds this step's scalars as 0-d tensors: same result as floats."""
    results = []
    for as_tensor in (False, True):
        variables = make_vars(init_values())
        learner = LEARNERS[name](list(variables.values()), **COMMON)
        for i, M in enumerate(SIZES[:3]):
            set_grads(variables, grad_values(i))
            names = list(learner.named_parameters())
            scalars = learner.step_scalars(names, M)
            if as_tensor:
                scalars = {k: torch.tensor(v, dtype=torch.float64) for k, v in scalars.items()}
            params = [v.data.detach() for v in learner.parameters]
            grads = [v.grad.clone() for v in learner.parameters]
            states = learner.state_tensors(names)
            with torch.no_grad():
                learner.apply_step(params, grads, states, scalars)
            learner.finish_step(names, M, {k: float(v) for k, v in scalars.items()})
        results.append(weights(variables))
    for k in SHAPES:
        np.testing.assert_allclose(results[1][k], results[0][k], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", list(LEARNERS))
def test_update_maths_traces_into_one_program(name):
    """``apply_step`` with the step's scalars as inputs traces (make_fx, fake tensors) into a
    program without data-dependent control flow, and the program equals the eager update."""
    from torch.fx.experimental.proxy_tensor import make_fx
    learner = LEARNERS[name](list(make_vars(init_values()).values()), **COMMON)
    scalars = learner.step_scalars(list(learner.named_parameters()), 8)
    keys, names = list(scalars), learner.state_names()
    params = [v.data.detach().clone() for v in learner.parameters]
    grads = [T(g) for g in grad_values(0).values()]
    states = [s[k].clone() for s in learner._states for k in names]
    n, ns = len(params), len(names)

    def step(*flat):
        P, G, St = list(flat[:n]), list(flat[n:2 * n]), flat[2 * n:2 * n + n * ns]
        lists = {k: [St[i * ns + j] for i in range(n)] for j, k in enumerate(names)}
        learner.apply_step(P, G, lists, dict(zip(keys, flat[2 * n + n * ns:])))
        return P

    tensors = [T(float(scalars[k]), dtype=torch.float64) for k in keys]
    program = make_fx(step, tracing_mode="fake")(*params, *grads, *states, *tensors)
    traced = program(*[t.clone() for t in params + grads + states], *tensors)
    eager = [p.clone() for p in params]
    lists = {k: [s[k].clone() for s in learner._states] for k in names}
    learner.apply_step(eager, [g.clone() for g in grads], lists, scalars)
    for a, b in zip(traced, eager):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# API details and errors
# ---------------------------------------------------------------------------------------------
def test_cntk_update_with_a_gradient_dict_and_named_parameters():
    by_dict, by_grad = make_vars(init_values()), make_vars(init_values())
    a = L.momentum_sgd(by_dict, 0.1, 0.9)             # a dict: names key the state
    b = L.momentum_sgd(list(by_grad.values()), 0.1, 0.9)
    for i in range(2):
        g = grad_values(i)
        keys = [by_dict[k] for k in SHAPES] if i == 0 else list(SHAPES)   # Variables or names
        assert a.update(dict(zip(keys, (g[k] for k in SHAPES))), 5)
        set_grads(by_grad, g)
        assert b.update(5)
    assert_weights(by_dict, weights(by_grad), rtol=0, atol=0)
    assert "a/v" in a.state_dict()["tensors"] and "0/v" in b.state_dict()["tensors"]
    with pytest.raises(ParameterError, match="no gradient for parameter c"):
        a.update({"a": g["a"], "b": g["b"]}, 5)


def test_update_does_not_modify_grad():
    variables = make_vars(init_values())
    learner = L.sgd(list(variables.values()), 0.1, l2_regularization_weight=0.1,
                    gradient_clipping_threshold_per_sample=0.01)
    g = grad_values(0)
    run(learner, variables, [(4, g)])
    for k in SHAPES:
        np.testing.assert_array_equal(variables[k].grad.numpy(), g[k])


def test_learning_rate_reports_the_schedule_value_in_its_unit():
    variables = make_vars(init_values())
    learner = L.sgd(list(variables.values()),
                    S.learning_rate_schedule([0.5, 0.25], S.UnitType.minibatch, epoch_size=10))
    assert learner.learning_rate() == 0.5
    run(learner, variables, [(10, grad_values(0))])
    assert learner.learning_rate() == 0.25
    assert learner.parameters == list(variables.values())


@pytest.mark.parametrize("make, match", [
    (lambda p: L.sgd(p, -0.1), r"lr must be >= 0.*invalid learning rate"),
    (lambda p: L.sgd(p, S.learning_parameter_schedule_per_sample([0.1, -0.1], epoch_size=5)),
     "lr must be >= 0"),
    (lambda p: L.sgd(p, S.cosine(0.1, 100, final=-0.1)), "lr must be >= 0"),
    (lambda p: L.sgd(p, "fast"), "lr must be a number, a list or a Schedule"),
    (lambda p: L.momentum_sgd(p, 0.1, 1.5), r"momentum must lie in \[0, 1\]"),
    (lambda p: L.adam(p, 0.1, 0.9, variance_momentum=-0.5), "variance_momentum must be >= 0"),
    (lambda p: L.sgd(p, 0.1, l2_regularization_weight=-1), "l2_regularization_weight"),
    (lambda p: L.sgd(p, 0.1, gradient_clipping_threshold_per_sample=0),
     "gradient_clipping_threshold_per_sample"),
    (lambda p: L.sgd(p, 0.1, minibatch_size=-2), "minibatch_size"),
    (lambda p: L.rmsprop(p, 0.1, 0.9, 1.2, 0.5, 0.001, 0.05), r"min \(0.05\) must not exceed"),
    (lambda p: L.sgd(p + [p[0]], 0.1), "duplicates"),
    (lambda p: L.sgd([], 0.1), "no parameters"),
    (lambda p: L.sgd([np.zeros(3)], 0.1), "not a Variable"),
])
def test_errors_name_the_mistake(make, match):
    params = list(make_vars(init_values()).values())
    with pytest.raises(StadynError, match=match):
        make(params)


def test_update_errors():
    variables = make_vars(init_values())
    learner = L.sgd(list(variables.values()), 0.1)
    set_grads(variables, grad_values(0))
    with pytest.raises(StadynError, match="empty minibatch"):
        learner.update(0)
    with pytest.raises(StadynError, match="sample_count"):
        learner.update(-3)
    with pytest.raises(StadynError, match="sample_count"):
        learner.update(2.5)
    wrong = {v: np.zeros(3 if k == "b" else v.shape) for k, v in variables.items()}
    with pytest.raises(ParameterError, match=r"parameter 1 has shape \(3,\)"):
        learner.update(wrong, 4)
    other = L.momentum_sgd(list(variables.values()), 0.1, 0.9)
    with pytest.raises(StadynError, match="'momentum_sgd' learner into a 'sgd'"):
        learner.load_state_dict(other.state_dict())
    with pytest.raises(StadynError, match="momentum is 1"):
        adam = L.adam(list(variables.values()), 0.1, 1.0)
        set_grads(variables, grad_values(0))
        adam.update(1)


MODULES = ["stadyn.learners", "stadyn.learners._learner", "stadyn.learners._learners"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name),
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


# ---------------------------------------------------------------------------------------------
# the solver maths added for CNTK (stadyn.solvers._functional), foreach == loop directly, with
# float, per-tensor and 0-d tensor scalars
# ---------------------------------------------------------------------------------------------
T = torch.tensor
CNTK_FUNCTIONAL = {
    "soft_threshold": lambda P, G, St, s, fe: Fn.soft_threshold(P, threshold=s, foreach=fe),
    "add_gaussian_noise": lambda P, G, St, s, fe: Fn.add_gaussian_noise(
        P, std=s, generator=torch.Generator().manual_seed(1), foreach=fe),
    "adamax": lambda P, G, St, s, fe: Fn.adamax(P, G, St[0], St[1], step_size=s, beta1=0.8,
                                                beta2=s, eps=1e-6, foreach=fe),
    "fsadagrad": lambda P, G, St, s, fe: Fn.fsadagrad(P, G, St[0], St[1], lr=s, momentum=s,
                                                      gain=0.5, var_momentum=0.9, ada_mul=2.0,
                                                      foreach=fe),
    "fsadagrad_no_momentum": lambda P, G, St, s, fe: Fn.fsadagrad(
        P, G, St[0], St[1], lr=s, momentum=0.0, gain=1.0, var_momentum=s, ada_mul=s,
        foreach=fe),
    "adagrad_normalized": lambda P, G, St, s, fe: Fn.adagrad_normalized(P, G, St[0], lr=s,
                                                                        foreach=fe),
    "adagrad_plain": lambda P, G, St, s, fe: Fn.adagrad_normalized(
        P, G, St[0], lr=s, average_multiplier=False, foreach=fe),
    "rmsprop_adaptive": lambda P, G, St, s, fe: Fn.rmsprop_adaptive(
        P, G, St[0], St[1], St[2], lr=s, gamma=0.9, inc=1.2, dec=0.5, max_step=0.05,
        min_step=0.001, first=s, foreach=fe),
}
SCALARS = {"float": 0.3, "per tensor": [0.3, 0.1, 0.6], "0-d tensor": T(0.3, dtype=torch.float64)}


@pytest.mark.parametrize("function", list(CNTK_FUNCTIONAL))
@pytest.mark.parametrize("kind", list(SCALARS))
def test_cntk_functional_foreach_equals_loop(function, kind):
    if function.startswith("rmsprop") and kind == "per tensor":
        pytest.skip("first is one flag for all tensors")
    results = []
    for foreach in (True, False):
        params = [T(v) for v in init_values().values()]
        grads = [T(v) for v in grad_values(3).values()]
        grads[1][0, 0] = 0.0                       # a zero gradient (fsadagrad's v == 0 branch)
        states = [[torch.full_like(p, 0.1) for p in params] for _ in range(3)]
        states[0][1][0, 0] = 0.0
        for _ in range(3):
            CNTK_FUNCTIONAL[function](params, grads, states, SCALARS[kind], foreach)
        results.append(params + [t for group in states for t in group])
    for fast, loop in zip(*results):
        np.testing.assert_allclose(fast.numpy(), loop.numpy(), rtol=1e-12, atol=1e-15)


def test_a_learning_rate_of_none_is_a_type_error_naming_it():
    params = list(make_vars(init_values()).values())
    with pytest.raises(sd.ArgumentError, match=r"sgd: lr must be a number, a list or a "
                                               r"Schedule, got None"):
        L.sgd(params, None)
    with pytest.raises(TypeError, match="adam: epsilon must be a number, got None"):
        L.adam(params, 0.01, 0.9, epsilon=None)


_BAD_LEARNER_STATES = {
    "a moment of NaN": (lambda s: s["tensors"]["c/v"].fill_(float("nan")), "'c/v' is not finite"),
    "negative samples": (lambda s: s.update(samples_seen=-8), "samples_seen must be an integer"),
    "no minibatch count": (lambda s: s.pop("minibatches_seen"), "no 'minibatches_seen'"),
    "a NaN learning rate": (lambda s: s.update(lr_schedule=S.learning_parameter_schedule(
        0.1).config() | {"segments": [[1, "minibatch", float("nan")]]}), "lr is nan"),
    "a damaged schedule": (lambda s: s.update(lr_schedule={"segments": 3}), "not a schedule"),
    "a text scalar": (lambda s: s.update(scalars={"smoothed_count": "x"}), "must be a number"),
}


@pytest.mark.parametrize("damage", sorted(_BAD_LEARNER_STATES))
def test_a_bad_learner_state_is_refused_and_changes_nothing(damage):
    """The tensors used to be copied before the counters were read, so a bad counter left a
    half-restored learner."""
    edit, message = _BAD_LEARNER_STATES[damage]
    first = make_vars(init_values())
    source = LEARNERS["adam"](first, **COMMON)
    run(source, first, [(M, grad_values(i)) for i, M in enumerate(SIZES[:3])])
    state = copy.deepcopy(source.state_dict())
    edit(state)
    second = make_vars(init_values(1))
    learner = LEARNERS["adam"](second, **COMMON)
    run(learner, second, [(8, grad_values(7))])
    before = copy.deepcopy(learner.state_dict())
    with pytest.raises(StadynError, match=message):
        learner.load_state_dict(state)
    after = learner.state_dict()
    for key in ("samples_seen", "minibatches_seen", "lr_schedule", "scalars"):
        assert after[key] == before[key], key
    for key, tensor in before["tensors"].items():
        assert torch.equal(after["tensors"][key], tensor), key

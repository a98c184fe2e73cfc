"""Schedules (``stadyn.schedules``): CNTK's lists, pairs and units, time constants, Stadyn's
native schedules, and ScheduledSolver on NNabla solvers — values checked against numbers worked
out by hand from CNTK's documented semantics (``shared/reference/cntk.md``)."""

from __future__ import annotations

import doctest
import importlib
import json
import math

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.schedules as S
import stadyn.solvers as solvers
from stadyn import StadynError


# ---------------------------------------------------------------------------------------------
# CNTK's forms
# ---------------------------------------------------------------------------------------------
def test_a_number_is_constant_and_needs_no_epoch_size():
    s = S.Schedule(0.25)
    assert [s[0], s[1], s[10 ** 12]] == [0.25] * 3
    assert not s.needs_epoch_size and s.epoch_size is None


def test_list_values_each_last_epoch_size_samples_the_last_forever():
    s = S.Schedule([0.1, 0.01, 0.001], epoch_size=1000)
    assert [s[0], s[999], s[1000], s[1999], s[2000], s[10 ** 9]] == \
        [0.1, 0.1, 0.01, 0.01, 0.001, 0.001]


def test_pairs_last_n_epochs():
    """CNTK's documented example: [(12, 0.1), (15, 0.01), (1, 0.001)] with 100 samples."""
    s = S.Schedule([(12, 0.1), (15, 0.01), (1, 0.001)], epoch_size=100)
    assert [s[0], s[1199], s[1200], s[2699], s[2700], s[5000]] == \
        [0.1, 0.1, 0.01, 0.01, 0.001, 0.001]


def test_pairs_and_plain_values_mix_and_the_last_count_may_be_zero():
    s = S.Schedule([(2, 1.0), 0.5, (0, 0.25)], epoch_size=10)
    assert [s[19], s[20], s[29], s[30], s[10 ** 6]] == [1.0, 0.5, 0.5, 0.25, 0.25]


def test_the_seed_learning_rate_schedule():
    lr_per_sample = [0.0015625] * 20 + [0.00046875] * 20 + [0.00015625] * 20 + \
        [0.000046875] * 10 + [0.000015625]
    lr = S.learning_rate_schedule(lr_per_sample, unit=S.UnitType.sample, epoch_size=50000)
    assert lr.minibatch_size == 1 and lr.is_minibatch_size_explicitly_specified
    expected = {0: 0.0015625, 20 * 50000 - 1: 0.0015625, 20 * 50000: 0.00046875,
                40 * 50000: 0.00015625, 60 * 50000: 0.000046875, 70 * 50000: 0.000015625,
                80 * 50000 - 1: 0.000015625}
    for samples, value in expected.items():
        assert lr[samples] == value, samples


@pytest.mark.parametrize("make, reference, explicit", [
    (lambda: S.learning_rate_schedule(0.1, S.UnitType.sample), 1, True),
    (lambda: S.learning_rate_schedule(0.1, "sample"), 1, True),
    (lambda: S.learning_rate_schedule(0.1, S.UnitType.minibatch), 0, True),
    (lambda: S.training_parameter_schedule(0.1), 0, True),
    (lambda: S.learning_parameter_schedule(0.1), 0, False),
    (lambda: S.learning_parameter_schedule(0.1, minibatch_size=32), 32, True),
    (lambda: S.learning_parameter_schedule(0.1, minibatch_size=S.IGNORE), 0, True),
    (lambda: S.learning_parameter_schedule_per_sample(0.1), 1, True),
    (lambda: S.momentum_schedule(0.9), 0, False),
    (lambda: S.momentum_schedule(0.9, minibatch_size=64), 64, True),
    (lambda: S.momentum_schedule_per_sample(0.9), 1, True),
    (lambda: S.momentum_as_time_constant_schedule(100), 1, True),
])
def test_units_are_reference_minibatch_sizes(make, reference, explicit):
    s = make()
    assert s.minibatch_size == reference
    assert s.is_minibatch_size_explicitly_specified is explicit


def test_a_schedule_passes_through_the_cntk_functions_unchanged():
    s = S.learning_parameter_schedule([0.1, 0.2], epoch_size=5)
    for f in (S.learning_parameter_schedule, S.training_parameter_schedule,
              S.momentum_schedule, S.momentum_as_time_constant_schedule):
        assert f(s) is s
    copy = s.with_minibatch_size(8)
    assert copy is not s and copy.minibatch_size == 8 and s.minibatch_size == 0


def test_momentum_as_time_constant_converts_per_sample():
    m = S.momentum_as_time_constant_schedule(600)
    assert m[0] == math.exp(-1 / 600)
    assert S.momentum_as_time_constant_schedule(0)[0] == 0.0
    seed = S.momentum_as_time_constant_schedule([0] * 20 + [600] * 20 + [1200], epoch_size=50000)
    assert seed[20 * 50000 - 1] == 0.0
    assert seed[20 * 50000] == math.exp(-1 / 600)
    assert seed[40 * 50000] == math.exp(-1 / 1200)
    pairs = S.momentum_as_time_constant_schedule([(2, 0), (1, 100)], epoch_size=3)
    assert pairs[5] == 0.0 and pairs[6] == math.exp(-1 / 100)
    # on a 64-sample minibatch a learner raises it to the 64th power: exp(-64/600)
    assert math.isclose(m[0] ** 64, math.exp(-64 / 600), rel_tol=1e-12)


def test_epoch_size_none_means_one_sweep_resolved_later():
    s = S.learning_parameter_schedule_per_sample([0.1, 0.01])
    assert s.needs_epoch_size
    with pytest.raises(StadynError, match=r"epoch_size=None.*resolve_epoch_size"):
        s[0]
    assert s.resolve_epoch_size(500) is s
    assert [s[499], s[500]] == [0.1, 0.01] and not s.needs_epoch_size
    given = S.Schedule([1.0, 2.0], epoch_size=7).resolve_epoch_size(500)
    assert given.epoch_size == 7                    # a given epoch size is kept
    assert S.Schedule([1.0, 2.0], epoch_size=0).epoch_size is None   # CNTK's FullDataSweep


def test_errors_name_the_schedule_and_the_mistake():
    with pytest.raises(StadynError, match="the list is empty"):
        S.Schedule([])
    with pytest.raises(StadynError, match=r"values \[1\]: expected a number or a \(count"):
        S.Schedule([0.1, (1, 2, 3)])
    with pytest.raises(StadynError, match=r"values \[0\] count must be an integer >= 1"):
        S.Schedule([(0, 0.1), 0.2])
    with pytest.raises(StadynError, match="must not be NaN"):
        S.Schedule([0.1, float("nan")])
    with pytest.raises(StadynError, match="epoch_size must be an integer >= 1"):
        S.Schedule([0.1, 0.2], epoch_size=-5)
    with pytest.raises(StadynError, match="samples_seen must be an integer >= 0"):
        S.Schedule(0.1)[-1]
    with pytest.raises(StadynError, match="samples_seen must be an integer >= 0"):
        S.Schedule(0.1).value_at(1.5)
    with pytest.raises(StadynError, match="unit must be UnitType.sample"):
        S.learning_rate_schedule(0.1, "epoch")
    with pytest.raises(StadynError, match="time constant .1. must be >= 0"):
        S.momentum_as_time_constant_schedule([600, -1])
    with pytest.raises(StadynError, match=r"schedule 'lr'.*sweep size is not known"):
        S.Schedule([0.1, 0.2]).named("lr")[0]
    with pytest.raises(TypeError, match="not iterable"):
        list(S.Schedule(0.1))


# ---------------------------------------------------------------------------------------------
# Stadyn's native schedules
# ---------------------------------------------------------------------------------------------
def test_piecewise_and_step_decay():
    p = S.piecewise([100, 300], [1.0, 0.1, 0.01])
    assert [p[0], p[99], p[100], p[299], p[300], p[10 ** 9]] == [1.0, 1.0, 0.1, 0.1, 0.01, 0.01]
    d = S.step_decay(0.8, 0.5, 1000)
    assert [d[0], d[999], d[1000], d[2999], d[3000]] == [0.8, 0.8, 0.4, 0.2, 0.1]
    with pytest.raises(StadynError, match="one more value than boundaries"):
        S.piecewise([10], [1.0])
    with pytest.raises(StadynError, match="boundaries must increase"):
        S.piecewise([10, 10], [1.0, 2.0, 3.0])
    with pytest.raises(StadynError, match="step_samples"):
        S.step_decay(0.1, 0.5, 0)


def test_cosine_values_at_known_points():
    c = S.cosine(0.1, 1000, final=0.001)
    assert c[0] == 0.1
    assert math.isclose(c[500], 0.001 + 0.099 * 0.5, rel_tol=1e-12)           # cos(pi/2) = 0
    assert math.isclose(c[250], 0.001 + 0.099 * 0.5 * (1 + math.sqrt(0.5)), rel_tol=1e-12)
    assert math.isclose(c[1000], 0.001, rel_tol=1e-12) and c[10 ** 7] == c[1000]


def test_warmup_then_cosine():
    s = S.warmup(S.cosine(0.1, 1000, final=0.001), warmup_samples=100, start=0.01)
    assert s[0] == 0.01
    assert math.isclose(s[50], 0.01 + (0.1 - 0.01) * 0.5, rel_tol=1e-12)
    assert s[100] == 0.1                                       # the cosine's own sample 0
    assert math.isclose(s[600], 0.001 + 0.099 * 0.5, rel_tol=1e-12)
    assert math.isclose(s[1100], 0.001, rel_tol=1e-12)
    const = S.warmup(0.5, 10)
    assert [const[0], const[5], const[10], const[99]] == [0.0, 0.25, 0.5, 0.5]


def test_warmup_inherits_the_reference_minibatch_size_and_epoch_resolution():
    inner = S.learning_parameter_schedule_per_sample([1.0, 0.5])    # epoch_size: one sweep
    s = S.warmup(inner, 10)
    assert s.minibatch_size == 1 and s.needs_epoch_size
    s.resolve_epoch_size(20)
    assert [s[0], s[5], s[10], s[29], s[30]] == [0.0, 0.5, 1.0, 1.0, 0.5]
    assert S.warmup(inner, 10, minibatch_size=32).minibatch_size == 32


@pytest.mark.parametrize("make", [
    lambda: S.Schedule([(2, 0.1), (3, 0.05), 0.01], epoch_size=7, minibatch_size=1),
    lambda: S.momentum_as_time_constant_schedule([0, 600], epoch_size=10),
    lambda: S.piecewise([5, 9], [3.0, 2.0, 1.0]),
    lambda: S.step_decay(1.0, 0.9, 4),
    lambda: S.warmup(S.cosine(0.2, 50, final=0.02), 10, start=0.05, minibatch_size=16),
])
def test_config_round_trip(make):
    s = make()
    cfg = json.loads(json.dumps(s.config()))
    again = S.Schedule.from_config(cfg)
    assert [again[i] for i in range(0, 120, 3)] == [s[i] for i in range(0, 120, 3)]
    assert again.minibatch_size == s.minibatch_size and again.epoch_size == s.epoch_size


# ---------------------------------------------------------------------------------------------
# ScheduledSolver: schedules for NNabla solvers
# ---------------------------------------------------------------------------------------------
def _param(values):
    return sd.Variable.from_tensor(torch.tensor(values, dtype=torch.float64), need_grad=True)


def test_scheduled_solver_sets_hyperparameters_by_samples_seen_before_each_update():
    w = _param([1.0, -2.0, 0.5])
    solver = S.ScheduledSolver(solvers.Momentum(lr=1.0, momentum=0.0),
                               lr=S.piecewise([20], [0.1, 0.05]),
                               momentum=S.Schedule([0.0, 0.9], epoch_size=15))
    solver.set_parameters({"w": w})
    rng = np.random.default_rng(0)
    expected, v = np.array([1.0, -2.0, 0.5]), np.zeros(3)
    for seen in (0, 10, 20, 30):            # minibatches of 10: boundaries fall inside them
        g = rng.normal(size=3)
        lr = 0.1 if seen < 20 else 0.05
        m = 0.0 if seen < 15 else 0.9
        v = m * v + lr * g                   # NNabla's Momentum: v = m v + lr g; w -= v
        expected = expected - v
        w.grad = torch.tensor(g)
        solver.update(10)
    # (NNabla's solvers keep their state in float32)
    np.testing.assert_allclose(w.data.detach().numpy(), expected, rtol=1e-6)
    assert solver.samples_seen == 40 and solver.solver.hyper["momentum"] == 0.9


def test_scheduled_solver_lr_alias_state_and_errors():
    w = _param([1.0])
    adam = solvers.Adam(alpha=0.1)
    solver = S.ScheduledSolver(adam, lr=S.cosine(0.1, 100))
    assert "alpha" in solver.schedules
    solver.set_parameters({"w": w})
    w.grad = torch.tensor([1.0], dtype=torch.float64)
    solver.update(50)
    assert math.isclose(adam.hyper["alpha"], 0.1)      # the value before the minibatch
    state = solver.state_dict()
    other = S.ScheduledSolver(solvers.Adam(alpha=0.1), lr=S.cosine(0.1, 100))
    other.set_parameters({"w": _param([1.0])})
    other.load_state_dict(state)
    assert other.samples_seen == 50 and math.isclose(other.learning_rate(), 0.05)
    adam.update()                                      # the solver's own update still works
    with pytest.raises(StadynError, match="has no hyperparameter 'beta3'"):
        S.ScheduledSolver(solvers.Adam(), beta3=0.5)
    bad = S.ScheduledSolver(solvers.Sgd(), lr=S.piecewise([10], [0.1, -0.1]))
    bad.set_parameters({"w": _param([1.0])})
    bad.update(10)
    with pytest.raises(StadynError, match=r"learning rate 'lr' is -0.1 \(< 0\) at 10 samples"):
        bad.update(10)
    with pytest.raises(StadynError, match="sample_count"):
        bad.update(0)
    # a schedule per data sweep whose size is not known moves on by sweeps (end_sweep, as a
    # Trainer calls it at a reader's sweep end), as a learner's does; told the size, by samples
    unknown = S.ScheduledSolver(solvers.Sgd(), lr=S.Schedule([0.1, 0.2, 0.3]))
    unknown.set_parameters({"w": _param([1.0])})
    unknown.update(7)
    assert unknown.learning_rate() == 0.1
    unknown.end_sweep()
    unknown.update(7)
    assert unknown.learning_rate() == 0.2 and unknown.sweeps_seen == 1
    again = S.ScheduledSolver(solvers.Sgd(), lr=S.Schedule([0.1, 0.2, 0.3]))
    again.set_parameters({"w": _param([1.0])})
    again.load_state_dict(unknown.state_dict())
    assert again.sweeps_seen == 1 and again.learning_rate() == 0.2
    unknown.resolve_epoch_size(5)
    unknown.apply()
    assert unknown.learning_rate() == 0.3          # 14 samples: the third sweep of 5


MODULES = ["stadyn.schedules", "stadyn.schedules._schedule", "stadyn.schedules._native_schedules",
           "stadyn.schedules._cntk_schedules", "stadyn.schedules._scheduled_solver"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    result = doctest.testmod(importlib.import_module(name),
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_a_learner_writes_its_minibatch_size_into_the_schedule_it_is_given():
    # CNTK 2.7 (cntk/learners/__init__.py:568-570): lr.minibatch_size reads 8 after
    # sgd([p], lr, minibatch_size=8), not explicitly specified; a learner made later without a
    # size takes 8 (lr_eff = 0.05 / 8 on the summed gradient), the first keeps its own copy.
    from stadyn.learners import sgd

    def param():
        return sd.Variable.from_numpy_array(np.zeros(1, np.float32), need_grad=True)

    lr = S.Schedule(0.05)
    first = sgd([param()], lr, minibatch_size=8)
    assert (lr.minibatch_size, lr.is_minibatch_size_explicitly_specified) == (8, False)
    second = sgd([param()], lr)
    sgd([param()], lr, minibatch_size=2)
    assert lr.minibatch_size == 2
    assert first.schedule_value("lr") == second.schedule_value("lr") == (0.05, 8)
    # a round trip through config keeps it, still not explicit
    back = S.Schedule.from_config(json.loads(json.dumps(lr.config())))
    assert (back.minibatch_size, back.is_minibatch_size_explicitly_specified) == (2, False)
    with pytest.raises(StadynError):
        lr.minibatch_size = -1

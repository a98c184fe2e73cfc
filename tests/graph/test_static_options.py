"""``sd.set_static_options`` / ``sd.static_options`` / ``sd.get_static_options``: the public
settings of how static graphs are lowered (the runner's ``BUILD_RUNS``, ``MAX_PLANS``,
``MAX_TRIALS``, still there for the tests that patch them), and the reason a trial plan gives in
``plan.code`` for running eagerly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.compat.cntk as C
import stadyn.functions as F
from stadyn.graph import StaticPlan, TrialPlan, _runner


def test_the_settings_are_the_runners_and_a_block_puts_them_back(monkeypatch):
    assert sd.get_static_options() == {"build_runs": 50, "max_plans": 32, "max_trials": 64}
    monkeypatch.setattr(_runner, "MAX_TRIALS", 7)           # the runner's names, read back
    assert sd.get_static_options()["max_trials"] == 7
    with sd.static_options(max_plans=2, build_runs=0) as now:
        assert now == {"build_runs": 0, "max_plans": 2, "max_trials": 7}
        assert (_runner.BUILD_RUNS, _runner.MAX_PLANS) == (0, 2)
        x = sd.Variable.from_numpy_array(np.ones((1, 2), np.float32))
        y = F.tanh(x)
        for rows in (1, 2, 3):          # each shape lowered at once, two plans kept
            x.data = torch.ones(rows, 2)
            y.forward()
            assert isinstance(y._plan, StaticPlan)
        assert len(next(iter(y._plans.values())).plans) == 2
    assert sd.get_static_options() == {"build_runs": 50, "max_plans": 32, "max_trials": 7}
    previous = sd.set_static_options(max_trials=9)
    assert previous["max_trials"] == 7 and _runner.MAX_TRIALS == 9
    sd.set_static_options(**previous)
    assert _runner.MAX_TRIALS == 7


@pytest.mark.parametrize("given, message", [
    ({"build_runs": -1}, "build_runs must be an integer >= 0, got -1"),
    ({"max_plans": 0}, "max_plans must be an integer >= 1, got 0"),
    ({"max_trials": 2.5}, "max_trials must be an integer >= 1, got 2.5"),
    ({"build_runs": True}, "build_runs must be an integer >= 0, got True")])
def test_a_bad_setting_is_refused_naming_it_and_nothing_changes(given, message):
    before = sd.get_static_options()
    with pytest.raises(ValueError, match=message):
        sd.set_static_options(**{"max_trials": 5, **given} if "max_trials" not in given
                              else {"max_plans": 5, **given})
    assert sd.get_static_options() == before


def test_a_trial_says_why_it_runs_eagerly():
    x = sd.Variable.from_numpy_array(np.ones((2, 3), np.float32))
    y = F.tanh(x) * 2.0
    with torch.no_grad():
        y.forward()
    assert isinstance(y._plan, TrialPlan)
    assert y._plan.code == ("# runs eagerly: a first evaluation of a graph unlike any run "
                            "before (lowered on its next run, or the next graph built alike)")
    with torch.no_grad():
        y.forward()
        assert isinstance(y._plan, StaticPlan)
        x.data = torch.ones(4, 3)
        y.forward()
    assert y._plan.code.startswith("# runs eagerly: a new shape of a graph with a plan")


def test_a_loops_trial_before_its_first_build_says_so():
    x = C.sequence.input_variable(2)
    z = C.layers.Recurrence(C.layers.RNNStep(3))(x)
    z.eval({x: [np.ones((3, 2), np.float32)]})
    assert z.variable._plan.code == (
        "# runs eagerly: a graph holding a loop, before its first build (lowered once its "
        "runs have cost BUILD_RUNS = 50 times its fastest forward)")

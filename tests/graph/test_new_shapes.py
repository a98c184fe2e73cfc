"""New minibatch shapes of a graph that has a plan: they run eagerly (``TrialPlan``) until that
has cost as much as a build, with the results a plan built for them gives, bit for bit; the
plans a set of roots keeps are bounded.  (Before: every new shape was lowered at once, seconds
a minibatch for a recurrence over sequences of ever new lengths.)"""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.compat.cntk as C
import stadyn.functions as F
import stadyn.parametric_functions as PF
from stadyn.graph import StaticPlan, TrialPlan
from stadyn.graph import _plan_reuse, _runner

pytestmark = pytest.mark.usefixtures("fresh_parameters")

VOCAB, LABELS = 12, 5


def _count_builds(monkeypatch) -> list:
    built = []
    original = _runner.build_plan
    monkeypatch.setattr(_runner, "build_plan",
                        lambda *a, **k: built.append(1) or original(*a, **k))
    return built


def _minibatches(n: int):
    """``n`` minibatches of 4 one-hot sequences; the longest is 3, 4, ... steps: every
    minibatch has a new padded length."""
    rng = np.random.RandomState(0)
    out = []
    for k in range(n):
        lengths = [3 + k] + list(rng.randint(1, 3 + k, size=3))
        xs = [np.eye(VOCAB, dtype=np.float32)[rng.randint(0, VOCAB, n_)] for n_ in lengths]
        ys = [np.eye(LABELS, dtype=np.float32)[rng.randint(0, LABELS, n_)] for n_ in lengths]
        out.append((xs, ys))
    return out


def _train_tagger(minibatches, cell):
    """CNTK 202's tagger (embedding, a recurrence, ``Dense``) trained with Adam; the losses
    and the final parameters.  An ``RNNStep`` recurrence is the ``recurrence`` op, which a plan
    unrolls; CNTK's fused ``LSTM`` cannot be traced, so its graph's plans run eagerly."""
    sd.seed(3)
    x = C.sequence.input_variable(VOCAB)
    y = C.sequence.input_variable(LABELS)
    with C.layers.default_options(initial_state=0.1):
        z = C.layers.Sequential([C.layers.Embedding(6),
                                 C.layers.Recurrence(getattr(C.layers, cell)(7)),
                                 C.layers.Dense(LABELS)])(x)
    loss = C.cross_entropy_with_softmax(z, y)
    learner = C.adam(z.parameters, C.learning_parameter_schedule(0.05),
                     C.momentum_schedule(0.9))
    trainer = C.Trainer(z, (loss, C.classification_error(z, y)), learner)
    losses = []
    for xs, ys in minibatches:
        trainer.train_minibatch({x: xs, y: ys})
        losses.append(trainer.previous_minibatch_loss_average)
    return losses, [p.value.copy() for p in z.parameters]


@pytest.mark.parametrize("cell", ["RNNStep", "LSTM"])
def test_sequences_of_new_lengths_are_lowered_once_with_the_results_of_a_plan_each(
        monkeypatch, cell):
    minibatches = _minibatches(6)
    # The old rule, a plan built for every new signature: the reference results.
    with monkeypatch.context() as m:
        m.setattr(_runner._PlanCache, "_try_first", lambda *a: False)
        built = _count_builds(m)
        ref_losses, ref_params = _train_tagger(minibatches, cell)
        assert len(built) == 6
    # (the plans of the first run are forgotten: the same graph built again would replay them,
    # _plan_reuse.py, and this counts what the second run builds on its own)
    _plan_reuse.clear()
    with monkeypatch.context() as m:
        # the first shape lowered at once (a graph holding a loop rents none), new ones trials
        m.setattr(_runner._PlanCache, "_rent_first", lambda *a: (None, _runner._UNSEEN))
        built = _count_builds(m)
        losses, params = _train_tagger(minibatches, cell)
        assert len(built) == 1  # the first shape only; five ran as trials (the eager plan's
        #                         new shapes inferred every shape again before)
    assert losses == ref_losses             # bit for bit
    for p, q in zip(params, ref_params):
        np.testing.assert_array_equal(p, q)
    # By default the recurrence's graph rents its first shape too (a build costs about
    # BUILD_RUNS eager runs): six minibatches build nothing, with the same results.
    _plan_reuse.clear()
    built = _count_builds(monkeypatch)
    losses, params = _train_tagger(minibatches, cell)
    assert len(built) == (0 if cell == "RNNStep" else 1)   # (the fused LSTM holds no loop)
    assert losses == ref_losses
    for p, q in zip(params, ref_params):
        np.testing.assert_array_equal(p, q)


def test_build_runs_0_lowers_a_new_shape_on_its_first_run_too(monkeypatch):
    # docs/performance.md: BUILD_RUNS = 0 lowers every graph on its first run -- a new input
    # shape of a graph that has a plan included (it ran as an eager trial before).
    monkeypatch.setattr(_runner, "BUILD_RUNS", 0)
    x = sd.Variable.from_numpy_array(np.ones((2, 3), np.float32), need_grad=True)
    y = F.sum(F.tanh(x) * 2.0)
    y.forward()
    assert isinstance(y._plan, StaticPlan)
    x.reset_shape((4, 3), force=True)
    x.d = np.ones((4, 3), np.float32)
    y.forward()
    assert isinstance(y._plan, StaticPlan)
    assert float(y.d) == pytest.approx(24 * np.tanh(1.0), rel=1e-6)


def test_a_shape_that_keeps_coming_gets_its_plan_and_plans_are_bounded(monkeypatch):
    built = _count_builds(monkeypatch)
    x = sd.Variable((4, 3), need_grad=True)
    h = F.tanh(PF.affine(x, 5))
    y = F.sum(h)

    def step(batch):
        x.reset_shape((batch, 3), force=True)
        x.d = np.arange(batch * 3, dtype=np.float32).reshape(batch, 3) / 10
        x.grad = None
        y.forward(clear_no_need_grad=True)
        y.backward()
        w, b = sd.get_parameters()["affine/W"].d, sd.get_parameters()["affine/b"].d
        assert h.shape == (batch, 5) and x.g.shape == (batch, 3)
        assert float(y.d) == pytest.approx(np.tanh(x.d @ w + b).sum(), rel=1e-5)
        return y._plan

    assert isinstance(step(4), StaticPlan) and len(built) == 1
    assert isinstance(step(5), TrialPlan) and len(built) == 1     # a new batch size
    assert isinstance(step(4), StaticPlan) and len(built) == 1     # the cached plan again
    entry = next(iter(y._plans.values()))
    trial = step(5)
    assert trial is entry.trial and trial.spent > entry.trials[entry.trial_key] > 0
    for flags in entry.built:               # as if its runs had cost a build by now
        entry.built[flags] = trial.spent
    assert isinstance(step(5), StaticPlan) and len(built) == 2
    assert not entry.trials
    monkeypatch.setattr(_runner, "MAX_PLANS", 3)
    for batch in (6, 7, 8, 9):
        for flags in entry.built:
            entry.built[flags] = 0.0        # every new batch size is lowered at once
        assert isinstance(step(batch), StaticPlan)
    assert len(built) == 6 and len(entry.plans) == 3    # 7, 8, 9: the least recent went


def test_a_channels_last_plan_is_built_for_a_new_batch_at_once(monkeypatch):
    """A convolution plan that runs channels-last sums in another order than eager kernels: a
    new batch size gets its own plan, as before."""
    built = _count_builds(monkeypatch)
    x = sd.Variable((2, 4, 6, 6))
    y = F.sum(F.relu(PF.convolution(x, 8, (3, 3))))
    for batch in (2, 3):
        x.reset_shape((batch, 4, 6, 6), force=True)
        x.d = torch.ones(batch, 4, 6, 6).numpy()
        y.forward(clear_no_need_grad=True)
        assert isinstance(y._plan, StaticPlan)
    assert len(built) == 2


def test_a_handed_out_output_follows_the_trial_runs_of_a_new_shape(monkeypatch):
    """An output tensor handed to the user (NNabla's ``y.d``) is written in place by later runs
    of the same shape (graph/_shared_values.py); a new shape's eager trial runs do it too."""
    from stadyn.graph import data_of, hand_out
    built = _count_builds(monkeypatch)
    x = sd.Variable.from_numpy_array(np.ones((2, 3), np.float32))
    y = F.mul_scalar(x, 2.0)
    y.forward()                                              # shape (2, 3): built
    x.data = torch.ones(5, 3)
    y.forward()                                              # a new shape: a trial run
    kept = data_of(y)
    hand_out(kept)
    x.data = torch.full((5, 3), 3.0)
    y.forward()                                              # the same new shape, again
    assert len(built) == 1                                   # both (5, 3) runs were trials
    assert np.array_equal(kept.numpy(), np.full((5, 3), 6.0, np.float32))


def test_flipping_an_outputs_need_grad_reuses_the_plans_of_both(monkeypatch):
    """WGAN-GP sets its generator's output ``need_grad = False`` for the critic's step and
    ``True`` for the generator's, twice per iteration: the plans are looked up by the graph's
    gradient marks, so both patterns are built once, not at every flip."""
    built = _count_builds(monkeypatch)
    rng = np.random.RandomState(0)
    x = sd.Variable.from_numpy_array(rng.randn(3, 4).astype(np.float32), need_grad=True)
    h = F.mul_scalar(x, 3.0)
    y = F.sum(F.tanh(h))
    expected = 3.0 * (1.0 - np.tanh(3.0 * x.d) ** 2)
    for _ in range(4):
        for flag in (False, True):
            h.need_grad = flag
            x.g = 0
            y.forward()
            y.backward()
            np.testing.assert_allclose(x.g, expected if flag else 0.0, rtol=1e-4, atol=1e-6)
    assert len(built) <= 2, len(built)


def test_a_graph_holding_a_loop_runs_its_first_shape_eagerly_until_that_costs_a_build(
        monkeypatch):
    """A recurrence's graph (a trace unrolls its loop: seconds a build) is not lowered at its
    first forward: the run is a trial whose seconds, times BUILD_RUNS, price the build; once
    the trials cost that, the plan is built and gives the trials' values bit for bit."""
    from stadyn.ops import StepFunction
    built = _count_builds(monkeypatch)
    h, u = sd.Variable((1, 2)), sd.Variable((1, 2))
    step = StepFunction([h], [u], [F.tanh(h * 0.5 + u)])
    rng = np.random.RandomState(0)
    xs = sd.Variable.from_numpy_array(rng.randn(2, 5, 2).astype(np.float32))
    n = sd.Variable.from_numpy_array(np.array([5, 3]))
    h0 = sd.Variable.from_numpy_array(np.float32(0.25))
    y = F.recurrence(n, xs, h0, step=step)
    y.forward()
    trial = y._plan
    assert isinstance(trial, TrialPlan) and not built
    entry = next(iter(y._plans.values()))
    (flags, price), = entry.built.items()
    assert price == _runner.BUILD_RUNS * trial.spent > 0
    eager = y.d.copy()
    y.forward()
    assert y._plan is trial and not built
    entry.built[flags] = trial.spent                # as if its runs had cost a build by now
    real_build = _runner._PlanCache._build

    def slow_build(self, *args):                    # a build that took far longer than priced
        plan, _ = real_build(self, *args)
        return plan, 1000 * price
    monkeypatch.setattr(_runner._PlanCache, "_build", slow_build)
    y.forward()
    assert isinstance(y._plan, StaticPlan) and len(built) == 1
    # the measured build, not the trials' estimate, is what a new shape's trials pay first
    assert entry.built[flags] == 1000 * price
    np.testing.assert_array_equal(y.d, eager)
    # the values a NumPy loop gives (padded steps 0)
    x, want, state = xs.d, np.zeros((2, 5, 2), np.float32), np.full((2, 2), 0.25, np.float32)
    for t in range(5):
        state = np.tanh(state * 0.5 + x[:, t])
        want[:, t] = state
    want[1, 3:] = 0
    np.testing.assert_allclose(eager, want, rtol=1e-6, atol=1e-6)


def test_a_new_shape_of_a_grad_op_evaluated_without_gradients_gives_its_gradient():
    x = sd.Variable.from_numpy_array(np.array([1.0, 3.0]), need_grad=True)
    (g,) = sd.grad([F.sum(x * x)], [x])
    with torch.no_grad():
        for _ in range(2):      # (a first evaluation runs eagerly: the second is lowered)
            g.forward()
        assert g.d.tolist() == [2.0, 6.0] and isinstance(g._plan, StaticPlan)
        x.data = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64, requires_grad=True)
        g.forward()             # a trial of the new shape, run eagerly
    assert g.d.tolist() == [2.0, 4.0, 8.0] and isinstance(g._plan, TrialPlan)
    assert g.data.grad_fn is None


@pytest.mark.parametrize("build_runs, plans, builds", [
    (None, [StaticPlan, TrialPlan, TrialPlan], 1),      # the new shape tried eagerly
    (0, [StaticPlan] * 3, 2)])                          # every shape lowered at once
def test_a_random_op_of_its_own_plain_seed_draws_on_across_the_plans_of_new_shapes(
        monkeypatch, build_runs, plans, builds):
    """A random op of its own plain ``seed=`` keeps one generator through every plan of its
    graph, a trial's too: another leaf's new shape (a new plan) does not start its stream again,
    as NNabla 1.39 sets up again only a function whose own inputs changed shape (``rand`` has
    none: it draws on; tests/compat case own_seed_rand_beside_a_reshaped_input)."""
    if build_runs is not None:
        monkeypatch.setattr(_runner, "BUILD_RUNS", build_runs)
    built = _count_builds(monkeypatch)
    x = sd.Variable.from_numpy_array(np.ones((2, 3), np.float32))
    noise = F.rand(shape=(2, 3), seed=11)
    total = F.sum(x)
    stream = torch.Generator().manual_seed(11)
    want = [torch.rand(2, 3, generator=stream).numpy() for _ in range(3)]
    got, kinds = [], []
    for rows in (2, 4, 4):
        x.data = torch.ones(rows, 3)
        sd.forward_all([noise, total])
        assert float(total.d) == rows * 3
        got.append(noise.d.copy())
        kinds.append(type(noise._plan))
    for run in range(3):
        np.testing.assert_array_equal(got[run], want[run])
    assert kinds == plans and len(built) == builds

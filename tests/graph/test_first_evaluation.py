"""An evaluation (a forward with grad mode off: CNTK's ``eval``, ``no_grad``) of a structure no
graph ran before runs eagerly, op by op, instead of being lowered; the same graph run again, or
the next graph of its structure, is lowered, and graphs of that structure after it replay its
plan (``graph/_runner.py``, ``graph/_plan_reuse.py``).  Builds are counted at
``_runner.build_plan``; values are checked against NumPy, against torch's generator and
against the lowered plan's own (bit for bit)."""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
from stadyn.graph import StaticPlan, TrialPlan


@pytest.fixture
def builds(monkeypatch):
    from stadyn.graph import _runner
    built = []
    original = _runner.build_plan
    monkeypatch.setattr(_runner, "build_plan",
                        lambda *a, **k: built.append(1) or original(*a, **k))
    return built


def _input(seed, shape=(2, 3), dtype=np.float32):
    x = sd.Variable(shape)
    x.data = torch.from_numpy(np.random.RandomState(seed).randn(*shape).astype(dtype))
    return x


def _evaluate(y):
    with torch.no_grad():
        y.forward()
    return y.d.copy()


def test_a_graph_evaluated_once_runs_eagerly_and_is_lowered_when_run_again(builds):
    x = _input(0, (4, 5))
    w = sd.Variable.from_numpy_array(np.random.RandomState(1).randn(5, 3).astype(np.float32))
    y = F.sum(F.tanh(F.affine(x, w)), axis=1)
    first = _evaluate(y)
    assert (len(builds), type(y._plan)) == (0, TrialPlan)
    np.testing.assert_allclose(first, np.tanh(x.d @ w.d).sum(axis=1), rtol=1e-5)
    second = _evaluate(y)
    assert (len(builds), type(y._plan)) == (1, StaticPlan)
    np.testing.assert_array_equal(second, first)        # the plan's results, bit for bit
    _evaluate(y)
    assert len(builds) == 1


def test_graphs_alike_evaluated_once_each_are_lowered_once(builds):
    kinds, values = [], []
    for seed in range(5):       # new roots on new leaves, a constant of another value each time
        x = _input(seed)
        c = sd.Variable.from_numpy_array(np.full((2, 3), seed, np.float32))
        y = F.relu(x * 2.0 + c)
        values.append((_evaluate(y), np.maximum(x.d * 2 + seed, 0)))
        kinds.append(type(y._plan))
    assert kinds == [TrialPlan] + [StaticPlan] * 4
    assert len(builds) == 1
    for got, want in values:
        np.testing.assert_allclose(got, want, rtol=1e-6)


# Each graph differs from ``relu(x * 2 + 1)`` on a (2, 3) float32 input in one respect: not the
# same structure, so its first evaluation runs eagerly (no build) and gives its own value.
@pytest.mark.parametrize("shape, dtype, other, want", [
    ((2, 3), np.float32, lambda x: F.relu(x * 3.0 + 1.0), lambda x: np.maximum(x * 3 + 1, 0)),
    ((4, 3), np.float32, lambda x: F.relu(x * 2.0 + 1.0), lambda x: np.maximum(x * 2 + 1, 0)),
    ((2, 3), np.float64, lambda x: F.relu(x * 2.0 + 1.0), lambda x: np.maximum(x * 2 + 1, 0)),
    ((2, 3), np.float32, lambda x: F.tanh(x * 2.0 + 1.0), lambda x: np.tanh(x * 2 + 1)),
], ids=["attribute", "shape", "dtype", "op"])
def test_a_graph_of_another_structure_is_not_given_the_plan_of_the_first(builds, shape, dtype,
                                                                          other, want):
    for seed in range(3):
        _evaluate(F.relu(_input(seed) * 2.0 + 1.0))
    assert len(builds) == 1
    x = _input(9, shape, dtype)
    y = other(x)
    got = _evaluate(y)
    assert (len(builds), type(y._plan), got.dtype) == (1, TrialPlan, dtype)
    np.testing.assert_allclose(got, want(x.d), rtol=1e-6)
    np.testing.assert_array_equal(_evaluate(y), got)   # lowered on its second run: the same
    assert (len(builds), type(y._plan)) == (2, StaticPlan)


def test_the_global_generators_draws_go_on_from_the_eager_run_into_the_plan(builds):
    sd.seed(5)
    y = F.rand(shape=(2, 3))
    static = [_evaluate(y) for _ in range(3)]
    assert len(builds) == 1                   # eager, then lowered
    sd.seed(5)
    want = [torch.rand(2, 3).numpy() for _ in range(3)]
    for got, expected in zip(static, want):
        np.testing.assert_array_equal(got, expected)


def test_a_random_op_of_its_own_seed_is_lowered_at_once_and_goes_on_drawing_its_stream(builds):
    y = F.rand(shape=(2, 3), seed=7)
    draws = [_evaluate(y) for _ in range(2)]
    assert len(builds) == 1 and isinstance(y._plan, StaticPlan)
    stream = torch.Generator().manual_seed(7)
    for got in draws:
        np.testing.assert_array_equal(got, torch.rand(2, 3, generator=stream).numpy())


def test_an_evaluation_in_the_training_phase_is_not_given_the_inference_plan(builds):
    def graph(seed):
        return F.dropout(_input(seed, (50, 40)) + 0.0, p=0.5, train_only=True)

    for seed in range(2):
        with sd.training(False):
            y = graph(seed)
            np.testing.assert_array_equal(_evaluate(y), y.parent.inputs[0].d)   # identity
    assert len(builds) == 1
    with sd.training(True):
        y = graph(2)
        got = _evaluate(y)
    x = y.parent.inputs[0].d
    kept = got != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_allclose(got[kept], 2 * x[kept], rtol=1e-6)


def test_a_grad_op_evaluated_without_gradients_gives_its_gradient_run_eagerly(builds):
    x = sd.Variable.from_numpy_array(np.array([1.0, 3.0]), need_grad=True)
    (g,) = sd.grad([F.sum(x * x)], [x])
    assert _evaluate(g).tolist() == [2.0, 6.0]
    assert isinstance(g._plan, TrialPlan) and g._plan.saved is None
    # a new shape of its lowered graph runs eagerly too (a trial: graph/_runner.py)
    assert _evaluate(g).tolist() == [2.0, 6.0] and isinstance(g._plan, StaticPlan)
    x.data = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64, requires_grad=True)
    assert _evaluate(g).tolist() == [2.0, 4.0, 8.0]
    assert isinstance(g._plan, TrialPlan) and g.data.grad_fn is None


def test_a_cntk_evaluation_of_new_functions_of_two_structures_builds_each_once(builds):
    import stadyn.compat.cntk as C
    x = C.input_variable(3)
    data = np.array([[-1.0, 0.5, 2.0]], np.float32)
    for i in range(10):
        f = C.relu(x * 2 + 1) if i % 2 else C.tanh(x)
        want = np.maximum(data * 2 + 1, 0) if i % 2 else np.tanh(data)
        np.testing.assert_allclose(f.eval({x: data}), want, rtol=1e-6)
        assert len(builds) == (0 if i < 2 else 1 if i < 3 else 2)


def test_a_graph_that_runs_eagerly_anyway_is_built_once_and_runs_new_shapes_as_trials(builds):
    from stadyn.graph import EagerPlan, OpSpec, apply
    spec = OpSpec.from_function(lambda t: t * 2, 1, name="twice_untraced", traceable=False)
    x = _input(0)
    y = apply(spec, (x,), {})
    kinds = []
    for _ in range(2):
        np.testing.assert_array_equal(_evaluate(y), 2 * x.d)
        kinds.append(type(y._plan))
    assert kinds == [TrialPlan, EagerPlan] and len(builds) == 1
    x.data = torch.ones(4, 3)
    np.testing.assert_array_equal(_evaluate(y), np.full((4, 3), 2.0, np.float32))
    assert type(y._plan) is TrialPlan and len(builds) == 1   # no build for another shape


def test_a_forward_no_backward_can_follow_runs_eagerly_first_with_gradients_on(builds):
    """NNabla's ``forward()`` runs with gradients on; a graph none of whose leaves needs a
    gradient (a prediction from a fixed network, a metric) is an evaluation all the same."""
    assert torch.is_grad_enabled()
    x = _input(0, (4, 5))
    w = sd.Variable.from_numpy_array(np.random.RandomState(1).randn(5, 3).astype(np.float32))
    y = F.sum(F.tanh(F.affine(x, w)), axis=1)
    y.forward()
    first = y.d.copy()
    assert (len(builds), type(y._plan), y._plan.saved) == (0, TrialPlan, None)   # no autograd
    np.testing.assert_allclose(first, np.tanh(x.d @ w.d).sum(axis=1), rtol=1e-5)
    y.forward()
    assert (len(builds), type(y._plan)) == (1, StaticPlan)
    np.testing.assert_array_equal(y.d, first)          # the plan's results, bit for bit
    w.need_grad = True                    # a backward may follow now: lowered at once
    z = F.sum(F.tanh(F.affine(_input(2, (4, 5)), w)), axis=1)
    z.forward()
    assert (len(builds), type(z._plan), z._plan.has_backward) == (2, StaticPlan, True)


def test_build_runs_0_lowers_a_first_evaluation_at_once(builds, monkeypatch):
    from stadyn.graph import _runner
    monkeypatch.setattr(_runner, "BUILD_RUNS", 0)
    x = _input(0)
    y = F.relu(x * 2.0 + 1.0)
    got = _evaluate(y)
    assert (len(builds), type(y._plan)) == (1, StaticPlan)
    np.testing.assert_allclose(got, np.maximum(x.d * 2 + 1, 0), rtol=1e-6)


def test_a_clearing_eager_run_lets_each_value_go_once_its_last_reader_ran():
    """A trial run under ``clear_buffer`` (a first evaluation here) holds what a plan's program
    holds: the values it keeps, and those a later op still reads, not every intermediate until
    the run ends (peak memory).  An op of the chain counts the values of the ops before it
    still alive when it runs."""
    import weakref
    from stadyn.graph import OpSpec, apply
    made, alive = [], []

    def step(t):
        alive.append(sum(ref() is not None for ref in made))
        out = t * 1.5
        made.append(weakref.ref(out))
        return out

    spec = OpSpec.from_function(step, 1, name="counting_step")
    x = _input(0, (64, 64))
    h = x
    for _ in range(8):
        h = apply(spec, (h,), {})
    y = F.sum(h)
    made.clear()
    alive.clear()                          # (the graph's definition inferred a shape)
    with torch.no_grad():
        y.forward(clear_buffer=True)
    assert isinstance(y._plan, TrialPlan)
    assert alive == [0] + [1] * 7          # only the step's own input (was 0, 1, 2, ..., 7)
    np.testing.assert_allclose(float(y.d), float(x.d.sum()) * 1.5 ** 8, rtol=1e-5)

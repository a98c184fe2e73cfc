"""A graph rebuilt with the same structure (new roots, new or the same leaves) replays the plan
built for the first one (``graph/_plan_reuse.py``), with its own leaves bound: its own values and
gradients.  A graph that differs in any op, attribute, wiring, kept value or leaf signature gets
a build of its own.  Builds are counted at ``_runner.build_plan``; values are checked against
NumPy."""

import weakref

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
from stadyn.graph import StaticPlan, Subgraph, TrialPlan


@pytest.fixture
def builds(monkeypatch):
    from stadyn.graph import _runner
    built = []
    original = _runner.build_plan
    monkeypatch.setattr(_runner, "build_plan",
                        lambda *a, **k: built.append(1) or original(*a, **k))
    return built


def _leaves(seed, shape=(2, 3)):
    rng = np.random.RandomState(seed)
    x = sd.Variable.from_numpy_array(rng.randn(*shape).astype(np.float32))
    w = sd.Variable.from_numpy_array(rng.randn(*shape).astype(np.float32), need_grad=True)
    return x, w


def _loss(x, w, scale=2.0):
    h = F.tanh(x * w)
    return F.sum(h * h) * scale, h


def _expected(x, w, scale=2.0):
    t = np.tanh(x * w)
    return scale * (t * t).sum(), t, scale * 2 * t * (1 - t * t) * x


def test_graphs_built_alike_from_other_leaves_share_one_build_with_their_own_values(builds):
    runs = []
    for seed in range(3):
        x, w = _leaves(seed)
        loss, h = _loss(x, w)
        loss.forward()
        loss.backward()
        runs.append((x, w, loss, h))
    assert len(builds) == 1
    for x, w, loss, h in runs:               # each graph kept its own values and gradients
        value, t, grad = _expected(x.d, w.d)
        assert isinstance(loss._plan, StaticPlan)
        np.testing.assert_allclose(float(loss.d), value, rtol=1e-5)
        np.testing.assert_allclose(h.d, t, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w.g, grad, rtol=1e-4, atol=1e-6)
    x, w, loss, _ = runs[0]                  # and replays its own plan afterwards
    w.g = 0
    loss.forward()
    loss.backward()
    np.testing.assert_allclose(w.g, _expected(x.d, w.d)[2], rtol=1e-4, atol=1e-6)
    assert len(builds) == 1


def test_a_graph_rebuilt_on_the_same_leaves_each_iteration_builds_once(builds):
    x, w = _leaves(0)
    for step in range(4):                    # as MAML's tasks: new roots on the same leaves
        w.g = 0
        loss, _ = _loss(x, w)
        loss.forward()
        loss.backward()
        np.testing.assert_allclose(w.g, _expected(x.d, w.d)[2], rtol=1e-4, atol=1e-6)
        w.d = w.d - 0.1 * w.g
    assert len(builds) == 1


@pytest.mark.parametrize("other", [
    lambda x, w: _loss(x, w, scale=3.0)[0],            # another attribute value
    lambda x, w: _loss(x, w, scale=-0.0)[0],           # -0.0 is not 0.0
    lambda x, w: F.sum(F.tanh(w * x) * F.tanh(x * w)),  # other wiring (the operands swapped)
    lambda x, w: F.sum(F.sigmoid(x * w) ** 2) * 2.0,    # another op
    lambda x, w: _loss(x, x, scale=2.0)[0],            # the same leaf twice: other positions
])
def test_a_graph_of_another_structure_gets_its_own_build(builds, other):
    x, w = _leaves(0)
    _loss(x, w, scale=0.0)[0].forward()
    loss = other(*_leaves(1))
    loss.forward()
    if not any(v.need_grad for v in Subgraph([loss]).leaves):   # x twice: no backward
        assert isinstance(loss._plan, TrialPlan)     # its first run eager, not the first's plan
        loss.forward()
    assert len(builds) == 2


def test_what_a_forward_keeps_and_the_leaf_signature_are_part_of_the_structure(builds):
    x, w = _leaves(0)
    loss, h = _loss(x, w)
    loss.forward()
    x2, w2 = _leaves(1)
    loss2, h2 = _loss(x2, w2)
    h2.persistent = True                     # another set of kept values
    loss2.forward(clear_buffer=True)
    assert len(builds) == 2
    x3, w3 = _leaves(2, shape=(5, 3))        # another leaf shape
    _loss(x3, w3)[0].forward()
    x4 = sd.Variable.from_numpy_array(np.ones((2, 3), np.float32))
    loss4 = _loss(x4, sd.Variable.from_numpy_array(np.ones((2, 3), np.float32)))[0]
    loss4.forward()                          # no leaf needs a gradient: eager first, ...
    assert len(builds) == 3
    loss4.forward()
    assert len(builds) == 4                  # ... then a forward-only plan
    np.testing.assert_allclose(h2.d, np.tanh(x2.d * w2.d), rtol=1e-5)


def test_a_graph_defined_before_its_leaf_was_resized_gets_the_shapes_of_its_run(builds):
    x, w = _leaves(0, shape=(4, 3))
    _loss(x, w)[0].forward(clear_buffer=True)
    x2, w2 = _leaves(1, shape=(2, 3))
    loss, h = _loss(x2, w2)                  # defined on 2 rows, run on 4
    h = weakref.ref(h)                       # not held: its value is not kept (_held_values.py)
    x2.data = torch.ones(4, 3)
    w2.data = torch.full((4, 3), 0.5, requires_grad=True)
    loss.forward(clear_buffer=True)          # h's value is not kept: its shape must still be
    assert len(builds) == 1 and h().shape == (4, 3)
    np.testing.assert_allclose(float(loss.d), _expected(np.ones((4, 3)), 0.5)[0], rtol=1e-5)


def test_an_op_holding_a_function_is_not_shared(builds):
    from stadyn.graph import OpSpec, apply
    spec = OpSpec.from_function(lambda x, f: f(x), 1, name="apply_held")
    values = []
    for seed, scale in enumerate([1.0, 2.0]):
        x, w = _leaves(seed)
        held = (lambda t, k=scale: t * k)               # a function: not keyed by value
        y = F.sum(apply(spec, (x * w,), {"f": held}))
        y.forward()
        values.append((float(y.d), float((x.d * w.d).sum() * scale)))
    assert len(builds) == 2
    for got, want in values:
        assert got == pytest.approx(want, rel=1e-5)


def test_graphs_rebuilt_alike_under_clear_no_need_grad_share_the_values_kept_for_backward(
        builds):
    """A clearing forward keeps the values its backward reads beyond those it fills, and its
    backward program returns the persistent intermediates' gradients (a choice made again when
    ``persistent`` changes): a plan shared by a rebuilt graph binds those values of its own
    graph and the programs' inputs stay in step (the shared plan once passed the kept values
    to a backward built for fewer)."""
    for seed in range(3):
        x, w = _leaves(seed)
        h = F.tanh(x * w)
        loss = F.sum(F.sigmoid(h) * h)
        loss.forward(clear_no_need_grad=True)
        h.persistent = seed == 2         # the third backward keeps h's gradient too
        w.g = 0
        loss.backward(clear_buffer=True)
        t = np.tanh(x.d * w.d)
        s = 1 / (1 + np.exp(-t))
        dh = s * (1 - s) * t + s
        np.testing.assert_allclose(w.g, dh * (1 - t * t) * x.d, rtol=1e-4, atol=1e-6)
        if seed == 2:
            np.testing.assert_allclose(h.g, dh, rtol=1e-4, atol=1e-6)
    assert len(builds) == 1


def _decayed_sum(x, w, decay):
    """A recurrence whose step reads a parameter: ``h_t = decay * h_{t-1} + tanh(x_t * w)``."""
    (y,) = sd.sequence.recurrence(lambda h, u: h * decay + F.tanh(u * w), [x], [0.0], [(2,)])
    return F.sum(y)


def _sequences(seed):
    rng = np.random.RandomState(seed)
    return [rng.randn(n, 2).astype(np.float32) for n in (3, 1)]


def _decayed_sum_expected(seqs, w, decay):
    total = 0.0
    for s in seqs:
        h = np.zeros(2)
        for u in s:
            h = decay * h + np.tanh(u * w)
            total += h.sum()
    return total


def test_graphs_holding_a_recurrence_rebuilt_alike_share_one_build(builds, monkeypatch):
    """A recurrence's step is a graph of its own (an attribute of the op): keyed by its
    structure, a graph rebuilt with an equal step (a greedy decoder read again, an attention
    exposed from its step at every call) replays the first one's plan; a step of another
    structure (another attribute inside it) gets a build of its own.  (Each graph is lowered
    at its first forward here: by default a graph holding a loop runs eagerly first.)"""
    from stadyn.graph import _runner
    monkeypatch.setattr(_runner, "BUILD_RUNS", 0)
    w = sd.Variable.from_numpy_array(np.array([0.5, -1.0], np.float32))
    for seed in range(3):
        x = sd.sequence.input_variable(2)
        loss = _decayed_sum(x, w, 0.5)
        x.d = _sequences(seed)
        loss.forward()
        assert float(loss.d) == pytest.approx(
            _decayed_sum_expected(_sequences(seed), w.d, 0.5), rel=1e-5)
    assert len(builds) == 1
    x = sd.sequence.input_variable(2)
    other = _decayed_sum(x, w, 0.25)
    x.d = _sequences(0)
    other.forward()
    assert len(builds) == 2
    assert float(other.d) == pytest.approx(_decayed_sum_expected(_sequences(0), w.d, 0.25),
                                           rel=1e-5)


@pytest.mark.parametrize("seed, shared", [(-1, True), (np.int64(-1), True), (np.int32(-1), True),
                                          (7, False)])
def test_a_dropout_of_the_global_generator_is_shared_however_its_seed_is_written(
        builds, seed, shared):
    # -1 (the global generator) as a Python or a NumPy integer: the graphs share one build;
    # a seed of its own starts a generator per graph (not shared)
    for k in range(3):
        x, w = _leaves(k)
        y = F.sum(F.dropout(x * w, 0.5, seed=seed))
        y.forward()
    assert len(builds) == (1 if shared else 3)

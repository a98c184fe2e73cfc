"""The sequence axis (``stadyn.sequence``, ``graph/_sequence.py``): padded values with lengths.

The independent expectation throughout: a minibatch of ragged sequences gives, per sequence,
exactly what that sequence gives alone (a minibatch of one, no padding) -- values and
gradients -- and whatever finite values the padded steps hold changes nothing.  Static and
dynamic graphs agree.
"""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
from stadyn.graph import topological_nodes

RNG = np.random.default_rng(3)
SEQS = [RNG.standard_normal((n, 3)).astype(np.float32) for n in (3, 1, 5)]


def _model(x):
    """Dense per step, a tanh recurrence, attention (sequence softmax), max, last, past and
    future values, a slice and a broadcast: every sequence op on one value."""
    h = L.Dense(4, activation=F.tanh, name="d")(x)
    (r,) = sd.sequence.recurrence(lambda s, u: F.tanh(s * 0.5 + u), [h], [0.1], [(4,)])
    (b,) = sd.sequence.recurrence(lambda s, u: F.tanh(s * 0.3 - u), [h], [0.0], [(4,)],
                                  go_backwards=True)
    att = sd.sequence.softmax(F.sum(r * b, axis=2, keepdims=True))
    pooled = sd.sequence.reduce_sum(att * h)
    ctx = sd.sequence.broadcast_as(pooled, h)
    shifted = sd.sequence.past_value(h, 0.5) + sd.sequence.future_value(h, -0.5, 2)
    tail = sd.sequence.slice(shifted * ctx, 1, 0)
    return (F.sum(sd.sequence.reduce_max(r + b)) + F.sum(sd.sequence.last(r))
            + F.sum(sd.sequence.first(b)) + F.sum(sd.sequence.reduce_sum(tail)))


def _run(seqs, dynamic, garbage=None):
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.seed(11)
        x = sd.sequence.input_variable(3, need_grad=True)
        x.d = seqs
        if garbage is not None:               # feeding pads with 0: write something else
            data = x.d
            for b, s in enumerate(seqs):
                data[b, len(s):] = garbage
        with sd.auto_forward(dynamic):
            loss = _model(x)
        if not dynamic:
            loss.forward()
        loss.backward()
        grads = {k: v.g.copy() for k, v in sd.get_parameters().items()}
        return float(loss.d), x.g.copy(), grads


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_a_ragged_minibatch_gives_what_each_sequence_gives_alone(dynamic):
    loss, xg, grads = _run(SEQS, dynamic, garbage=7.0)
    alone = [_run([s], dynamic) for s in SEQS]
    assert loss == pytest.approx(sum(a[0] for a in alone), rel=1e-5)
    for b, (s, a) in enumerate(zip(SEQS, alone)):
        np.testing.assert_allclose(xg[b, :len(s)], a[1][0], rtol=1e-5, atol=1e-6)
        assert (xg[b, len(s):] == 0).all()          # no gradient reaches a padded step
    for k in grads:
        np.testing.assert_allclose(grads[k], sum(a[2][k] for a in alone), rtol=1e-4,
                                   atol=1e-5)


def test_static_and_dynamic_graphs_agree():
    """To fp32 rounding: the static program sums gradients in another order."""
    s, d = _run(SEQS, False), _run(SEQS, True)
    assert s[0] == pytest.approx(d[0], rel=1e-6)
    np.testing.assert_allclose(s[1], d[1], rtol=1e-5, atol=1e-6)
    for k in s[2]:
        np.testing.assert_allclose(s[2][k], d[2][k], rtol=1e-5, atol=1e-6)


def test_a_static_graph_takes_minibatches_of_other_lengths():
    x = sd.sequence.input_variable(1)
    y = sd.sequence.reduce_sum(x * 2.0)
    for seqs in ([np.ones((2, 1)), np.ones((4, 1))], [np.ones((1, 1))] * 3):
        x.d = seqs
        y.forward()
        assert y.d.ravel().tolist() == [2.0 * len(s) for s in seqs]


def test_feeding_lists_and_reading_them_back():
    x = sd.sequence.input_variable((2,))
    x.d = [np.ones((2, 2)), np.full((3, 2), 2.0)]
    assert x.shape == (2, 3, 2) and x.sequence_lengths.d.tolist() == [2, 3]
    y = F.tanh(x)
    assert y.sequence_lengths is x.sequence_lengths       # element-wise ops keep the axis
    assert sd.sequence.last(y).sequence_lengths is None   # reductions over it drop it
    y.forward()
    back = sd.sequence.unpack_value(y)
    assert [b.shape for b in back] == [(2, 2), (3, 2)]
    np.testing.assert_allclose(back[1], np.tanh(np.full((3, 2), 2.0)), rtol=1e-6)


def test_bad_sequences_are_one_clear_error():
    x = sd.sequence.input_variable((2,))
    with pytest.raises(sd.ShapeError, match=r"sequence 1 has shape \(3, 4\).*\(2,\)"):
        x.d = [np.ones((2, 2)), np.ones((3, 4))]
    with pytest.raises(sd.ShapeError, match="sequence.last: .* no sequence axis"):
        sd.sequence.last(sd.Variable((2, 3)))
    with pytest.raises(sd.ShapeError, match="at least one sequence"):
        x.d = []
    with pytest.raises(sd.ShapeError, match=r"returns state 0 of shape \(3,\)"):
        sd.sequence.recurrence(
            lambda h, u: F.concatenate(h, F.slice(u, (0, 0), (1, 1)), axis=1), [x], [0.0],
            [(2,)])


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_gather_then_scatter_puts_each_taken_step_back(dynamic):
    """Independent expectation: the steps with a positive first feature, per sequence, cut
    from the fed arrays with NumPy (and back in place, 0 elsewhere)."""
    x = sd.sequence.input_variable(3, need_grad=True)
    x.d = SEQS
    with sd.auto_forward(dynamic):
        cond = F.greater_scalar(F.slice(x, (0, 0, 0), (None, None, 1)), 0.0)
        g = sd.sequence.gather(x, cond)
        back = sd.sequence.scatter(g * 2.0, cond)
        loss = F.sum(sd.sequence.reduce_sum(back))
    if not dynamic:
        loss.forward()
    loss.backward()
    taken = [s[s[:, 0] > 0] for s in SEQS]
    assert [a.tolist() for a in sd.sequence.unpack_value(g)] == [t.tolist() for t in taken]
    for s, b in zip(SEQS, sd.sequence.unpack_value(back)):
        np.testing.assert_array_equal(b, np.where(s[:, :1] > 0, 2.0 * s, 0.0))
    for b, s in enumerate(SEQS):
        np.testing.assert_array_equal(x.g[b, :len(s)], np.where(s[:, :1] > 0, 2.0, 0.0) + 0 * s)
        assert (x.g[b, len(s):] == 0).all()


def test_counts_past_the_padded_length_lengthen_the_new_axis():
    """The new axis is as long as the longest new sequence, whatever the condition's padded
    length (CNTK's where sizes its layout from the counts)."""
    c = sd.sequence.input_variable(())
    y = sd.sequence.where(c)
    c.d = [np.array([3.0, 1.0]), np.array([1.0])]      # 4 steps from a minibatch padded to 2
    y.forward()
    assert y.shape == (2, 4)
    assert [s.tolist() for s in sd.sequence.unpack_value(y)] == [[0.0, 0.0, 0.0, 1.0], [0.0]]
    c.d = [np.array([0.0, 1.0]), np.array([0.0])]      # the second takes no step
    with pytest.raises(sd.ShapeError, match=r"sequence_where: .* sequence 1 .* takes no step"):
        y.forward()


def test_where_and_gather_run_eagerly_in_a_static_graph_sized_by_every_minibatch():
    """The new axis's length is read from the counts, so the static plan runs eagerly; a later
    minibatch of the same padded length whose counts make a longer sequence just runs."""
    from stadyn.graph import EagerPlan
    x = sd.sequence.input_variable(1, need_grad=True)
    c = sd.sequence.input_variable(())
    g = sd.sequence.gather(x, c)
    loss = F.sum(sd.sequence.reduce_sum(g * g))
    x.d = [np.array([[1.0], [2.0], [3.0]]), np.array([[4.0]])]
    c.d = [np.array([1.0, 0.0, 1.0]), np.array([1.0])]
    loss.forward()
    loss.backward()
    assert isinstance(loss._plan, EagerPlan)
    assert float(loss.d) == 1.0 + 9.0 + 16.0
    np.testing.assert_array_equal(x.g[:, :, 0], [[2.0, 0.0, 6.0], [8.0, 0.0, 0.0]])
    c.d = [np.array([1.0, 1.0, 2.0]), np.array([1.0])]         # 4 steps of a padded 3
    x.g = 0.0
    loss.forward()
    loss.backward()
    assert float(loss.d) == 1.0 + 4.0 + 2 * 9.0 + 16.0
    np.testing.assert_array_equal(x.g[:, :, 0], [[2.0, 4.0, 12.0], [8.0, 0.0, 0.0]])


def test_the_lstm_bench_workload_and_its_torch_twin_compute_the_same_loss():
    """The twin (nn.LSTM on packed sequences, CNTK's gates reordered) is the same network."""
    from stadyn.bench import WORKLOADS
    from stadyn.bench._sequence_workload import lstm_classifier
    assert WORKLOADS["lstm"].hidden == 256 and WORKLOADS["lstm"].embedding == 64
    w = lstm_classifier(batch_size=6, vocab=50, embedding=8, hidden=16, min_length=1,
                        max_length=9)
    losses = [w.stadyn_case("static").first_loss, w.stadyn_case("dynamic").first_loss,
              w.torch_case("eager").first_loss]
    assert losses[0] == pytest.approx(losses[2], rel=1e-5)
    assert losses[1] == pytest.approx(losses[2], rel=1e-5)


def _lstm_run(dynamic, backwards, fused):
    """One LSTM recurrence's values and gradients; ``fused=False`` takes the step-by-step
    path (``return_full_state`` does)."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.seed(5)
        x = sd.sequence.input_variable(3, need_grad=True)
        x.d = SEQS
        with sd.auto_forward(dynamic):
            layer = L.Recurrence(L.LSTM(4), go_backwards=backwards, initial_state=0.3,
                                 return_full_state=not fused)
            out = layer(x)
            h = out if fused else out[0]
            loss = F.sum(sd.sequence.reduce_sum(h * F.tanh(h)))
        if not dynamic:
            loss.forward()
        loss.backward()
        names = {n.spec.name for n in topological_nodes([loss])}
        grads = {k: v.g.copy() for k, v in sd.get_parameters().items()}
        return float(loss.d), x.g.copy(), grads, names


@pytest.mark.parametrize("backwards", [False, True], ids=["forwards", "backwards"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_a_plain_lstm_recurrence_runs_fused_with_the_step_by_step_numbers(dynamic, backwards):
    fused, steps = _lstm_run(dynamic, backwards, True), _lstm_run(dynamic, backwards, False)
    assert "cntk_lstm_sequence" in fused[3] and "cntk_lstm_sequence" not in steps[3]
    assert fused[0] == pytest.approx(steps[0], rel=1e-5)
    np.testing.assert_allclose(fused[1], steps[1], rtol=1e-4, atol=1e-6)
    for k in steps[2]:
        np.testing.assert_allclose(fused[2][k], steps[2][k], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("reduce", ["last", "first", "reduce_sum", "reduce_max"])
def test_a_reduced_sequence_has_no_sequence_axis_even_when_its_width_is_the_padded_length(
        dynamic, reduce):
    """(B, H) with H equal to the longest sequence looked like (batch, steps) and kept the axis:
    a Dense layer after it then failed to build."""
    x = sd.sequence.input_variable(4)
    steps = [np.arange(n * 4, dtype=np.float32).reshape(n, 4) + i for i, n in
             enumerate([4, 4, 1, 2])]
    x.d = steps
    expect = {"last": lambda s: s[-1], "first": lambda s: s[0],
              "reduce_sum": lambda s: s.sum(0), "reduce_max": lambda s: s.max(0)}[reduce]
    dense = L.Dense(3, init=np.ones((4, 3), np.float32))
    if dynamic:
        with sd.auto_forward():
            y = getattr(sd.sequence, reduce)(x)
            z = dense(y)
    else:
        y = getattr(sd.sequence, reduce)(x)
        z = dense(y)
        z.forward()
    assert y.sequence_lengths is None
    reduced = np.stack([expect(s) for s in steps])
    np.testing.assert_allclose(z.d, reduced.sum(1, keepdims=True).repeat(3, 1), rtol=1e-6)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_a_state_takes_the_shape_the_step_gives_it(dynamic):
    """CNTK infers a loop's shapes to a fixed point (tests/compat's
    ``Recurrence__state_takes_the_steps_rank`` holds it to CNTK 2.7): a step that makes its
    ``(3,)`` state ``(1, 1, 3)`` runs on a ``(1, 1, 3)`` state, and a per-sequence initial
    state of ``(3,)`` is reshaped to it.  Independent expectation: the loop in NumPy."""
    x = sd.sequence.input_variable(3)
    h0 = sd.Variable.from_numpy_array(np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -1.0]],
                                               np.float32))
    x.d = [np.arange(6.0).reshape(2, 3), np.arange(3.0).reshape(1, 3)]
    with sd.auto_forward(dynamic):
        (y,) = sd.sequence.recurrence(lambda h, u: h * 0.5 + F.reshape(u, (-1, 1, 1, 3)),
                                      [x], [h0], [(3,)])
        if not dynamic:
            y.forward()
    assert y.shape[2:] == (1, 1, 3)
    seqs = [np.arange(6.0).reshape(2, 3), np.arange(3.0).reshape(1, 3)]
    for seq, init, got in zip(seqs, h0.d, sd.sequence.unpack_value(y)):
        h, want = init, []
        for u in seq:
            h = h * 0.5 + u
            want.append(h)
        np.testing.assert_allclose(got.reshape(len(seq), 3), np.array(want), rtol=1e-6)


def test_a_state_shape_that_never_settles_is_one_clear_error():
    x = sd.sequence.input_variable((2,))
    with pytest.raises(sd.ShapeError, match=r"returns state 0 of shape \(3,\), but the state "
                                            r"has shape \(2,\).*: \(4,\), \(5,\)"):
        sd.sequence.recurrence(
            lambda h, u: F.concatenate(h, F.slice(u, (0, 0), (1, 1)), axis=1), [x], [0.0],
            [(2,)])

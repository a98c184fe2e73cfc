"""Which sequence axis an op's outputs have is part of the op's declaration
(``@op(..., sequence=...)``), not a guess from shapes.  The guess -- "an output whose first two
axes equal an input's (batch, padded length) keeps its axis" -- gave a ``(B, H)`` value the
axis whenever ``H`` happened to equal the padded length, and in a static graph (a sequence
input is ``(1, 1, ...)`` until fed) whenever ``H`` was 1.  Each case below fails on the guess:
a Dense layer after the value builds over the wrong axes, a sequence op accepts a value that
has no steps, the Trainer counts steps instead of sequences, a reloaded model file gives a
value the wrong axis."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
from stadyn._errors import ShapeError
from stadyn.graph import Subgraph
from stadyn.ops import CATALOG
from stadyn.solvers import Sgd
from stadyn.train import Trainer

MODES = pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])


def _steps(lengths, width=4, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, width)).astype(np.float32) for n in lengths]


def _build(dynamic, make):
    if dynamic:
        with sd.auto_forward():
            return make()
    out = make()
    for v in (out if isinstance(out, tuple) else (out,)):
        v.forward()
    return out


# ---- direct calls of the catalog's sequence reductions -------------------------------------------

REDUCTIONS = {
    "sequence_reduce_sum": lambda s: s.sum(0), "sequence_reduce_max": lambda s: s.max(0),
    "sequence_first": lambda s: s[0], "sequence_last": lambda s: s[-1],
}


@MODES
@pytest.mark.parametrize("op", sorted(REDUCTIONS))
def test_a_direct_call_of_a_sequence_reduction_gives_no_sequence_axis(dynamic, op):
    """F.sequence_* called directly (the Trainer, the fused layers and file loading do): the
    (B, H) result with H equal to the padded length, then a Dense layer."""
    x = sd.sequence.input_variable(4)
    steps = _steps([4, 2, 4, 1])
    x.d = steps
    dense = L.Dense(3, init=np.arange(12, dtype=np.float32).reshape(4, 3))
    y, z = _build(dynamic, lambda: (lambda r: (r, dense(r)))(
        getattr(F, op)(x, x.sequence_lengths)))
    assert y.sequence_lengths is None
    want = np.stack([REDUCTIONS[op](s) for s in steps]) @ np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(z.d, want, rtol=1e-5, atol=1e-5)


# ---- generic ops over axis 0 or 1 ----------------------------------------------------------------

@MODES
@pytest.mark.parametrize("make", [
    lambda x: F.sum(x, axis=1), lambda x: F.max(x, axis=1), lambda x: F.mean(x, axis=(0, 1)),
    lambda x: F.transpose(x, (0, 2, 1)), lambda x: F.split(x, axis=1)[0],
    lambda x: F.slice(x, start=(0, 1, 0), stop=(4, 4, 4)), lambda x: F.flip(x, axes=[1]),
    lambda x: F.affine(F.reshape(x, (4, 16)), sd.Variable.from_numpy_array(
        np.ones((16, 4), np.float32))),
    lambda x: F.einsum(x, equation="bti->bi"),
    lambda x: F.batch_matmul(x, x, transpose_a=True), lambda x: F.top_k_data(x, 4),
    lambda x: F.softmax_cross_entropy(x, sd.Variable.from_numpy_array(
        np.zeros((4, 1, 4), np.int64)), axis=1),
], ids=["sum-steps", "max-steps", "mean-batch-steps", "transpose-steps", "split-steps",
        "slice-steps", "flip-steps", "reshape-affine", "einsum-over-steps",
        "batch-matmul-transposed", "top-k-over-steps", "classes-on-axis-1"])
def test_an_op_over_the_step_axis_gives_no_sequence_axis_when_shapes_coincide(dynamic, make):
    """(B, T, H) with B == T == H == 4: each op's output has leading axes (4, 4) that are not
    (batch, steps); a sequence op given it must refuse it."""
    x = sd.sequence.input_variable(4)
    x.d = _steps([4, 2, 3, 1])
    y = _build(dynamic, lambda: make(x))
    assert y.sequence_lengths is None
    with pytest.raises(ShapeError, match="no sequence axis"):
        sd.sequence.reduce_sum(y)


@MODES
@pytest.mark.parametrize("make", [
    lambda x: F.sum(x, axis=2, keepdims=True), lambda x: F.transpose(x, (0, 1, 2)),
    lambda x: F.reshape(x, (4, 4, 2, 2)), lambda x: F.slice(x, start=(0, 0, 1), stop=(4, 4, 3)),
    lambda x: F.einsum(x, sd.Variable.from_numpy_array(np.ones((4, 2), np.float32)),
                       equation="bti,ij->btj"),
    lambda x: F.stack(x, x, axis=2), lambda x: F.split(x, axis=2)[1],
    lambda x: F.affine(x, sd.Variable.from_numpy_array(np.ones((4, 2), np.float32)),
                       base_axis=2),
    lambda x: F.cumsum(x, axis=2), lambda x: F.tanh(x) * 2.0,
], ids=["sum-sample", "transpose-identity", "reshape-sample", "slice-sample", "einsum-sample",
        "stack-sample", "split-sample", "affine-base-axis-2", "cumsum-sample", "elementwise"])
def test_an_op_over_the_sample_axes_keeps_the_sequence_axis(dynamic, make):
    x = sd.sequence.input_variable(4)
    steps = _steps([4, 2, 3, 1])
    x.d = steps
    y = _build(dynamic, lambda: make(x))
    assert y.sequence_lengths is x.sequence_lengths
    assert [len(s) for s in sd.sequence.unpack_value(y)] == [4, 2, 3, 1]


def test_an_embedding_lookup_of_a_sequence_of_ids_is_on_the_ids_axis():
    ids = sd.sequence.input_variable((), dtype=np.int64)
    table = sd.Variable.from_numpy_array(np.arange(12, dtype=np.float32).reshape(6, 2))
    with sd.auto_forward():
        ids.d = [np.array([1, 2, 3]), np.array([5])]
        y = F.gather(table, ids, axis=0)
    assert y.sequence_lengths is ids.sequence_lengths
    assert [s.tolist() for s in sd.sequence.unpack_value(y)] == [
        [[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]], [[10.0, 11.0]]]


def test_a_declaration_names_an_input_or_output_the_op_has():
    assert CATALOG["sequence_softmax"].sequence == "lengths:lengths"
    assert CATALOG["sequence_slice"].sequence == ("lengths:output1", "drop")
    assert CATALOG["sequence_softmax"].sets_sequence_axis
    assert not CATALOG["tanh"].sets_sequence_axis
    from stadyn.graph import OpSpec

    def f(x, lengths):
        return x
    with pytest.raises(TypeError, match="sequence='lengths:n' is not one of"):
        OpSpec.from_function(f, 2, sequence="lengths:n")
    with pytest.raises(TypeError, match="not one of"):
        OpSpec.from_function(f, 2, sequence="keeps")


# ---- the Trainer: a per-sequence criterion counts sequences --------------------------------------

@MODES
def test_a_trainer_with_a_per_sequence_criterion_counts_sequences(dynamic):
    """The criteria reduce each sequence with F.sequence_reduce_sum/max; (B, H) with H equal to
    the padded length looked like a sequence, and the test's sample count became the steps."""
    x = sd.sequence.input_variable(4)
    steps = _steps([4, 2, 4, 1])
    x.d = steps

    def make():
        with sd.parameter_registry(sd.ParameterRegistry()):
            z = L.Dense(4, init=np.eye(4, dtype=np.float32))(x)
            loss = F.sequence_reduce_sum(F.squared_error(z, F.constant(0.5, (1, 1, 4))),
                                         x.sequence_lengths)
            metric = F.sequence_reduce_max(F.abs(z), x.sequence_lengths)
            solver = Sgd(lr=0.0)
            solver.set_parameters(sd.get_parameters())
            return loss, metric, Trainer(z, (loss, metric), [solver])
    if dynamic:
        with sd.auto_forward():
            loss, metric, trainer = make()
    else:
        loss, metric, trainer = make()
    assert loss.sequence_lengths is None and metric.sequence_lengths is None
    trainer.train_minibatch({x: steps})
    want = sum(((s - 0.5) ** 2).sum() for s in steps)
    np.testing.assert_allclose(trainer.previous_minibatch_loss_average
                               * trainer.previous_minibatch_sample_count, want, rtol=1e-5)
    # a per-sequence metric counts sequences (a per-step one would count the 11 steps)
    average = trainer.test_minibatch({x: steps})
    assert trainer.previous_test_sample_count == 4
    np.testing.assert_allclose(average * 4, sum(np.abs(s).max(0).sum() for s in steps),
                               rtol=1e-5)


# ---- fused recurrent layers ----------------------------------------------------------------------

@MODES
@pytest.mark.parametrize("step", ["LSTM", "GRU", "RNNStep"])
def test_a_fused_recurrence_with_input_width_equal_to_the_padded_length(dynamic, step):
    """The fused layers read the input width of a whole sequence (its shape only: they no
    longer make an unused F.sequence_first node for it); with it equal to the padded length the
    step's weights are still (input, gates) and the output is on x's axis, from the fused op's
    declaration."""
    kind = {"LSTM": "lstm", "GRU": "gru", "RNNStep": "rnn"}[step]
    x = sd.sequence.input_variable(4)
    x.d = _steps([4, 3, 4, 2])
    cell = getattr(L, step)(3, activation=F.tanh) if step == "RNNStep" else getattr(L, step)(3)
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.seed(1)
        h = _build(dynamic, lambda: L.Recurrence(cell)(x))
        weights = {k.split("/")[-1]: tuple(p.shape) for k, p in sd.get_parameters().items()}
    assert weights["W"][0] == 4
    assert h.sequence_lengths is x.sequence_lengths
    assert [n.spec.name for n in Subgraph([h]).nodes if n.spec.name != "constant"] == [
        f"cntk_{kind}_sequence"]                          # initial states are constants


# ---- model files ---------------------------------------------------------------------------------

def test_a_reloaded_model_gives_its_values_the_declared_axes(tmp_path):
    """Nodes rebuilt from a file get their axes from the declarations: the (B, H) last step
    with H equal to the padded length has none (a Dense layer after it builds), a sliced
    sequence keeps its new lengths (its padded length differs from the input's)."""
    x = sd.sequence.input_variable(4)
    x.d = _steps([4, 2, 4, 1])
    last = sd.sequence.last(F.tanh(x))
    tail = sd.sequence.slice(x, 1, 0) * 2.0
    sd.save(tmp_path / "m.stadyn", {"last": last, "tail": tail}, {"x": x})
    net = sd.load(tmp_path / "m.stadyn")
    assert net.outputs["last"].sequence_lengths is None
    assert net.outputs["tail"].sequence_lengths is not None
    assert net.outputs["tail"].sequence_lengths is not net.inputs["x"].sequence_lengths
    z = L.Dense(2, init=np.ones((4, 2), np.float32))(net.outputs["last"])
    u = sd.sequence.reduce_sum(net.outputs["tail"])      # over the sliced lengths
    data = _steps([3, 4, 1, 2], seed=3)
    net.inputs["x"].d = data
    F.sink(z, u).forward()
    np.testing.assert_allclose(z.d, np.stack([np.tanh(s[-1]).sum() for s in data])[:, None]
                               .repeat(2, 1), rtol=1e-5)
    np.testing.assert_allclose(u.d, np.stack([2 * s[1:].sum(0) for s in data]), rtol=1e-5,
                               atol=1e-6)


# ---- a step's reshape that writes no size of (B, T) into the graph -------------------------------

@MODES
def test_reshape_trailing_keeps_the_sequence_and_serves_every_minibatch(dynamic):
    """F.reshape_trailing(x, shape, base_axis=2) of a sequence: the result keeps the axis and
    the lengths, and the static graph built for one minibatch runs others (batch size and padded
    length both changed) with each step reshaped on its own; base_axis=1 leaves no axis."""
    x = sd.sequence.input_variable(6)
    x.d = _steps([3, 1], width=6)
    y = _build(dynamic, lambda: F.reshape_trailing(x, (2, 3), base_axis=2))
    assert y.sequence_lengths is not None and y.shape == (2, 3, 2, 3)
    flat = _build(dynamic, lambda: F.reshape_trailing(x, (-1,), base_axis=1))
    assert getattr(flat, "sequence_lengths", None) is None
    for lengths in ([3, 1], [2, 5, 4]):
        steps = _steps(lengths, width=6, seed=len(lengths))
        x.d = steps
        if dynamic:
            with sd.auto_forward():
                y = F.reshape_trailing(x, (2, 3), base_axis=2)
        else:
            y.forward()
        got = sd.sequence.unpack_value(y)
        assert [g.shape for g in got] == [(n, 2, 3) for n in lengths]
        for g, s in zip(got, steps):
            np.testing.assert_array_equal(g, s.reshape(-1, 2, 3))

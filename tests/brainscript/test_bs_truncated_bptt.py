"""Truncated back-propagation through time (HTKMLFReader ``truncated = true``): the reader's
minibatches (``io.TruncatedUtteranceSource``) against cntk.exe's baseline log of
Tests/EndToEndTests/Speech/LSTM/Truncated, and the recurrent state carried from minibatch to
minibatch (``brainscript._state_carry``) against the whole utterance run at once (forward) and
against a gradient computed by hand that stops at the minibatch's edge."""

from __future__ import annotations

import io as pyio
import re
import types

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
from stadyn import io
from stadyn._errors import ConfigError
from stadyn.brainscript import StadynLibrary, build_network, run
from stadyn.brainscript._state_carry import StateCarry
from stadyn.graph import Subgraph, forward_all
from stadyn.train import evaluate_sums
from stadyn.io._deserializer import pad_sequences
from cntk_repo_files import cntk_file
from test_bs_legacy_readers import SPEECH, quick_e2e  # noqa: F401 (a fixture)


class _Utterances(io.Deserializer):
    """Sequences of given lengths of random steps of ``dim`` values."""

    def __init__(self, lengths, dim=1, seed=0):
        rng = np.random.default_rng(seed)
        self.values = [rng.standard_normal((n, dim)).astype("f4") for n in lengths]
        self.dim = dim

    def __len__(self):
        return len(self.values)

    def sequence_lengths(self):
        return np.array([len(v) for v in self.values])

    def stream_specs(self):
        return {"x": io.StreamSpec((self.dim,), np.dtype("f4"), is_sequence=True)}

    def read_batch(self, ids, rngs):
        return {"x": pad_sequences([self.values[i] for i in ids], (self.dim,), np.dtype("f4"))}


def _rows(source, epoch, size, steps):
    source.start_epoch(epoch, size, steps)
    out = []
    while mb := source.next_minibatch(steps):
        layout = source.layout
        out.append([(s, int(n), b, g) for s, n, b, g in zip(
            layout.streams, mb["x"].lengths, layout.begins, layout.goes_on)])
    return out


def test_truncated_minibatches_by_hand():
    # utterances 5, 3, 4 frames in file order, two streams, 2 frames a minibatch (cntk.exe's
    # HTKMLFReader.cpp, truncated path, by hand):
    # 1: u0[0:2] u1[0:2]; 2: u0[2:4], u1[2:3] then u2 begins in the same stream, u2[0:1];
    # 3: u0[4:5] (the iterator is done: the stream stays empty), u2[1:3]; 4: u2[3:4]
    source = io.TruncatedUtteranceSource(_Utterances([5, 3, 4]), 2, randomize=False)
    assert _rows(source, 0, 12, 2) == [
        [(0, 2, True, True), (1, 2, True, True)],
        [(0, 2, False, True), (1, 1, False, False), (1, 1, True, True)],
        [(0, 1, False, False), (1, 2, False, True)],
        [(1, 1, False, False)]]
    # an utterance shorter than the room left: the rest of the minibatch is a gap and the
    # stream takes the next utterance in the next minibatch (cntk.exe's "WARNING: Packing a
    # second utterance did still not fill all time slots")
    source = io.TruncatedUtteranceSource(_Utterances([4, 1, 3]), 1, randomize=False)
    assert _rows(source, 0, 8, 3) == [[(0, 3, True, True)],
                                      [(0, 1, False, False), (0, 1, True, False)],
                                      [(0, 3, True, False)]]


def _truncated_log() -> tuple[list[list[int]], list[int]]:
    log = cntk_file(f"{SPEECH}/LSTM/Truncated/baseline.cpu.txt").decode("utf-8", "replace")
    groups = [[int(n) for n in re.findall(rf"Epoch\[ {e} of 4\]-Minibatch\[.*?\* (\d+);", log)]
              for e in (1, 2, 3, 4)]
    epochs = [int(n) for n in re.findall(r"Finished Epoch\[ \d of 4\]: \[Training\] ce = "
                                          r"\S+ \* (\d+)", log)]
    return groups, epochs


def test_truncated_epochs_are_cntk_exes(quick_e2e):  # noqa: F811
    # Speech/LSTM/Truncated: 32 streams of 20 frames, epochs of 20480 frames: the samples of
    # each 10 minibatches cntk.exe logged and of each epoch, from the script file's lengths
    groups, epochs = _truncated_log()
    assert epochs == [20498, 20514, 20598, 20376]
    lengths = [b - a + 1 for a, b in quick_e2e["ranges"]]
    source = io.TruncatedUtteranceSource(_Utterances(lengths), 32)
    for epoch, logged in enumerate(groups):
        counts = [sum(n for _, n, _, _ in rows) for rows in _rows(source, epoch, 20480, 20)]
        assert max(counts) == 640
        tens = [sum(counts[k:k + 10]) for k in range(0, len(counts), 10)]
        assert tens[:len(logged)] == logged       # (cntk.exe left out the last, partial, line)
        assert sum(counts) == epochs[epoch]


# ---------------------------------------------------------------------------------------------
# the state carried over
# ---------------------------------------------------------------------------------------------
def _network(text):
    with sd.parameter_registry(sd.ParameterRegistry()):
        return build_network(text, StadynLibrary())


def _pieces_run(net, out, source, steps, epoch_size, loss=None, param=None):
    """Run ``out`` over every truncated minibatch with the state carried: per utterance (in the
    order they begin) its input and output steps joined; with ``loss``, also the gradient of
    ``param`` per minibatch."""
    x = net.nodes["x"]
    carry = StateCarry([out] if loss is None else [loss], source)
    source.start_epoch(0, epoch_size, steps)
    open_, done, grads = {}, [], []
    while mb := source.next_minibatch(steps):
        pieces = mb["x"].as_sequences()
        x.d = pieces
        carry.before()
        forward_all([out] + ([] if loss is None else [loss]) + carry.wanted())
        if loss is not None:
            param.g = 0
            loss.backward()
            grads.append((source.layout, float(param.g.sum())))
        carry.after(True)
        ys = sd.sequence.unpack_value(out)
        layout = source.layout
        for piece, y, stream, begins in zip(pieces, ys, layout.streams, layout.begins):
            if begins:
                open_[stream] = ([], [])
                done.append(open_[stream])
            open_[stream][0].append(piece)
            open_[stream][1].append(np.asarray(y))
    return [(np.concatenate(a), np.concatenate(b)) for a, b in done], grads


LSTM = """{ x = Input {2}
    z = DenseLayer {3} (RecurrentLSTMLayer {4} (x))
}"""


def _python_layers():
    # a GRU (the fused kernel) and a plain recurrent step (the recurrence op) of Stadyn's
    # layers, as a model file loaded with BS.Network.Load may hold them
    x = sd.sequence.input_variable(2)
    with sd.parameter_registry(sd.ParameterRegistry()):
        z = L.Recurrence(L.GRU(3))(x) + L.Recurrence(L.RNNStep(3))(x)
    return types.SimpleNamespace(nodes={"x": x, "z": z})


@pytest.mark.parametrize("make", [lambda: _network(LSTM), _python_layers],
                         ids=["brainscript_lstm", "gru_and_rnn"])
def test_carried_state_equals_the_whole_utterance_forward(make):
    # BrainScript's LSTM layer (the fused kernel: two states, h and c), three streams of 4
    # frames: each utterance cut into pieces over minibatches gives the outputs it gives run
    # whole
    lengths = [9, 3, 6, 2, 11, 5, 4, 7]
    source = io.TruncatedUtteranceSource(_Utterances(lengths, 2), 3, randomize=False)
    net = make()
    z = net.nodes["z"]
    utterances, _ = _pieces_run(net, z, source, 4, sum(lengths))
    assert sorted(len(u) for u, _ in utterances) == sorted(lengths)
    cut = 0
    for inputs, outputs in utterances:
        net.nodes["x"].d = [inputs]
        z.forward()
        whole = sd.sequence.unpack_value(z)[0]
        np.testing.assert_allclose(outputs, whole, rtol=1e-5, atol=1e-6)
        cut += len(inputs) > 4
    assert cut >= 4          # (most utterances did go on over minibatches)
    # without the carry (every piece afresh) the outputs differ: the test can tell
    net.nodes["x"].d = [utterances[0][0][4:8]]
    z.forward()
    assert not np.allclose(sd.sequence.unpack_value(z)[0], utterances[0][1][4:8], atol=1e-3)


LOOP = """{ x = Input {1}
    a = ParameterTensor {1, initValue = 0.5}
    h = x + a .* PastValue (1, h, defaultHiddenActivation = 0.25)
}"""


def test_carried_state_and_a_gradient_that_stops_at_the_minibatch_edge():
    # a BrainScript loop (the recurrence op): h[t] = x[t] + a h[t-1], h[-1] = 0.25 where an
    # utterance begins, the stream's last h of the previous minibatch where it goes on; the
    # gradient of sum(h) by a, by hand, with the carried h a number (no gradient through it)
    lengths = [7, 2, 5, 9, 3]
    source = io.TruncatedUtteranceSource(_Utterances(lengths), 2, randomize=False)
    net = _network(LOOP)
    h, a = net.nodes["h"], net.nodes["a"]
    loss = F.sum(h)
    utterances, grads = _pieces_run(net, h, source, 3, sum(lengths), loss, a)
    assert sorted(len(u) for u, _ in utterances) == sorted(lengths)
    last: dict[int, float] = {}
    rate = 0.5
    source.start_epoch(0, sum(lengths), 3)
    expected = []
    while mb := source.next_minibatch(3):
        layout, total = source.layout, 0.0
        for piece, stream, begins, goes_on in zip(mb["x"].as_sequences(), layout.streams,
                                                  layout.begins, layout.goes_on):
            state, slope = (0.25 if begins else last[stream]), 0.0
            for value in piece[:, 0]:
                slope = state + rate * slope          # d h[t] / d a
                state = value + rate * state
                total += slope
            if goes_on:
                last[stream] = state
        expected.append(total)
    np.testing.assert_allclose([g for _, g in grads], expected, rtol=1e-5)
    # the forward values: the whole utterances' (their first frame: x + 0.25 a)
    for inputs, outputs in utterances:
        state, hand = 0.25, []
        for value in inputs[:, 0]:
            state = value + rate * state
            hand.append(state)
        np.testing.assert_allclose(outputs[:, 0], hand, rtol=1e-5, atol=1e-6)


def test_speech_lstm_truncated_trains_cntk_exes_minibatches(quick_e2e, monkeypatch,  # noqa: F811
                                                           tmp_path):
    # Speech/LSTM/Truncated's own config and command line (its regression-test LSTM, written as
    # BrainScript loops, made small; the edit action saves it and the train command loads it,
    # so the loops' cell states are outputs nobody reads): the logged sample counts of every
    # 10 minibatches and of each epoch, the rate per sample (0.5 per 20 frames x 32 streams)
    # and the momentum's line are cntk.exe's (the AN4 features are stand-ins: not the losses)
    text = cntk_file(f"{SPEECH}/LSTM/cntk.cntk").decode()
    for old, new in (("innerCellDim  = 1024", "innerCellDim  = 5"),
                     ("hiddenDim     = 256", "hiddenDim     = 3"),
                     ("numLSTMLayers = 3 ", "numLSTMLayers = 1 ")):
        assert old in text
        text = text.replace(old, new)
    config = tmp_path / "lstm.cntk"
    config.write_text(text)
    monkeypatch.chdir(quick_e2e["data"])
    log = pyio.StringIO()
    run(str(config), [f"DataDir={quick_e2e['data']}", f"RunDir={tmp_path}", "DeviceId=-1",
                      "speechTrain=[SGD=[momentumAsTimeConstant=0:6074.9]]", "modelSelector=0",
                      "speechTrain=[SGD=[maxEpochs=2]]"], out=log)
    ours = log.getvalue()
    groups, epochs = _truncated_log()
    for epoch in (1, 2):
        logged = [int(n) for n in re.findall(
            rf"Epoch\[ {epoch} of 2\]-Minibatch\[.*?\* (\d+);", ours)]
        assert logged == groups[epoch - 1]
    assert [int(n) for n in re.findall(r"Finished Epoch\[ \d of 2\]: \[Training\] ce = \S+ "
                                        r"\* (\d+)", ours)] == epochs[:2]
    baseline = cntk_file(f"{SPEECH}/LSTM/Truncated/baseline.cpu.txt").decode("utf-8", "replace")
    for line in ("Starting Epoch 1: learning rate per sample = 0.000781  effective momentum = "
                 "0.000000  momentum as time constant = 0.0 samples",
                 "Starting Epoch 2: learning rate per sample = 0.000781  effective momentum = "
                 "0.900025  momentum as time constant = 6076.0 samples"):
        assert line in baseline and line in ours


def test_what_cannot_carry_its_state_is_refused_at_the_first_minibatch_that_needs_it():
    # a FutureValue loop needs the next minibatch's frames (cntk.exe: "The delay node tries to
    # access future values that are out of bound"); a PastValue of a whole sequence (outside a
    # loop) cannot take the previous minibatch's frames here
    for text, words in [
            ("{ x = Input {1} ; h = x + FutureValue (1, h, defaultHiddenActivation = 0) }",
             "a FutureValue loop .* needs the frames of the next minibatch"),
            ("{ x = Input {1} ; h = x + PastValue (1, x, defaultHiddenActivation = 0) }",
             "a PastValue outside a recurrence loop cannot carry its state")]:
        net = _network(text)
        source = io.TruncatedUtteranceSource(_Utterances([5, 2]), 1, randomize=False)
        with pytest.raises(ConfigError, match=words):
            _pieces_run(net, net.nodes["h"], source, 3, 7)


def test_read_whole_a_truncated_readers_utterances_are_one_a_sequence():
    # cvReader/test/eval/write read a truncated reader's utterances whole (make_source without
    # pieces): the values the pieces give with the state carried (the whole utterances, by
    # hand), whatever the minibatch size -- utterance mode's joining of utterances shorter than
    # the request into one sequence would run the loop across them
    lengths = [7, 2, 5, 9, 3]
    net = _network(LOOP)
    h, x = net.nodes["h"], net.nodes["x"]
    expected = 0.0
    for values in _Utterances(lengths).values:
        state = 0.25
        for value in values[:, 0]:
            state = value + 0.5 * state
            expected += state
    for size in (3, 20):
        source = io.UtteranceSource(_Utterances(lengths), 2, randomize=False, join_short=False)
        got = evaluate_sums([F.sum(h)], source, {x: "x"}, minibatch_size=size)
        assert got["samples"] == sum(lengths)
        np.testing.assert_allclose(got["sums"], [expected], rtol=1e-5)


@pytest.mark.parametrize("text", [LSTM, LOOP], ids=["fused_lstm", "recurrence_loop"])
def test_one_plan_runs_every_minibatch_while_the_state_carries(text, monkeypatch):
    # the leaves carrying the state are spliced in at the first step and stay while the steps
    # run (their values are the plan's inputs): minibatches of one shape run the plan built
    # for the first (splicing them in and out around each step rewired the graph, and the
    # runner built a plan per minibatch); BUILD_RUNS = 0 lowers the loop's graph at once
    from stadyn.graph import _runner
    built = []
    original = _runner.build_plan
    monkeypatch.setattr(_runner, "build_plan",
                        lambda *a, **k: built.append(1) or original(*a, **k))
    monkeypatch.setattr(_runner, "BUILD_RUNS", 0)
    net = _network(text)
    x, out = net.nodes["x"], net.nodes["z" if text is LSTM else "h"]
    source = io.TruncatedUtteranceSource(_Utterances([8] * 6, x.shape[-1]), 2, randomize=False)
    carry = StateCarry([out], source)
    built_as = [n.spec.name for n in Subgraph([out]).nodes]
    source.start_epoch(0, 48, 4)
    plans, goes_on = [], []
    while mb := source.next_minibatch(4):
        x.d = mb["x"].as_sequences()
        carry.before()
        forward_all([out] + carry.wanted())
        carry.after(True)
        plans.append(out._plan)
        goes_on.append(any(source.layout.goes_on))
    assert len(plans) == 6 and goes_on == [True, False] * 3
    assert all(p is plans[0] for p in plans) and len(built) == 1
    assert [n.spec.name for n in Subgraph([out]).nodes] != built_as
    carry.release()             # (the graph as built again: the first plan no longer runs)
    assert [n.spec.name for n in Subgraph([out]).nodes] == built_as
    out.forward()
    assert out._plan is not plans[0]

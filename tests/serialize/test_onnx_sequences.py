"""ONNX export of sequence networks: CNTK-style models over ragged sequences (an LSTM
classifier, a GRU/RNN tagger, going backwards too) exported with their lengths as a graph input,
run by onnxruntime on the same padded minibatch (and on another minibatch of the same padded
length), and read back by Stadyn's ONNX import -- all three give Stadyn's outputs.  A sequence
op ONNX cannot express fails the export with one error naming the op and why."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
from stadyn.serialize import ExportError, to_onnx_model

RNG = np.random.default_rng(4)


def _seqs(lengths):
    return [RNG.standard_normal((n, 3)).astype(np.float32) for n in lengths]


def _classifier(x):
    return L.Dense(2)(sd.sequence.last(L.Recurrence(L.LSTM(5))(x)))


def _tagger(x):
    fwd = L.Recurrence(L.GRU(4))(x)
    bwd = L.Recurrence(L.RNNStep(4, activation=F.relu), go_backwards=True)(x)
    h = F.concatenate(fwd, bwd, axis=2)
    tags = sd.sequence.softmax(L.Dense(3)(h))
    return sd.sequence.reduce_sum(tags) + L.Dense(3)(sd.sequence.reduce_max(h)
                                                     + sd.sequence.first(h))


def _backwards_lstm(x):
    h = L.Recurrence(L.LSTM(4), go_backwards=True, initial_state=0.2)(x)
    return sd.sequence.reduce_sum(h * h)


def _run_ort(model, x, n):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x, "n": n})[0]


@pytest.mark.parametrize("build", [_classifier, _tagger, _backwards_lstm],
                         ids=["lstm-classifier", "gru-rnn-tagger", "lstm-backwards"])
def test_a_sequence_network_exports_and_runs_in_onnxruntime(build):
    x = sd.sequence.input_variable(3)
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.seed(2)
        y = build(x)
    x.d = _seqs([3, 1, 5, 2])
    with sd.training(False):
        y.forward()
    expected = y.d.copy()
    model = to_onnx_model(y, {"x": x, "n": x.sequence_lengths})
    ops = {n.op_type for n in model.graph.node}
    assert ops & {"LSTM", "GRU", "RNN"}
    got = _run_ort(model, x.d, x.sequence_lengths.d)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    # another minibatch of the same padded length (and another batch size)
    x.d = _seqs([5, 4, 1])
    with sd.training(False):
        y.forward()
    np.testing.assert_allclose(_run_ort(model, x.d, x.sequence_lengths.d), y.d, rtol=1e-4,
                               atol=1e-5)
    # Stadyn reads it back
    net = sd.import_onnx(to_onnx_model(y, {"x": x, "n": x.sequence_lengths},
                                       dynamic_batch=False))
    (back,) = net(x=x.d, n=x.sequence_lengths.d).values()
    np.testing.assert_allclose(back, y.d, rtol=1e-5, atol=1e-6)


def test_a_sequence_op_onnx_cannot_express_is_one_clear_error():
    x = sd.sequence.input_variable(3)
    y = sd.sequence.reduce_sum(sd.sequence.past_value(x))
    x.d = _seqs([2, 3])
    with pytest.raises(ExportError, match=r"op 'past_value'.*no dynamic sequence axis"):
        to_onnx_model(y, {"x": x, "n": x.sequence_lengths})

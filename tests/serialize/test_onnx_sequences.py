"""ONNX export of sequence networks: CNTK-style models over ragged sequences (an LSTM
classifier, a GRU/RNN tagger, going backwards too) exported with their lengths as a graph input,
run by onnxruntime on the same padded minibatch (and on another minibatch of the same padded
length), and read back by Stadyn's ONNX import -- all three give Stadyn's outputs.  A sequence
op ONNX cannot express fails the export with one error naming the op and why."""

from __future__ import annotations

import os

import numpy as np
import onnxruntime as ort
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
from stadyn.serialize import ExportError, load_cntk, to_onnx_model

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


_LEGACY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "legacy")


def _run_ort_feed(model, feed):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feed)


@pytest.mark.parametrize("name,keys", [
    ("cntk_seq_conv.model", None),           # (every output)
    ("cntk_seq_bn.model", ["image_out", "vector_out"]),
    ("cntk_seq_new_axes.model", ["unpacked", "unpacked_UnpackSequenceMask", "padded"])],
    ids=["conv-per-step", "batch-norm-per-step", "sequence-unpack"])
def test_a_loaded_cntk_network_with_sequence_outputs_exports_and_runs_in_onnxruntime(name, keys):
    """A loaded CNTK network's sequence outputs are zero-padded through sequence_unpack, and
    sequence.unpack is an op of such files: both export (Where, the mask as numbers) and
    onnxruntime gives Stadyn's values (which the compat cases check against CNTK 2.7)."""
    net = load_cntk(os.path.join(_LEGACY, name))
    for x in net.inputs.values():
        x.d = [RNG.standard_normal((n,) + tuple(x.shape[2:])).astype(np.float32) + 0.5
               for n in (3, 1, 5)]
    keys = list(net.outputs) if keys is None else keys
    outs = {k: net.outputs[k] for k in keys}
    with sd.training(False):
        sd.forward_all(list(outs.values()))
    feed = {k: x.d for k, x in net.inputs.items()}
    feed.update({f"{k}_lengths": x.sequence_lengths.d for k, x in net.inputs.items()})
    model = to_onnx_model(outs, {**net.inputs, **{f"{k}_lengths": x.sequence_lengths
                                                  for k, x in net.inputs.items()}})
    got = _run_ort_feed(model, feed)
    for k, value in zip(keys, got):
        np.testing.assert_allclose(value, outs[k].d, rtol=1e-5, atol=1e-6, err_msg=k)
    assert outs[keys[0]].d.shape[:2] == (3, 5)


def test_a_loaded_cntk_network_making_a_new_sequence_axis_is_refused_naming_the_op():
    net = load_cntk(os.path.join(_LEGACY, "cntk_seq_new_axes.model"))
    x = net.inputs["x"]
    with pytest.raises(ExportError, match=r"op 'to_sequence' in scope 'ToSequenceOp\d+' has no "
                                          r"ONNX export mapping: .*no dynamic sequence axis"):
        to_onnx_model(dict(net.outputs), {"x": x, "n": x.sequence_lengths})

"""Exporting a sequence model given only its sequence input (``{"x": x}``) to a format with no
sequence axis.  The lengths are data: stored as a constant they fixed the file to the
minibatch the graph last ran (an ONNX model or ``.nnp`` that gave other numbers for other
lengths, silently).  ONNX now gets them as an input of the file, ``x_lengths``; ``.nnp`` (whose
readers run with whatever an unfed input holds) refuses with one error saying how to give
them, and given so the file reads back right for other lengths."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
from stadyn.serialize import ExportError, to_onnx_model

RNG = np.random.default_rng(7)


def _seqs(lengths, width=3):
    return [RNG.standard_normal((n, width)).astype(np.float32) for n in lengths]


def _run(model, feeds):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def _model():
    x = sd.sequence.input_variable(3)
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.seed(5)
        h = L.Recurrence(L.GRU(4))(x)
        y = L.Dense(2)(sd.sequence.reduce_sum(h) + sd.sequence.last(h))
    return x, y


@pytest.mark.parametrize("inputs", ["given", "automatic"])
def test_onnx_takes_the_lengths_of_a_sequence_input_as_an_input_of_its_own(inputs):
    x, y = _model()
    x.d = _seqs([3, 5, 1, 2])
    y.forward()
    model = to_onnx_model(y, {"x": x} if inputs == "given" else None)
    names = [i.name for i in model.graph.input]
    assert names == ["x", "x_lengths"]
    # other lengths of the same padded length, and another batch size: the original's numbers
    for lengths in ([5, 2, 2, 4], [1, 5, 3]):
        x.d = _seqs(lengths)
        y.forward()
        got = _run(model, {"x": x.d, "x_lengths": np.array(lengths, np.int64)})
        np.testing.assert_allclose(got, y.d, rtol=1e-4, atol=1e-5)
    # and Stadyn's own ONNX import reads it back the same
    net = sd.import_onnx(to_onnx_model(y, {"x": x}, dynamic_batch=False))
    (back,) = net(x=x.d, x_lengths=x.sequence_lengths.d).values()
    np.testing.assert_allclose(back, y.d, rtol=1e-5, atol=1e-6)


def test_onnx_keeps_lengths_given_under_a_name_of_their_own_and_refuses_a_clash():
    x, y = _model()
    x.d = _seqs([2, 3])
    model = to_onnx_model(y, {"x": x, "n": x.sequence_lengths})
    assert [i.name for i in model.graph.input] == ["x", "n"]
    other = sd.Variable((2, 2))
    z = y + other
    with pytest.raises(ExportError, match="'x_lengths', but another input has that name"):
        to_onnx_model(z, {"x": x, "x_lengths": other})


def _mean_of_steps():
    """The mean of each sequence's steps from ops NNabla has (padded steps are 0)."""
    x = sd.sequence.input_variable(3)
    return x, F.div2(F.sum(x, axis=1), F.reshape(x.sequence_lengths, (-1, 1)))


def test_nnp_refuses_to_store_the_lengths_as_a_constant(tmp_path):
    x, y = _mean_of_steps()
    x.d = _seqs([3, 1])
    with pytest.raises(ExportError, match=r"input 'x' is a sequence input, and NNabla's \.nnp "
                                          r"has no sequence axis.*'x_lengths': x\.sequence_len"):
        sd.save_nnp(tmp_path / "m.nnp", {"y": y}, {"x": x})


def test_nnp_with_the_lengths_as_an_input_reads_back_right_for_other_lengths(tmp_path):
    x, y = _mean_of_steps()
    x.d = _seqs([3, 1])
    sd.save_nnp(tmp_path / "m.nnp", {"y": y}, {"x": x, "x_lengths": x.sequence_lengths})
    net = sd.load(tmp_path / "m.nnp")
    assert list(net.inputs) == ["x", "x_lengths"]
    data = _seqs([2, 3])
    x.d = data
    got = net(x=x.d, x_lengths=np.array([2, 3]))["y"]
    np.testing.assert_allclose(got, np.stack([s.mean(0) for s in data]), rtol=1e-5)

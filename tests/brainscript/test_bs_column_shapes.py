"""A ``[n x 1]`` value where a ``[n]`` one is expected, as cntk.exe takes it.

cntk.exe's criteria compare sample shapes with ``TensorShape::IsElementwiseCompatibleWith``
(Source/Common/Include/TensorShape.h: a dimension one shape lacks counts as 1), so labels
``[132]`` go with an output ``[132 x 1]``; a delay takes its input's shape whatever dimensions
it was given (RecurrentNodes.cpp, ``DelayedValueNodeBase::Validate``: ``ValidateUnaryMap``), so
``PastValue (256, h)`` of an ``h`` that is ``[256 x 1]`` is ``[256 x 1]``.  CNTK's
Speech/HTKDeserializers/LSTM/FullUtterance and Speech/LSTM/cntk.kaldi.cntk configs read their
features as ``[1 x 363]`` and transpose them to ``[363 x 1]``, which makes every LSTM value
``[n x 1]``; they stopped with "the delay ... has dimensions (256,) but the value it delays has
(256, 1)" and now build with cntk.exe's 87 parameter tensors (test_bs_param_paths.py).
"""

from __future__ import annotations

import numpy as np

import stadyn as sd
from stadyn.brainscript import StadynLibrary, build_network
from stadyn.train import feed

LENGTHS = (3, 1, 4)


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def test_a_delay_of_a_column_value_runs_the_recurrence():
    # h is [2 x 1] (W * [3 x 1]); the delay, given no dimensions, is fixed at [2] by the first
    # Times that reads it, before h is known
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ t = DynamicAxis {} ; f = Input {(1:3), dynamicAxis = t}
            x = Transpose (f)
            W = ParameterTensor {(2:3), initValue = 0.5} ; H = ParameterTensor {(2:2)}
            h = Sigmoid (W * x + H * PastValue (0, h)) }""", StadynLibrary())
        rng = np.random.RandomState(3)
        H = rng.uniform(-1, 1, (2, 2)).astype(np.float32)
        net.nodes["H"].d = H
        xs = [rng.randn(n, 3, 1).astype(np.float32) for n in LENGTHS]    # [1 x 3] steps
        net.nodes["f"].d = xs
        y = net.nodes["h"]
        y.forward()
        got = sd.sequence.unpack_value(y)
    for seq, out in zip(xs, got):
        h, want = np.full(2, 0.1), []
        for x in seq[:, :, 0].astype(np.float64):
            h = _sigmoid(x @ np.full((3, 2), 0.5) + h @ H)
            want.append(h)
        np.testing.assert_allclose(np.reshape(out, (len(seq), 2)), want, rtol=1e-5)


def test_labels_go_with_a_column_output_in_the_criteria():
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ f = Input {(1:3)} ; labels = Input {3}
            z = Transpose (f)
            ce = CrossEntropyWithSoftmax (labels, z)
            err = ClassificationError (labels, z) }""", StadynLibrary())
        z = np.array([[[1.0], [3.0], [2.0]], [[0.5], [0.1], [0.2]]], np.float32)  # [1 x 3]
        labels = np.eye(3, dtype=np.float32)[[1, 2]]
        feed(net.nodes["f"], z)
        feed(net.nodes["labels"], labels)
        ce, err = net.nodes["ce"], net.nodes["err"]
        ce.forward()
        err.forward()
        zz = z[:, :, 0].astype(np.float64)
        logp = zz - np.log(np.exp(zz).sum(1, keepdims=True))
        np.testing.assert_allclose(ce.d.reshape(-1), -logp[[0, 1], [1, 2]], rtol=1e-5)
        np.testing.assert_array_equal(err.d.reshape(-1), [0, 1])


def test_a_sample_against_a_parameter_of_more_axes_broadcasts_per_sample():
    # x [3] + p [3 x 2]: CNTK pads x to [3 x 1] and gives [3 x 2] per sample (CNTK 2.7's
    # engine, `C.input_variable(3) + C.parameter((2, 3))`: (batch, 2, 3)); aligned from the
    # right, as before, the batch axis met p's rows (batch 2 paired sample b with row b)
    for text in ("{ x = Input {3} ; p = ParameterTensor {(3:2)} ; z = x + p }",
                 "{ x = Input {3} ; p = ParameterTensor {(3:2)} ; z = p .* x }"):
        with sd.parameter_registry(sd.ParameterRegistry()):
            net = build_network(text, StadynLibrary())
        x, p, z = net.nodes["x"], net.nodes["p"], net.nodes["z"]
        p.d = np.arange(6, dtype="f4").reshape(2, 3) + 1
        for batch in (2, 4):
            xs = np.arange(batch * 3, dtype="f4").reshape(batch, 3) * 10
            feed(x, xs)
            z.forward()
            op = np.add if "+" in text else np.multiply
            np.testing.assert_allclose(z.d, op(xs[:, None, :], p.d[None]), err_msg=text)


def test_a_non_sequence_against_a_sequence_is_the_same_at_every_step():
    # z = x + Last (x): each step of a sequence plus that sequence's last step; aligned from
    # the right, the batch axis met the steps (two sequences of two steps mixed them)
    seqs = [np.arange(6, dtype="f4").reshape(2, 3), np.arange(6, dtype="f4").reshape(2, 3) + 100]
    for text in ("{ x = Input {3} ; z = x + BS.Sequences.Last (x) }",
                 "{ x = Input {3} ; z = x + Reshape (BS.Sequences.Last (x), (3:1)) }"):
        with sd.parameter_registry(sd.ParameterRegistry()):
            net = build_network(text, StadynLibrary())
        x, z = net.nodes["x"], net.nodes["z"]
        x.d = seqs
        z.forward()
        for got, s in zip(sd.sequence.unpack_value(z), seqs):
            np.testing.assert_allclose(np.asarray(got).reshape(s.shape), s + s[-1], err_msg=text)


def test_a_sample_against_a_parameter_of_unit_axes_keeps_its_batch():
    # x [3] + p [3 x 1 x 1]: per sample [3 x 1 x 1] in CNTK 2.7 (`C.input_variable(3) +
    # C.parameter((1, 1, 3))`, then reduce_sum: 3 and 12 for [0 1 2], [3 4 5]); aligned from
    # the right the batch axis became a sample axis and ReduceSum summed the batch (15)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ x = Input {3} ; p = ParameterTensor {(3:1:1), initValue = 0}"
                            " ; z = ReduceSum (x + p) }", StadynLibrary())
    x, z = net.nodes["x"], net.nodes["z"]
    feed(x, np.arange(6, dtype="f4").reshape(2, 3))
    z.forward()
    np.testing.assert_allclose(z.d.reshape(-1), [3.0, 12.0])

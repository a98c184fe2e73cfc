"""What CNTK's G2P config (``BS.Seq2Seq``'s attention) needs of the BrainScript library, against
NumPy: ``BS.Sequences.PastValueWindow``, ``Softmax (z, axis = k)``, ``BS.Boolean.If`` on nodes,
``Times`` with the data on the left (``h * hook``), ``BS.Sequences.Scatter`` of one value per
sequence; which Inputs are sequences (a default-axis Input passed to a sequence function where
the network declares a ``DynamicAxis``, and a ``PastValue`` only in a function never called).
The G2P network's parameter names and count (cntk.exe's baseline log) are checked in
test_bs_param_paths.py.
"""

from __future__ import annotations

import numpy as np

import stadyn as sd
from stadyn.brainscript import StadynLibrary, build_network
from stadyn.brainscript._parser import parse_expression
from stadyn.brainscript._sequence_library import sequence_use
from stadyn.train import feed


def _net(text: str):
    with sd.parameter_registry(sd.ParameterRegistry()):
        return build_network("{ " + text + " }", StadynLibrary())


def _steps(v) -> list[np.ndarray]:
    return [np.asarray(s) for s in sd.sequence.unpack_value(v)]


SEQS = [np.arange(6.0).reshape(3, 2) + 1, np.array([[10.0, 20.0]])]


def test_past_value_window_holds_each_sequences_last_steps():
    net = _net("x = Input {2} ; w = BS.Sequences.PastValueWindow (3, x, axis = 2) ; "
               "value = w.value ; valid = w.valid")
    net.nodes["x"].d = SEQS
    value, valid = net.nodes["value"], net.nodes["valid"]
    for v in (value, valid):
        v.forward()
    # column-major [2 x 3]: step T-d of the sequence at d of axis 2; NumPy (3, 2) per sequence
    want = [np.stack([SEQS[0][2], SEQS[0][1], SEQS[0][0]]),
            np.stack([SEQS[1][0], np.zeros(2), np.zeros(2)])]
    got = np.asarray(value.d).reshape(2, 3, 2)
    np.testing.assert_allclose(got, want)
    # one valid flag per step, [1 x 3]: cntk.exe's is [1 x N] too (CNTK.core.bs's OnesLike is
    # one row, SumColumnElements (RowSlice (0, 1, x) .* Zero) + One; G2P's baseline.txt
    # validates 'attentionWindow.valid = Reshape (...) : [20 x WhereNodeAxis4] -> [1 x 20 x
    # WhereNodeAxis4]' beside 'attentionWindow.value' of [512 x 20 x WhereNodeAxis4])
    assert valid.shape[-2:] == (3, 1) and value.shape[-2:] == (3, 2)
    np.testing.assert_allclose(np.broadcast_to(valid.d, (2, 3, 2)),
                               [np.ones((3, 2)), [[1, 1], [0, 0], [0, 0]]])


def test_softmax_along_an_axis_normalises_that_axis_only():
    net = _net("x = Input {(2 : 3)} ; s = Softmax (x, axis = 2)")
    x = np.random.RandomState(0).randn(4, 3, 2).astype(np.float32)   # column-major [2 x 3]
    feed(net.nodes["x"], x)
    net.nodes["s"].forward()
    want = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(net.nodes["s"].d, want, rtol=1e-5)


def test_boolean_if_selects_element_by_element():
    net = _net("x = Input {2} ; y = Input {2} ; c = x - 2 ; z = BS.Boolean.If (c, x, y)")
    x, y = np.array([[1.0, 2.0], [3.0, 2.0]]), np.array([[7.0, 8.0], [9.0, 6.0]])
    # (BS.Boolean.If makes no sequence node: its Inputs are two samples, not a sequence;
    # 0c52e7e4 took them for sequences, test_bs_sequence_use.py)
    assert net.nodes["x"].sequence_lengths is None
    for i in range(2):
        net.nodes["x"].d, net.nodes["y"].d = x[i:i + 1], y[i:i + 1]
        net.nodes["z"].forward()
        np.testing.assert_allclose(net.nodes["z"].d, np.where(x - 2 != 0, x, y)[i:i + 1])


def test_if_starts_a_recurrence_from_another_sequence():
    # G2P's decoder input: the start symbol at the first step, the previous label after it
    net = _net("x = Input {2} ; "
               "s = BS.Boolean.If (BS.Loop.IsFirst (x), x, 2 * BS.Loop.Previous (s))")
    net.nodes["x"].d = SEQS
    net.nodes["s"].forward()
    got = _steps(net.nodes["s"])
    np.testing.assert_allclose(got[0], [SEQS[0][0], 2 * SEQS[0][0], 4 * SEQS[0][0]])
    np.testing.assert_allclose(got[1], SEQS[1])


def test_times_with_the_data_on_the_left_is_the_matrix_product():
    # CNTK's Times ([2 x 1] data, [1 x 3] matrix) = [2 x 3]: h * beamSearchReorderHook in G2P
    net = _net("x = Input {(2 : 1)} ; M = ParameterTensor ((1 : 3), initValue = 0) ; z = x * M")
    m = np.array([2.0, -1.0, 0.5])
    net.nodes["M"].d = m.reshape(3, 1)                     # row-major (3, 1) of [1 x 3]
    x = np.array([[[1.0, 4.0]], [[-2.0, 3.0]]])            # (batch, 1, 2): [2 x 1] samples
    feed(net.nodes["x"], x)
    net.nodes["z"].forward()
    want = np.einsum("bi,j->bji", x[:, 0], m)              # [2 x 3] column-major: (3, 2)
    np.testing.assert_allclose(net.nodes["z"].d, want)


def test_scatter_of_each_sequences_first_value():
    net = _net("x = Input {2} ; f = BS.Sequences.First (x) ; "
               "z = BS.Sequences.Scatter (BS.Loop.IsFirst (x), f)")
    net.nodes["x"].d = SEQS
    net.nodes["z"].forward()
    got = _steps(net.nodes["z"])
    np.testing.assert_allclose(got[0], [SEQS[0][0], [0, 0], [0, 0]])
    np.testing.assert_allclose(got[1], SEQS[1])


def test_a_default_axis_input_given_to_a_sequence_function_is_a_sequence():
    # G2P.cntk: inputs on a declared DynamicAxis, labels on the default one, sliced along it
    net = _net("a = DynamicAxis () ; x = Input {2, dynamicAxis = a} ; labels = Input {2} ; "
               "tail = Slice (1, 0, labels, axis = -1) ; other = Input {3}")
    assert net.nodes["labels"].sequence_lengths is not None
    assert net.nodes["other"].sequence_lengths is None     # a sequence classifier's labels
    net.nodes["labels"].d = SEQS
    net.nodes["tail"].forward()
    got = _steps(net.nodes["tail"])
    np.testing.assert_allclose(got[0], SEQS[0][1:])


def test_a_sequence_function_only_in_a_function_never_called_makes_no_sequences():
    text = "{ x = Input {2} ; Unused (v) = PastValue (0, v) ; z = x + 1 }"
    assert sequence_use(parse_expression(text))[:2] == (False, False)
    assert _net(text[2:-2]).nodes["x"].sequence_lengths is None
    called = "{ x = Input {2} ; Delayed (v) = PastValue (0, v) ; z = Delayed (x) }"
    assert sequence_use(parse_expression(called))[:2] == (True, False)
    deep = "{ x = Input {2} ; F (v) = PastValue (0, v) ; G (v) = F (v) ; z = G (x) }"
    assert sequence_use(parse_expression(deep))[:2] == (True, False)

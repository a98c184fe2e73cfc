"""``optimized_rnnstack`` against CNTK 2.7's own numbers (``refs/rnnstack_cntk27.npz``, made by
``refs/make_rnnstack_refs.py``: CNTK builds the op, and its own converter runs the same flat
weights as its layers on a CPU, where CNTK cannot run the op itself) -- outputs and the input
gradient, on ragged sequences; and the weight shape CNTK infers."""

from __future__ import annotations

import os

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn.ops import rnnstack_weight_count

REFS = np.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "refs",
                            "rnnstack_cntk27.npz"))
CASES = [("lstm", 1, False), ("lstm", 2, True), ("rnnTanh", 2, False), ("rnnReLU", 1, True)]
IDS = [f"{op}-{layers}{'-bi' * bi}" for op, layers, bi in CASES]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("k", range(len(CASES)), ids=IDS)
def test_optimized_rnnstack_gives_cntk_27s_numbers(k, dynamic):
    op, layers, bidirectional = CASES[k]
    weights = REFS[f"{k}_weights"]
    assert tuple(REFS[f"{k}_weight_shape"]) == (
        rnnstack_weight_count(3, 4, layers, bidirectional, op) // 4, 4)
    lengths = REFS["lengths"]
    x = sd.sequence.input_variable(3, need_grad=True)
    x.d = [REFS["x"][b, :n] for b, n in enumerate(lengths)]
    w = sd.Variable.from_numpy_array(weights)
    with sd.auto_forward(dynamic):
        y = sd.sequence.optimized_rnnstack(x, w, 4, layers, bidirectional, op)
        loss = F.sum(sd.sequence.reduce_sum(y))
    if not dynamic:
        loss.forward()
    loss.backward()
    np.testing.assert_allclose(y.d, REFS[f"{k}_y"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(x.g, REFS[f"{k}_grad_x"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["cntk_lstm_sequence", "optimized_rnnstack"])
def test_fewer_lengths_than_sequences_is_an_error_not_a_shorter_minibatch(op):
    """Packing by the lengths kept only the sequences given one (a minibatch of 4 came back as
    1 sequence): the lengths must be one per sequence."""
    v = lambda a: sd.Variable.from_numpy_array(np.asarray(a, np.float32))  # noqa: E731
    x, n = v(np.ones((4, 5, 2))), sd.Variable.from_numpy_array(np.array([3]))
    with sd.auto_forward(), pytest.raises(sd.ShapeError, match="one length per sequence"):
        if op == "cntk_lstm_sequence":
            F.cntk_lstm_sequence(x, n, v(0), v(0), v(np.ones((2, 8))), v(np.zeros((2, 8))),
                                 v(np.zeros(8)))
        else:
            F.optimized_rnnstack(x, n, v(np.full(rnnstack_weight_count(2, 2, 1, False, "lstm"),
                                                 0.1)), hidden_size=2)

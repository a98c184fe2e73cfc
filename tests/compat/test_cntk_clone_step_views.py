"""A clone keyed by a node the walks show inside a recurrence's step (``PastValue`` of an
``LSTM``'s state, an op of a Python step): Stadyn runs the recurrence as one op, so no run
computes such a node.  CNTK 2.7 substitutes it inside its loop (the case
``clone__substitution_inside_a_recurrence_step`` holds its numbers, a known difference);
Stadyn ignored the key silently, computing the unsubstituted graph, and now raises
NotImplementedError naming the key."""

import numpy as np
import pytest

import stadyn.compat.cntk as C


def _data():
    return [np.arange(6, dtype=np.float32).reshape(3, 2) / 10]


def test_a_delayed_lstm_state_given_as_a_clone_key_is_not_ignored():
    s = C.sequence.input_variable(2, name="s")
    z = C.layers.Recurrence(C.layers.LSTM(2, init=0.5))(s)
    past = [n for n in C.logging.graph.depth_first_search(z, lambda n: True, depth=0)
            if getattr(n, "op_name", None) == "PastValue"]
    assert len(past) == 2
    for n in past:
        with pytest.raises(NotImplementedError, match="PastValue.*recurrence's step"):
            z.clone(C.CloneMethod.share, {n.output: C.constant(np.full(2, 0.25, np.float32))})


def test_an_op_of_a_python_step_given_as_a_clone_key_is_not_ignored():
    s = C.sequence.input_variable(2, name="s")
    z = C.layers.Recurrence(lambda h, x: C.tanh(x + h))(s)
    plus = [n for n in C.logging.graph.depth_first_search(z, lambda n: True, depth=0)
            if getattr(n, "op_name", None) == "Plus"]
    assert len(plus) == 1
    with pytest.raises(NotImplementedError, match="Plus.*recurrence's step"):
        z.clone(C.CloneMethod.share, {plus[0].output: C.sqrt(C.abs(plus[0].output))})


def test_the_inputs_are_still_substituted():
    s = C.sequence.input_variable(2, name="s")
    z = C.layers.Recurrence(lambda h, x: C.tanh(x + h))(s)
    base = z.eval({s: _data()})[0]
    t = C.sequence.input_variable(2, name="t")
    c = z.clone(C.CloneMethod.share, {s: t})
    np.testing.assert_allclose(c.eval({t: _data()})[0], base, rtol=1e-6)

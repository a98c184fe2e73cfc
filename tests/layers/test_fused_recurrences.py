"""A ``Recurrence`` over a plain ``GRU`` or a tanh/ReLU ``RNNStep`` runs as one op over the
whole sequence (``cntk_gru_sequence``; torch's fused Elman kernel through
``cntk_rnn_sequence``) and gives the numbers of the step-by-step path, which
``tests/compat`` holds to CNTK 2.7's -- values and gradients, both directions, both modes.

``return_full_state=True`` (or a step the fused ops do not cover) takes the step-by-step path.
"""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
from stadyn.graph import topological_nodes

RNG = np.random.default_rng(21)
SEQS = [RNG.standard_normal((n, 3)).astype(np.float32) for n in (3, 1, 5)]

STEPS = {
    "gru-tanh": (lambda: L.GRU(4), "cntk_gru_sequence"),
    "gru-relu": (lambda: L.GRU(4, activation=F.relu), "cntk_gru_sequence"),
    "rnn-tanh": (lambda: L.RNNStep(4, activation=F.tanh), "cntk_rnn_sequence"),
    "rnn-relu": (lambda: L.RNNStep(4, activation=F.relu), "cntk_rnn_sequence"),
}


def _run(step, dynamic, backwards, fused, fold=False):
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.seed(5)
        x = sd.sequence.input_variable(3, need_grad=True)
        x.d = SEQS
        init = sd.Variable.from_numpy_array(np.array([0.3, -0.2, 0.1, 0.4], np.float32))
        with sd.auto_forward(dynamic):
            kind = L.Fold if fold else L.Recurrence
            layer = kind(step(), go_backwards=backwards, initial_state=init,
                         return_full_state=not fused)
            h = layer(x)
            loss = (F.sum(h * F.tanh(h)) if fold
                    else F.sum(sd.sequence.reduce_sum(h * F.tanh(h))))
        if not dynamic:
            loss.forward()
        loss.backward()
        names = {n.spec.name for n in topological_nodes([loss])}
        grads = {k: v.g.copy() for k, v in sd.get_parameters().items()}
        return float(loss.d), x.g.copy(), grads, names


@pytest.mark.parametrize("fold", [False, True], ids=["recurrence", "fold"])
@pytest.mark.parametrize("backwards", [False, True], ids=["forwards", "backwards"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("kind", sorted(STEPS))
def test_a_fused_recurrence_gives_the_step_by_step_numbers(kind, dynamic, backwards, fold):
    step, op_name = STEPS[kind]
    fused = _run(step, dynamic, backwards, True, fold)
    steps = _run(step, dynamic, backwards, False, fold)
    assert op_name in fused[3] and op_name not in steps[3] and "recurrence" in steps[3]
    assert fused[0] == pytest.approx(steps[0], rel=1e-5)
    np.testing.assert_allclose(fused[1], steps[1], rtol=1e-4, atol=1e-6)
    for b, s in enumerate(SEQS):
        assert (fused[1][b, len(s):] == 0).all()          # no gradient reaches a padded step
    assert set(fused[2]) == set(steps[2])
    for k in steps[2]:
        np.testing.assert_allclose(fused[2][k], steps[2][k], rtol=1e-4, atol=1e-6)


def test_a_sigmoid_rnn_step_and_a_custom_gru_activation_stay_step_by_step():
    """CNTK's default RNNStep activation (sigmoid) has no fused kernel."""
    x = sd.sequence.input_variable(3)
    with sd.parameter_registry(sd.ParameterRegistry()):
        names = [{n.spec.name for n in topological_nodes([L.Recurrence(step)(x)])}
                 for step in (L.RNNStep(4), L.GRU(4, activation=F.sigmoid))]
    assert all("recurrence" in n for n in names)
    assert not any({"cntk_rnn_sequence", "cntk_gru_sequence"} & n for n in names)

"""CNTK.core.bs's CTC functions ``LabelsToGraph``, ``ForwardBackward`` and
``EditDistanceError`` (Tests/EndToEndTests/Speech/LSTM_CTC/lstm.bs uses them as written there)
give the values of ``stadyn.compat.cntk``'s ``labels_to_graph``, ``forward_backward`` and
``edit_distance_error``, which tests/compat checks against CNTK 2.7's."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.cntk as C
from stadyn import ConfigError
from stadyn.brainscript import StadynLibrary, build_network

# frame labels: 2 where a token starts, 1 where it continues; class 3 is the blank
_FRAMES = [np.eye(4, dtype=np.float32)[[0, 0, 1, 3, 1]] * [[2], [1], [2], [2], [2]],
           np.eye(4, dtype=np.float32)[[2, 2, 0]] * [[2], [1], [2]]]


def _bs(text: str, z: list[np.ndarray], names: tuple[str, ...]):
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network("{ labels = Input {4} ; z = Input {4}\n" + text + " }", lib)
        net.nodes["labels"].d, net.nodes["z"].d = _FRAMES, z
        out = []
        for name in names:
            net.nodes[name].forward()
            assert not lib.has_batch_axis(net.nodes[name])     # one number a minibatch
            out.append(float(np.asarray(net.nodes[name].d)))
        return out


@pytest.mark.parametrize("delay", [-1, 1])
@pytest.mark.parametrize("ignore, squash, pens", [
    ("3", "true", "1.0, 1.0, 1.0"), ("(3:0)", "false", "2.0, 1.0, 0.5")])
def test_the_functions_are_the_compat_ops(delay, ignore, squash, pens):
    rng = np.random.RandomState(3)
    z = [rng.randn(len(f), 4).astype(np.float32) for f in _FRAMES]
    cr, err = _bs(f"""graph = LabelsToGraph (labels)
        cr = ForwardBackward (graph, z, 3, delayConstraint = {delay}, tag = "criterion")
        err = EditDistanceError (labels, z, {pens}, squashInputs = {squash},
                                 tokensToIgnore = {ignore}, tag = "evaluation")""", z,
                  ("cr", "err"))
    labels, zv = C.sequence.input_variable(4), C.sequence.input_variable(4)
    sub, dele, ins = (float(p) for p in pens.split(","))
    want_cr = C.forward_backward(C.labels_to_graph(labels), zv, blankTokenId=3,
                                 delayConstraint=delay).eval({labels: _FRAMES, zv: z})
    want_err = C.edit_distance_error(labels, zv, sub, dele, ins, squash == "true",
                                     [3] if ignore == "3" else [3, 0]).eval(
        {labels: _FRAMES, zv: z})
    np.testing.assert_allclose(cr, float(np.asarray(want_cr)), rtol=1e-6)
    assert err == float(np.asarray(want_err))


def test_forward_backward_needs_sequences_of_one_shape():
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match="ForwardBackward: the inputs have samples of "
                                              r"shape \(4,\) and \(3,\)") as e:
            build_network("{ labels = Input {4} ; z = Input {3}\n"
                          "  cr = ForwardBackward (LabelsToGraph (labels), z, 3) }",
                          StadynLibrary(), "ctc.bs")
    assert (e.value.path, e.value.line) == ("ctc.bs", 2)

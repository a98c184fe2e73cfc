"""BrainScript's ``RecurrentLSTMLayer`` / ``RecurrentLSTMLayerStack`` with
``enableSelfStabilization`` and ``cellShape``, against a NumPy loop of CNTK.core.bs's
``LSTMBlock`` written here: stabilisers (``StabilizerLayer``: ``log(1 + exp(4 a)) / 4``) on the
previous h, on the cell values in the peepholes and on the value projected; a projection only
when ``cellShape`` differs from ``outputDim``; states from 0.1 (``BS.Loop.Previous``)."""

from __future__ import annotations

import numpy as np

import stadyn as sd
from stadyn.brainscript import StadynLibrary, build_network

LENGTHS = (3, 1, 5)
ALPHAS = {"dh_stabilizer": 0.9, "dc_stabilizer": 0.4, "c_stabilizer": -0.3, "P_stabilizer": 0.6}


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _beta(alpha):
    return np.log1p(np.exp(4.0 * alpha)) / 4.0


def _lstm_block(seq, p, peepholes, h0=0.1):
    """LSTMBlock over one sequence: ``p`` the parameters by short name (alphas by stabiliser)."""
    cell = p["b"].shape[0] // 4
    s = {k: _beta(p[k]) if k in p else 1.0 for k in ALPHAS}
    h, c, out = np.full(p["H"].shape[0], h0), np.full(cell, h0), []
    for x in seq.astype(np.float64):
        z = p["b"] + x @ p["W"] + (s["dh_stabilizer"] * h) @ p["H"]
        i, g, f, o = (z[k * cell:(k + 1) * cell] for k in range(4))
        if peepholes:
            i = i + p["Ci"] * s["dc_stabilizer"] * c
            f = f + p["Cf"] * s["dc_stabilizer"] * c
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        if peepholes:
            o = o + p["Co"] * s["c_stabilizer"] * c
        ht = _sigmoid(o) * np.tanh(c)
        h = (s["P_stabilizer"] * ht) @ p["P"] if "P" in p else ht
        out.append(h)
    return np.array(out)


# the layer's parameters by cntk.exe's names (CNTK.core.bs's LSTMBlock, the record 'lstm' of
# RecurrentLSTMLayer: y.lstm.W, y.lstm.Sdh.param) -> the names the reference above uses
_SHORT = {"B": "b", "Wmr": "P", "Sdh.param": "dh_stabilizer", "Sdc.param": "dc_stabilizer",
          "Sct.param": "c_stabilizer", "Sht.param": "P_stabilizer"}


def _build(text: str):
    """The network, its parameters given seeded values and grouped per layer (its path)."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(text, StadynLibrary())
        rng = np.random.RandomState(4)
        layers: dict[str, dict[str, np.ndarray]] = {}
        for key, v in sd.get_parameters().items():
            scope, _, member = key.partition(".lstm.")
            short = _SHORT.get(member, member)
            if member.endswith(".param"):
                v.d = np.float32(ALPHAS[short])
            else:
                v.d = rng.uniform(-0.5, 0.5, v.shape).astype(np.float32)
            layers.setdefault(scope, {})[short] = v.d.astype(np.float64)
    return net, layers


def _run(net, node, xs):
    net.nodes["x"].d = xs
    y = net.nodes[node]
    y.forward()
    return sd.sequence.unpack_value(y)


def _inputs(dim=3, seed=2):
    rng = np.random.RandomState(seed)
    return [rng.randn(n, dim).astype(np.float32) for n in LENGTHS]


def test_a_stabilised_projected_lstm_layer_with_peepholes_is_lstmblock():
    net, layers = _build("""{ x = Input{3}
        y = RecurrentLSTMLayer {4, cellShape = 6, usePeepholes = true,
                                enableSelfStabilization = true} (x) }""")
    assert list(layers) == ["y"]
    (p,) = layers.values()
    assert {k: v.shape for k, v in p.items()} == {
        "W": (3, 24), "H": (4, 24), "b": (24,), "Ci": (6,), "Cf": (6,), "Co": (6,),
        "P": (6, 4), "dh_stabilizer": (), "dc_stabilizer": (), "c_stabilizer": (),
        "P_stabilizer": ()}
    xs = _inputs()
    for got, seq in zip(_run(net, "y", xs), xs):
        np.testing.assert_allclose(got, _lstm_block(seq, p, True), rtol=1e-5, atol=1e-6)


def test_a_cell_shape_equal_to_the_output_dim_projects_nothing():
    # LSTMBlock projects only when outputDim != cellDim (CNTK's Python LSTM always does)
    net, layers = _build("""{ x = Input{3}
        y = RecurrentLSTMLayer {4, cellShape = 4, enableSelfStabilization = true} (x) }""")
    (p,) = layers.values()
    assert sorted(p) == ["H", "W", "b", "dh_stabilizer"]
    xs = _inputs(seed=5)
    for got, seq in zip(_run(net, "y", xs), xs):
        np.testing.assert_allclose(got, _lstm_block(seq, p, False), rtol=1e-5, atol=1e-6)


def test_a_stabilised_lstm_stack_is_lstmblocks_in_sequence():
    # RecurrentLSTMLayerStack is a LayerStack of RecurrentLSTMLayers: no stabiliser between
    # the layers (unlike BS.RNNs.RecurrentLSTMPStack)
    net, layers = _build("""{ x = Input{3}
        y = RecurrentLSTMLayerStack {(3:2), cellShapes = (5:2),
                                     enableSelfStabilization = true} (x) }""")
    assert sorted(layers) == ["y.arrayOfFunctions[0]", "y.arrayOfFunctions[1]"]
    first, second = (layers[k] for k in sorted(layers))
    assert first["P"].shape == (5, 3) and "P" not in second
    xs = _inputs(seed=7)
    for got, seq in zip(_run(net, "y", xs), xs):
        hidden = _lstm_block(seq, first, False)
        np.testing.assert_allclose(got, _lstm_block(hidden, second, False), rtol=1e-5,
                                   atol=1e-6)

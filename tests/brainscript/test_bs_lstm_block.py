"""CNTK.core.bs's ``BS.RNNs.LSTMBlock`` (CNTK.core.bs:1042-1112): a stateless LSTM step whose
four gate terms are slices of one projection ``B + W x + H h``, with diagonal peepholes and a
projection of h, run in a ``PreviousHC`` loop and checked against NumPy."""

from __future__ import annotations

import numpy as np

import stadyn as sd
from stadyn.brainscript import StadynLibrary, build_network


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _numpy_lstm(xs, p, cell, peep):
    # BS.Loop.Previous starts from 0.1 (PastValue's defaultHiddenActivation)
    h, c = np.full(p["H"].shape[0], 0.1), np.full(cell, 0.1)
    hs, cs = [], []
    for x in xs:
        proj = p["B"] + x @ p["W"] + h @ p["H"]      # [4 cell x in] is held as (in, 4 cell)
        i, g, f, o = (proj[k * cell:(k + 1) * cell] for k in range(4))
        it = _sigmoid(i + (p["Ci"] * c if peep else 0))
        ft = _sigmoid(f + (p["Cf"] * c if peep else 0))
        ct = ft * c + it * np.tanh(g)
        ot = _sigmoid(o + (p["Co"] * ct if peep else 0))
        ht = ot * np.tanh(ct)
        h = ht @ p["Wmr"] if "Wmr" in p else ht
        c = ct
        hs.append(h)
        cs.append(c)
    return np.array(hs), np.array(cs)


def _run(options: str):
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(f"""{{ x = Input {{3}}
            lstm = BS.RNNs.LSTMBlock {{4{options}}}
            st = lstm (x, prev)
            prev = BS.RNNs.PreviousHC (st)
            h = st.h ; c = st.c }}""", StadynLibrary())
        rng = np.random.RandomState(0)
        params = {}
        for name, v in sd.get_parameters(grad_only=False).items():
            v.d = rng.uniform(-1, 1, v.shape).astype(np.float32)
            params[name.split(".")[-1]] = v.d.astype(np.float64)
        xs = rng.uniform(-1, 1, (3, 3)).astype(np.float32)
        net.nodes["x"].d = [xs]
        out = []
        for name in ("h", "c"):
            net.nodes[name].forward()
            out.append(sd.sequence.unpack_value(net.nodes[name])[0])
    return xs, params, out


def test_lstm_block_with_peepholes_and_a_projection_computes_as_numpy():
    xs, params, (h, c) = _run(", cellShape = 5, usePeepholes = true")
    # the parameters CNTK.core.bs makes for these options (A, the aux input's, is not used)
    assert {k: v.shape for k, v in params.items()} == {
        "B": (20,), "W": (3, 20), "H": (4, 20), "Ci": (5,), "Cf": (5,), "Co": (5,),
        "Wmr": (5, 4)}
    want_h, want_c = _numpy_lstm(xs.astype(np.float64), params, 5, True)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, want_c, rtol=1e-5, atol=1e-6)


def test_lstm_block_without_options_makes_three_parameters():
    xs, params, (h, c) = _run("")
    assert sorted(params) == ["B", "H", "W"]
    want_h, want_c = _numpy_lstm(xs.astype(np.float64), params, 4, False)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, want_c, rtol=1e-5, atol=1e-6)

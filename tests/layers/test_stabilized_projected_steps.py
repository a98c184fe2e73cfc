"""Self-stabilised (``enable_self_stabilization``) and projected (``cell_shape``) recurrent steps
against NumPy loops written here with the same weights, in both modes: where each stabiliser
acts (CNTK 2.7's blocks: the previous ``h``; the LSTM's cell values only in its peepholes; the
value a projection projects), the projection ``h = ht P``, the parameters' shapes, and the
stabilisers' ``alpha`` gradients against finite differences of the NumPy loop.

``tests/compat`` (cases ``sequence.*__self_stabilization``, ``*__cell_shape``) holds the same
layers to CNTK 2.7's numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
from stadyn._errors import StadynError
from stadyn.graph import topological_nodes

RNG = np.random.default_rng(8)
SEQS = [RNG.standard_normal((n, 3)).astype(np.float32) for n in (3, 1, 5)]
INIT = 0.25                              # a non-zero initial state: the first step's dh counts
K = 4.0                                  # the stabilisers' steepness
# distinct alphas, so a stabiliser in the wrong place (or a missing one) changes the numbers
ALPHAS = {"dh_stabilizer": 0.9, "dc_stabilizer": 0.4, "c_stabilizer": -0.3,
          "P_stabilizer": 0.6}


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def _beta(alpha):
    return np.log1p(np.exp(K * alpha)) / K


def _np_lstm(p, s, h, c, x, peep, proj):
    cell = p["b"].shape[0] // 4
    z = x @ p["W"] + p["b"] + (s["dh_stabilizer"] * h) @ p["H"]
    i, g, f, o = (z[..., k * cell:(k + 1) * cell] for k in range(4))
    if peep:
        cs = s["dc_stabilizer"] * c
        i, f = i + p["Ci"] * cs, f + p["Cf"] * cs
    c_new = _sig(f) * c + _sig(i) * np.tanh(g)
    if peep:
        o = o + p["Co"] * (s["c_stabilizer"] * c_new)
    ht = _sig(o) * np.tanh(c_new)
    return ((s["P_stabilizer"] * ht) @ p["P"] if proj else ht), c_new


def _np_gru(p, s, h, x, proj):
    size = p["H1"].shape[0]
    hs = s["dh_stabilizer"] * h
    zx, rx, cx = (x @ p["W"][:, k * size:(k + 1) * size] + p["b"][k * size:(k + 1) * size]
                  for k in range(3))
    zh, rh = (hs @ p["H"][:, k * size:(k + 1) * size] for k in range(2))
    z, r = _sig(zx + zh), _sig(rx + rh)
    ht = (1 - z) * np.tanh(cx + (r * hs) @ p["H1"]) + z * hs
    return (s["P_stabilizer"] * ht) @ p["P"] if proj else ht


def _np_rnn(p, s, h, x, proj):
    ht = _sig(x @ p["W"] + (s["dh_stabilizer"] * h) @ p["H"] + p["b"])
    return (s["P_stabilizer"] * ht) @ p["P"] if proj else ht


# name: (the step, its NumPy step (params, stabiliser factors, states, x) -> states, stabilisers)
CASES = {
    "lstm-stab": (lambda: L.LSTM(4, enable_self_stabilization=True),
                  lambda p, s, h, c, x: _np_lstm(p, s, h, c, x, False, False),
                  ["dh_stabilizer"]),
    "lstm-peep-stab": (lambda: L.LSTM(4, use_peepholes=True, enable_self_stabilization=True),
                       lambda p, s, h, c, x: _np_lstm(p, s, h, c, x, True, False),
                       ["dh_stabilizer", "dc_stabilizer", "c_stabilizer"]),
    "lstm-cell": (lambda: L.LSTM(4, cell_shape=6),
                  lambda p, s, h, c, x: _np_lstm(p, s, h, c, x, False, True), []),
    "lstm-cell-peep-stab": (lambda: L.LSTM(4, cell_shape=6, use_peepholes=True,
                                           enable_self_stabilization=True),
                            lambda p, s, h, c, x: _np_lstm(p, s, h, c, x, True, True),
                            ["dh_stabilizer", "dc_stabilizer", "c_stabilizer", "P_stabilizer"]),
    "gru-stab": (lambda: L.GRU(4, enable_self_stabilization=True),
                 lambda p, s, h, x: _np_gru(p, s, h, x, False), ["dh_stabilizer"]),
    "gru-cell-stab": (lambda: L.GRU(4, cell_shape=4, enable_self_stabilization=True),
                      lambda p, s, h, x: _np_gru(p, s, h, x, True),
                      ["dh_stabilizer", "P_stabilizer"]),
    "rnn-stab": (lambda: L.RNNStep(4, enable_self_stabilization=True),
                 lambda p, s, h, x: _np_rnn(p, s, h, x, False), ["dh_stabilizer"]),
    "rnn-cell": (lambda: L.RNNStep(4, cell_shape=6),
                 lambda p, s, h, x: _np_rnn(p, s, h, x, True), []),
    "rnn-cell-stab": (lambda: L.RNNStep(4, cell_shape=6, enable_self_stabilization=True),
                      lambda p, s, h, x: _np_rnn(p, s, h, x, True),
                      ["dh_stabilizer", "P_stabilizer"]),
}


def _run(kind, dynamic):
    """The recurrence's output per sequence, ``loss = sum(out * tanh(out))``'s gradients, the
    parameter values by short name (``W``, ``dh_stabilizer``, ...) and the op names."""
    make, _, _ = CASES[kind]
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.sequence.input_variable(3, need_grad=True)
        x.d = SEQS
        step = make()
        with sd.auto_forward(dynamic):
            out = L.Recurrence(step, initial_state=INIT)(x)
        rng = np.random.default_rng(3)
        values = {}
        for key, v in sd.get_parameters().items():
            short = key.split("/")[-2] if key.endswith("/alpha") else key.split("/")[-1]
            v.d = (np.float32(ALPHAS[short]) if key.endswith("/alpha")
                   else rng.uniform(-0.5, 0.5, v.shape).astype(np.float32))
            values[short] = v.d.astype(np.float64)
        with sd.auto_forward(dynamic):
            h = out if not dynamic else L.Recurrence(step, initial_state=INIT)(x)
            loss = F.sum(sd.sequence.reduce_sum(h * F.tanh(h)))
        loss.forward()
        loss.backward()
        grads = {(k.split("/")[-2] if k.endswith("/alpha") else k.split("/")[-1]): v.g.copy()
                 for k, v in sd.get_parameters().items()}
        ops = {n.spec.name for n in topological_nodes([loss])}
        return sd.sequence.unpack_value(h), float(loss.d), grads, values, ops, step


def _np_run(kind, values, alphas=None):
    _, np_step, stabilizers = CASES[kind]
    factors = {name: 1.0 for name in ALPHAS}
    factors.update({name: _beta((alphas or values)[name]) for name in stabilizers})
    outs = []
    for seq in SEQS:
        states = [np.full(values["H"].shape[0], INIT)]               # h: (shape,)
        if kind.startswith("lstm"):
            states.append(np.full(values["b"].shape[0] // 4, INIT))     # c: (cell_shape,)
        steps = []
        for t in range(len(seq)):
            new = np_step(values, factors, *states, seq[t].astype(np.float64))
            states = list(new) if isinstance(new, tuple) else [new]
            steps.append(states[0])
        outs.append(np.array(steps))
    return outs


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_stabilised_or_projected_step_matches_a_numpy_loop(kind, dynamic):
    outs, loss, grads, values, ops, step = _run(kind, dynamic)
    assert not step.fusable and "recurrence" in ops
    assert not {"cntk_lstm_sequence", "cntk_gru_sequence", "cntk_rnn_sequence"} & ops
    expect = _np_run(kind, values)
    for got, want in zip(outs, expect):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert sorted(n for n in values if n.endswith("_stabilizer")) == sorted(CASES[kind][2])
    # each alpha's gradient: a central difference of the NumPy loss
    for name in CASES[kind][2]:
        def np_loss(delta):
            alphas = dict(values, **{name: values[name] + delta})
            return sum(float(np.sum(o * np.tanh(o))) for o in _np_run(kind, values, alphas))
        numeric = (np_loss(1e-5) - np_loss(-1e-5)) / 2e-5
        assert float(grads[name]) == pytest.approx(numeric, rel=1e-3, abs=1e-4), name


@pytest.mark.parametrize("kind", sorted(CASES))
def test_both_modes_give_the_same_gradients(kind):
    static, dynamic = _run(kind, False), _run(kind, True)
    assert static[1] == pytest.approx(dynamic[1], rel=1e-6)
    assert set(static[2]) == set(dynamic[2])
    for k in static[2]:
        np.testing.assert_allclose(static[2][k], dynamic[2][k], rtol=1e-5, atol=1e-7)


def test_parameter_shapes_are_cntks():
    """CNTK 2.7's shapes (``cell_shape=C``, ``shape=H``): ``W`` ``(in, kC)``, ``H``
    ``(H, kC)``, ``b`` ``(kC,)``, peepholes ``(C,)``, ``P`` ``(C, H)``, each ``alpha`` a
    scalar; the LSTM's states are ``h`` ``(H,)`` and ``c`` ``(C,)``."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.sequence.input_variable(3)
        lstm = L.LSTM(4, cell_shape=6, use_peepholes=True, enable_self_stabilization=True)
        L.Recurrence(lstm)(x)
        names = sorted(sd.get_parameters())
    assert lstm.state_shapes == [(4,), (6,)]
    assert sorted((p.name.split("/")[-1], tuple(p.shape)) for p in lstm.parameters) == sorted(
        [("W", (3, 24)), ("H", (4, 24)), ("b", (24,)), ("Ci", (6,)), ("Cf", (6,)),
         ("Co", (6,)), ("P", (6, 4))] + [("alpha", ())] * 4)
    assert names == sorted(["recurrence/lstm/" + n for n in ("W", "H", "b", "Ci", "Cf", "Co", "P")]
                           + [f"recurrence/lstm/{s}/alpha" for s in ALPHAS])


def test_stabilisation_follows_default_options_and_starts_as_the_identity():
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.sequence.input_variable(3)
        x.d = SEQS
        plain = L.Recurrence(L.GRU(2))(x)
        with L.default_options(enable_self_stabilization=True):
            step = L.GRU(2)
        stabilised = L.Recurrence(step)(x)
        for key, v in sd.get_parameters().items():        # the same weights for both GRUs
            if not key.endswith("alpha"):
                v.d = np.linspace(-0.4, 0.4, v.size).reshape(v.shape)
        plain.forward()
        stabilised.forward()
    assert step.stabilize and not step.fusable
    np.testing.assert_allclose(stabilised.d, plain.d, rtol=1e-5, atol=1e-6)   # beta = 1


def test_a_gru_cell_shape_other_than_its_shape_is_refused():
    with pytest.raises(StadynError, match="GRU: cell_shape"):
        L.GRU(2, cell_shape=5)
    with pytest.raises(StadynError, match="must be vectors"):
        L.LSTM(2, cell_shape=(2, 3))


def test_a_dynamic_step_reading_a_value_made_from_a_parameter_computes_it():
    """The step is recorded on shapes even in dynamic mode; a value it makes from parameters
    alone (a stabiliser's scale) is hoisted out of the loop and must be computed, with its
    gradient reaching the parameter (it had no value before: 'an input's buffer was
    cleared')."""
    with sd.parameter_registry(sd.ParameterRegistry()), sd.auto_forward():
        x = sd.sequence.input_variable(1)
        x.d = [np.array([[1.0], [2.0]], np.float32)]
        a = sd.Variable.from_numpy_array(np.array([0.5], np.float32), need_grad=True)
        h = L.Recurrence(lambda s, u: s * F.exp(a) + u)(x)      # h_t = e^a h_{t-1} + x_t
        loss = F.sum(sd.sequence.reduce_sum(h))
        loss.backward()
    e = np.exp(0.5)
    np.testing.assert_allclose(sd.sequence.unpack_value(h)[0].ravel(), [1.0, e + 2.0],
                               rtol=1e-6)
    np.testing.assert_allclose(a.g, [e], rtol=1e-6)       # d(1 + e^a + 2)/da


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_per_element_stabilizer_learns_one_factor_per_element_of_the_last_axis(dynamic):
    # BrainScript's BS.Parameters.StabilizeElements; the scalar one is the layers' and CNTK's
    x_np = RNG.standard_normal((2, 4)).astype(np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()), sd.auto_forward(dynamic):
        x = sd.Variable.from_numpy_array(x_np)
        layer = L.Stabilizer(per_element=True)
        y = layer(x)
        (alpha,) = layer.parameters
        assert alpha.shape == (4,)
        np.testing.assert_allclose(np.log1p(np.exp(K * alpha.d)) / K, 1.0, rtol=1e-6)
        alpha.d = np.array([0.9, 0.4, -0.3, 0.6], np.float32)
        y = layer(x)
        y.forward()
    want = x_np * np.log1p(np.exp(K * alpha.d.astype(np.float64))) / K
    np.testing.assert_allclose(y.d, want, rtol=1e-5)

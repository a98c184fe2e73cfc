"""BrainScript sequences: PastValue/FutureValue, loops through them (recursive definitions),
RecurrentLSTMLayer and BS.* helpers, each against a NumPy loop written here."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
from stadyn import ConfigError
from stadyn.brainscript import StadynLibrary, build_network

LENGTHS = (3, 1, 5)


def _build(text: str, path: str | None = None):
    with sd.parameter_registry(sd.ParameterRegistry()) as _:
        net = build_network(text, StadynLibrary(), path)
        params = dict(sd.get_parameters())
    return net, params


def _sequences(dim: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.RandomState(seed)
    return [rng.randn(n, dim).astype(np.float32) for n in LENGTHS]


def _run(net, node: str, feeds: dict[str, list[np.ndarray]]) -> list[np.ndarray]:
    for name, value in feeds.items():
        net.nodes[name].d = value
    y = net.nodes[node]
    y.forward()
    return sd.sequence.unpack_value(y)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def test_past_and_future_value_shift_with_cntk_defaults():
    net, _ = _build("""{ x = Input{2}
        p = PastValue (2, x, timeStep = 2, defaultHiddenActivation = 0.5)
        f = FutureValue (2, x)                       # CNTK's default initial value: 0.1
        prev = BS.Loop.Previous (x) ; first = BS.Loop.IsFirst (x) }""")
    xs = _sequences(2)
    for node, expect in (
            ("p", [np.concatenate([np.full((2, 2), 0.5), s])[:len(s)] for s in xs]),
            ("f", [np.concatenate([s[1:], np.full((1, 2), 0.1)]) for s in xs]),
            ("prev", [np.concatenate([np.full((1, 2), 0.1), s[:-1]]) for s in xs]),
            ("first", [np.eye(len(s), 1) for s in xs])):
        got = _run(net, node, {"x": xs})
        for g, e in zip(got, expect):
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


def test_recursive_definition_runs_a_loop_like_numpy():
    net, params = _build("""{ x = Input{3}
        W = Parameter (4, 3) ; H = Parameter (4, 4)
        b = Parameter (4, 1, init = 'fixedValue', value = 0.3)
        h = Tanh (W * x + H * PastValue (4, h, defaultHiddenActivation = 0.2) + b)
        s = x + PastValue (0, s, defaultHiddenActivation = 0)     # dims inferred from x
        back = Tanh (W * x + H * FutureValue (0, back))            # a loop running backwards
    }""")
    w, hw, b = (net.nodes[name].d for name in ("W", "H", "b"))
    xs = _sequences(3, 1)

    def loop(seq, h0, backwards=False, bias=True):
        h, out = np.full(4, h0, np.float32), []
        order = range(len(seq) - 1, -1, -1) if backwards else range(len(seq))
        for t in order:
            h = np.tanh(seq[t] @ w + h @ hw + (b.ravel() if bias else 0))
            out.append(h)
        return np.array(out[::-1] if backwards else out)

    for got, seq in zip(_run(net, "h", {"x": xs}), xs):
        np.testing.assert_allclose(got, loop(seq, 0.2), rtol=1e-5, atol=1e-6)
    for got, seq in zip(_run(net, "s", {"x": xs}), xs):
        np.testing.assert_allclose(got, np.cumsum(seq, axis=0), rtol=1e-5, atol=1e-6)
    for got, seq in zip(_run(net, "back", {"x": xs}), xs):
        np.testing.assert_allclose(got, loop(seq, 0.1, backwards=True, bias=False), rtol=1e-5,
                                   atol=1e-6)


def _numpy_lstm(seq, w, hw, b, h0=0.1):
    """CNTK's LSTM (gates: input, cell candidate, forget, output) from h = c = h0."""
    n = hw.shape[0]
    h, c, out = np.full(n, h0), np.full(n, h0), []
    for x in seq:
        z = x @ w + h @ hw + b
        i, g, f, o = (z[k * n:(k + 1) * n] for k in range(4))
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        out.append(h)
    return np.array(out)


def test_recurrent_lstm_layer_and_a_brainscript_lstm_loop_match_numpy():
    # The same LSTM twice: RecurrentLSTMLayer (torch's fused kernel) and a loop written in
    # BrainScript with PastValue (a recurrence over one recorded step), sharing parameters.
    net, params = _build("""{ x = Input{3}
        lstm = RecurrentLSTMLayer {4}
        y = lstm (x)
        W = Parameter (16, 3) ; H = Parameter (16, 4) ; B = Parameter (16, 1)
        z = W * x + H * dh + B
        cell = Sigmoid (Slice3 (z, 2)) .* dc + Sigmoid (Slice3 (z, 0)) .* Tanh (Slice3 (z, 1))
        h = Sigmoid (Slice3 (z, 3)) .* Tanh (cell)
        dh = BS.Loop.Previous (h) ; dc = BS.Loop.Previous (cell)
        Slice3 (v, k) = Times (Sel[k], v)
        Sel[k:0..3] = Parameter (4, 16)
    }""")
    rng = np.random.RandomState(3)
    w, hw, b = (rng.uniform(-0.5, 0.5, s).astype(np.float32) for s in ((3, 16), (4, 16), (16,)))
    lstm = {k: v for k, v in params.items() if "lstm" in k or "recurrence" in k}
    assert sorted(v.shape for v in lstm.values()) == [(3, 16), (4, 16), (16,)]
    for v in lstm.values():
        v.d = {(3, 16): w, (4, 16): hw, (16,): b}[v.shape]
    net.nodes["W"].d, net.nodes["H"].d, net.nodes["B"].d = w, hw, b[None]
    for k in range(4):
        net.nodes[f"Sel[{k}]"].d = np.eye(16, dtype=np.float32)[:, 4 * k:4 * k + 4]
    xs = _sequences(3, 2)
    fused = _run(net, "y", {"x": xs})
    looped = _run(net, "h", {"x": xs})
    for f, l, seq in zip(fused, looped, xs):
        expect = _numpy_lstm(seq.astype(np.float64), w, hw, b)
        np.testing.assert_allclose(f, expect, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(l, expect, rtol=1e-5, atol=1e-6)


def test_loop_gradients_reach_the_parameters_only_through_real_steps():
    net, params = _build("""{ x = Input{2}
        W = Parameter (2, 2, randomSeed = 5)
        h = Tanh (W * x + PastValue (0, h, defaultHiddenActivation = 0))
        loss = BS.Sequences.Last (h) }""")
    w = params["W"]
    xs = _sequences(2, 4)
    net.nodes["x"].d = xs
    loss = sd.functions.sum(net.nodes["loss"])
    loss.forward()
    w.grad = None
    loss.backward()
    wd = w.d.astype(np.float64)

    def value(wm):
        total = 0.0
        for seq in xs:
            h = np.zeros(2)
            for x in seq:
                h = np.tanh(x @ wm + h)
            total += h.sum()
        return total
    eps, num = 1e-3, np.zeros_like(wd)
    for idx in np.ndindex(*wd.shape):
        d = np.zeros_like(wd)
        d[idx] = eps
        num[idx] = (value(wd + d) - value(wd - d)) / (2 * eps)
    np.testing.assert_allclose(float(loss.d), value(wd), rtol=1e-5, atol=1e-6)  # float32 sum
    np.testing.assert_allclose(w.grad.numpy() if hasattr(w.grad, "numpy") else w.g, num,
                               rtol=1e-3, atol=1e-4)


def test_a_loop_without_a_delay_names_the_file_and_line():
    with pytest.raises(ConfigError) as info:
        _build("{ x = Input{2}\n  a = Tanh (x + b)\n  b = a .* 2 }", "loop.bs")
    err = info.value
    assert "circular definition" in err.reason and "PastValue" in err.reason
    assert err.path == "loop.bs" and err.line in (2, 3)


def test_a_delay_whose_size_cannot_be_inferred_is_reported():
    with pytest.raises(ConfigError) as info:
        _build("{ x = Input{2}\n  h = Tanh (PastValue (0, h)) }", "size.bs")
    assert "dimensions" in info.value.reason and info.value.path == "size.bs"


@pytest.mark.parametrize("scale, factor", [("Exp (ParameterTensor ((1), initValue = 0.5))",
                                            np.exp(0.5)), ("0.5", 0.5)],
                         ids=["a [1] parameter", "a number"])
def test_a_scalar_times_a_delay_of_unknown_dimensions_takes_them_from_the_next_times(scale,
                                                                                      factor):
    """CNTK's Speech/LSTM regression model: ``H * Stabilize (PastValue (0, h))`` with the
    stabiliser a ``[1]`` parameter times the delay.  The product broadcasts, so the delay's
    dimensions are H's input dimensions (4), not the scalar's (1): CNTK infers them from the
    value delayed.  Before: "Times: the data's shape (1, 1) does not end in 4 elements"."""
    net, params = _build(f"""{{ x = Input{{3}}
        W = Parameter (4, 3, init = 'uniform') ; H = Parameter (4, 4, init = 'uniform')
        beta = {scale}
        h = Tanh (W * x + H * (beta .* PastValue (0, h))) }}""")
    w, hw = (net.nodes[k].d.astype(np.float64) for k in ("W", "H"))
    xs = _sequences(3, 6)
    for got, seq in zip(_run(net, "h", {"x": xs}), xs):
        prev, want = np.full(4, 0.1), []
        for x in seq.astype(np.float64):
            prev = np.tanh(x @ w + (factor * prev) @ hw)
            want.append(prev)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_scalar_times_a_delay_still_gives_a_one_dimensional_loop_its_dimension():
    """Where nothing else gives the delay's dimensions, the scalar's are taken (as before)."""
    net, _ = _build("""{ x = Input{1}
        beta = Exp (ParameterTensor ((1), initValue = 0))
        s = x + beta .* PastValue (0, s, defaultHiddenActivation = 0) }""")
    xs = [np.array([[1.0], [2.0], [3.0]], np.float32)]
    (got,) = _run(net, "s", {"x": xs})
    np.testing.assert_allclose(got.ravel(), [1.0, 3.0, 6.0])


def test_an_array_of_two_loops_values_is_their_sequences():
    # (last in the file: the parameters it draws would move the seeds of the tests after it)
    # Splice ((f : b)): the array's items are the loops' values, each the sequence its closed
    # loop computes (a bidirectional layer); 2f8d9b80 took them as steps of both loops at once
    # ("a value mixes steps of a loop that is already closed")
    net, _ = _build("""{ x = Input{2}
        W = Parameter (3, 2) ; H = Parameter (3, 3) ; V = Parameter (3, 3)
        f = Tanh (W * x + H * PastValue (3, f))
        b = Tanh (W * x + V * FutureValue (3, b))
        fb = Splice ((f : b)) }""")
    w, hw, vw = (net.nodes[name].d for name in ("W", "H", "V"))
    xs = _sequences(2, 2)

    def loop(seq, m, backwards):
        h, out = np.full(3, 0.1, np.float32), []
        for t in (range(len(seq) - 1, -1, -1) if backwards else range(len(seq))):
            h = np.tanh(seq[t] @ w + h @ m)
            out.append(h)
        return np.array(out[::-1] if backwards else out)

    for got, seq in zip(_run(net, "fb", {"x": xs}), xs):
        expect = np.concatenate([loop(seq, hw, False), loop(seq, vw, True)], axis=1)
        np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-6)


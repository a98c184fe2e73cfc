"""CNTK.core.bs's GRUs (``BS.RNNs.GRU``, ``RecurrentGRU``, ``RecurrentGRUStack``,
``RecurrentBidirectionalGRUStack``), each against a NumPy loop of CNTK.core.bs's step: new
parameters for each term (``B () + W () * x``, ``H () * h``), ``z = Sigmoid (pin + H dhs)``,
``r = Sigmoid (pin + H dhs)``, ``c = Tanh (pin + H (dhs .* r))``, ``h = (1 - z) .* c + z .* dhs``,
the previous ``h`` 0.1 before the start (``PastValue``'s default).  As in cntk.exe the GRU's
record member ``cellDim = outputDim`` hides its ``cellDim`` argument: no projection.  The
parameters are found by their paths, cntk.exe's names (``g.gruState._.zt._.PlusArgs[0].
PlusArgs[1].TimesArgs[0]``: the W of z)."""

from __future__ import annotations

import numpy as np

import stadyn as sd
from stadyn.brainscript import StadynLibrary, build_network

LENGTHS = (3, 1, 5)
_TERMS = {"z": "zt._", "r": "rt._", "c": "ct.z"}


def _build(text: str):
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(text, StadynLibrary())
        params = {k: v.d.copy() for k, v in sd.get_parameters().items()}
    return net, params


def _run(net, node: str, xs: list[np.ndarray]) -> list[np.ndarray]:
    net.nodes["x"].d = xs
    y = net.nodes[node]
    y.forward()
    return sd.sequence.unpack_value(y)


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _gate(params: dict, state: str, gate: str):
    """(B, W, H) of one gate term of the GRU at ``state`` (a path)."""
    at = f"{state}._.{_TERMS[gate]}."
    return (params[at + "PlusArgs[0].PlusArgs[0]"],
            params[at + "PlusArgs[0].PlusArgs[1].TimesArgs[0]"],
            params[at + "PlusArgs[1].TimesArgs[0]"])


def _gru(seq: np.ndarray, params: dict, state: str, backwards: bool = False) -> np.ndarray:
    (bz, wz, hz), (br, wr, hr), (bc, wc, hc) = (_gate(params, state, g) for g in "zrc")
    h, out = np.full(hz.shape[0], 0.1, np.float64), []
    for t in (range(len(seq) - 1, -1, -1) if backwards else range(len(seq))):
        x = seq[t].astype(np.float64)
        z = _sigmoid(bz + x @ wz + h @ hz)
        r = _sigmoid(br + x @ wr + h @ hr)
        c = np.tanh(bc + x @ wc + (h * r) @ hc)
        h = (1 - z) * c + z * h
        out.append(h)
    return np.array(out[::-1] if backwards else out)


def _sequences(dim: int) -> list[np.ndarray]:
    rng = np.random.RandomState(3)
    return [rng.randn(n, dim).astype(np.float32) for n in LENGTHS]


def test_recurrent_gru_and_its_stack_run_cntk_core_bs_step():
    net, params = _build("""{ x = Input {3}
        g = BS.RNNs.RecurrentGRU (4, cellDim = 7, x)
        h = g.h
        st = BS.RNNs.RecurrentGRUStack ((4:2), x)
        s = st[1].h }""")
    assert params["g.gruState._.zt._.PlusArgs[1].TimesArgs[0]"].shape == (4, 4)   # no projection
    xs = _sequences(3)
    for got, seq in zip(_run(net, "h", xs), xs):
        np.testing.assert_allclose(got, _gru(seq, params, "g.gruState"), rtol=1e-5, atol=1e-6)
    for got, seq in zip(_run(net, "s", xs), xs):
        first = _gru(seq, params, "st.layers[0].gruState")
        np.testing.assert_allclose(got, _gru(first, params, "st.layers[1].gruState"),
                                   rtol=1e-5, atol=1e-6)


def test_bidirectional_gru_stack_splices_a_forward_and_a_backward_loop():
    net, params = _build("""{ x = Input {3}
        bi = BS.RNNs.RecurrentBidirectionalGRUStack ((2:3), x)
        h0 = bi[0].h ; h1 = bi[1].h }""")
    xs = _sequences(3)
    def layer(seq, i):
        return np.concatenate([_gru(seq, params, f"bi.layers[{i}].fwd.gruState"),
                               _gru(seq, params, f"bi.layers[{i}].bwd.gruState", backwards=True)],
                              axis=1)

    for got0, got1, seq in zip(_run(net, "h0", xs), _run(net, "h1", xs), xs):
        first = layer(seq, 0)
        np.testing.assert_allclose(got0, first, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got1, layer(first, 1), rtol=1e-5, atol=1e-6)

"""CNTK.core.bs's ``BS.Parameters.StabilizeElements`` / ``Stabilize`` and ``BS.RNNs.LSTMP`` (in
``RecurrentLSTMPStack``) with ``enableSelfStabilization = true``, against NumPy written here from
CNTK.core.bs's definitions: a stabiliser is ``x * log(1 + exp(4 a)) / 4``; LSTMP stabilises the
previous h once for all four gates (``dhs``), the previous c once for the input and forget
peepholes (``dcs``; not in ``ft .* dc``), the new cell in the output peephole and the value it
projects; a stack stabilises each layer's input but the first's.  States start at 0.1."""

from __future__ import annotations

import numpy as np

import stadyn as sd
from stadyn.brainscript import StadynLibrary, build_network

LENGTHS = (3, 1, 4)


def _beta(alpha):
    return np.log1p(np.exp(4.0 * alpha)) / 4.0


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _inputs(dim=3, seed=2):
    rng = np.random.RandomState(seed)
    return [rng.randn(n, dim).astype(np.float32) for n in LENGTHS]


def _run(net, node, xs):
    net.nodes["x"].d = xs
    y = net.nodes[node]
    y.forward()
    return sd.sequence.unpack_value(y)


def test_stabilize_elements_learns_one_factor_per_element_and_stabilize_one_scalar():
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ x = Input{3}
            y = BS.Parameters.StabilizeElements (x)
            z = BS.Parameters.Stabilize (x)
            off = BS.Parameters.Stabilize (x, enabled = false) }""",
            # (no sequence function: x is a sequence as the data fed it, a reader's stream
            # of sequences, makes it -- test_bs_data_sequences.py)
            StadynLibrary(sequence_inputs=("x",)))
        params = dict(sd.get_parameters().items())
        vector = next(v for v in params.values() if v.shape == (3,))
        scalar = next(v for v in params.values() if v.shape == ())
        assert len(params) == 2
        assert np.allclose(_beta(vector.d), 1.0) and np.isclose(_beta(scalar.d), 1.0)
        vector.d = np.array([0.2, -0.5, 1.5], np.float32)
        scalar.d = np.float32(-0.3)
        xs = _inputs()
        for name, factor in (("y", _beta(vector.d.astype(np.float64))),
                             ("z", _beta(-0.3)), ("off", 1.0)):
            for got, seq in zip(_run(net, name, xs), xs):
                np.testing.assert_allclose(got, seq * factor, rtol=1e-5, atol=1e-6,
                                           err_msg=name)


def _lstmp(seq, p, beta, out_dim, h0=0.1):
    """One BS.RNNs.LSTMP recurrence over a sequence (CNTK.core.bs), every gate's W, H, b and
    peephole C the same matrices ``p`` (see the test)."""
    cell = p["b"].shape[0]
    h, c, out = np.full(out_dim, h0), np.full(cell, h0), []
    for x in seq.astype(np.float64):
        dhs, dcs = beta * h, beta * c
        z = p["b"] + x @ p["W"] + dhs @ p["H"]
        it = _sigmoid(z + p["C"] * dcs)
        ft = _sigmoid(z + p["C"] * dcs)
        ct = ft * c + it * np.tanh(z)
        ot = _sigmoid(z + p["C"] * (beta * ct))
        ht = ot * np.tanh(ct)
        h = (beta * ht) @ p["Wmr"] if out_dim != cell else ht
        c = ct
        out.append(h)
    return np.array(out)


def test_a_stabilised_lstmp_stack_is_cntk_core_bs_lstmp():
    """Two layers of output 2 and cells 5: every parameter of one shape gets the same values
    (so that which gate a parameter feeds does not matter to the reference) and every
    stabiliser the same ``a``; a stabiliser misplaced or left out changes the numbers."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ x = Input{3}
            y = BS.RNNs.RecurrentLSTMPStack ((2:2), cellDims = (5:5), x,
                                             enableSelfStabilization = true)[1].h }""",
                            StadynLibrary())
        params = dict(sd.get_parameters().items())
        rng = np.random.RandomState(4)
        values = {}
        for v in params.values():
            if v.shape not in values:
                values[v.shape] = (np.float32(0.3) if v.shape == () else
                                   rng.uniform(-0.6, 0.6, v.shape).astype(np.float32))
            v.d = values[v.shape]
        # per layer 4 stabilisers (h, c, the new cell, the projection), one between the layers
        assert sum(v.shape == () for v in params.values()) == 9
        assert sorted({v.shape for v in params.values()}) == [(), (2, 5), (3, 5), (5,), (5, 2)]
        f64 = {k: v.astype(np.float64) for k, v in values.items()}
        beta = _beta(0.3)
        first = {"W": f64[(3, 5)], "H": f64[(2, 5)], "b": f64[(5,)], "C": f64[(5,)],
                 "Wmr": f64[(5, 2)]}
        second = dict(first, W=f64[(2, 5)])
        xs = _inputs()
        for got, seq in zip(_run(net, "y", xs), xs):
            hidden = _lstmp(seq, first, beta, 2)
            want = _lstmp(beta * hidden, second, beta, 2)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_stabilised_bidirectional_lstmp_stack_splices_both_directions():
    """CNTK.core.bs's RecurrentBidirectionalLSTMPStack: per layer a forward and a backward
    RecurrentLSTMP on the same input, their h spliced; the second layer reads the first's h
    through one stabiliser shared by its two directions.  Parameters of one shape share values
    and every stabiliser the same ``a``, as above: the backward loop is the forward recurrence
    over the reversed sequence."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ x = Input{3}
            bi = BS.RNNs.RecurrentBidirectionalLSTMPStack ((2:2), cellDims = (5:5), x,
                                                           enableSelfStabilization = true)
            y = bi[1].h }""", StadynLibrary())
        params = dict(sd.get_parameters().items())
        rng = np.random.RandomState(5)
        values = {}
        for v in params.values():
            if v.shape not in values:
                values[v.shape] = (np.float32(0.3) if v.shape == () else
                                   rng.uniform(-0.6, 0.6, v.shape).astype(np.float32))
            v.d = values[v.shape]
        # 4 stabilisers per direction and layer, one between the layers
        assert sum(v.shape == () for v in params.values()) == 17
        f64 = {k: v.astype(np.float64) for k, v in values.items()}
        beta = _beta(0.3)
        first = {"W": f64[(3, 5)], "H": f64[(2, 5)], "b": f64[(5,)], "C": f64[(5,)],
                 "Wmr": f64[(5, 2)]}
        second = dict(first, W=f64[(4, 5)])

        def both(seq, p):
            return np.concatenate([_lstmp(seq, p, beta, 2),
                                   _lstmp(seq[::-1], p, beta, 2)[::-1]], axis=1)

        xs = _inputs()
        for got, seq in zip(_run(net, "y", xs), xs):
            want = both(beta * both(seq, first), second)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)

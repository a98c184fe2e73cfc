"""Harness entries of NNabla's stacked recurrent ops (``stadyn/ops/_rnn.py``) with NumPy
references written from NNabla's documented equations and weight layouts (gates: LSTM input,
forget, cell, output; GRU reset, update, new with the new gate's recurrent bias as a fourth
bias row), layer by layer and direction by direction."""

from __future__ import annotations

import numpy as np

T, B, I, H = 3, 2, 3, 2
_RNG = np.random.default_rng(77)


def _n(*shape, scale=1.0):
    return (_RNG.standard_normal(shape) * scale).astype(np.float32)


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def _lstm_cell(x, state, w, b):
    h, c = state
    g = [np.concatenate([x, h], 1) @ w[k].T + (0 if b is None else b[k]) for k in range(4)]
    c = _sig(g[1]) * c + _sig(g[0]) * np.tanh(g[2])
    return _sig(g[3]) * np.tanh(c), c


def _gru_cell(x, state, w, b):
    (h,) = state
    n_in = x.shape[1]
    b = np.zeros((4, h.shape[1])) if b is None else b
    r = _sig(x @ w[0][:, :n_in].T + h @ w[0][:, n_in:].T + b[0])
    z = _sig(x @ w[1][:, :n_in].T + h @ w[1][:, n_in:].T + b[1])
    n = np.tanh(x @ w[2][:, :n_in].T + b[2] + r * (h @ w[2][:, n_in:].T + b[3]))
    return ((1 - z) * n + z * h,)


def _rnn_cell(activation):
    def cell(x, state, w, b):
        (h,) = state
        return (activation(np.concatenate([x, h], 1) @ w.T + (0 if b is None else b)),)
    return cell


def _stacked(cell, x, states, weight_l0, weight, bias, num_layers, bidirectional):
    """``(y, final states...)`` of a stacked recurrence; ``states`` are ``(L, D, B, H)``."""
    directions = 2 if bidirectional else 1
    finals = [np.zeros_like(s) for s in states]
    inp = x
    for layer in range(num_layers):
        outs = []
        for d in range(directions):
            w = weight_l0[d] if layer == 0 else weight[layer - 1, d]
            b = None if bias is None else bias[layer, d]
            st = tuple(s[layer, d] for s in states)
            ys = [None] * len(inp)
            for t in (range(len(inp) - 1, -1, -1) if d else range(len(inp))):
                st = cell(inp[t], st, w, b)
                ys[t] = st[0]
            for k, s in enumerate(st):
                finals[k][layer, d] = s
            outs.append(np.stack(ys))
        inp = np.concatenate(outs, -1)
    return (inp,) + tuple(finals)


def ref_lstm(x, h, c, weight_l0, weight=None, bias=None, num_layers=1, dropout=0.0,
             bidirectional=False, training=True):
    return _stacked(_lstm_cell, x, (h, c), weight_l0, weight, bias, num_layers, bidirectional)


def ref_gru(x, h, weight_l0, weight=None, bias=None, num_layers=1, dropout=0.0,
            bidirectional=False, training=True):
    return _stacked(_gru_cell, x, (h,), weight_l0, weight, bias, num_layers, bidirectional)


def ref_rnn(x, h, weight_l0, weight=None, bias=None, num_layers=1, nonlinearity="tanh",
            dropout=0.0, bidirectional=False, training=True):
    act = np.tanh if nonlinearity == "tanh" else (lambda v: np.maximum(v, 0))
    return _stacked(_rnn_cell(act), x, (h,), weight_l0, weight, bias, num_layers,
                    bidirectional)


def rnn_entries(Case, Entry):
    """The entries, built with test_ops.py's ``Case`` and ``Entry``."""
    def states(layers, dirs):
        return _n(layers, dirs, B, H)

    def w(layers, dirs, gates):
        g = (gates,) if gates else ()
        w0 = _n(*((dirs,) + g + (H, I + H)), scale=0.5)
        wu = _n(*((layers - 1, dirs) + g + (H, dirs * H + H)), scale=0.5) if layers > 1 \
            else None
        return w0, wu

    def b(layers, dirs, gates):
        return _n(*((layers, dirs) + ((gates,) if gates else ()) + (H,)), scale=0.5)

    lstm1, lstm2 = w(1, 1, 4), w(2, 2, 4)
    gru1, gru2 = w(1, 1, 3), w(2, 2, 3)
    rnn1, rnn2 = w(1, 1, None), w(2, 1, None)
    return {
        "lstm": Entry([
            Case((_n(T, B, I), states(1, 1), states(1, 1), lstm1[0], None, b(1, 1, 4))),
            Case((_n(T, B, I), states(2, 2), states(2, 2), lstm2[0], lstm2[1], b(2, 2, 4)),
                 {"num_layers": 2, "bidirectional": True}),
            Case((_n(T, B, I), states(1, 1), states(1, 1), lstm1[0], None, None))],
            ref_lstm, rtol=1e-4),
        "gru": Entry([
            Case((_n(T, B, I), states(1, 1), gru1[0], None, b(1, 1, 4))),
            Case((_n(T, B, I), states(2, 2), gru2[0], gru2[1], b(2, 2, 4)),
                 {"num_layers": 2, "bidirectional": True})],
            ref_gru, rtol=1e-4),
        "rnn": Entry([
            Case((_n(T, B, I), states(1, 1), rnn1[0], None, b(1, 1, None))),
            Case((_n(T, B, I), states(2, 1), rnn2[0], rnn2[1], b(2, 1, None)),
                 {"num_layers": 2, "nonlinearity": "relu"})],
            ref_rnn, rtol=1e-4),
    }

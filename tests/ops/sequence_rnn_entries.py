"""Harness entries of the recurrences run whole (``stadyn/ops/_sequence_rnn.py``): CNTK's
plain RNN and GRU steps and CNTK's ``optimized_rnnstack``, with NumPy references walking each
sequence alone, cut to its length.

The GRU reference is CNTK 2.7's step (``cntk/layers/blocks.py``: the reset gate multiplies the
state before its product with ``H1``).  ``optimized_rnnstack``'s is cuDNN's equations over the
flat weight layout CNTK 2.7's own ``cntk/misc/optimized_rnnstack_converter.py`` reads (every
layer's matrices, per direction input ``(G*H, in)`` then recurrent ``(G*H, H)``, then every
layer's biases, per direction input then recurrent): CNTK 2.7 on a CPU refuses the op itself
("RNNForward -> Feature Not Implemented"), so no CNTK numbers can be made here.
"""

from __future__ import annotations

import numpy as np

from sequence_entries import LENGTHS, _seqs, padded


def _sig(v):
    return 1.0 / (1.0 + np.exp(-v))


_ACT = {"tanh": np.tanh, "relu": lambda v: np.maximum(v, 0.0)}


def _walk(x, lengths, h0, step, go_backwards):
    """``step(x_t, h) -> h`` over each sequence alone; ``(B, T, H)`` with 0 at padded steps."""
    size = step.size
    out = np.zeros(x.shape[:2] + (size,))
    for k, s in enumerate(_seqs(x, lengths)):
        h = np.broadcast_to(h0[k] if np.ndim(h0) == 2 else h0, (size,)).astype(np.float64)
        for t in (range(len(s) - 1, -1, -1) if go_backwards else range(len(s))):
            h = step(s[t], h)
            out[k, t] = h
    return out


def ref_rnn_sequence(x, lengths, h0, w, hw, b, activation="tanh", go_backwards=False):
    def step(xt, h):
        return _ACT[activation](xt @ w + h @ hw + b)
    step.size = hw.shape[0]
    return _walk(x, lengths, h0, step, go_backwards)


def ref_gru_sequence(x, lengths, h0, w, hw, h1, b, activation="tanh", go_backwards=False):
    size = h1.shape[0]

    def step(xt, h):
        px = xt @ w + b
        ph = h @ hw
        z = _sig(px[:size] + ph[:size])
        r = _sig(px[size:2 * size] + ph[size:])
        c = _ACT[activation](px[2 * size:] + (r * h) @ h1)
        return (1 - z) * c + z * h
    step.size = size
    return _walk(x, lengths, h0, step, go_backwards)


def _cudnn_cell(op, w_x, w_h, b_x, b_h, size):
    """One cuDNN cell ``(x, state) -> state`` (state: ``(h,)`` or ``(h, c)``)."""
    def split(v, k):
        return [v[j * size:(j + 1) * size] for j in range(k)]

    def cell(xt, state):
        h = state[0]
        if op == "lstm":
            i, f, g, o = split(w_x @ xt + b_x + w_h @ h + b_h, 4)
            c = _sig(f) * state[1] + _sig(i) * np.tanh(g)
            return (_sig(o) * np.tanh(c), c)
        if op == "gru":
            xr, xz, xn = split(w_x @ xt + b_x, 3)
            hr, hz, hn = split(w_h @ h + b_h, 3)
            r, z = _sig(xr + hr), _sig(xz + hz)
            n = np.tanh(xn + r * hn)
            return ((1 - z) * n + z * h,)
        act = np.tanh if op == "rnnTanh" else _ACT["relu"]
        return (act(w_x @ xt + b_x + w_h @ h + b_h),)
    return cell


def ref_optimized_rnnstack(x, lengths, weights, hidden_size=1, num_layers=1,
                           bidirectional=False, recurrent_op="lstm"):
    gates = {"lstm": 4, "gru": 3, "rnnTanh": 1, "rnnReLU": 1}[recurrent_op]
    dirs, size = (2 if bidirectional else 1), hidden_size
    flat = weights.reshape(-1)
    pos, mats, n_in = 0, [], x.shape[2]
    for _ in range(num_layers):
        for _ in range(dirs):
            pair = []
            for cols in (n_in, size):
                pair.append(flat[pos:pos + gates * size * cols].reshape(gates * size, cols))
                pos += gates * size * cols
            mats.append(pair)
        n_in = dirs * size
    biases = []
    for _ in range(num_layers * dirs):
        n = gates * size
        biases.append((flat[pos:pos + n], flat[pos + n:pos + 2 * n]))
        pos += 2 * n
    assert pos == flat.size
    out = np.zeros(x.shape[:2] + (dirs * size,))
    for k, s in enumerate(_seqs(x, lengths)):
        layer_in = s.astype(np.float64)
        for layer in range(num_layers):
            outs = []
            for d in range(dirs):
                (w_x, w_h), (b_x, b_h) = mats[layer * dirs + d], biases[layer * dirs + d]
                cell = _cudnn_cell(recurrent_op, w_x, w_h, b_x, b_h, size)
                state = tuple(np.zeros(size) for _ in range(2 if recurrent_op == "lstm" else 1))
                ys = np.zeros((len(s), size))
                for t in (range(len(s) - 1, -1, -1) if d else range(len(s))):
                    state = cell(layer_in[t], state)
                    ys[t] = state[0]
                outs.append(ys)
            layer_in = np.concatenate(outs, 1)
        out[k, :len(s)] = layer_in
    return out


def _n(rng, *shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def sequence_rnn_entries(Case, Entry):
    """The entries of ``cntk_rnn_sequence``, ``cntk_gru_sequence``, ``optimized_rnnstack``."""
    from stadyn.ops import rnnstack_weight_count
    rng = np.random.default_rng(31)
    x = padded(2, seed=12)
    h0 = _n(rng, 3, 3)
    rnn = (_n(rng, 2, 3), _n(rng, 3, 3), _n(rng, 3, scale=0.3))
    gru = (_n(rng, 2, 9), _n(rng, 3, 6), _n(rng, 3, 3), _n(rng, 9, scale=0.3))
    stacks = [dict(hidden_size=3, num_layers=1, bidirectional=False, recurrent_op="lstm"),
              dict(hidden_size=2, num_layers=2, bidirectional=True, recurrent_op="gru"),
              dict(hidden_size=3, num_layers=2, bidirectional=False, recurrent_op="rnnTanh"),
              dict(hidden_size=2, num_layers=1, bidirectional=True, recurrent_op="rnnReLU")]
    stack_cases = [Case((x, LENGTHS, _n(rng, rnnstack_weight_count(2, **a))), a) for a in stacks]
    return {
        "cntk_rnn_sequence": Entry(
            [Case((x, LENGTHS, np.float32(0)) + rnn),
             Case((x, LENGTHS, h0) + rnn, {"activation": "relu", "go_backwards": True})],
            ref_rnn_sequence, grad_inputs=(0, 2, 3, 4, 5), rtol=1e-4, atol=1e-5,
            why_not_others="the lengths are integers"),
        "cntk_gru_sequence": Entry(
            [Case((x, LENGTHS, np.float32(0.2)) + gru),
             Case((x, LENGTHS, h0) + gru, {"go_backwards": True}),
             Case((x, LENGTHS, h0) + gru, {"activation": "relu"})],
            ref_gru_sequence, grad_inputs=(0, 2, 3, 4, 5, 6), rtol=1e-4, atol=1e-5,
            why_not_others="the lengths are integers"),
        "optimized_rnnstack": Entry(
            stack_cases, ref_optimized_rnnstack, grad_inputs=(0, 2), rtol=1e-4, atol=1e-5,
            why_not_others="the lengths are integers"),
    }

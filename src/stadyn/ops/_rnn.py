"""NNabla's stacked recurrent ops: ``lstm``, ``gru``, ``rnn`` on time-major ``(T, B, I)`` input.

The weights are NNabla's cuDNN-style layout -- ``weight_l0`` ``(D, G, H, I + H)`` (input and
recurrent weights side by side), ``weight`` ``(L-1, D, G, H, D*H + H)`` for the layers above,
``bias`` ``(L, D, G', H)`` -- with the gates in NNabla's order (LSTM: input, forget, cell,
output; GRU: reset, update, new, and the new gate's recurrent bias as a fourth bias row).  That
is torch's gate order, so each op rearranges its weights into torch's flat list; ``lstm`` calls
torch's kernel (``torch.lstm``, ATen's own on CPUs, see ``_run``), ``gru`` and ``rnn`` run
their cells step by step (``_stepwise`` says why).  States are ``(L, D, B, H)``.
"""

from __future__ import annotations

import torch

from ._registry import op

_C = "recurrent"


def _flat_weights(weight_l0, weight, bias, gates: int, num_layers: int, input_size: int,
                  gru: bool = False) -> list:
    """torch's flat parameter list ``[w_ih, w_hh, b_ih, b_hh] per layer and direction``."""
    flat = []
    directions = weight_l0.shape[0]
    hidden = weight_l0.shape[-2]
    for layer in range(num_layers):
        w = weight_l0 if layer == 0 else weight[layer - 1]
        split = input_size if layer == 0 else directions * hidden
        for d in range(directions):
            wd = w[d].reshape(gates * hidden, -1)
            flat += [wd[:, :split].contiguous(), wd[:, split:].contiguous()]
            if bias is not None:
                b = bias[layer, d]
                if gru:        # rows r, z, n (input side) and the new gate's recurrent bias
                    zeros = b.new_zeros((2, hidden))
                    flat += [b[:3].reshape(-1), torch.cat([zeros, b[3:4]]).reshape(-1)]
                else:
                    flat += [b.reshape(-1), b.new_zeros(b.numel())]
    return flat


def _states(h):
    """``(L, D, B, H)`` states as torch's ``(L*D, B, H)``."""
    return h.reshape((-1,) + tuple(h.shape[2:]))


def _run(kernel, x, hx, weight_l0, weight, bias, gates, num_layers, dropout, bidirectional,
         training, gru=False):
    flat = _flat_weights(weight_l0, weight, bias, gates, int(num_layers), x.shape[2], gru)
    # Not oneDNN's RNN kernel: its backward needs a workspace a traced (static) program does
    # not keep; ATen's own kernel runs in both modes, so they agree bit for bit.
    with torch.backends.mkldnn.flags(enabled=False):
        return kernel(x, hx, flat, bias is not None, int(num_layers), float(dropout),
                      bool(training), bool(bidirectional), False)


def _stepwise(cell, x, h, flat, has_bias, num_layers, dropout, bidirectional, training):
    """A stacked recurrence as explicit steps of ``cell(x_t, h, w_ih, w_hh, b_ih, b_hh)``
    (out-of-place ops only).  GRU and Elman RNN use it: the static lowering of ATen's
    decomposed GRU/RNN cells (in-place activations on split views) gives wrong gradients."""
    directions = 2 if bidirectional else 1
    per = 4 if has_bias else 2
    finals, layer_input = [], x
    for layer in range(num_layers):
        outs = []
        for d in range(directions):
            k = (layer * directions + d) * per
            w_ih, w_hh = flat[k], flat[k + 1]
            b_ih, b_hh = (flat[k + 2], flat[k + 3]) if has_bias else (None, None)
            state = h[layer * directions + d]
            steps = []
            for t in (range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])):
                state = cell(layer_input[t], state, w_ih, w_hh, b_ih, b_hh)
                steps.append(state)
            finals.append(state)
            outs.append(torch.stack(steps[::-1] if d else steps))
        layer_input = torch.cat(outs, -1) if directions > 1 else outs[0]
        if dropout and training and layer < num_layers - 1:
            layer_input = torch.nn.functional.dropout(layer_input, dropout)
    return layer_input, torch.stack(finals)


def _linear(x, w, b):
    y = x.matmul(w.t())
    return y if b is None else y + b


def _gru_cell(x, h, w_ih, w_hh, b_ih, b_hh):
    xr, xz, xn = _linear(x, w_ih, b_ih).chunk(3, -1)
    hr, hz, hn = _linear(h, w_hh, b_hh).chunk(3, -1)
    r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
    n = torch.tanh(xn + r * hn)
    return (1 - z) * n + z * h


def _rnn_cell(activation):
    def cell(x, h, w_ih, w_hh, b_ih, b_hh):
        return activation(_linear(x, w_ih, b_ih) + _linear(h, w_hh, b_hh))
    return cell


@op(6, category=_C, precision="float", sequence="drop")
def lstm(x, h, c, weight_l0, weight=None, bias=None, num_layers=1, dropout=0.0,
         bidirectional=False, training=True):
    """NNabla's N-step LSTM: ``(y (T, B, D*H), h_n, c_n (L, D, B, H))``; see the module
    docstring for the layouts.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x, h, c = sd.Variable((5, 2, 3)), sd.Variable((1, 1, 2, 4)), sd.Variable((1, 1, 2, 4))
        >>> y, hn, cn = F.lstm(x, h, c, sd.Variable((1, 4, 4, 7)), None, sd.Variable((1, 1, 4, 4)))
        >>> y.shape, hn.shape
        ((5, 2, 4), (1, 1, 2, 4))
    """
    y, hn, cn = _run(torch.lstm, x, (_states(h), _states(c)), weight_l0, weight, bias, 4,
                     num_layers, dropout, bidirectional, training)
    return y, hn.reshape(h.shape), cn.reshape(c.shape)


@op(5, category=_C, precision="float", sequence="drop")
def gru(x, h, weight_l0, weight=None, bias=None, num_layers=1, dropout=0.0,
        bidirectional=False, training=True):
    """NNabla's N-step GRU: ``(y (T, B, D*H), h_n (L, D, B, H))``, weights ``(D, 3, H, I+H)``,
    bias ``(L, D, 4, H)``: ``n = tanh(W_n x + b_in + r * (U_n h + b_hn))``.

    Example: ``y, hn = F.gru(x, h, weight_l0, None, bias)``.
    """
    flat = _flat_weights(weight_l0, weight, bias, 3, int(num_layers), x.shape[2], gru=True)
    y, hn = _stepwise(_gru_cell, x, _states(h), flat, bias is not None, int(num_layers),
                      float(dropout), bool(bidirectional), bool(training))
    return y, hn.reshape(h.shape)


@op(5, category=_C, precision="float", sequence="drop")
def rnn(x, h, weight_l0, weight=None, bias=None, num_layers=1, nonlinearity="tanh",
        dropout=0.0, bidirectional=False, training=True):
    """NNabla's N-step Elman RNN (``nonlinearity`` ``"tanh"`` or ``"relu"``): ``(y, h_n)``,
    weights ``(D, H, I+H)``, bias ``(L, D, H)``.

    Example: ``y, hn = F.rnn(x, h, weight_l0, None, bias, nonlinearity="relu")``.
    """
    activations = {"tanh": torch.tanh, "relu": torch.relu}
    if nonlinearity not in activations:
        raise ValueError(f"nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
    w0 = weight_l0.unsqueeze(1)
    w = None if weight is None else weight.unsqueeze(2)
    b = None if bias is None else bias.unsqueeze(2)
    flat = _flat_weights(w0, w, b, 1, int(num_layers), x.shape[2])
    y, hn = _stepwise(_rnn_cell(activations[nonlinearity]), x, _states(h), flat,
                      bias is not None, int(num_layers), float(dropout), bool(bidirectional),
                      bool(training))
    return y, hn.reshape(h.shape)

"""Recurrences over the sequence axis run whole, not step by step through a step graph.

CNTK's ``LSTM`` step is torch's LSTM cell once CNTK's gate blocks are reordered, so
``cntk_lstm_sequence`` runs torch's fused kernel (cuDNN on GPUs, ATen's own on CPUs) on packed
sequences.  CNTK's ``GRU`` is not cuDNN's: CNTK applies the reset gate to the state *before*
its product with ``H1`` (``act(x Wc + bc + (r * h) H1)``), cuDNN and torch after it
(``tanh(x Wn + bn + r * (h Un + bhn))``), so no fused kernel computes it.
``cntk_gru_sequence`` and ``cntk_rnn_sequence`` (CNTK's ``RNNStep`` with tanh or ReLU)
compute the input products of every step as one product and loop over the steps with torch
ops; they are traceable, so a static plan holds the loop and its generated backward (measured
faster on CPUs than torch's Elman kernel, which is such a loop with an autograd tape).
``optimized_rnnstack`` is CNTK's cuDNN RNN stack: one flat weight vector in cuDNN's layout,
run by torch's kernels.

The packed ops are declared ``traceable=False`` (packing reads the lengths on the host), so a
static graph holding one runs its plan eagerly, with the fused kernels' own backward.
"""

from __future__ import annotations

import torch
import torch.nn.utils.rnn as nn_rnn

from .._errors import ShapeError
from ._recurrence import _zero_padding
from ._registry import op
from ._sequence import step_mask

_KERNELS = {"lstm": torch.lstm, "gru": torch.gru, "rnnTanh": torch.rnn_tanh,
            "rnnReLU": torch.rnn_relu}
_GATES = {"lstm": 4, "gru": 3, "rnnTanh": 1, "rnnReLU": 1}


def _within_lengths_reversed(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """``(B, steps)`` step indices reversing each sequence within its length (padded steps
    stay); applying it twice is the identity."""
    t = torch.arange(steps, device=lengths.device).unsqueeze(0)
    n = lengths.unsqueeze(1)
    return torch.where(t < n, n - 1 - t, t)


def _reversed(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each sequence of ``x`` ``(B, T, ...)`` reversed within its length."""
    rows = torch.arange(x.shape[0], device=x.device).unsqueeze(1)
    return x[rows, _within_lengths_reversed(lengths, x.shape[1])]


def _initial(state: torch.Tensor, batch: int, size: int, dtype) -> torch.Tensor:
    """An initial state given as a scalar, ``(H,)`` or ``(B, H)``, as ``(B, H)``."""
    return state.to(dtype).expand(batch, size) if state.ndim < 2 else state.to(dtype)


def _packed_run(kernel, x, lengths, hx, params, num_layers=1, bidirectional=False,
                go_backwards=False):
    """``kernel`` (``torch.lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu``) over the sequences of
    ``x`` ``(B, T, in)`` packed by ``lengths``; ``hx`` the initial states ``(L*D, B, H)`` (a
    tuple for the LSTM) in batch order; returns ``(B, T, D*H)``, 0 at padded steps."""
    if lengths.dim() != 1 or lengths.shape[0] != x.shape[0]:
        # packing would keep only the sequences given a length, silently
        raise ShapeError(f"the sequence lengths have shape {tuple(lengths.shape)}: one length "
                         f"per sequence of the minibatch of {x.shape[0]} was expected")
    steps = x.shape[1]
    n = lengths.clamp(min=1)
    if go_backwards:
        x = _reversed(x, n)
    packed = nn_rnn.pack_padded_sequence(x, n.cpu(), batch_first=True, enforce_sorted=False)
    order = packed.sorted_indices

    def _sorted(h):
        return h[:, order].contiguous()
    hx = tuple(_sorted(h) for h in hx) if isinstance(hx, tuple) else _sorted(hx)
    out = kernel(packed.data, packed.batch_sizes, hx, params, True, int(num_layers), 0.0,
                 torch.is_grad_enabled(), bool(bidirectional))
    y, _ = nn_rnn.pad_packed_sequence(
        nn_rnn.PackedSequence(out[0], packed.batch_sizes, order, packed.unsorted_indices),
        batch_first=True, total_length=steps)
    if go_backwards:
        y = _reversed(y, n)
    return _zero_padding(y, step_mask(lengths, y.shape[1]))


def _torch_gates(w: torch.Tensor) -> torch.Tensor:
    """CNTK's ``(in, 4H)`` gate blocks ``i, c, f, o`` as torch's ``(4H, in)`` ``i, f, g, o``."""
    i, c, f, o = w.reshape(w.shape[0], 4, -1).unbind(1)
    return torch.cat([i, f, c, o], 1).t().contiguous()     # (the fused kernel's fast path)


def _sequence_shape(x, lengths, *rest, **attrs):
    """The output ``(B, T, H)`` of a CNTK recurrence: ``H`` is the recurrent weight's rows."""
    hw = rest[-2]
    grad = any(t.requires_grad for t in (x,) + rest if isinstance(t, torch.Tensor))
    return torch.empty(tuple(x.shape[:2]) + (hw.shape[0],), dtype=x.dtype, device="meta",
                       requires_grad=grad)


@op(7, category="sequence", shape=_sequence_shape, traceable=False, sequence="lengths:lengths")
def cntk_lstm_sequence(x, lengths, h0, c0, w, hw, b, go_backwards=False):
    """CNTK's LSTM step (``stadyn.layers.LSTM`` without peepholes, tanh) run along each
    sequence by torch's fused LSTM kernel on packed sequences: ``x`` ``(B, T, in)`` with
    ``lengths``, initial states ``h0``, ``c0`` (a scalar, ``(H,)`` or ``(B, H)``) and CNTK's
    ``W`` ``(in, 4H)``, ``H`` ``(H, 4H)``, ``b`` ``(4H,)``; returns ``h`` ``(B, T, H)``, 0 at
    padded steps.  The same values as the ``recurrence`` op over the LSTM step.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> v = lambda a: sd.Variable.from_numpy_array(np.asarray(a, np.float32))
        >>> with sd.auto_forward():
        ...     n = sd.Variable.from_numpy_array(np.array([2, 1]))
        ...     h = F.cntk_lstm_sequence(v(np.ones((2, 2, 1))), n, v(0), v(0),
        ...                              v(np.ones((1, 4))), v(np.zeros((1, 4))), v(np.zeros(4)))
        >>> h.shape, float(h.d[1, 1, 0])
        ((2, 2, 1), 0.0)
    """
    batch, size = x.shape[0], hw.shape[0]
    hx = tuple(_initial(s, batch, size, x.dtype).unsqueeze(0) for s in (h0, c0))
    params = [_torch_gates(w), _torch_gates(hw), _torch_gates(b.unsqueeze(0))[:, 0],
              torch.zeros_like(b)]
    return _packed_run(torch.lstm, x, lengths, hx, params, go_backwards=go_backwards)


def lstm_cells(x, h, h0, c0, w, hw, b) -> torch.Tensor:
    """The cell states ``c`` along each sequence of ``cntk_lstm_sequence``, which returns
    ``h`` only: from its input ``x`` ``(B, T, in)``, its outputs ``h`` ``(B, T, H)``, the
    initial states ``h0``, ``c0`` (a scalar, ``(H,)`` or ``(B, H)``) and CNTK's weights ``W``
    ``(in, 4H)``, ``H`` ``(H, 4H)``, ``b`` ``(4H,)`` (gates ``i, c, f, o`` in the columns).
    Every gate is known once the previous output is, so only the cell's own recurrence is
    run, in float64; returns ``(B, T, H)`` float64 (what the kernel computed at padded steps
    is no cell: read each sequence's steps within its length).  Tensors or arrays.

    Example:
        >>> import numpy as np, torch, stadyn as sd, stadyn.functions as F
        >>> from stadyn.ops import lstm_cells
        >>> v = lambda a: sd.Variable.from_numpy_array(np.asarray(a, np.float32))
        >>> x, w, hw, b = np.ones((1, 2, 1)), np.ones((1, 4)), np.zeros((1, 4)), np.zeros(4)
        >>> with sd.auto_forward():
        ...     h = F.cntk_lstm_sequence(v(x), sd.Variable.from_numpy_array(np.array([2])),
        ...                              v(0), v(0), v(w), v(hw), v(b))
        >>> c = lstm_cells(x, h.d, 0.0, 0.0, w, hw, b)
        >>> bool(np.allclose(np.tanh(c) / (1 + np.exp(-1)), h.d, atol=1e-6))   # h = o tanh(c)
        True
    """
    x, h, w, hw, b = (torch.as_tensor(v).to(torch.float64) for v in (x, h, w, hw, b))
    batch, steps, size = x.shape[0], x.shape[1], hw.shape[0]
    h0, c0 = (torch.as_tensor(s).to(torch.float64).expand(batch, size) for s in (h0, c0))
    previous = torch.cat([h0.unsqueeze(1), h[:, :-1]], 1)
    proj = x @ w + previous @ hw + b
    i, g, f, _ = proj.reshape(batch, steps, 4, -1).unbind(2)
    i, g, f = torch.sigmoid(i), torch.tanh(g), torch.sigmoid(f)
    c, cells = c0, []
    for t in range(steps):
        c = f[:, t] * c + i[:, t] * g[:, t]
        cells.append(c)
    return torch.stack(cells, 1)


def _activation(op_name: str, activation: str):
    act = {"tanh": torch.tanh, "relu": torch.relu}.get(activation)
    if act is None:
        raise ValueError(f"{op_name}: activation must be 'tanh' or 'relu', got {activation!r}")
    return act


def _stepwise(x, lengths, h0, w, b, size, cell, go_backwards):
    """``cell(projected input t, h) -> h`` along each sequence of ``x`` ``(B, T, in)``, the
    input products of every step computed as one product ``x W + b`` first; ``(B, T, H)``
    with 0 at padded steps.  Going backwards each sequence is reversed within its length (its
    padded steps stay at the end), run forwards and reversed back.  Out-of-place torch ops
    only: a static plan traces the loop, and its backward is generated with it."""
    batch, steps = x.shape[:2]
    n = lengths.clamp(min=1)
    if go_backwards:
        x = _reversed(x, n)
    projected = (torch.matmul(x, w) + b).unbind(1)    # one backward op (a stack), not T slices
    h = _initial(h0, batch, size, projected[0].dtype)
    outs = []
    for t in range(steps):
        h = cell(projected[t], h)
        outs.append(h)
    y = torch.stack(outs, 1)
    if go_backwards:
        y = _reversed(y, n)
    return _zero_padding(y, step_mask(lengths, y.shape[1]))


@op(6, category="sequence", sequence="lengths:lengths")
def cntk_rnn_sequence(x, lengths, h0, w, hw, b, activation="tanh", go_backwards=False):
    """CNTK's plain recurrent step (``stadyn.layers.RNNStep``) with ``activation`` ``"tanh"``
    or ``"relu"``, ``h' = act(x W + h H + b)``, along each sequence: ``x`` ``(B, T, in)``
    with ``lengths``, ``h0`` a scalar, ``(H,)`` or ``(B, H)``, ``W`` ``(in, H)``, ``H``
    ``(H, H)``, ``b`` ``(H,)``; the input products of all steps are one product, the steps a
    loop of torch ops (on CPUs torch's own Elman kernel is such a loop too, and a static plan
    traces this one).  Returns ``(B, T, H)``, 0 at padded steps.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> v = lambda a: sd.Variable.from_numpy_array(np.asarray(a, np.float32))
        >>> with sd.auto_forward():
        ...     n = sd.Variable.from_numpy_array(np.array([2, 1]))
        ...     h = F.cntk_rnn_sequence(v(np.ones((2, 2, 1))), n, v(0), v([[1.0]]), v([[1.0]]),
        ...                             v([0.0]), activation="relu")
        >>> h.d[:, :, 0].tolist()
        [[1.0, 2.0], [1.0, 0.0]]
    """
    act = _activation("cntk_rnn_sequence", activation)

    def cell(projected, h):
        return act(projected + torch.matmul(h, hw))
    return _stepwise(x, lengths, h0, w, b, hw.shape[0], cell, go_backwards)


@op(7, category="sequence", sequence="lengths:lengths")
def cntk_gru_sequence(x, lengths, h0, w, hw, h1, b, activation="tanh", go_backwards=False):
    """CNTK's GRU step (``stadyn.layers.GRU``) along each sequence:
    ``z, r = sigmoid(x Wz + bz + h Hz), sigmoid(x Wr + br + h Hr)``,
    ``h' = (1 - z) * act(x Wc + bc + (r * h) H1) + z * h`` with ``act`` ``"tanh"`` or
    ``"relu"``; ``W`` ``(in, 3H)`` (update, reset, candidate), ``H`` ``(H, 2H)``, ``H1``
    ``(H, H)``, ``b`` ``(3H,)``, ``h0`` a scalar, ``(H,)`` or ``(B, H)``.  The input products
    of all steps are one product; the steps then loop over torch ops.  Returns ``(B, T, H)``,
    0 at padded steps.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> v = lambda a: sd.Variable.from_numpy_array(np.asarray(a, np.float32))
        >>> with sd.auto_forward():
        ...     n = sd.Variable.from_numpy_array(np.array([2, 1]))
        ...     h = F.cntk_gru_sequence(v(np.ones((2, 2, 1))), n, v(0), v([[0.0, 0.0, 1.0]]),
        ...                             v([[0.0, 0.0]]), v([[0.0]]), v([0.0, 0.0, 0.0]))
        >>> h.d[:, :, 0].astype(float).round(4).tolist()    # z = 1/2: (tanh(1) + h) / 2
        [[0.3808, 0.5712], [0.3808, 0.0]]
    """
    act = _activation("cntk_gru_sequence", activation)
    size = h1.shape[0]

    def cell(projected, h):
        z, r = torch.sigmoid(projected[:, :2 * size] + torch.matmul(h, hw)).chunk(2, -1)
        candidate = act(projected[:, 2 * size:] + torch.matmul(r * h, h1))
        return (1.0 - z) * candidate + z * h
    return _stepwise(x, lengths, h0, w, b, size, cell, go_backwards)


def rnnstack_weight_count(input_size: int, hidden_size: int, num_layers: int = 1,
                          bidirectional: bool = False, recurrent_op: str = "lstm") -> int:
    """How many numbers ``optimized_rnnstack``'s flat weights hold (cuDNN's count).

    Example:
        >>> rnnstack_weight_count(3, 4, 1, False, "lstm")     # 4*4*3 + 4*4*4 + 2*16
        144
    """
    gates = _gates(recurrent_op)
    directions = 2 if bidirectional else 1
    total, n_in = 0, int(input_size)
    for _ in range(int(num_layers)):
        total += directions * gates * hidden_size * (n_in + hidden_size)
        n_in = directions * hidden_size
    return total + int(num_layers) * directions * 2 * gates * hidden_size


def _gates(recurrent_op: str) -> int:
    if recurrent_op not in _GATES:
        raise ValueError(f"optimized_rnnstack: recurrent_op must be one of "
                         f"{sorted(_GATES)}, got {recurrent_op!r}")
    return _GATES[recurrent_op]


def rnnstack_parameters(weights: torch.Tensor, input_size: int, hidden_size: int,
                        num_layers: int, bidirectional: bool, recurrent_op: str) -> list:
    """CNTK's flat ``optimized_rnnstack`` weights as torch's parameter list
    ``[w_ih, w_hh, b_ih, b_hh]`` per layer and direction.

    The layout is cuDNN's as CNTK fills it (CNTK 2.7's
    ``cntk/misc/optimized_rnnstack_converter.py`` reads it back the same way): for each layer
    and each direction the input matrix ``(G*H, in)`` then the recurrent matrix ``(G*H, H)``,
    row-major; after every layer's matrices, for each layer and direction the input bias then
    the recurrent bias ``(G*H,)``.  Gates in cuDNN's (and torch's) order: LSTM ``i, f, c, o``,
    GRU ``r, z, n``.

    Example:
        >>> import torch
        >>> [tuple(p.shape) for p in rnnstack_parameters(torch.zeros(144), 3, 4, 1, False, "lstm")]
        [(16, 3), (16, 4), (16,), (16,)]
    """
    gates, hidden = _gates(recurrent_op), int(hidden_size)
    directions = 2 if bidirectional else 1
    flat = weights.reshape(-1)
    mats, offset, n_in = [], 0, int(input_size)
    for _ in range(int(num_layers)):
        for _ in range(directions):
            for cols in (n_in, hidden):
                size = gates * hidden * cols
                mats.append(flat[offset:offset + size].reshape(gates * hidden, cols))
                offset += size
        n_in = directions * hidden
    params = []
    for k in range(0, len(mats), 2):
        biases = [flat[offset + j * gates * hidden:offset + (j + 1) * gates * hidden]
                  for j in range(2)]
        offset += 2 * gates * hidden
        params += [mats[k], mats[k + 1]] + biases
    return params


def _rnnstack_shape(x, lengths, weights, hidden_size=1, num_layers=1, bidirectional=False,
                    recurrent_op="lstm"):
    _check_weights(weights, x.shape[2], hidden_size, num_layers, bidirectional, recurrent_op)
    size = (2 if bidirectional else 1) * int(hidden_size)
    return torch.empty(tuple(x.shape[:2]) + (size,), dtype=x.dtype, device="meta",
                       requires_grad=x.requires_grad or weights.requires_grad)


def _check_weights(weights, input_size, hidden_size, num_layers, bidirectional, recurrent_op):
    want = rnnstack_weight_count(input_size, hidden_size, num_layers, bidirectional,
                                 recurrent_op)
    if weights.numel() != want:
        raise ValueError(
            f"optimized_rnnstack: the weights hold {weights.numel()} numbers; a "
            f"{num_layers}-layer {'bidirectional ' if bidirectional else ''}{recurrent_op} "
            f"stack of {hidden_size} over inputs of {input_size} needs {want}")


@op(3, category="sequence", shape=_rnnstack_shape, traceable=False, sequence="lengths:lengths")
def optimized_rnnstack(x, lengths, weights, hidden_size=1, num_layers=1, bidirectional=False,
                       recurrent_op="lstm"):
    """CNTK's ``optimized_rnnstack``: ``num_layers`` stacked recurrences (``recurrent_op``
    ``"lstm"``, ``"gru"``, ``"rnnTanh"``, ``"rnnReLU"``; both directions, outputs side by side,
    with ``bidirectional``) over ``x`` ``(B, T, in)`` with ``lengths``, from zero states,
    with cuDNN's equations (its GRU: ``n = tanh(x Wn + bWn + r * (h Rn + bRn))``) and all
    weights in one flat ``weights`` (layout: :func:`rnnstack_parameters`; size:
    :func:`rnnstack_weight_count`).  Returns ``(B, T, D*H)``, 0 at padded steps.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.ones((2, 3, 3), np.float32))
        ...     n = sd.Variable.from_numpy_array(np.array([3, 1]))
        ...     w = sd.Variable.from_numpy_array(np.full(144, 0.1, np.float32))
        ...     y = F.optimized_rnnstack(x, n, w, hidden_size=4)
        >>> y.shape, float(y.d[1, 2, 0])
        ((2, 3, 4), 0.0)
    """
    _check_weights(weights, x.shape[2], hidden_size, num_layers, bidirectional, recurrent_op)
    params = rnnstack_parameters(weights, x.shape[2], hidden_size, num_layers, bidirectional,
                                 recurrent_op)
    states = int(num_layers) * (2 if bidirectional else 1)
    h0 = x.new_zeros((states, x.shape[0], int(hidden_size)))
    hx = (h0, h0) if recurrent_op == "lstm" else h0
    return _packed_run(_KERNELS[recurrent_op], x, lengths, hx, params, num_layers,
                       bidirectional)

"""ONNX rules of the recurrences run whole (``stadyn/ops/_sequence_rnn.py``).

CNTK's LSTM, plain RNN and GRU steps are ONNX's ``LSTM``, ``RNN`` and ``GRU`` with
``sequence_lens`` (CNTK's GRU is ONNX's with ``linear_before_reset=0``: the reset gate
multiplies the state before its product), one direction (``reverse`` going backwards), and
CNTK's single bias as the input bias beside a zero recurrent one.  The export transposes the
batch-first ``(B, T, in)`` value to ONNX's time-major layout (``layout=1`` is not run by
onnxruntime), rearranges the weight blocks with ONNX ops (the weights stay parameters), and
zeroes the padded steps as the ops do.  The import reads the same nodes back onto the same ops.
"""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ._cntk_read_others import optimized_rnnstack_cntk
from ._table import Unmapped, register_rules

#: ONNX's gate blocks in CNTK's gate order (LSTM: ONNX ``i, o, f, c``, CNTK ``i, c, f, o``).
_LSTM_ORDER = [0, 3, 2, 1]


def _regate(g, w, gates, order, size, n_in=None):
    """CNTK's ``(in, G*H)`` weight as ONNX's ``(1, G*H, in)`` with the gate blocks in
    ``order`` (``n_in``: the rows, for a tensor the rule made itself)."""
    n_in = g.shape(w)[0] if n_in is None else n_in
    blocks = g.reshape(w, (n_in, gates, size))
    if order is not None:
        blocks = g.op("Gather", [blocks, g.ints(order)], axis=1)
    return g.unsqueeze(g.op("Transpose", [g.reshape(blocks, (n_in, gates * size))],
                            perm=[1, 0]), [0])


def _bias(g, b, gates, order, size):
    """CNTK's ``(G*H,)`` bias as ONNX's ``(1, 2*G*H)``: the input bias, then zeros."""
    zeros = g.const(np.zeros(gates * size, dtype=g.dtype(b)))
    if order is not None:
        b = g.reshape(g.op("Gather", [g.reshape(b, (gates, size)), g.ints(order)], axis=0),
                      (gates * size,))
    return g.unsqueeze(g.op("Concat", [b, zeros], axis=0), [0])


def _mask(g, lengths, steps, ndim):
    """``(B, T, 1, ...)`` booleans: step ``t`` < the sequence's length (``ndim`` axes)."""
    t = g.const(np.arange(steps, dtype=np.int64)[None, :])
    mask = g.op("Less", [t, g.unsqueeze(g.cast(lengths, np.int64), [1])])
    return g.unsqueeze(mask, list(range(2, ndim))) if ndim > 2 else mask


def _initial(g, h0, x, size):
    """An initial state (a scalar, ``(H,)`` or ``(B, H)``) as ONNX's ``(1, B, H)``: added to
    a ``(B, H)`` of zeros made from the input's first step, so the batch stays dynamic."""
    first = g.op("Gather", [x, g.const(np.asarray(0, dtype=np.int64))], axis=1)   # (B, in)
    zeros = g.op("MatMul", [g.op("Mul", [first, g.scalar(0.0, x)]),
                            g.const(np.zeros((g.shape(x)[2], size), dtype=g.dtype(x)))])
    return g.unsqueeze(g.op("Add", [zeros, g.cast(h0, g.dtype(x))]), [0])


def _run(g, op_type, x, lengths, weights, states, size, go_backwards, **attrs):
    """One ONNX recurrence over the batch-first ``x`` from ``states`` (h, and c for the
    LSTM); ``(B, T, H)`` with padded steps 0."""
    xt = g.op("Transpose", [x], perm=[1, 0, 2])
    y = g.op(op_type, [xt, *weights, g.cast(lengths, np.int32),
                       *[_initial(g, s, x, size) for s in states]],
             hidden_size=int(size), direction="reverse" if go_backwards else "forward",
             **attrs)
    y = g.op("Transpose", [g.squeeze(y, [1])], perm=[1, 0, 2])            # (B, T, H)
    mask = _mask(g, lengths, g.shape(x)[1], 3)
    return g.op("Where", [mask, y, g.scalar(0.0, x)])


def _lstm_onnx(g, inputs, attrs):
    """Transpose, LSTM, Where"""
    x, lengths, h0, c0, w, hw, b = inputs
    size = g.shape(hw)[0]
    weights = (_regate(g, w, 4, _LSTM_ORDER, size), _regate(g, hw, 4, _LSTM_ORDER, size),
               _bias(g, b, 4, _LSTM_ORDER, size))
    return _run(g, "LSTM", x, lengths, weights, [h0, c0], size, attrs["go_backwards"])


def _rnn_onnx(g, inputs, attrs):
    """Transpose, RNN, Where"""
    x, lengths, h0, w, hw, b = inputs
    size = g.shape(hw)[0]
    weights = (_regate(g, w, 1, None, size), _regate(g, hw, 1, None, size),
               _bias(g, b, 1, None, size))
    return _run(g, "RNN", x, lengths, weights, [h0], size, attrs["go_backwards"],
                activations=[attrs["activation"].capitalize()])


def _gru_onnx(g, inputs, attrs):
    """Transpose, GRU (linear_before_reset=0), Where"""
    x, lengths, h0, w, hw, h1, b = inputs
    size = g.shape(h1)[0]
    recurrent = g.op("Concat", [hw, h1], axis=1)                  # (H, 3H): z, r, then H1
    weights = (_regate(g, w, 3, None, size), _regate(g, recurrent, 3, None, size, size),
               _bias(g, b, 3, None, size))
    return _run(g, "GRU", x, lengths, weights, [h0], size, attrs["go_backwards"],
                activations=["Sigmoid", attrs["activation"].capitalize()],
                linear_before_reset=0)


# -- import: ONNX's LSTM / GRU / RNN onto the same ops ---------------------------------------------
_DEFAULT_ACTIVATIONS = {"LSTM": [["Sigmoid", "Tanh", "Tanh"]], "RNN": [["Tanh"], ["Relu"]],
                        "GRU": [["Sigmoid", "Tanh"], ["Sigmoid", "Relu"]]}
_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _check(node):
    """Refuse what the catalog ops cannot express."""
    kind = node.op_type
    if node.attr("layout", 0) != 0:
        node.unsupported("layout=1 (batch-major); export with layout 0")
    direction = node.attr("direction", "forward")
    if isinstance(direction, bytes):
        direction = direction.decode()
    if direction not in ("forward", "reverse"):
        node.unsupported(f"direction {direction!r}: one direction per node is supported")
    acts = [a.decode() if isinstance(a, bytes) else a
            for a in node.attr("activations", _DEFAULT_ACTIVATIONS[kind][0])]
    if acts not in _DEFAULT_ACTIVATIONS[kind]:
        node.unsupported(f"activations {acts}")
    if node.attr("clip") is not None or node.attr("activation_alpha") is not None:
        node.unsupported("clip or activation parameters")
    if kind == "GRU" and node.attr("linear_before_reset", 0) != 0:
        node.unsupported("linear_before_reset=1 (cuDNN's GRU; CNTK's layers apply the reset "
                         "gate before the product)")
    if kind == "LSTM" and (node.attr("input_forget", 0) or (node.n_inputs > 7 and node.has(7))):
        node.unsupported("input_forget or peepholes")
    if not node.has(3):
        node.unsupported("no bias input")
    if node.n_outputs > 1:
        node.unsupported("the final-state outputs Y_h / Y_c (only Y is read)")
    return acts[-1].lower(), direction == "reverse"


def _cntk_weight(node, i, gates, order, size):
    """ONNX's ``(1, G*H, in)`` weight input ``i`` as CNTK's ``(in, G*H)``."""
    w = F.reshape(node.var(i), (gates, size, node.shape(i)[2]))
    if order is not None:
        w = F.concatenate(*[F.slice(w, (k, 0, 0), (k + 1, size, node.shape(i)[2]))
                            for k in order], axis=0)
    return F.transpose(F.reshape(w, (gates * size, node.shape(i)[2])), (1, 0))


def _import_recurrence(node):
    activation, backwards = _check(node)
    kind = node.op_type
    gates, size = _GATES[kind], int(node.attr("hidden_size", node.shape(2)[2]))
    order = _LSTM_ORDER if kind == "LSTM" else None
    steps, batch = node.shape(0)[:2]
    x = F.transpose(node.var(0), (1, 0, 2))
    if node.n_inputs > 4 and node.has(4):
        lengths = node.var(4)
    else:
        lengths = node.constant_variable(np.full(batch, steps, dtype=np.int64))
    b = F.reshape(node.var(3), (2, gates * size))
    bias = F.reshape(F.sum(F.slice(b, (0, 0), (1, gates * size)) +
                           F.slice(b, (1, 0), (2, gates * size)), axis=0), (gates * size,))
    if order is not None:
        bias = F.reshape(_reorder_rows(F.reshape(bias, (gates, size)), order, size),
                         (gates * size,))

    def initial(i):
        if node.n_inputs > i and node.has(i):
            return F.reshape(node.var(i), (batch, size))
        return node.constant_variable(np.zeros((), dtype=np.float32))
    w = _cntk_weight(node, 1, gates, order, size)
    r = _cntk_weight(node, 2, gates, order, size)
    if kind == "LSTM":
        y = F.cntk_lstm_sequence(x, lengths, initial(5), initial(6), w, r, bias,
                                 go_backwards=backwards)
    elif kind == "RNN":
        y = F.cntk_rnn_sequence(x, lengths, initial(5), w, r, bias, activation=activation,
                                go_backwards=backwards)
    else:
        hw = F.slice(r, (0, 0), (size, 2 * size))
        h1 = F.slice(r, (0, 2 * size), (size, 3 * size))
        y = F.cntk_gru_sequence(x, lengths, initial(5), w, hw, h1, bias, activation=activation,
                                go_backwards=backwards)
    return F.reshape(F.transpose(y, (1, 0, 2)), (steps, 1, batch, size))


def _reorder_rows(v, order, size):
    return F.concatenate(*[F.slice(v, (k, 0), (k + 1, size)) for k in order], axis=0)


register_rules(F.cntk_lstm_sequence, onnx_export=_lstm_onnx,
               onnx_import={"LSTM": _import_recurrence})
register_rules(F.cntk_rnn_sequence, onnx_export=_rnn_onnx,
               onnx_import={"RNN": _import_recurrence})
register_rules(F.cntk_gru_sequence, onnx_export=_gru_onnx,
               onnx_import={"GRU": _import_recurrence})
register_rules(F.optimized_rnnstack,
               onnx_export=Unmapped("not written yet: ONNX can express it as one LSTM/GRU/RNN "
                                    "node per layer (bidirectional ones included) with the flat "
                                    "weights sliced apart"),
               onnx_import=Unmapped("ONNX's recurrences import one node at a time, as "
                                    "cntk_lstm_sequence / cntk_gru_sequence / cntk_rnn_sequence"),
               cntk_import={"OptimizedRNNStack": optimized_rnnstack_cntk})

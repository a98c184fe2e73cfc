"""Rules of the sequence ops, the recurrence and NNabla's recurrent ops
(``stadyn/ops/_sequence.py``, ``ops/_recurrence.py``, ``ops/_rnn.py``).  ONNX has no sequence
axis with lengths beside the batch axis: the reductions over a padded sequence, its softmax,
first and last steps export as ordinary ops with the lengths as a tensor (a mask from a
constant range of the padded length); the ops that make a new sequence axis or shift steps do
not export; ``sequence_unpack`` (a loaded CNTK network's sequence outputs end in one) is
``Where`` with the mask as numbers beside it.  NNabla's RNN ops are not mapped yet; CNTK's
fused recurrences are in ``_sequence_rnn.py``."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ...ops import StepFunction
from . import _sequence_cntk as C
from ._nnabla import nnabla
from ._table import Unmapped, register_rules

_NO_AXIS = ("ONNX tensors have no dynamic sequence axis with per-sequence lengths (Stadyn's "
            "padded layout); export the network per step instead")
_NO_IMPORT = "no ONNX op reads per-sequence lengths"
_BY_PARTS = ("no ONNX op reads per-sequence lengths: the export's ops (Less, Where, ...) import "
             "one by one as other catalog ops")


def _steps(g, x, lengths):
    """``(B, T)`` booleans: step ``t`` < the sequence's length (the padded length is static in
    a graph, so the steps are a constant)."""
    t = g.const(np.arange(g.shape(x)[1], dtype=np.int64)[None, :])
    return g.op("Less", [t, g.unsqueeze(g.cast(lengths, np.int64), [1])])


def _mask(g, x, lengths):
    """``(B, T, 1, ...)`` booleans shaped for ``x``: :func:`_steps`."""
    mask = _steps(g, x, lengths)
    return g.unsqueeze(mask, list(range(2, g.ndim(x)))) if g.ndim(x) > 2 else mask


def _masked_reduce(op_type, fill):
    def export(g, inputs, attrs):
        x, lengths = inputs
        kept = g.op("Where", [_mask(g, x, lengths), x, g.scalar(fill, x)])
        return g.reduce(op_type, kept, [1], False)
    export.__doc__ = f"Less, Where, {op_type}"
    return export


def _softmax_onnx(g, inputs, attrs):
    """Less, Where, Softmax, Where"""
    x, lengths = inputs
    mask = _mask(g, x, lengths)
    y = g.op("Softmax", [g.op("Where", [mask, x, g.scalar(float("-inf"), x)])], axis=1)
    return g.op("Where", [mask, y, g.scalar(0.0, x)])


def _first_onnx(g, inputs, attrs):
    """Gather"""
    return g.op("Gather", [inputs[0], g.const(np.asarray(0, dtype=np.int64))], axis=1)


def _last_onnx(g, inputs, attrs):
    """Sub, Where, Expand, GatherElements, Squeeze"""
    x, lengths = inputs
    last = g.op("Sub", [g.cast(lengths, np.int64), g.const(np.asarray(1, dtype=np.int64))])
    zero = g.const(np.asarray(0, dtype=np.int64))
    last = g.op("Where", [g.op("Less", [last, zero]), zero, last])
    index = g.reshape(last, (-1,) + (1,) * (g.ndim(x) - 1))
    index = g.op("Expand", [index, g.ints((1, 1) + tuple(g.shape(x)[2:]))])
    return g.squeeze(g.op("GatherElements", [x, index], axis=1), [1])


register_rules(F.sequence_reduce_sum, onnx_export=_masked_reduce("ReduceSum", 0.0),
               onnx_import=Unmapped(_BY_PARTS),
               cntk_import={"Sequence::ReduceElements": C.sequence_reduce_cntk})
register_rules(F.sequence_reduce_max, onnx_export=_masked_reduce("ReduceMax", float("-inf")),
               onnx_import=Unmapped(_BY_PARTS))
register_rules(F.sequence_softmax, onnx_export=_softmax_onnx, onnx_import=Unmapped(_BY_PARTS),
               cntk_import={"Sequence::Softmax": C.sequence_softmax_cntk})
def _unpack_onnx(g, inputs, attrs):
    """Less, Where, Cast

    The padded steps set to ``padding_value``; the mask as numbers of ``x``'s type."""
    x, lengths = inputs
    padded = g.op("Where", [_mask(g, x, lengths), x, g.scalar(float(attrs["padding_value"]), x)])
    return padded, g.cast(_steps(g, x, lengths), g.dtype(x))


register_rules(F.sequence_unpack, onnx_export=_unpack_onnx, onnx_import=Unmapped(_BY_PARTS),
               cntk_import={"UnpackSequenceOp": C.unpack_cntk})
register_rules(F.sequence_first, onnx_export=_first_onnx, onnx_import=Unmapped(_BY_PARTS))
register_rules(F.sequence_last, onnx_export=_last_onnx, onnx_import=Unmapped(_BY_PARTS),
               cntk_import={"Sequence::Slice": C.sequence_slice_cntk})
register_rules(F.sequence_broadcast_as, onnx_export=Unmapped(_NO_AXIS),
               onnx_import=Unmapped(_NO_IMPORT),
               cntk_import={"Sequence::BroadcastAs": C.broadcast_as_cntk,
                            "ReconcileDynamicAxis": C.reconcile_cntk},
               cntk_v1_import={"ReconcileDynamicAxis": C.reconcile_cntk})
register_rules(F.past_value, onnx_export=Unmapped(_NO_AXIS), onnx_import=Unmapped(_NO_IMPORT),
               cntk_import={"PastValue": C.delay_cntk},
               cntk_v1_import={"PastValue": C.delay_cntk_v1})
register_rules(F.future_value, onnx_export=Unmapped(_NO_AXIS), onnx_import=Unmapped(_NO_IMPORT),
               cntk_import={"FutureValue": C.delay_cntk},
               cntk_v1_import={"FutureValue": C.delay_cntk_v1})

register_rules(F.sequence_where, onnx_export=Unmapped(_NO_AXIS),
               onnx_import=Unmapped(_NO_IMPORT), cntk_import={"Where": C.where_cntk},
               cntk_v1_import={"Where": C.where_cntk})
register_rules(F.sequence_gather, onnx_export=Unmapped(_NO_AXIS),
               onnx_import=Unmapped(_NO_IMPORT), cntk_import={"Sequence::Gather": C.gather_cntk,
                                                               "GatherPacked":
                                                                   C.gather_packed_cntk_v1},
               cntk_v1_import={"GatherPacked": C.gather_packed_cntk_v1})
register_rules(F.to_sequence, onnx_export=Unmapped(_NO_AXIS), onnx_import=Unmapped(_NO_IMPORT),
               cntk_import={"ToSequenceOp": C.to_sequence_cntk})
register_rules(F.sequence_scatter, onnx_export=Unmapped(_NO_AXIS),
               onnx_import=Unmapped(_NO_IMPORT), cntk_import={"Sequence::Scatter": C.scatter_cntk},
               cntk_v1_import={"ScatterPacked": C.scatter_packed_cntk_v1})
for _op in (F.sequence_slice, F.sequence_full_lengths, F.sequence_window_lengths,
            F.sequence_reconcile):
    register_rules(_op, onnx_export=Unmapped(_NO_AXIS), onnx_import=Unmapped(_NO_IMPORT))


def _recurrence_save(w, attrs):
    """The step as a graph of its own: its leaves are the states, the step inputs and the
    captured values, in that order; its outputs the new states."""
    step = attrs["step"]
    if not isinstance(step, StepFunction):
        raise TypeError(f"attribute 'step' holds a {type(step).__name__}, not a StepFunction")
    if len(step.inputs) != attrs["n_sequences"]:
        raise TypeError(f"the step reads {len(step.inputs)} inputs, the recurrence feeds "
                        f"{attrs['n_sequences']}")
    return {"step": w.graph(step.leaves, step.nodes, step.outputs),
            "n_sequences": w.value(attrs["n_sequences"]),
            "go_backwards": w.value(attrs["go_backwards"])}


def _recurrence_load(r, attrs, inputs):
    """The inverse of ``_recurrence_save``: the node's inputs (lengths, sequences, initial
    values, captured values) say how many leaves of each kind the step has."""
    n_seq = r.value(attrs.get("n_sequences", 1), "attribute 'n_sequences'")
    backwards = r.value(attrs.get("go_backwards", False), "attribute 'go_backwards'")
    if not (isinstance(n_seq, int) and not isinstance(n_seq, bool) and n_seq >= 1
            and isinstance(backwards, bool) and "step" in attrs):
        r.fail("a recurrence needs a step, n_sequences >= 1 and a bool go_backwards")
    stored = attrs["step"]
    if not (isinstance(stored, dict) and isinstance(stored.get("outputs"), list)):
        r.fail("attribute 'step' must be a graph (an object with variables, nodes and outputs)")
    n_states = len(stored["outputs"])
    n_captured = len(inputs) - 1 - n_seq - n_states
    if n_states < 1 or n_captured < 0:
        r.fail(f"the step has {n_states} states and the node {len(inputs)} inputs: a recurrence "
               "takes the lengths, its sequences, an initial value per state and the step's "
               "captured values")
    like = [None] * (n_states + n_seq) + list(inputs[1 + n_seq + n_states:])
    leaves, outs = r.graph(stored, like)
    try:
        step = StepFunction(leaves[:n_states], leaves[n_states:n_states + n_seq], outs)
    except ValueError as exc:
        r.fail(f"attribute 'step': {exc}")
    if [id(v) for v in step.captured] != [id(v) for v in leaves[n_states + n_seq:]]:
        r.fail("attribute 'step': its captured leaves are not the ones the step reads, in "
               "the order it reads them")
    return {"step": step, "n_sequences": n_seq, "go_backwards": backwards}


register_rules(F.recurrence,
               onnx_export=Unmapped("a recurrence's step is a graph of its own; ONNX's Loop and "
                                    "Scan are not written yet"),
               onnx_import=Unmapped("ONNX's Loop/Scan import as unrolled graphs is not built"),
               model_export=_recurrence_save, model_import=_recurrence_load)

# NNabla's stacked recurrent ops (``ops/_rnn.py``)
_RNN = ("ONNX's LSTM/GRU/RNN (gate order iofc / zrh, separate recurrence biases) are not "
        "mapped from NNabla's layouts yet")
# NNabla's LSTM, GRU and RNN functions hold the catalog's layouts (the ops are NNabla's)
_RNN_FIELDS = dict(num_layers=int, dropout=float, bidirectional=bool, training=bool)
for _op, _nnp in ((F.lstm, nnabla(F.lstm, "LSTM", **_RNN_FIELDS)),
                  (F.gru, nnabla(F.gru, "GRU", **_RNN_FIELDS)),
                  (F.rnn, nnabla(F.rnn, "RNN", nonlinearity=str, **_RNN_FIELDS))):
    register_rules(_op, onnx_export=Unmapped(_RNN), onnx_import=Unmapped(_RNN), nnp_import=_nnp)

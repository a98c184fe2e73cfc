"""Rules of the sequence ops, the recurrence and NNabla's recurrent ops
(``stadyn/ops/_sequence.py``, ``ops/_recurrence.py``, ``ops/_rnn.py``): ONNX has no sequence
axis with lengths beside the batch axis, and its RNN ops are not mapped yet."""

from __future__ import annotations

from ... import functions as F
from ._table import Unmapped, register_rules

_NO_AXIS = ("ONNX tensors have no dynamic sequence axis with per-sequence lengths (Stadyn's "
            "padded layout); export the network per step instead")
_NO_IMPORT = "no ONNX op reads per-sequence lengths"

for _op in (F.sequence_reduce_sum, F.sequence_reduce_max, F.sequence_softmax,
            F.sequence_first, F.sequence_last, F.sequence_slice, F.sequence_broadcast_as,
            F.past_value, F.future_value, F.sequence_unpack, F.sequence_where,
            F.sequence_gather, F.sequence_scatter, F.to_sequence, F.sequence_full_lengths):
    register_rules(_op, onnx_export=Unmapped(_NO_AXIS), onnx_import=Unmapped(_NO_IMPORT))

register_rules(F.recurrence, onnx_export=Unmapped(F.recurrence.spec.unstorable),
               onnx_import=Unmapped("ONNX's Loop/Scan import as unrolled graphs is not built"))
for _op in (F.cntk_lstm_sequence, F.cntk_rnn_sequence, F.cntk_gru_sequence,
            F.optimized_rnnstack):
    register_rules(_op, onnx_export=Unmapped(_NO_AXIS), onnx_import=Unmapped(_NO_IMPORT))

# NNabla's stacked recurrent ops (``ops/_rnn.py``)
_RNN = ("ONNX's LSTM/GRU/RNN (gate order iofc / zrh, separate recurrence biases) are not "
        "mapped from NNabla's layouts yet")
for _op in (F.lstm, F.gru, F.rnn):
    register_rules(_op, onnx_export=Unmapped(_RNN), onnx_import=Unmapped(_RNN))

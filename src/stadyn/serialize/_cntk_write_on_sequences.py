"""Which ops the CNTK v2 writer (:mod:`._cntk_write`) writes over values on a sequence axis:
those it has a sequence form for, those ending a sequence, and the ``Gather`` CNTK writes step
by step; the writer refuses any other op reading a sequence."""

from __future__ import annotations

from ._cntk_write_exe import CRITERION_OPS
from ._cntk_write_seq import RULES as _SEQ_RULES

# (a criterion CNTK computes as one number over the minibatch: a loaded cntk.exe file's
# CrossEntropyWithSoftmax, ClassificationError, SquaredError, Logistic; _on_sequences)
_CRITERION_TOTAL = "cntk:<criterion over the minibatch>"
# the ops whose output has no sequence axis (one step of each sequence, a sum; the edit
# distance of the minibatch's sequences; LambdaRank's and NDCG's one number over the minibatch)
_SEQUENCE_ENDS = frozenset(("sequence_last", "sequence_first", "sequence_reduce_sum",
                            "sequence_reduce_max", "cntk:EditDistanceError",
                            "cntk:UnpackSequenceOp", "cntk_forward_backward", "cntk:LambdaRank",
                            "cntk:NDCG", _CRITERION_TOTAL))
# the ops written over values on a sequence axis (step by step, or PastValue / FutureValue;
# the compat's Slice and ReduceElements are over static axes only: a reduction along the
# sequence axis is refused by its own rule; the sequence ops of _cntk_write_seq's rules; those
# ending a sequence); any other op reading a sequence is refused
_SEQUENCE_OPS = frozenset((
    "relu", "tanh", "sigmoid", "exp", "cntk_log", "sqrt", "abs", "floor", "elu", "add2",
    "sub2", "mul2", "add_scalar", "mul_scalar", "r_sub_scalar", "affine", "softmax", "dropout",
    "identity", "concatenate",
    "stop_gradient", "past_value", "future_value", "cntk_lstm_sequence", "cntk_gru_sequence",
    "recurrence",
    "cntk:Floor", "cntk:Log", "cntk:Negate", "cntk:StopGradient", "cntk:Reciprocal",
    "cntk:ElementDivide", "cntk:NoOp", "cntk:CrossEntropyWithSoftmax",
    "cntk:ClassificationError", "cntk:Greater", "cntk:Less", "cntk:GreaterEqual",
    "cntk:LessEqual", "cntk:Equal", "cntk:NotEqual", "cntk:Slice", "cntk:ReduceElements",
    "cntk:LabelsToGraph", "cntk:SquaredError",
    # (step by step over a loaded cntk.exe file's images, as CNTK 2.7 writes it again; the
    # v1 reader's reshape to a column an element-wise op reads: _cntk_write_exe)
    "cntk:Sigmoid", "convolution", "cntk_batch_normalization", "max_pooling", "average_pooling",
    "reshape_trailing",
    # (CNTK's own op over the packed minibatch's columns, its output on the sequence axis)
    "cntk:CosDistanceWithNegativeSamples")) | frozenset(_SEQ_RULES) | _SEQUENCE_ENDS
# of those, the ops reading a value without the sequence axis beside a sequence (a value per
# sequence broadcast along it)
_SEQUENCE_AND_ONE = frozenset(("sequence_broadcast_as", "cntk:ReconcileDynamicAxis"))


def _gathers_steps(node, sequences: set, untyped: bool) -> bool:
    """Whether ``node`` is a ``Gather`` (along the table's first axis) CNTK's ``Gather`` writes
    on sequences: of a sequence of indices, step by step, from a table without the sequence
    axis; or of whatever the arguments of a Function saved untyped stand for (the file holds
    no axes for them: the graph is inferred again where it is applied, and CNTK 2.7 refuses a
    table with dynamic axes when run)."""
    return node.spec.name == "cntk:Gather" and (untyped or id(node.inputs[0]) not in sequences)


def _on_sequences(node) -> str:
    """The name a node is checked by when it reads a sequence: the catalog op under the
    compat's ReduceElements mark for ``sequence.reduce_sum`` / ``reduce_max``, a criterion
    of one number over the minibatch (a loaded cntk.exe file's) as the end of its sequences,
    else the node's own."""
    raw = getattr(node, "raw", None)
    if node.spec.name in CRITERION_OPS and node.outputs[0].sequence_lengths is None and \
            node.outputs[0].ndim == 0:
        return _CRITERION_TOTAL
    if node.spec.name == "cntk:ReduceElements" and raw is not None and \
            raw.spec.name in ("sequence_reduce_sum", "sequence_reduce_max"):
        return raw.spec.name
    return node.spec.name

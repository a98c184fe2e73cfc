"""Rules of the ops with CNTK's semantics (``stadyn/ops/_cntk.py``): losses and metrics with
dense targets, CNTK's batch normalisation, user functions."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ...cntk_semantics import reshape_sample
from ...ops import norm_axis
from ...sequence import unpack
from .._onnx_api import OnnxUnsupported
from ._cntk_rules import batch_normalization_cntk, batch_normalization_cntk_v1, v1
from ._common import COMPOSITE
from ._nn import _batch_normalization_onnx
from ._nnp_batch_norm import batch_normalization_nnp_export
from ._table import Unmapped, register_rules


def _cross_entropy_with_softmax_onnx(g, inputs, attrs):
    """LogSoftmax, Sub, ReduceMean, Mul, ReduceSum"""
    z, t = inputs
    a = norm_axis(attrs["axis"], g.ndim(z))
    if g.dtype(t) != g.dtype(z):
        t = g.cast(t, g.dtype(z))
    # CNTK's log_sum_exp(z) - t.z; log_sum_exp(z) is z - log_softmax(z) at every position:
    # their mean along the axis
    lse = g.reduce("ReduceMean", g.op("Sub", [z, g.op("LogSoftmax", [z], axis=a)]), [a], True)
    return g.op("Sub", [lse, g.reduce("ReduceSum", g.op("Mul", [t, z]), [a], True)])


_NOT_NNABLA = Unmapped("CNTK's criterion: NNabla 1.39 has no such function (its "
                       "softmax_cross_entropy and top_n_error take class indices, not one-hot "
                       "targets)")
def v1_criterion_operands(node, labels_at: int = 0, prediction_at: int = 1) -> tuple:
    """A CNTK v1 criterion node's ``(prediction, labels)`` (stored ``(labels, prediction)``;
    a v2 file's primitive of the same C++ node, CNTK 2.7's re-save of a cntk.exe file, stores
    ``(prediction, labels)``: ``labels_at``, ``prediction_at``), the prediction reshaped to the
    labels' sample shape where only the shapes' layout differs (cntk.exe's ``[10 x 1]`` output
    column against ``[10]`` labels: CNTK compares elements); the criterion reduces the dynamic
    axes (one number per minibatch)."""
    labels, z = node.var(labels_at), node.var(prediction_at)
    want = node.shape(labels_at)[node.lead(labels_at):]
    have = node.shape(prediction_at)[node.lead(prediction_at):]
    if tuple(want) != tuple(have) and int(np.prod(want)) == int(np.prod(have)) and \
            node.lead(labels_at) == node.lead(prediction_at) and node.lead(prediction_at) in (1, 2):
        z = reshape_sample(z, tuple(want), batched=True, sequence=node.lead(prediction_at) == 2)
    node.reduces_dynamic_axes()
    return z, labels


def v1_total(node, per_step, prediction_at: int = 1):
    """A v1 criterion's values summed over the minibatch, the steps past a sequence's end left
    out (cntk.exe's nodes zero them: ``MaskMissingColumnsToZero``, TrainingNodes.h:59, 192;
    a cntk.exe input is a sequence as CNTK 2.7 loads it)."""
    if node.lead(prediction_at) == 2:
        per_step, _ = unpack(per_step, 0.0)
    return F.sum(per_step)


def _cross_entropy_with_softmax_v1(node):
    """A CNTK v1 ``CrossEntropyWithSoftmax(labels, z)`` node: the cross entropy of every
    sample summed over the minibatch, one number (CNTK 2.7 evaluates a loaded v1 criterion
    so: 01_OneHidden.dnn's ``ce``)."""
    z, labels = v1_criterion_operands(node)
    return v1_total(node, F.cross_entropy_with_softmax(z, labels, axis=-1))


def _cross_entropy_with_softmax_cntk(node):
    """CNTK's primitive ``CrossEntropyWithSoftmax(z, labels)`` (op 35: the v1 node's, its
    inputs swapped, as CNTK 2.7 writes a loaded cntk.exe file again; its Python
    ``cross_entropy_with_softmax`` is a block of other ops): the v1 node's sum over the
    minibatch, one number."""
    z, labels = v1_criterion_operands(node, 1, 0)
    return v1_total(node, F.cross_entropy_with_softmax(z, labels, axis=-1), 0)


register_rules(F.cross_entropy_with_softmax, onnx_export=_cross_entropy_with_softmax_onnx,
               onnx_import=Unmapped(COMPOSITE), nnp_export=_NOT_NNABLA, nnp_import=_NOT_NNABLA,
               cntk_import={"CrossEntropyWithSoftmax": _cross_entropy_with_softmax_cntk},
               cntk_v1_import={"CrossEntropyWithSoftmax": _cross_entropy_with_softmax_v1})


def _classification_error_onnx(g, inputs, attrs):
    """ArgMax, GatherElements, Greater, ReduceSum, GreaterOrEqual

    ``topN`` 1 of float outputs: CNTK 2.7's prediction (the first output no later one exceeds:
    NaN passed by unless it comes first) as Equal, Where, ArgMax, Mul, GatherElements, and the
    target's value there taken from 1 (Sub).  Otherwise the outputs above the target's are
    counted (``z > score``): a NaN never counts, as CNTK's partial_sort passes it by (ties and
    NaN rows where libstdc++'s heap order decides can still differ)."""
    z, t = inputs
    a = norm_axis(attrs["axis"], g.ndim(z))
    if int(attrs["topN"]) == 1 and g.dtype(z).kind == "f":
        number = g.op("Equal", [z, z])                           # false at NaN
        passed = g.op("Where", [number, z, g.scalar(-np.inf, z)])
        prediction = g.op("ArgMax", [passed], axis=a, keepdims=1)  # the first of equal ones
        first = g.op("Mul", [prediction, g.const(np.asarray(0, np.int64))])
        head = g.op("GatherElements", [z, first], axis=a)
        prediction = g.op("Where", [g.op("Equal", [head, head]), prediction, first])
        if g.dtype(t) != g.dtype(z):
            t = g.cast(t, g.dtype(z))
        hit = g.op("GatherElements", [t, prediction], axis=a)
        return g.op("Sub", [g.scalar(1.0, z), hit])
    score = g.op("GatherElements", [z, g.op("ArgMax", [t], axis=a, keepdims=1)], axis=a)
    # (a NaN is never above: CNTK's partial_sort by a > b passes it by)
    better = g.reduce("ReduceSum", g.cast(g.op("Greater", [z, score]), np.int64), [a], True)
    wrong = g.op("GreaterOrEqual", [better, g.const(np.asarray(int(attrs["topN"]), np.int64))])
    return g.cast(wrong, g.dtype(z) if g.dtype(z).kind == "f" else np.float32)


def _classification_error_cntk(node):
    """CNTK 2.7's primitive ``ClassificationError(prediction, labels, topN)``, as CNTK saves
    ``classification_error(z, y, topN=5)`` (``topN`` 1 is saved as a block holding its body):
    ``topN`` a constant third input; the errors over the sample's last axis summed over the
    minibatch, one number (CNTK 2.7 evaluates the loaded node so: ResNet_18.model's
    ``top5Errs``)."""
    top_n = int(np.asarray(node.const(2)).ravel()[0]) if node.n_inputs > 2 else 1
    # (no dynamic axes: PrimitiveFunction.cpp:108-122; a cntk.exe file's re-save: sequences,
    # the steps past their ends left out, a [n x 1] column against [n] labels)
    z, labels = v1_criterion_operands(node, 1, 0)
    return v1_total(node, F.classification_error(z, labels, axis=-1, topN=top_n), 0)


def _classification_error_v1(node):
    """A CNTK v1 ``ClassificationError(labels, z[, topN])`` node (older files:
    ``ErrorPrediction``): the errors summed over the minibatch, one number (CNTK 2.7
    evaluates a loaded v1 file's ``errs`` and ``top5Errs`` so)."""
    top_n = int(np.asarray(node.const(2)).ravel()[0]) if node.n_inputs > 2 else 1
    z, labels = v1_criterion_operands(node)
    return v1_total(node, F.classification_error(z, labels, axis=-1, topN=top_n))


register_rules(F.classification_error, onnx_export=_classification_error_onnx,
               onnx_import=Unmapped(COMPOSITE), nnp_export=_NOT_NNABLA, nnp_import=_NOT_NNABLA,
               cntk_import={"ClassificationError": _classification_error_cntk},
               cntk_v1_import={"ClassificationError": _classification_error_v1,
                               "ErrorPrediction": _classification_error_v1})


def _cntk_bn_onnx(g, inputs, attrs):
    """BatchNormalization (running statistics), or its formula for per-element statistics"""
    x, scale, bias, mean, var = inputs[:5]
    nd = len(g.shape(x))
    lead = 2 if len(inputs) > 6 and inputs[6] else 1     # a sequence: its steps
    axes = [lead] if attrs["spatial"] else list(range(lead, nd))
    return _batch_normalization_onnx(g, [x, bias, scale, mean, var],
                                     {"axes": axes, "eps": attrs["epsilon"], "output_stat": False})


def _cntk_bn_nnp(e, inputs, attrs):
    """BatchNormalization: on the running statistics (``batch_stat`` false), or, in a training
    network, on the minibatch's with NNabla's ``decay_rate`` ``exp(-M / time_constant)`` for
    the written batch size M: CNTK's running average for minibatches of that size"""
    x, scale, bias, mean, var = inputs[:5]
    if len(inputs) > 6 and inputs[6] is not None:
        e.unsupported("batch normalisation of a sequence's steps (NNabla has no sequence axis)")
    training = e.training if attrs["batch_stat"] is None else bool(attrs["batch_stat"])
    ndim = len(e.shape(x))
    axes = [1] if attrs["spatial"] else list(range(1, ndim))
    # NNabla's statistics are shaped like x with 1 on the other axes, CNTK's flat: declared so
    stat = tuple(e.shape(x)[i] if i in axes else 1 for i in range(ndim))
    mean, var = (e.statistic(s, stat) or s for s in (mean, var))
    if training and (e.shape(mean) != stat or e.shape(var) != stat):
        e.unsupported("running statistics that other functions read too (NNabla updates them "
                      "in place)")
    batch_normalization_nnp_export(
        e, [x, bias, scale, mean, var],
        {"output_stat": False, "batch_stat": training, "time_constant": None, "axes": axes,
         "decay_rate": _cntk_bn_decay(e, attrs, e.shape(x)[0]) if training else 0.9,
         "eps": float(attrs["epsilon"])})


def _cntk_bn_decay(e, attrs, samples: int) -> float:
    """NNabla's decay rate for CNTK's running average over minibatches of ``samples``: CNTK
    blends a minibatch of M samples in with ``1 - exp(-M / time_constant)`` (0: replaces,
    infinite: keeps), NNabla with ``1 - decay_rate``; the variance is the unbiased one in
    both.  What NNabla cannot do is refused: CNTK's first minibatch (a count of 0) replaces
    the statistics, and ``blend_time_constant`` normalises with the running ones too."""
    if attrs["blend_time_constant"]:
        e.unsupported(f"CNTK's blendTimeConstant {attrs['blend_time_constant']} in training "
                      "(NNabla normalises with the minibatch's statistics alone)")
    count = e.node.spec.split_arguments(e.node.args, e.node.kwargs)[0][5]
    if float(np.asarray(count.d)) == 0:
        e.unsupported("training from statistics that have seen no samples (count 0): CNTK's "
                      "first minibatch replaces them, NNabla's decay rate would blend into them")
    tau = float(attrs["time_constant"])
    if tau == 0:
        return 0.0
    return 1.0 if np.isinf(tau) else float(np.exp(-samples / tau))


register_rules(F.cntk_batch_normalization, onnx_export=_cntk_bn_onnx, nnp_export=_cntk_bn_nnp,
               onnx_import=Unmapped("ONNX's BatchNormalization imports as batch_normalization "
                                    "(no sample count)"),
               cntk_import={"BatchNormalization": batch_normalization_cntk},
               cntk_v1_import={"BatchNormalization": v1(
                   batch_normalization_cntk_v1,
                   normalization_time_constant="normalizationTimeConstant",
                   blend_time_constant="blendTimeConstant")})

def _eye_like_onnx(g, inputs, attrs):
    """EyeLike"""
    return g.op("EyeLike", [inputs[0]])


def _import_eye_like(node):
    if node.attrs.get("k", 0) != 0 or "dtype" in node.attrs:
        raise OnnxUnsupported("EyeLike with an offset diagonal (k) or another dtype: "
                              "cntk_eye_like has the main diagonal and the input's dtype")
    return F.cntk_eye_like(node.var(0))


def _eye_like_cntk(node):
    # CNTK's EyeLikeOp: read dense whatever its OutputSparse (the values are the same)
    return F.cntk_eye_like(node.var(0))


register_rules(F.cntk_eye_like, onnx_export=_eye_like_onnx,
               onnx_import={"EyeLike": _import_eye_like},
               cntk_import={"EyeLikeOp": _eye_like_cntk})

# CNTK's EpochAccumulator (stadyn/ops/_cntk_stateful.py): a mean it keeps from run to run
_EPOCH_MEAN = Unmapped("CNTK's EpochAccumulator keeps the mean of an epoch's samples from run "
                       "to run (state the node keeps), which ONNX cannot hold")
register_rules(F.cntk_epoch_accumulator, onnx_export=_EPOCH_MEAN, onnx_import=_EPOCH_MEAN)


def _max_unpooled_onnx(g, inputs, attrs):
    """Identity (of the unpooled values; ONNX graphs have no gradients)"""
    return g.op("Identity", [inputs[0]])


def _max_unpooled_nnp(e, inputs, attrs):
    """The unpooled values passed on (NNabla's ``Identity``): NNabla's gradient is then the
    unpooling's own derivative, not CNTK's max pooling of the output's gradient."""
    e.function("Identity", inputs[:1])


# (a CNTK v2 file's Unpooling is read by F.unpooling's rule, through
# cntk_semantics.max_unpooling, which ends in this op; the CNTK writer writes the Unpooling the
# compat marks)
register_rules(F.cntk_max_unpooled, onnx_export=_max_unpooled_onnx,
               onnx_import=Unmapped("ONNX graphs have no gradients: the export (Identity) "
                                    "imports as identity"),
               nnp_export=_max_unpooled_nnp, nnp_import=_NOT_NNABLA)


# cntk.exe's EnvironmentInput and GatherPacked's column gather (ops/_cntk_nodes.py)
_PHASE = Unmapped("cntk.exe's EnvironmentInput reads the phase (training or not) each time the "
                  "graph runs, which an ONNX graph does not have")
register_rules(F.cntk_environment_input, onnx_export=_PHASE, onnx_import=_PHASE)
_COLUMNS = Unmapped("cntk.exe's column gather (GatherPacked from a parameter: a negative index "
                    "a gap of zeros, its range error) is not mapped to ONNX yet")
register_rules(F.cntk_gather_columns, onnx_export=_COLUMNS, onnx_import=_COLUMNS)

"""Rules of the losses and metrics (``stadyn/ops/_loss.py``)."""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ...graph import Subgraph, graph_version, refresh_shapes
from ...ops import norm_axis
from ...sequence import unpack
from ._cntk_shape_rules import one_hot_cntk
from ._common import COMPOSITE
from ._nnabla import last_axis, last_axis_export, nnabla, reshaped_nnp
from ._cntk import v1_criterion_operands, v1_total
from ._cntk_read_others import logistic_cntk
from ...cntk_semantics import logistic, sequence_columns
from ._table import Unmapped, register_rules


def _onnx_class_axis(g, x, axis):
    n = g.ndim(x)
    return norm_axis(n - 1 if axis is None else axis, n)


def _ids(g, target):
    return target if g.dtype(target) == np.int64 else g.cast(target, np.int64)


def _as_dtype_of(g, t, x):
    return t if g.dtype(t) == g.dtype(x) else g.cast(t, g.dtype(x))


def _gather_class(g, x, t, axis, pick, zero_like):
    """``pick(GatherElements(x, t))`` along ``axis`` with NNabla's ignored ids: a negative
    class id gathers class 0 (GatherElements would read it from the end) and gives a 0 of
    ``zero_like``'s dtype."""
    ids = _ids(g, t)
    zero = g.const(np.asarray(0, dtype=np.int64))
    ignored = g.op("Less", [ids, zero])
    picked = g.op("GatherElements", [x, g.op("Where", [ignored, zero, ids])], axis=axis)
    return g.op("Where", [ignored, g.scalar(0.0, zero_like), pick(picked)])


def _truncated_ids(node, values):
    """An ``.nnp`` file's class-id losses read a fractional float target as NNabla 1.39 does:
    truncated toward zero (the ops' ``rule="nnabla"``)."""
    return {**values, "rule": "nnabla"}


def _softmax_cross_entropy_onnx(g, inputs, attrs):
    """LogSoftmax, GatherElements, Neg; Where(t < 0, 0, loss)"""
    x, t = inputs
    a = _onnx_class_axis(g, x, attrs["axis"])
    logp = g.op("LogSoftmax", [x], axis=a)
    return _gather_class(g, logp, t, a, lambda v: g.op("Neg", [v]), x)


def _import_softmax_cross_entropy_loss(node):
    if node.n_inputs > 2 and node.has(2):
        node.unsupported("class weights")
    if node.attr("ignore_index") is not None:
        node.unsupported("ignore_index")
    ts = node.shape(1)
    x = node.var(0)
    loss = F.softmax_cross_entropy(x, F.reshape(node.var(1), (ts[0], 1) + tuple(ts[1:])), axis=1)
    loss = F.reshape(loss, tuple(ts))
    reduction = node.attr("reduction", "mean")
    if reduction == "mean":
        loss = F.mean(loss)
    elif reduction == "sum":
        loss = F.sum(loss)
    if node.n_outputs > 1:
        return loss, F.log_softmax(x, 1)
    return loss


register_rules(F.softmax_cross_entropy, onnx_export=_softmax_cross_entropy_onnx,
               onnx_import={"SoftmaxCrossEntropyLoss": _import_softmax_cross_entropy_loss},
               nnp_import=nnabla(F.softmax_cross_entropy, "SoftmaxCrossEntropy",
                                 export=last_axis_export, axis=int, convert=_truncated_ids))


def _categorical_cross_entropy_onnx(g, inputs, attrs):
    """GatherElements, Max(p, tiny), Log, Neg; Where(t < 0, 0, loss)"""
    x, t = inputs
    a = _onnx_class_axis(g, x, attrs["axis"])
    tiny = g.scalar(np.finfo(g.dtype(x)).tiny, x)
    return _gather_class(g, x, t, a,
                         lambda p: g.op("Neg", [g.op("Log", [g.op("Max", [p, tiny])])]), x)


register_rules(F.categorical_cross_entropy, onnx_export=_categorical_cross_entropy_onnx,
               onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.categorical_cross_entropy, "CategoricalCrossEntropy",
                                 export=last_axis_export, axis=int, convert=_truncated_ids))


def _sigmoid_cross_entropy_onnx(g, inputs, attrs):
    """max(x, 0) - x t + softplus(-|x|), t truncated toward zero for ``integer_target``"""
    x, t = inputs[0], _as_dtype_of(g, inputs[1], inputs[0])
    if attrs.get("integer_target"):  # truncated toward zero: sign(t) floor(|t|)
        t = g.op("Mul", [g.op("Sign", [t]), g.op("Floor", [g.op("Abs", [t])])])
    soft = g.op("Softplus", [g.op("Neg", [g.op("Abs", [x])])])
    return g.op("Add", [g.op("Sub", [g.op("Relu", [x]), g.op("Mul", [x, t])]), soft])


def _integer_label(node, values):
    """An ``.nnp`` file's SigmoidCrossEntropy reads its target as NNabla 1.39 does: an integer
    label (a fractional value truncated toward zero)."""
    return {"integer_target": True}


def _sigmoid_cross_entropy_nnp(e, inputs, attrs):
    """SigmoidCrossEntropy for an integer target (NNabla 1.39 truncates its target); for a
    probability target, ReLU(x) - x t + SoftPlus(-|x|) in NNabla functions (its own op would
    compute another value)."""
    x, t = e.same_rank(list(inputs[:2]))
    if attrs.get("integer_target"):
        e.function("SigmoidCrossEntropy", [x, t])
        return
    shape = e.shape(x)
    step = {n: e.variable(f"sce_{n}", shape) for n in ("relu", "xt", "diff", "abs", "neg", "soft")}
    e.function("ReLU", [x], {}, [step["relu"]])
    e.function("Mul2", [x, t], {}, [step["xt"]])
    e.function("Sub2", [step["relu"], step["xt"]], {}, [step["diff"]])
    e.function("Abs", [x], {}, [step["abs"]])
    e.function("MulScalar", [step["abs"]], {"val": -1.0}, [step["neg"]])
    e.function("SoftPlus", [step["neg"]], {"beta": 1.0}, [step["soft"]])
    e.function("Add2", [step["diff"], step["soft"]])


register_rules(F.sigmoid_cross_entropy, onnx_export=_sigmoid_cross_entropy_onnx,
               onnx_import=Unmapped(COMPOSITE), nnp_export=_sigmoid_cross_entropy_nnp,
               nnp_import=nnabla(F.sigmoid_cross_entropy, "SigmoidCrossEntropy",
                                 convert=_integer_label))


def _binary_cross_entropy_onnx(g, inputs, attrs):
    """-(t log x + (1 - t) log(1 - x)), logs clamped"""
    x, t = inputs[0], _as_dtype_of(g, inputs[1], inputs[0])
    tiny = g.scalar(np.finfo(g.dtype(x)).tiny, x)
    one = g.scalar(1.0, x)
    pos = g.op("Mul", [t, g.op("Log", [g.op("Max", [x, tiny])])])
    neg = g.op("Mul", [g.op("Sub", [one, t]),
                       g.op("Log", [g.op("Max", [g.op("Sub", [one, x]), tiny])])])
    return g.op("Neg", [g.op("Add", [pos, neg])])


def _logistic_v1(node):
    """A CNTK v1 ``Logistic(labels, prediction)`` node: CNTK's ``Logistic`` criterion
    (:func:`stadyn.cntk_semantics.logistic`), the prediction's ``[1 x 1]`` column read as the
    labels' ``[1]``, as CNTK 2.7 evaluates LR_reg.dnn's ``lr`` (broadcast instead, each
    sample's prediction would meet every sample's label)."""
    if node.n_inputs != 2:
        node.unsupported("a weighted v1 Logistic")
    z, labels = v1_criterion_operands(node)
    if (z.sequence_lengths is None) != (labels.sequence_lengths is None):
        return _one_step_each(node, z, labels)
    if z.sequence_lengths is None:
        return logistic(z, labels)
    return _with_cntks_gaps(z, labels)


def _one_step_each(node, z, labels):
    """A v1 ``Logistic`` of a sequence and a value per sequence.  cntk.exe validates it (both
    inputs have an MBLayout: ``ValidateBinaryReduce``, ComputationNode.cpp:470-490; its shapes
    are checked at run time), then reads the prediction at the labels' layout
    (``LogisticNode::ForwardPropNonLooping``, TrainingNodes.h:2083-2086), which a run accepts
    where the two layouts are equal in content (``ColumnRangeWithMBLayoutFor``,
    Sequences.h:1030-1042; ``MBLayout::operator==``, Sequences.h:317-326: the steps, the
    parallel sequences and each one's id, row and steps): where every sequence is one step,
    its packing (``SequencePacker::CreateMBLayout``, SequencePacker.cpp:19-39: ids 0..N-1, one
    row each, ``InitAsPackedSequences``) equals a value per sequence's (``InitAsFrameMode``,
    Sequences.h:419-434: a frame-mode input's, FramePacker.cpp:28, or a reduction over the
    sequence axis', ReshapingNodes.cpp:117).  So computed as the Logistic of each sequence's
    one step and its value; a run of a longer sequence, or of N sequences and M != N values
    (the layouts' sequence counts differ), is refused in cntk.exe's words."""
    seq, frames = (z, labels) if z.sequence_lengths is not None else (labels, z)
    lengths = seq.sequence_lengths

    def step(v):        # (the one step of each sequence: (N, *sample))
        return v if v.sequence_lengths is None else F.sum(unpack(v, 0.0)[0], axis=1)

    built: list = []        # (the graph computing ``frames``, built once per graph version)

    def differ() -> bool:
        counts = np.asarray(lengths.d)
        if frames.parent is not None:       # (a value computed from the run's inputs)
            if not built or built[0] != graph_version():
                built[:] = [graph_version(), Subgraph([frames])]
            refresh_shapes(built[1].nodes, built[1].leaves)
        return bool((counts != 1).any()) or len(counts) != frames.shape[0]

    return node.refuse_when_run(logistic(step(z), step(labels)), _MIXED_LAYOUTS, when=differ)


_MIXED_LAYOUTS = ("ColumnRangeWithMBLayoutFor: FrameRange's dynamic axis is inconsistent with "
                  "matrix. They are compatible though--are you missing a ReconcileDynamicAxis "
                  "operation? (a v1 Logistic of a sequence and a value per sequence: cntk.exe "
                  "reads both at the labels' dynamic axes)")


def _with_cntks_gaps(z, labels):
    """A v1 ``Logistic`` of sequences: CNTK's ``LogisticNode::ForwardPropNonLooping`` masks no
    gap (TrainingNodes.h:2081; cntk.exe's other criteria do, ``MaskMissingColumnsToZero``):
    each gap column of its minibatch counts, with the label 0 and the prediction computed
    there (from inputs of 0).  Its gaps are those of its packing of the sequences into
    parallel streams (:func:`stadyn.cntk_semantics.sequence_columns`: one stream may hold
    several short sequences), not of Stadyn's padding: the steps' sum plus CNTK's gaps times
    the mean of a padded gap's term (each gap's prediction the same where it is computed
    step by step, as a cntk.exe network without a recurrence computes it)."""
    def ones(v):
        return F.add_scalar(F.mul_scalar(v, 0.0), 1.0)
    steps = logistic(*(unpack(v, 0.0)[0] for v in (z, labels)))   # (gaps: 0 in both)
    padded_gaps = F.sum(F.r_sub_scalar(unpack(ones(z), 0.0)[0], 1.0))
    cntk_gaps = F.sum(F.r_sub_scalar(sequence_columns(ones(z)), 1.0))
    gap_terms = F.sub2(logistic(z, labels), steps)
    mean_gap = F.div2(gap_terms, F.maximum_scalar(padded_gaps, 1.0))
    return F.add2(steps, F.mul2(cntk_gaps, mean_gap))


def _logistic_cntk(node):
    """CNTK's primitive ``Logistic(prediction, labels[, weight])``: of two sequences (CNTK 2.7's
    re-save of a cntk.exe file's v1 node, its inputs swapped), the v1 node's sum, CNTK's gaps
    counted (:func:`_with_cntks_gaps`); otherwise :func:`._cntk_read_others.logistic_cntk`."""
    if node.n_inputs != 2 or node.lead(0) != 2 or node.lead(1) != 2:
        return logistic_cntk(node)
    z, labels = v1_criterion_operands(node, 1, 0)
    return _with_cntks_gaps(z, labels)


register_rules(F.binary_cross_entropy, onnx_export=_binary_cross_entropy_onnx,
               onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.binary_cross_entropy, "BinaryCrossEntropy"),
               cntk_import={"Logistic": _logistic_cntk},
               cntk_v1_import={"Logistic": _logistic_v1})


def _squared_error_onnx(g, inputs, attrs):
    """Sub, Mul"""
    d = g.op("Sub", list(inputs))
    return g.op("Mul", [d, d])


def _square_error_v1(node):
    """A CNTK v1 ``SquareError(labels, prediction)`` node: the squared differences summed over
    the minibatch, one number (CNTK 2.7 evaluates LR_reg.dnn's ``err`` so)."""
    z, labels = v1_criterion_operands(node)
    return v1_total(node, F.squared_error(labels, z))


register_rules(F.squared_error, onnx_export=_squared_error_onnx, onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.squared_error, "SquaredError"),
               # (CNTK's primitive SquaredError, op 34, the v1 node's inputs in its order, as
               # CNTK 2.7 writes a loaded cntk.exe file again; C.squared_error is a block)
               cntk_import={"SquaredError": _square_error_v1},
               cntk_v1_import={"SquareError": _square_error_v1})


def _absolute_error_onnx(g, inputs, attrs):
    """Sub, Abs"""
    return g.op("Abs", [g.op("Sub", list(inputs))])


register_rules(F.absolute_error, onnx_export=_absolute_error_onnx,
               onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.absolute_error, "AbsoluteError"))


def _huber_loss_onnx(g, inputs, attrs):
    """Where(|d| < delta, d^2, delta (2|d| - delta))"""
    x = inputs[0]
    delta = float(attrs["delta"])
    d = g.op("Sub", list(inputs))
    ad = g.op("Abs", [d])
    linear = g.op("Mul", [g.scalar(delta, x),
                          g.op("Sub", [g.op("Mul", [ad, g.scalar(2.0, x)]), g.scalar(delta, x)])])
    return g.op("Where", [g.op("Less", [ad, g.scalar(delta, x)]), g.op("Mul", [d, d]), linear])


register_rules(F.huber_loss, onnx_export=_huber_loss_onnx, onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.huber_loss, "HuberLoss", delta=float))


def _top_n_error_onnx(g, inputs, attrs):
    """GatherElements, Less, ReduceSum, Sub, Greater

    The scores not below the target's are counted as all minus those below, so a NaN counts."""
    x, t = inputs
    a = _onnx_class_axis(g, x, attrs["axis"])
    score = g.op("GatherElements", [x, _ids(g, t)], axis=a)
    below = g.reduce("ReduceSum", g.cast(g.op("Less", [x, score]), np.int64), [a], True)
    count = g.op("Sub", [g.const(np.asarray(g.shape(x)[a], dtype=np.int64)), below])
    out = g.op("Greater", [count, g.const(np.asarray(int(attrs["n"]), dtype=np.int64))])
    dtype = g.dtype(x) if g.dtype(x).kind == "f" else np.float32
    return g.cast(out, dtype)


register_rules(F.top_n_error, onnx_export=_top_n_error_onnx, onnx_import=Unmapped(COMPOSITE),
               nnp_import=nnabla(F.top_n_error, "TopNError", defaults={"axis": last_axis},
                                 axis=int, n=int, convert=_truncated_ids))


def _one_hot_onnx(g, inputs, attrs):
    """per-axis ids, flat ids, OneHot, Reshape"""
    # (a negative id counts from the end of its axis; where an axis's id is outside it the flat
    # id is the size, which OneHot makes all off: F.one_hot's rule)
    x = inputs[0]
    shape = [int(s) for s in attrs["shape"]]
    strides = [int(np.prod(shape[k + 1:])) for k in range(len(shape))]
    ids, sizes = _ids(g, x), g.ints(shape)
    zero = g.const(np.asarray(0, dtype=np.int64))
    ids = g.op("Where", [g.op("Less", [ids, zero]), g.op("Add", [ids, sizes]), ids])
    outside = g.op("Or", [g.op("Less", [ids, zero]), g.op("Not", [g.op("Less", [ids, sizes])])])
    bad = g.reduce("ReduceSum", g.cast(outside, np.int64), [g.ndim(x) - 1], False)
    flat = g.reduce("ReduceSum", g.op("Mul", [ids, g.ints(strides)]), [g.ndim(x) - 1], False)
    flat = g.op("Where", [g.cast(bad, np.bool_), g.ints([int(np.prod(shape))]), flat])
    hot = g.op("OneHot", [flat, g.ints([int(np.prod(shape))]),
                          g.const(np.asarray([0.0, 1.0], dtype=np.float32))], axis=-1)
    if len(shape) == 1:
        return hot
    return g.reshape(hot, [0] * (g.ndim(x) - 1) + shape)


def _import_one_hot(node):
    depth = int(np.asarray(node.const(1)).reshape(-1)[0])
    off, on = (float(v) for v in np.asarray(node.const(2)).reshape(-1)[:2])
    dtype = node.dtype(2)
    shape = tuple(node.shape(0))
    ids = node.var(0)
    if node.dtype(0).kind not in "iu":        # ONNX casts non-integer indices to int64
        ids = F.cast(ids, "int64")
    # (F.one_hot counts -1 from the end and makes an id outside [-depth, depth - 1] all off,
    # as ONNX's OneHot)
    hot = F.one_hot(F.reshape(ids, shape + (1,)), (depth,))
    if (off, on) != (0.0, 1.0):
        hot = F.add_scalar(F.mul_scalar(hot, on - off), off)
    if dtype != np.float32:
        hot = F.cast(hot, dtype.name)
    axis = int(node.attr("axis", -1)) % (len(shape) + 1)
    if axis != len(shape):
        order = list(range(len(shape)))
        hot = F.transpose(hot, tuple(order[:axis] + [len(shape)] + order[axis:]))
    return hot


register_rules(F.one_hot, onnx_export=_one_hot_onnx, onnx_import={"OneHot": _import_one_hot},
               nnp_import=nnabla(F.one_hot, "OneHot", shape=tuple),
               cntk_import={"OneHotOp": one_hot_cntk})


def _kl_multinomial_onnx(g, inputs, attrs):
    """Log, Sub, Mul, ReduceSum"""
    p, q = inputs
    n = g.ndim(p)
    terms = g.op("Mul", [p, g.op("Sub", [g.op("Log", [p]), g.op("Log", [q])])])
    return g.reduce("ReduceSum", terms, list(range(norm_axis(attrs["base_axis"], n), n)), True)


def _kl_multinomial_nnabla(p, q, base_axis=1):
    """NNabla 1.39's KLMultinomial: shaped ``p.shape[:base_axis] + (1,)`` (one size-1 axis for
    the summed ones; the catalog op keeps them all)."""
    y = F.kl_multinomial(p, q, base_axis=base_axis)
    shape = tuple(p.shape[:norm_axis(base_axis, p.ndim)]) + (1,)
    return y if tuple(y.shape) == shape else F.reshape(y, shape)


register_rules(F.kl_multinomial, onnx_export=_kl_multinomial_onnx,
               onnx_import=Unmapped(COMPOSITE),
               nnp_export=reshaped_nnp(
                   "KLMultinomial",
                   lambda shape, attrs: shape[:norm_axis(attrs["base_axis"], len(shape))] + (1,),
                   lambda attrs: {"base_axis": int(attrs["base_axis"])}),
               nnp_import=nnabla(_kl_multinomial_nnabla, "KLMultinomial", base_axis=int))

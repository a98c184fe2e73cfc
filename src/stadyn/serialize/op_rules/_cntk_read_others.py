"""``cntk_import`` rules of CNTK 2.7 ops the first rules did not read: ``Logistic``
(``weighted_binary_cross_entropy``), ``EditDistanceError``, ``LambdaRank``, ``Crop`` (with an
offset: ``crop_manual``), ``RandomDistribution`` (``cntk.random``'s draws) and
``OptimizedRNNStack`` (LSTM and plain RNN stacks), ``ROIPooling`` (max pooling over regions:
``tests/fixtures/cntk_roipooling/``), ``NDCG``, ``LabelsToGraph`` and ``ForwardBackward``
(CNTK's CTC criterion: ``tests/fixtures/cntk_ranking_ctc/``; the ranking nodes on sequences:
``tests/fixtures/cntk_ranking_sequences/``), and ``Pad``'s symmetric mode
(:func:`symmetric_pad`, for :func:`._cntk_shape_rules.pad_cntk`); checked against
CNTK 2.7's outputs of the model files in ``tests/fixtures/cntk_read_unread/`` (written by CNTK
2.7, with its ``make_models.py``; for the random draws, their shapes and statistics).

Example:
    >>> sorted(RANDOM_KINDS)
    ['bernoulli', 'gumbel', 'normal', 'uniform']
    >>> RANDOM_DISTRIBUTIONS["randn_like"]
    ('normal', ('mu', 'sigma'))
"""

from __future__ import annotations

import math

from ... import functions as F
from ...cntk_semantics import (logistic, logistic_weights_refused, roi_pooling,
                              sequence_columns)
from ...ops import CNTKStream

__all__ = ["RANDOM_KINDS", "RANDOM_DISTRIBUTIONS", "logistic_cntk", "edit_distance_error_cntk",
           "lambda_rank_cntk", "crop_cntk", "random_distribution_cntk", "optimized_rnnstack_cntk",
           "roipooling_cntk", "ndcg_cntk", "labels_to_graph_cntk", "forward_backward_cntk",
           "symmetric_pad"]


def logistic_cntk(node):
    """CNTK's ``Logistic(output, target[, weight])``: :func:`stadyn.cntk_semantics.logistic`,
    ``N`` the minibatch's samples (the weight's elements over its per-sample size); of
    sequences (a weight of one value a step), over the minibatch's columns as CNTK packs them
    (:func:`stadyn.cntk_semantics.sequence_columns`: ``N`` counts the gaps of its parallel
    streams, weighted 0).  A weight CNTK 2.7 loads but refuses when it runs is refused so
    (:func:`_weights_refused_as_cntk`)."""
    sequences = node.n_inputs == 3 and all(node.lead(i) == 2 for i in range(3))
    if not sequences and (node.lead(0) != 1 or node.lead(1) != 1):
        node.unsupported("a Logistic of values without the batch axis, or on a sequence")
    node.reduces_dynamic_axes()
    if node.n_inputs == 2:
        return logistic(node.var(0), node.var(1))
    refused = _weights_refused_as_cntk(node)
    if refused is not None:
        # a stand-in that reads all three inputs (CNTK's arguments), refused when it runs
        error, reason = refused
        unused = F.mul_scalar(F.sum(node.var(2)), 0.0)
        return node.refuse_when_run(F.add2(logistic(node.var(0), node.var(1)), unused),
                                    reason, error)
    if sequences:
        return logistic(*(sequence_columns(node.var(i)) for i in range(3)))
    w = node.var(2)
    per_sample = math.prod(node.shape(2)[node.lead(2):]) if node.lead(2) else 1
    samples = F.mul_scalar(F.sum(F.add_scalar(F.mul_scalar(w, 0.0), 1.0)), 1.0 / per_sample)
    return logistic(node.var(0), node.var(1), w, samples)


def _weights_refused_as_cntk(node) -> tuple[type, str] | None:
    """What CNTK 2.7 builds and loads but refuses when it runs a weighted ``Logistic``, as
    (error class, CNTK's words): :func:`stadyn.cntk_semantics.logistic_weights_refused` of
    its output (input 1) and weight (input 2), else None."""
    def axes_and_size(i: int) -> tuple[int, int]:
        return node.lead(i), math.prod(node.shape(i)[node.lead(i):])
    return logistic_weights_refused(axes_and_size(1), axes_and_size(2), node.name)


def edit_distance_error_cntk(node):
    """CNTK's ``EditDistanceError(a, b)`` with its ``SubstitutionPenalty``,
    ``DeletionPenalty``, ``InsertionPenalty``, ``SquashInputs`` and ``TokensToIgnore``: the
    catalog's ``cntk_edit_distance_error`` (two sequences of the same lengths, or one frame
    per sample); one number."""
    a, b = node.var(0), node.var(1)
    if (a.sequence_lengths is None) != (b.sequence_lengths is None):
        node.unsupported("an edit distance between a sequence and a value without a sequence "
                         "axis")
    ignore = node.attr("TokensToIgnore", ()) or ()
    out = F.cntk_edit_distance_error(
        a, b, a.sequence_lengths, sub_pen=float(node.attr("SubstitutionPenalty", 1.0)),
        del_pen=float(node.attr("DeletionPenalty", 1.0)),
        ins_pen=float(node.attr("InsertionPenalty", 1.0)),
        squash_inputs=bool(node.attr("SquashInputs", False)),
        tokens_to_ignore=tuple(int(t) for t in ignore))
    node.reduces_dynamic_axes()
    return out


def _ranking_columns(node, what: str):
    """The three inputs of a ranking node as the columns it reads: one value per sample, or
    sequences of one value per step as CNTK's minibatch packs them (``cntk_sequence_columns``)."""
    lead = node.lead(0)
    if lead not in (1, 2) or any(node.lead(i) != lead or tuple(node.shape(i)[lead:]) != (1,)
                                 for i in range(3)):
        node.unsupported(f"{what} of other than one value per sample (or per step of "
                         "sequences, all three)")
    node.reduces_dynamic_axes()
    return [sequence_columns(node.var(i)) for i in range(3)]     # (lead 2: sequences)


def lambda_rank_cntk(node):
    """CNTK's ``LambdaRank(output, gain, group)``: the catalog's ``lambda_rank`` (one score, gain
    and group id per sample, or per step of sequences); one number."""
    return F.lambda_rank(*_ranking_columns(node, "a LambdaRank"))


def ndcg_cntk(node):
    """CNTK's ``NDCG(output, gain, group)`` (``ndcg_at_1``): the catalog's ``ndcg_at_1`` (one
    score, gain and group id per sample, or per step of sequences); one number."""
    return F.ndcg_at_1(*_ranking_columns(node, "an NDCG"))


def labels_to_graph_cntk(node):
    """CNTK's ``LabelsToGraph``: in CNTK 2.7 the labels themselves (the frame labels
    ``ForwardBackward`` reads)."""
    return F.identity(node.var(0))


def forward_backward_cntk(node):
    """CNTK's ``ForwardBackward(graph, output)`` with ``BlankTokenId`` and
    ``DelayConstraint``: the catalog's ``cntk_forward_backward`` of two sequences of the same
    lengths (the output's); one number."""
    graph, z = node.var(0), node.var(1)
    if node.lead(0) != 2 or node.lead(1) != 2 or node.shape(0)[2:] != node.shape(1)[2:]:
        node.unsupported(f"a ForwardBackward of other than two sequences of one shape: "
                         f"{node.shape(0)} and {node.shape(1)}")
    node.reduces_dynamic_axes()
    return F.cntk_forward_backward(graph, z, z.sequence_lengths,
                                   blank_token_id=int(node.attr("BlankTokenId", -1)),
                                   delay_constraint=int(node.attr("DelayConstraint", -1)))


def crop_cntk(node):
    """CNTK's ``Crop(x, reference)`` with ``offset`` ``[x, y]`` (``crop_manual``): the last two
    axes of ``x`` cut to those of the reference, from ``offset_y`` rows and ``offset_x``
    columns in.  The automatic crops (no offset: found from the two inputs' common ancestor)
    are refused."""
    offset = node.attr("offset")
    if offset is None or len(offset) != 2:
        node.unsupported("a Crop without an offset (crop_automatic)")
    ox, oy = (int(v) for v in offset)
    shape, ref = node.shape(0), node.shape(1)
    h, w = int(ref[-2]), int(ref[-1])
    if len(shape) - node.lead(0) < 2 or oy + h > shape[-2] or ox + w > shape[-1]:
        node.unsupported(f"a {h}x{w} crop at offset (x={ox}, y={oy}) of {tuple(shape)}")
    # the sample axes only: F.slice takes the leading (batch, sequence) axes whole
    sample = tuple(shape[node.lead(0):])
    start = (0,) * (len(sample) - 2) + (oy, ox)
    stop = sample[:-2] + (oy + h, ox + w)
    out = F.slice(node.var(0), start, stop, (1,) * len(sample))
    # the reference gives only its size, but it is an input of CNTK's Crop: the graph reads it
    # (a 0 made of it, whatever it holds, added), so the loaded function shows it among its
    # inputs and arguments as CNTK 2.7 does (before, ``arguments`` left it out)
    ref_var = F.stop_gradient(node.var(1))
    zero = F.sum(F.mul_scalar(F.equal(ref_var, ref_var), 0.0))
    return F.add2(out, F.reshape(zero, (1,) * len(out.shape)))


def cntk_stream(node) -> CNTKStream:
    """The random stream a CNTK op's ``rngSeed`` and ``rngOffset`` give: CNTK 2.7 saves where
    each random function's stream stands, and its loaded function draws on from there, on
    every evaluation (whatever shape it is given), as the Function it was saved from would."""
    return CNTKStream(int(node.attr("rngSeed", 0)), int(node.attr("rngOffset", 0) or 0)) \
        .for_operand(node.var(0) if node.n_inputs else None)


#: CNTK's ``randomDistributionType`` -> the catalog's draw of a Variable's shape
RANDOM_KINDS = {"uniform": F.rand_like, "normal": F.randn_like, "gumbel": F.gumbel_like,
                "bernoulli": F.bernoulli_like}

#: the other way: a catalog draw's name -> CNTK's ``randomDistributionType`` and the draw's
#: attributes that are CNTK's ``randomDistributionArgs``, in order (the writer's and the
#: attributes CNTK 2.7 shows for a loaded draw)
RANDOM_DISTRIBUTIONS = {"rand_like": ("uniform", ("low", "high")),
                        "randn_like": ("normal", ("mu", "sigma")),
                        "gumbel_like": ("gumbel", ("loc", "scale")),
                        "bernoulli_like": ("bernoulli", ("p",))}


def random_distribution_cntk(node):
    """CNTK's ``RandomDistribution``: ``randomDistributionType`` uniform (``[low, high)``),
    normal (mean, scale), gumbel (loc, scale) or bernoulli (mean) from
    ``randomDistributionArgs``, of ``newShape`` (``cntk.random.uniform``) or of its input's
    shape (``uniform_like``), from the stream of ``rngSeed`` moved on by ``rngOffset``
    (:func:`cntk_stream`).  CNTK's generator is its own: the
    values are other draws of the same distribution."""
    kind = str(node.attr("randomDistributionType", ""))
    draw = RANDOM_KINDS.get(kind)
    if draw is None:
        node.unsupported(f"the random distribution {kind!r}")
    args = [float(a) for a in (node.attr("randomDistributionArgs") or ())]
    seed = cntk_stream(node)
    if node.n_inputs:
        like = node.var(0)
    else:
        shape = tuple(int(d) for d in node.attr("newShape"))
        like = F.constant(0.0, shape)
        if int(node.attr("newDataType", 1)) == 2:
            like = F.cast(like, "float64")
    return draw(like, *args, seed=seed)


def optimized_rnnstack_cntk(node):
    """CNTK's ``OptimizedRNNStack(x, W)`` (``hiddenSize``, ``numLayers``, ``bidirectional``,
    ``recurrentOp``): the catalog's ``optimized_rnnstack`` on the flat weights (``W``'s values
    in order).  CNTK's C++ never lays the weights out itself -- it sizes them
    (Source/Math/RNNCommon.h:37) and hands them to cuDNN -- and its CPU build cannot run the
    op; the layout read is the one CNTK's own converter to CPU layers reads
    (bindings/python/cntk/misc/optimized_rnnstack_converter.py: every layer's input then
    recurrent matrices, then every layer's two biases; gates i, f, c, o), checked there against
    cuDNN on a GPU, and here against that converter's outputs.  That converter refuses GRUs
    (cuDNN's GRU is not CNTK's), so a GRU stack is refused: no reference says its layout."""
    op = str(node.attr("recurrentOp", "lstm"))
    if op not in ("lstm", "rnnTanh", "rnnReLU"):
        node.unsupported(f"an OptimizedRNNStack of {op!r} cells (CNTK 2.7 gives no reference "
                         "for cuDNN's GRU weights without a GPU)")
    x = node.var(0)
    if x.sequence_lengths is None or len(x.shape) != 3:
        node.unsupported("an OptimizedRNNStack of other than a sequence of vectors")
    return F.optimized_rnnstack(x, x.sequence_lengths, F.reshape(node.var(1), (-1,)),
                                hidden_size=int(node.attr("hiddenSize")),
                                num_layers=int(node.attr("numLayers", 1)),
                                bidirectional=bool(node.attr("bidirectional", False)),
                                recurrent_op=op)


def roipooling_cntk(node):
    """CNTK's ``ROIPooling(x, rois)`` (``C.roipooling``) with ``poolingType`` max (0),
    ``roiOutputShape`` ``(h, w)`` and ``spatialScale``:
    :func:`stadyn.cntk_semantics.roi_pooling` of each sample's ``(C, H, W)`` map and its
    ``(R, 4)`` regions.  Average ROI pooling is refused, as CNTK 2.7's node refuses it
    ("Average ROI pooling is not supported")."""
    if int(node.attr("poolingType", 0)) != 0:
        node.unsupported("average ROI pooling (CNTK 2.7 supports only max)")
    if node.lead(0) != 1 or node.lead(1) != 1 or len(node.shape(0)) != 4 \
            or len(node.shape(1)) != 3 or node.shape(1)[-1] != 4:
        node.unsupported(f"a ROIPooling of other than a batch of (C, H, W) maps and (R, 4) "
                         f"regions: {node.shape(0)} and {node.shape(1)}")
    shape = tuple(int(d) for d in node.attr("roiOutputShape"))
    if len(shape) != 2:
        node.unsupported(f"a roiOutputShape of {len(shape)} axes")
    return roi_pooling(node.var(0), node.var(1), shape, float(node.attr("spatialScale", 1.0)))


def symmetric_pad(node, x, pairs):
    """CNTK's ``Pad`` in mode 2 (``SYMMETRIC_PAD``): each sample axis of ``x`` mirrored with
    its edge, ``pairs`` (before, after) per sample axis; CNTK 2.7 mirrors once (widths up to
    the axis's length)."""
    sample = tuple(x.shape[len(x.shape) - len(pairs):])
    for size, (before, after) in zip(sample, pairs):
        if max(before, after) > size:
            node.unsupported(f"a symmetric pad of {before}/{after} of an axis of {size}")
    out = x
    for k, (before, after) in enumerate(pairs):
        shape = tuple(out.shape[len(out.shape) - len(pairs):])
        n = shape[k]

        def at(i, out=out, shape=shape, k=k):
            start = tuple(i if j == k else 0 for j in range(len(shape)))
            stop = tuple(i + 1 if j == k else s for j, s in enumerate(shape))
            return F.slice(out, start, stop, (1,) * len(shape))
        parts = [at(i) for i in range(before - 1, -1, -1)] + [out] + \
            [at(n - 1 - i) for i in range(after)]
        if len(parts) > 1:
            out = F.concatenate(*parts, axis=len(out.shape) - len(pairs) + k)
    return out

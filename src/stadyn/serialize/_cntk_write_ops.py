"""More of the CNTK v2 model-file writer's op rules (:mod:`._cntk_write` holds the first ones
and the writer): CNTK ops ``stadyn.compat.cntk`` shows as one op -- ``Select``, ``Clip``,
``ElementMax``, ``Softplus``, ``SquaredError``, the reductions, ``Slice``, ... -- written as CNTK
2.7 writes them (learnt by saving each with CNTK 2.7 and decoding the file, see
``tests/fixtures/cntk_model_write/networks.py``): a primitive function, or the block CNTK 2.7
builds for it.

Each rule is ``(writer, inputs, their uids, attributes, output, name) -> uid`` (a function's
uid, its output is ``<uid>_Output_0``), as in :mod:`._cntk_write`; a rule reads the catalog
ops that compute the output (``output.parent`` and above, up to the inputs the caller shows)
for what the CNTK op's attributes are (a clip's bounds, a reduction's kind and axes), and
raises :class:`CntkWriteUnsupported` where it has no CNTK form for them.

Example:
    >>> [k for k in sorted(RULES) if k.startswith("cntk:C")][:3]
    ['cntk:Cast', 'cntk:ClassificationError', 'cntk:Clip']
"""

from __future__ import annotations

from . import _cntk_write_proto as P
from ..cntk_semantics import auto_padding
from ..ops import RandomStream
from ._cntk_write_acts import rng_offset, softplus_body
from ._cntk_write_graph import CntkWriteUnsupported
from ._cntk_write_topk import indices_cast
from ._cntk_write_more import ALL_STATIC, SEQUENCE_REDUCTIONS, inner_nodes, node_attributes, \
    primitive, reduce_all, reduce_all_block, reduce_kept, reduce_some, sequence_reduction

__all__ = ["RULES"]

def _clip(w, ins, uids, attrs, out, name):
    # bounds shown as inputs (constants, tensors, computed values: a loaded CNTK file's Clip, the
    # compat's clip of tensor bounds) are written as they are shown: CNTK's Clip(x, min, max)
    if len(uids) == 3:
        return w.function("Clip", list(uids), name=name)
    node = out.parent
    if len(uids) != 1 or node.spec.name != "clip_by_value_scalar" or node.inputs[0] is not ins[0]:
        raise CntkWriteUnsupported("Clip", "bounds the writer cannot read")
    bounds = node_attributes(node)
    low, high = w.constant(bounds["min"], ins[0]), w.constant(bounds["max"], ins[0])
    return w.function("Clip", [uids[0], low, high], name=name)


def _block(op: str, constants, body, arity: int):
    def rule(w, ins, uids, attrs, out, name):
        if len(uids) != arity:
            raise CntkWriteUnsupported(op, f"{len(uids)} inputs shown, CNTK's has {arity}")
        return w.fixed_block(op, name, ins, uids, constants, body)
    return rule


def _larger(compare):
    # CNTK 2.7's ElementMax / ElementMin: Select(Greater(x, y), x, y) / Select(Less(x, y), x, y)
    def body(w, p, c, name):
        picked = w.function(compare, p) + "_Output_0"
        return w.function("Select", [picked, p[0], p[1]]) + "_Output_0"
    return body


def _squared_error(w, p, c, name):
    # CNTK 2.7's SquaredError: the sum over all static axes of (x - y) * (x - y)
    d = w.function("Minus", p) + "_Output_0"
    square = w.function("ElementTimes", [d, d]) + "_Output_0"
    return reduce_all(w, square, "Sum", attribute="axis")


# the reductions Stadyn's compat computes with one catalog op (log-sum-exp: several)
_REDUCTIONS = {"sum": "Sum", "mean": "Mean", "max": "Max", "min": "Min", "prod": "Prod"}
# the catalog ops of the compat's log-sum-exp: over all of a sample's axes (the max taken
# again for the dropped axes) and along some, kept (the kept max added back)
_LOG_SUM_EXP = ["add2", "exp", "log", "max", "max", "stop_gradient", "stop_gradient", "sub2",
                "sum"]
_LOG_SUM_EXP_KEPT = ["add2", "exp", "log", "max", "stop_gradient", "sub2", "sum"]
# (the reader's LogSum of a loaded file's ReduceElements, log(sum(exp(x - max))) + max)
_LOADED_LOG_SUM = ["add2", "exp", "log", "max", "sub2", "sum"]


def _sample_axes(w, x) -> list:
    nb = 1 if id(x) in w.batched else 0
    return list(range(nb, len(x.shape)))


def _reduce(w, ins, uids, attrs, out, name):
    """``ReduceElements`` (the compat's reductions, argmax and argmin) over all static axes:
    CNTK 2.7's block of one ReduceElements for a reduction, one ReduceElements for an
    argmax."""
    if len(uids) != 1:
        raise CntkWriteUnsupported("ReduceElements", "several inputs")
    if out.parent is not None and out.parent.spec.name in SEQUENCE_REDUCTIONS:
        return sequence_reduction(w, ins[0], uids[0], name, out.parent.spec.name)
    x, nodes = ins[0], inner_nodes(out, ins)
    kinds = sorted(n.spec.name for n in nodes)
    if kinds == _LOADED_LOG_SUM and w.loaded is not None and w.loaded[0] == "ReduceElements":
        return _loaded_reduction(w, uids[0], w.loaded[1], name)
    picked = [n for n in nodes if n.spec.name in ("max", "min")
              and node_attributes(n).get("only_index")]
    if picked:
        return _arg(w, x, uids[0], picked[0], nodes, name)
    if kinds in (["reshape", "sum"], ["reshape_trailing", "sum"]) and _kept_whole(w, x, nodes, out):
        # (a loaded v1 file's ReduceElements, CNTK 2.7's conversion of a v1 node: one
        # primitive over all static axes, its dimensions kept, as CNTK 2.7 re-saves it)
        return w.function("ReduceElements", [uids[0]], {
            "axisVec": P.vector([ALL_STATIC]), "reductionOpName": P.text("Sum")}, name=name)
    if kinds in (_LOG_SUM_EXP, _LOG_SUM_EXP_KEPT):
        op, reducing = "LogSum", next(n for n in nodes if n.spec.name == "sum")
    elif len(nodes) == 1 and kinds[0] in _REDUCTIONS:
        op, reducing = _REDUCTIONS[kinds[0]], nodes[0]
    else:
        raise CntkWriteUnsupported("ReduceElements", f"a reduction made of {kinds}")
    a = node_attributes(reducing)
    axes = sorted(int(k) % len(x.shape) for k in (a["axis"] if isinstance(a["axis"], (list, tuple))
                                                  else [a["axis"]]))
    if axes == _sample_axes(w, x) and not a["keepdims"]:
        return reduce_all_block(w, x, uids[0], op, name)
    if not a["keepdims"] or not set(axes) <= set(_sample_axes(w, x)):
        raise CntkWriteUnsupported("ReduceElements", "a reduction along some of a sample's "
                                                     "axes, not kept")
    return reduce_some(w, x, uids[0], op, axes, name)


def _loaded_reduction(w, uid: str, loaded: dict, name: str) -> str:
    """A loaded file's primitive ``ReduceElements`` ``LogSum`` (CNTK 2.7's conversion of the v1
    file ``save_as_legacy_model`` writes of ``cross_entropy_with_softmax``, or its v2 re-save)
    written as CNTK 2.7 writes it again: one primitive of the file's ``axisVec`` and
    ``reductionOpName`` (``tests/fixtures/cntk_resave37``)."""
    axes = loaded.get("axisVec")
    if set(loaded) != {"axisVec", "reductionOpName"} or not isinstance(axes, (list, tuple)) or \
            not all(isinstance(a, tuple) and len(a) == 3 and a[1] == "static" for a in axes):
        raise CntkWriteUnsupported("ReduceElements", "a loaded reduction of other attributes")
    return w.function("ReduceElements", [uid], {
        "axisVec": P.vector([P.static_axis(int(a[2])) for a in axes]),
        "reductionOpName": P.text(str(loaded["reductionOpName"]))}, name=name)


def _kept_whole(w, x, nodes, out) -> bool:
    """Whether ``nodes`` (a ``sum`` then a ``reshape``) sum all of the sample's axes of ``x``
    and keep them as ones (CNTK 2.7's ``ReduceElements`` over all static axes of a v1 file,
    as its reader makes it)."""
    total = next(n for n in nodes if n.spec.name == "sum")
    a = node_attributes(total)
    axes = a["axis"] if isinstance(a["axis"], (list, tuple)) else [a["axis"]]
    kept = out.shape[w.lead(out):]
    return total.inputs[0] is x and not a["keepdims"] and \
        sorted(int(k) % len(x.shape) for k in axes) == list(range(w.lead(x), len(x.shape))) and \
        len(kept) >= 1 and all(d == 1 for d in kept)


def _arg(w, x, uid, node, nodes, name):
    """CNTK's argmax / argmin: one ReduceElements ``Argmax`` / ``Argmin`` over all static axes
    (the compat flattens the sample first) or along one axis (kept with size 1)."""
    op = "Argmax" if node.spec.name == "max" else "Argmin"
    a = node_attributes(node)
    if len(nodes) == 3 and a["keepdims"] is False:        # cast(max(reshape(x)))
        axis = ALL_STATIC
        keep = False
    elif len(nodes) == 2 and a["keepdims"] and node.inputs[0] is x:
        k = a["axis"][0] if isinstance(a["axis"], (list, tuple)) else a["axis"]
        axis, keep = P.static_axis(w.static_axis_index(x, int(k))), True
    else:
        raise CntkWriteUnsupported("ReduceElements", f"an {op} the writer cannot read")
    return w.function("ReduceElements", [uid], {
        "axis": axis, "reductionOpName": P.text(op),
        "reductionKeepDimensions": P.boolean(keep)}, name=name)


def _slice(w, ins, uids, attrs, out, name):
    """CNTK's Slice: along one static axis ``axis``, ``beginIndex``, ``endIndex``,
    ``sliceStrides``; along several (in Python's order of the axes) the vectors ``axisVec``,
    ``beginIndexVec``, ``endIndexVec``, ``sliceStridesVec``, as CNTK 2.7's ``Slice`` writes
    them (the indices as given: negative from the end, 0 for an end the slice leaves open).  A
    negative stride, which the compat computes as a slice of the range, a flip of it and a
    slice of every ``|stride|``-th, is the range's bounds with the negative stride (CNTK walks
    the range backwards from its last element)."""
    node = out.parent
    if len(uids) != 1 or node.spec.name != "slice":
        raise CntkWriteUnsupported("Slice", "a slice the writer cannot read")
    x, a = ins[0], node_attributes(node)
    source, flipped = node, ()
    # (lists shorter than the rank are the trailing axes': a loaded GRU's slice of its
    # (batch, step, 12) projection reads start (0,), stop (4,))
    steps = [int(st) for st in _leading(a["step"], len(x.shape), 1)]
    inner = node.inputs[0].parent
    if inner is not None and inner.spec.name == "flip" and inner.inputs[0].parent is not None \
            and inner.inputs[0].parent.spec.name == "slice":
        if any(v not in (None, 0) for v in a["start"]) or any(v is not None for v in a["stop"]):
            raise CntkWriteUnsupported("Slice", "a slice the writer cannot read")
        flipped = tuple(int(k) % len(x.shape) for k in node_attributes(inner)["axes"])
        source = inner.inputs[0].parent
        if any(st != 1 for st in node_attributes(source)["step"] or ()):
            raise CntkWriteUnsupported("Slice", "a slice the writer cannot read")
    if source.inputs[0] is not x or any(st < 1 for st in steps):
        raise CntkWriteUnsupported("Slice", "a slice the writer cannot read")
    b = node_attributes(source)
    cut = []
    for k, (begin, end, step, n) in enumerate(zip(_leading(b["start"], len(x.shape), None),
                                                  _leading(b["stop"], len(x.shape), None),
                                                  steps, x.shape)):
        if slice(begin, end).indices(n)[:2] != (0, n) or step != 1 or k in flipped:
            cut.append((k, int(begin or 0), int(end or 0), -step if k in flipped else step))
    if not cut:
        raise CntkWriteUnsupported("Slice", "a slice along no axis")
    if len(cut) == 1:
        k, begin, end, step = cut[0]
        return w.function("Slice", uids, {
            "axis": P.static_axis(w.static_axis_index(x, k)), "beginIndex": P.integer(begin),
            "endIndex": P.integer(end), "sliceStrides": P.integer(step)}, name=name)
    return w.function("Slice", uids, {
        "axisVec": P.vector([P.static_axis(w.static_axis_index(x, k)) for k, *_ in cut]),
        "beginIndexVec": P.vector([P.integer(b) for _, b, _, _ in cut]),
        "endIndexVec": P.vector([P.integer(e) for _, _, e, _ in cut]),
        "sliceStridesVec": P.vector([P.integer(s) for *_, s in cut])}, name=name)


def _leading(values, rank: int, fill) -> list:
    """A slice's per-axis list over all ``rank`` axes: the leading axes it leaves out whole
    (``fill``), as the ``slice`` op applies a shorter list to the trailing axes."""
    values = list(values) if values is not None else []
    return [fill] * (rank - len(values)) + values


def _transpose(w, ins, uids, attrs, out, name):
    """CNTK's TransposeAxes with the permutation of the stored (column-major) axes:
    ``perm[i] = r - 1 - P[r - 1 - i]`` for the sample's permutation ``P`` (NumPy's order)."""
    node = out.parent
    if len(uids) != 1 or node.spec.name != "transpose" or node.inputs[0] is not ins[0]:
        raise CntkWriteUnsupported("TransposeAxes", "a transpose the writer cannot read")
    x, axes = ins[0], [int(a) for a in node_attributes(node)["axes"]]
    nb = 1 if id(x) in w.batched else 0
    if axes[:nb] != list(range(nb)):
        raise CntkWriteUnsupported("TransposeAxes", "a transpose moving the batch axis")
    sample = [a - nb for a in axes[nb:]]
    r = len(sample)
    perm = [r - 1 - sample[r - 1 - i] for i in range(r)]
    return w.function("TransposeAxes", uids, {
        "axisVec": P.vector([P.static_axis(p) for p in perm])}, name=name)


def _log_softmax(w, ins, uids, attrs, out, name):
    """CNTK 2.7's LogSoftmax block along one static axis: ``(x - max) - log(sum(exp(x -
    max)))``, the max and sum kept along the axis, the axis as the block's attribute."""
    node = out.parent
    if len(uids) != 1 or node.spec.name != "log_softmax" or node.inputs[0] is not ins[0]:
        raise CntkWriteUnsupported("LogSoftmax", "a log_softmax the writer cannot read")
    x = ins[0]
    axis = P.static_axis(w.static_axis_index(x, int(node_attributes(node)["axis"])))

    def body(w_, p, c, n):
        top = reduce_kept(w_, p[0], "Max", axis)
        shifted = w_.function("Minus", [p[0], top]) + "_Output_0"
        total = reduce_kept(w_, w_.function("Exp", [shifted]) + "_Output_0", "Sum", axis)
        log_total = w_.function("Log", [total]) + "_Output_0"
        again = w_.function("Minus", [p[0], top]) + "_Output_0"
        return w_.function("Minus", [again, log_total]) + "_Output_0"
    return w.fixed_block("LogSoftmax", name, [x], uids, (), body, {"axis": axis})


def _global_pooling(w, x, uid, kind: int, name: str) -> str:
    """CNTK 2.7's global pooling (the inside of its GlobalAveragePooling / GlobalMaxPooling
    layers): one Pooling whose window is the image's spatial shape, its other lists of one
    entry (CNTK repeats them over the axes)."""
    if id(x) not in w.batched or len(x.shape) < 3:
        raise CntkWriteUnsupported("global pooling", "an input without a batch, channel and "
                                                     "spatial axes")
    return w.function("Pooling", [uid], {
        "poolingType": P.size_t(kind), "poolingWindowShape": P.shape(x.shape[2:]),
        "strides": P.shape((1,)), "autoPadding": P.vector([P.boolean(False)]),
        "lowerPad": P.shape((0,)), "upperPad": P.shape((0,)), "ceilOutDim": P.boolean(False),
        "includePad": P.boolean(False)}, name=name)


def _global_average_pooling(w, ins, uids, attrs, out, name):
    return _global_pooling(w, ins[0], uids[0], 1, name)


def _max(w, ins, uids, attrs, out, name):
    """The catalog's max over an image's spatial axes, kept (GlobalMaxPooling's inside): a
    global max Pooling; any other max has no CNTK form here."""
    x = ins[0]
    axes = attrs["axis"] if isinstance(attrs["axis"], (list, tuple)) else [attrs["axis"]]
    if attrs.get("axis") is None or attrs.get("only_index") or attrs.get("with_index") or \
            not attrs["keepdims"] or \
            sorted(int(a) % len(x.shape) for a in axes) != list(range(2, len(x.shape))):
        raise CntkWriteUnsupported("max", "a max other than over an image's spatial axes")
    return _global_pooling(w, x, uids[0], 0, name)


def _over_a_vector(op: str, catalog: str, w, ins, out) -> dict:
    """The catalog node computing a loss of two vectors (``op``), checked: inputs of one
    static axis, along it; returns its attributes."""
    node = out.parent
    if len(ins) != 2 or node.spec.name != catalog or list(node.inputs[:2]) != list(ins):
        raise CntkWriteUnsupported(op, "a loss the writer cannot read")
    a = node_attributes(node)
    if w.static_rank(ins[0]) != 1 or w.static_axis_index(ins[0], int(a["axis"])) != 0:
        raise CntkWriteUnsupported(op, "only over vectors")
    return a


def _cross_entropy_with_softmax(w, ins, uids, attrs, out, name):
    """CNTK 2.7's CrossEntropyWithSoftmax block: ``log_sum_exp(z) - t . z`` (``LogSum`` kept
    along the axis minus ``TransposeTimes(t, z)``)."""
    _over_a_vector("CrossEntropyWithSoftmax", "cross_entropy_with_softmax", w, ins, out)

    def body(w_, p, c, n):
        dot = w_.function("TransposeTimes", [p[1], p[0]], {"outputRank": P.size_t(1)})
        total = w_.function("ReduceElements", [p[0]], {
            "axis": P.static_axis(0), "reductionOpName": P.text("LogSum"),
            "reductionKeepDimensions": P.boolean(True)})
        return w_.function("Minus", [total + "_Output_0", dot + "_Output_0"]) + "_Output_0"
    return w.fixed_block("CrossEntropyWithSoftmax", name, ins, uids, (), body)


def _classification_error(w, ins, uids, attrs, out, name):
    """CNTK 2.7's ClassificationError block (top 1): ``1 - t . hardmax(z)``, the 1 as the
    block's constant."""
    if _over_a_vector("ClassificationError", "classification_error", w, ins, out)["topN"] != 1:
        raise CntkWriteUnsupported("ClassificationError", "topN above 1")

    def body(w_, p, c, n):
        picked = w_.function("Hardmax", [p[0]])
        dot = w_.function("TransposeTimes", [p[1], picked + "_Output_0"],
                          {"outputRank": P.size_t(1)})
        return w_.function("Minus", [c[0], dot + "_Output_0"]) + "_Output_0"
    return w.fixed_block("ClassificationError", name, ins, uids, (1.0,), body)


def _cast(w, ins, uids, attrs, out, name):
    # CNTK's DataType ids, as Cast's newDataType holds them (the reader's CAST_TYPES)
    kind = {"float32": 1, "float64": 2, "float16": 4}.get(str(out.dtype))
    if len(uids) != 1 or kind is None:
        raise CntkWriteUnsupported("Cast", f"a cast to {out.dtype}")
    return w.function("Cast", list(uids), {"newDataType": P.integer(kind)}, name=name)


def _cast_op(w, ins, uids, attrs, out, name):
    # a constant of another type than the values it meets (a float32 number constant of a
    # float64 graph: x + C.constant(2.0)): CNTK 2.7 keeps its type, each op reading it as its
    # other operands' (the file's Constant is float32): nothing written; the indices of a TopK.
    # Only that direction: a float64 Constant in a float32 graph is refused (CNTK 2.7 loads
    # the file, then its eval fails: "Cannot clone Constant ... 'Double' to DataType 'Float'")
    x = w.folded.get(id(ins[0]), ins[0])
    if x.parent is None and not x.need_grad and id(x) not in w.batched and \
            str(x.dtype) == "float32" and str(out.dtype) == "float64":
        return None
    return indices_cast(w, ins, uids, attrs, out, name)


def _inclusion_frequency(w, ins, uids, attrs, out, name):
    # random_sample_inclusion_frequency: CNTK's RandomSampleInclusionFrequency of a vector (or
    # row) of class weights with the attributes the caller gives (numSamples, allowDuplicates,
    # rngSeed, rngOffset: those CNTK 2.7 writes); the offset written is where the op's stream
    # stands (its seed a CNTKStream: CNTK's estimate drawn from it), as CNTK 2.7 saves it
    keys = ("numSamples", "allowDuplicates", "rngSeed", "rngOffset")
    if len(uids) != 1 or any(k not in attrs for k in keys) or id(ins[0]) in w.batched:
        raise CntkWriteUnsupported("RandomSampleInclusionFrequency",
                                   "weights with the batch axis, or no CNTK attributes given")
    node = out.parent
    if node is not None and node.spec.name == "reshape":           # (a row out)
        node = node.inputs[0].parent
    seed = node_attributes(node).get("seed") if node is not None else None
    offset = rng_offset(seed, w.in_layer) if isinstance(seed, RandomStream) else \
        int(attrs["rngOffset"])
    return w.function("RandomSampleInclusionFrequency", list(uids), {
        "allowDuplicates": P.boolean(bool(attrs["allowDuplicates"])),
        "numSamples": P.size_t(int(attrs["numSamples"])),
        "rngOffset": P.size_t(offset),
        "rngSeed": P.size_t(int(attrs["rngSeed"]))}, name=name)


def _constant_op(w, ins, uids, attrs, out, name):
    # zeros_like / ones_like: CNTK's ConstantOp with its fillValue, written where the graph
    # fills whatever the input holds -- ``equal(x, x) * 0 (+ fill)``, as a loaded CNTK file's
    # ConstantOp is built; ``x * 0`` gives NaN for NaN (CNTK's gives the fill): refused
    node, fill = out.parent, 0.0
    if node.spec.name == "add_scalar":
        fill = float(node_attributes(node)["val"])
        node = node.inputs[0].parent
    zero = node is not None and node.spec.name == "mul_scalar" and \
        float(node_attributes(node)["val"]) == 0.0
    same = zero and node.inputs[0].parent is not None and \
        node.inputs[0].parent.spec.name == "equal" and \
        node.inputs[0].parent.inputs[0] is node.inputs[0].parent.inputs[1]
    if len(uids) != 1 or not same:
        raise CntkWriteUnsupported("ConstantOp", "a fill that is NaN where the input is NaN "
                                                 "(CNTK's fills every element)")
    return w.function("ConstantOp", list(uids), {"fillValue": P.double(fill)}, name=name)


def _crop(w, ins, uids, attrs, out, name):
    # crop_manual: CNTK's Crop(x, reference) with its offset [x, y], read off the slice that
    # computes it; CNTK takes the size from the reference, so the reference must be shown (a
    # loaded CNTK file's Crop shows it; the compat's crop_manual reads only its input)
    slices = [n for n in inner_nodes(out, ins) if n.spec.name == "slice"]
    if len(uids) != 2 or len(slices) != 1:
        raise CntkWriteUnsupported("Crop", "a crop whose reference the graph does not read")
    start = node_attributes(slices[0])["start"]
    if tuple(out.shape[-2:]) != tuple(ins[1].shape[-2:]) or len(start) < 2:
        raise CntkWriteUnsupported("Crop", "a crop of another size than its reference's")
    offset = [int(start[-1] or 0), int(start[-2] or 0)]
    return w.function("Crop", list(uids), {"offset": P.vector([P.size_t(k) for k in offset])},
                      name=name)


def _scale_of(nodes, rois):
    """The factor ``cntk_semantics.roi_pooling`` scales the regions ``rois`` by (the
    ``mul_scalar`` of their cast), or None."""
    for n in nodes:
        if n.spec.name != "mul_scalar" or n.inputs[0].parent is None:
            continue
        cast = n.inputs[0].parent
        if cast.spec.name == "cast" and cast.inputs[0].parent is not None and \
                cast.inputs[0].parent.spec.name == "stop_gradient" and \
                cast.inputs[0].parent.inputs[0] is rois:
            return float(node_attributes(n)["val"])
    return None


def _roipooling(w, ins, uids, attrs, out, name):
    # a loaded CNTK file's ROIPooling (cntk_semantics.roi_pooling over the map and the regions
    # it shows): max pooling (poolingType 0), the output's last two axes as roiOutputShape
    scale = _scale_of(inner_nodes(out, ins), ins[1]) if len(uids) == 2 else None
    if scale is None:
        raise CntkWriteUnsupported("ROIPooling", "a region pooling the writer cannot read")
    return w.function("ROIPooling", list(uids),
                      {"roiOutputShape": P.shape(tuple(out.shape[-2:])),
                       "poolingType": P.size_t(0), "spatialScale": P.double(scale)}, name=name)


def _edit_distance(w, ins, uids, attrs, out, name):
    # edit_distance_error: CNTK's EditDistanceError with the catalog op's penalties (floats),
    # SquashInputs and TokensToIgnore (size_t's), as CNTK 2.7 writes them
    found = [n for n in inner_nodes(out, ins) if n.spec.name == "cntk_edit_distance_error"]
    if len(uids) != 2 or len(found) != 1:
        raise CntkWriteUnsupported("EditDistanceError", "an edit distance the writer cannot read")
    a = node_attributes(found[0])
    return w.function("EditDistanceError", list(uids), {
        "SubstitutionPenalty": P.single(a["sub_pen"]), "DeletionPenalty": P.single(a["del_pen"]),
        "InsertionPenalty": P.single(a["ins_pen"]), "SquashInputs": P.boolean(a["squash_inputs"]),
        "TokensToIgnore": P.vector([P.size_t(t) for t in a["tokens_to_ignore"]])}, name=name)


def _forward_backward(w, ins, uids, attrs, out, name):
    # CNTK's CTC criterion ForwardBackward(label graph, network output) of two sequences:
    # BlankTokenId (size_t) and DelayConstraint (int), as CNTK 2.7 writes them
    if len(uids) != 2 or any(w.lead(v) != 2 for v in ins[:2]) or attrs["blank_token_id"] < 0:
        raise CntkWriteUnsupported("ForwardBackward", "a criterion of other than two sequences "
                                                      "or without a blank token")
    return w.function("ForwardBackward", list(uids), {
        "BlankTokenId": P.size_t(int(attrs["blank_token_id"])),
        "DelayConstraint": P.integer(int(attrs["delay_constraint"]))}, name=name)


def _eye_like(w, ins, uids, attrs, out, name):
    # CNTK's EyeLikeOp (op 92) of a batch of vectors: OutputSparse as the caller gives it
    # (its loaded_attributes_of: eye_like's sparse_output, as_loaded), else false
    return w.function("EyeLikeOp", uids[:1], {"OutputSparse": P.boolean(False)}, name=name)


def _unpooling(w, ins, uids, attrs, out, name):
    """CNTK's ``Unpooling`` (max) of the pooled values and the pooling's input: the window and
    strides of the compat's ``max_pooling_backward``s; automatic padding on an axis where the
    pooled values' count is the one it gives (``ceil(size / stride)``) and not the count
    without it (where both counts agree and the padding moves the windows, refused)."""
    found = [n for n in inner_nodes(out, ins) if n.spec.name == "max_pooling_backward"]
    if len(uids) != 2 or not found:
        raise CntkWriteUnsupported("Unpooling", "an unpooling the writer cannot read")
    a = node_attributes(found[0])
    window = tuple(int(k) for k in a["kernel"])
    n = len(window)
    strides = tuple(int(s) for s in (a.get("stride") or window))
    sizes, counts = tuple(ins[1].shape[-n:]), tuple(ins[0].shape[-n:])
    auto = []
    for size, k, st, count in zip(sizes, window, strides, counts):
        plain, padded = (size - k) // st + 1, -(-size // st)
        moved = auto_padding((size,), (k,), (st,))[0] != (0, 0)
        if count not in (plain, padded) or (plain == padded and moved):
            raise CntkWriteUnsupported("Unpooling", "an unpooling whose padding the writer "
                                                    "cannot tell")
        auto.append(count != plain)
    if len(set(auto)) == 1:
        auto = auto[:1]             # (as C.unpooling writes its default: one flag)
    return w.function("Unpooling", list(uids), {
        "autoPadding": P.vector([P.boolean(f) for f in auto[::-1]]),
        "lowerPad": P.shape((0,)), "poolingType": P.size_t(0), "strides": P.shape(strides),
        "unpoolingWindowShape": P.shape(window), "upperPad": P.shape((0,))}, name=name)


RULES = {
    "cntk_eye_like": _eye_like, "cntk:Unpooling": _unpooling,
    "cntk_forward_backward": _forward_backward, "cntk:LabelsToGraph": primitive("LabelsToGraph", 1),
    "cntk:Select": primitive("Select", 3), "cntk:Clip": _clip, "cntk:Crop": _crop,
    "cntk:EditDistanceError": _edit_distance,
    "cntk:ROIPooling": _roipooling,
    "cntk:Cast": _cast, "cast": _cast_op, "cntk:ConstantOp": _constant_op,
    "cntk:RandomSampleInclusionFrequency": _inclusion_frequency,
    # CNTK's criteria the compat computes as CNTK does (weighted_binary_cross_entropy: output,
    # target, weight; lambda_rank, ndcg_at_1: output, gain, group): the primitives, no
    # attributes
    "cntk:Logistic": primitive("Logistic", 3), "cntk:LambdaRank": primitive("LambdaRank", 3),
    "cntk:NDCG": primitive("NDCG", 3),
    "cntk:CosDistance": primitive("CosDistance", 2),
    **{"cntk:" + op: primitive(op, 1) for op in (
        "Tan", "Atan", "Asin", "Acos", "Sinh", "Cosh", "Asinh", "Atanh")},
    "cntk:Sin": primitive("Sin", 1), "cntk:Cos": primitive("Cos", 1),
    "cntk:ElementMax": _block("ElementMax", (), _larger("Greater"), 2),
    "cntk:ElementMin": _block("ElementMin", (), _larger("Less"), 2),
    "cntk:Softplus": _block("Softplus", (0.0,), softplus_body, 1),
    "cntk:SquaredError": _block("SquaredError", (), _squared_error, 2),
    "cntk:ReduceElements": _reduce, "cntk:Slice": _slice, "cntk:TransposeAxes": _transpose,
    "cntk:LogSoftmax": _log_softmax,
    "global_average_pooling": _global_average_pooling, "max": _max,
    "cntk:CrossEntropyWithSoftmax": _cross_entropy_with_softmax,
    "cntk:ClassificationError": _classification_error,
}

"""More of the CNTK v2 model-file writer's op rules (see :mod:`._cntk_write` for the writer and
:mod:`._cntk_write_ops` for the first CNTK ops): softmax along one axis of a sample, reductions
along some of a sample's axes, transposed convolution, the mean of ``LayerNormalization``, and
the ops CNTK computes otherwise than Stadyn at some inputs (division by 0, ``pow(0, -1)``,
``one_hot(-0.5)``), written only where the graph shows those inputs cannot occur.

Each form is the one CNTK 2.7 writes, learnt by saving a tiny network with CNTK 2.7 and decoding
the file (``tests/fixtures/cntk_model_write/networks.py`` holds the networks, CNTK 2.7 loads
Stadyn's files of them in ``make_refs.py``):

* ``softmax(x, axis=k)`` of a matrix: a ``Softmax`` block, its attribute the axis as CNTK's
  Python API gives it (``Axis(-k - 1)``), its body ``ElementDivide(Exp(x - max), sum)``, the
  max and sum ``ReduceElements`` kept along the stored axis;
* ``reduce_sum(x, axis=(0, 2))``: a ``ReduceElements`` block (attribute ``axisVec`` of the
  ``Axis(-k - 1)``) around a ``MultiAxisReduce`` block around one ``ReduceElements`` named
  ``_static_axes_subop`` over the stored axes, kept;
* ``ConvolutionTranspose``: one ``Convolution`` with ``transpose`` set, the input channels as
  its channel stride, CNTK's automatic padding where Stadyn crops the full transposed
  convolution as CNTK's auto-padding does, ``outputShape`` where it is not CNTK's default.

Example:
    >>> sorted(RULES)[:3]
    ['cntk:NoOp', 'cntk:OneHotOp', 'cntk:Pow']
"""

from __future__ import annotations

from .. import cntk_semantics as S
from . import _cntk_write_proto as P
from ._cntk_write_graph import CntkWriteUnsupported, front_zeros

__all__ = ["RULES", "primitive", "node_attributes", "inner_nodes", "WRITTEN_WHERE",
           "SEQUENCE_REDUCTIONS", "sequence_reduction", "ALL_STATIC", "reduce_all",
           "reduce_all_block", "reduce_some", "reduce_kept", "element_divide",
           "convolution_and_bias",
           "convolution_attributes", "Shaped"]

# CNTK's axis standing for all the static axes of a sample
ALL_STATIC = P.axis(2147483646, "AllStaticAxes", False)


def primitive(op: str, arity: int):
    """The rule writing a CNTK primitive ``op`` of ``arity`` inputs as shown (refused when the
    node shows another number)."""
    def rule(w, ins, uids, attrs, out, name):
        if len(uids) != arity:
            raise CntkWriteUnsupported(op, f"{len(uids)} inputs shown, CNTK's has {arity}")
        return w.function(op, uids, name=name)
    return rule


def reduce_kept(w, operand: str, op: str, axis) -> str:
    """The output of CNTK's ``ReduceElements`` of ``operand`` along the static ``axis`` (a
    ``P.static_axis``) with ``op`` (``"Max"``, ``"Sum"``, ...), the axis kept."""
    return w.function("ReduceElements", [operand], {
        "axis": axis, "reductionOpName": P.text(op),
        "reductionKeepDimensions": P.boolean(True)}) + "_Output_0"

def node_attributes(node) -> dict:
    """A catalog node's attributes by name (its arguments that are not inputs)."""
    return node.spec.split_arguments(node.args, node.kwargs)[1]


def inner_nodes(out, shown) -> list:
    """The catalog nodes computing ``out`` from the inputs ``shown`` (the caller's), output
    first."""
    stop = {id(v) for v in shown}
    nodes, seen, stack = [], set(), [out.parent]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(i.parent for i in node.inputs if id(i) not in stop)
    return nodes


def python_axis(k: int) -> "P.Value":
    """A static axis as CNTK 2.7's Python API passes the sample's axis ``k`` (NumPy order) to
    a block: ``Axis(-k - 1)``."""
    return P.static_axis(-k - 1)


# -- value ranges read from the graph ---------------------------------------------------------
_NONNEGATIVE = ("abs", "relu", "sqrt", "exp", "sigmoid", "softplus", "softmax")
_PASS = ("identity", "stop_gradient")


def _leaf_values(v):
    """A constant's or parameter's values (what the file holds), or None for an input."""
    if v.parent is not None or getattr(v, "sequence_lengths", None) is not None:
        return None
    try:
        import numpy as np
        return np.asarray(v.d)
    except Exception:  # noqa: BLE001 - an input with no data yet
        return None


def sign_of(v, batched: set, depth: int = 16) -> "str | None":
    """``"positive"`` where every value of ``v`` is above 0 (or NaN), ``"nonnegative"`` where
    none is below 0 (or NaN), else None, as far as the ops computing ``v`` show it (a leaf's
    values, ``abs``, ``relu``, ``exp``, ``x + c`` with ``c > 0``, ...).  Values that may
    underflow to 0 (``exp``, ``sigmoid``) are only non-negative."""
    if depth == 0 or id(v) in batched and v.parent is None:
        return None
    node = v.parent
    if node is None:
        d = _leaf_values(v)
        if d is None or d.size == 0:
            return None
        return "positive" if (d > 0).all() else "nonnegative" if (d >= 0).all() else None
    name = node.spec.name
    if name in _PASS:
        return sign_of(node.inputs[0], batched, depth - 1)
    if name in _NONNEGATIVE:
        return "nonnegative"
    if name == "mul2" and node.inputs[0] is node.inputs[1]:
        return "nonnegative"
    if name == "add_scalar":
        inner = sign_of(node.inputs[0], batched, depth - 1)
        val = node_attributes(node)["val"]
        if inner is not None and val > 0:
            return "positive"
        if inner is not None and val == 0:
            return inner
        return None
    if name == "add2":
        a, b = (sign_of(i, batched, depth - 1) for i in node.inputs[:2])
        if a is not None and b is not None:
            return "positive" if "positive" in (a, b) else "nonnegative"
    return None


# -- element-wise ops CNTK computes otherwise at some inputs ----------------------------------
def element_divide(w, p, c, name):
    """The body of CNTK 2.7's ``ElementDivide`` block: ``ElementTimes(x, Reciprocal(y))``
    (CNTK gives the block's name to the ElementTimes inside too)."""
    inverse = w.function("Reciprocal", [p[1]]) + "_Output_0"
    return w.function("ElementTimes", [p[0], inverse], name=name) + "_Output_0"


def _div2(w, ins, uids, attrs, out, name):
    # CNTK's division gives 0 where the divisor is 0 (Stadyn's: inf or nan): written where
    # the divisor is above 0 (layer normalisation's sqrt(variance) + epsilon)
    if sign_of(ins[1], w.batched) != "positive":
        raise CntkWriteUnsupported("div2", "CNTK's division gives 0 where the divisor is 0, "
                                           "not inf or nan (stadyn.compat.cntk's element_divide "
                                           "is CNTK's)")
    return w.fixed_block("ElementDivide", name, ins[:2], uids[:2], (), element_divide)


def _pow(w, ins, uids, attrs, out, name):
    # CNTK 2.7's Pow gives 0 for 0 to a negative power (Stadyn: inf), the same elsewhere
    # (nan for a negative base to a fractional power in both): written where the base is
    # above 0
    if len(uids) != 2:
        raise CntkWriteUnsupported("Pow", f"{len(uids)} inputs shown, CNTK's has 2")
    if sign_of(ins[0], w.batched) != "positive":
        raise CntkWriteUnsupported("pow2", "CNTK's Pow gives 0 for 0 to a negative power, not "
                                           "inf (written where the base is above 0)")
    return w.function("Pow", uids, name=name)


def _one_hot(w, ins, uids, attrs, out, name):
    """CNTK's OneHotOp along a new last axis (the compat's ``one_hot`` reads its ids as CNTK
    2.7's does, ``cntk_semantics.class_ids``: truncated, a negative value no class)."""
    if len(uids) != 1:
        raise CntkWriteUnsupported("OneHotOp", f"{len(uids)} inputs shown, CNTK's has 1")
    x = ins[0]
    node = out.parent
    if node is None or node.spec.name != "cast" or node.inputs[0].parent is None or \
            node.inputs[0].parent.spec.name != "one_hot" or \
            tuple(out.shape[:-1]) != tuple(x.shape):
        raise CntkWriteUnsupported("OneHotOp", "a one_hot along an axis other than a new last")
    classes = int(node_attributes(node.inputs[0].parent)["shape"][0])
    return w.function("OneHotOp", uids, {
        "numClass": P.size_t(classes), "oneHotOutputSparse": P.boolean(False),
        "onehotAxis": P.static_axis(0)}, name=name)


def _no_op(w, ins, uids, attrs, out, name):
    """``alias``, ``Label``: CNTK's NoOp (its output the input, under a name)."""
    return w.function("NoOp", uids[:1], name=name)


def _identity(w, ins, uids, attrs, out, name):
    """An identity (``Label``'s): CNTK's ``NoOp`` where it is named or reads a leaf (the
    file needs a function there); else nothing (its output is its input's)."""
    if name or ins[0].parent is None:
        return w.function("NoOp", uids[:1], name=name)
    return None


# -- softmax and reductions along some of a sample's axes -------------------------------------
class Shaped:
    """What a placeholder needs of a value the graph does not hold (a reduction kept inside
    a block CNTK builds): its shape (with the batch axis if ``batched``) and type."""

    def __init__(self, shape, dtype, batched: bool):
        self.shape, self.dtype, self.batched = tuple(shape), dtype, batched


def _python_index(x, axis: int) -> int:
    return int(axis) % len(x.shape)


def _softmax(w, ins, uids, attrs, out, name):
    """Softmax over a vector's one axis: CNTK's ``Softmax`` primitive; along one axis of a
    sample of several: CNTK 2.7's ``Softmax`` block."""
    x = ins[0]
    if attrs["axis"] is None:
        raise CntkWriteUnsupported("Softmax", "a softmax over several axes at once")
    stored = w.static_axis_index(x, attrs["axis"])
    rank = w.static_rank(x)
    if rank == 1:
        return w.function("Softmax", uids[:1], name=name)
    axis = P.static_axis(stored)

    def body(w_, p, c, n):
        top = reduce_kept(w_, p[0], "Max", axis)
        e = w_.function("Exp", [w_.function("Minus", [p[0], top]) + "_Output_0"]) + "_Output_0"
        total = reduce_kept(w_, e, "Sum", axis)
        kept = list(x.shape)
        kept[_python_index(x, attrs["axis"])] = 1
        shapes = [x, Shaped(kept, x.dtype, id(x) in w.batched)]   # (the placeholders')
        return w_.fixed_block("ElementDivide", "", shapes, [e, total], (), element_divide) + \
            "_Output_0"
    return w.fixed_block("Softmax", name, [x], uids[:1], (), body,
                         {"axis": python_axis(rank - 1 - stored)})


def reduce_all(w, operand: str, op_name: str, attribute: str = "axisVec") -> str:
    """``ReduceElements`` of kind ``op_name`` over all static axes, to one value."""
    axes = P.vector([ALL_STATIC]) if attribute == "axisVec" else ALL_STATIC
    return w.function("ReduceElements", [operand], {
        attribute: axes, "reductionOpName": P.text(op_name),
        "reductionKeepDimensions": P.boolean(False)}) + "_Output_0"


def reduce_all_block(w, x, uid: str, op: str, name: str) -> str:
    """CNTK 2.7's reduction of kind ``op`` over all of the sample's axes, kept: a
    ``ReduceElements`` block (``axisVec`` all static axes, kept) of one ReduceElements (not
    kept); returns the block function's uid."""
    block = {"axisVec": P.vector([ALL_STATIC]), "reductionKeepDimensions": P.boolean(True),
             "reductionOpName": P.text(op)}
    return w.fixed_block("ReduceElements", name, [x], [uid], (),
                         lambda w_, p, c, n: reduce_all(w_, p[0], op), block)


def reduce_some(w, x, uid: str, op: str, axes, name: str) -> str:
    """CNTK 2.7's reduction of kind ``op`` along some of the sample's ``axes`` of ``x``
    (Stadyn's, counted with the batch axis), kept: a ``ReduceElements`` block around a
    ``MultiAxisReduce`` block around one ``ReduceElements`` named ``_static_axes_subop``;
    returns the outer block function's uid."""
    stored = [w.static_axis_index(x, k) for k in axes]
    rank = w.static_rank(x)

    def subop(w_, p, c, n):
        return w_.function("ReduceElements", [p[0]], {
            "axisVec": P.vector([P.static_axis(s) for s in stored]),
            "reductionOpName": P.text(op), "reductionKeepDimensions": P.boolean(True)},
            name="_static_axes_subop") + "_Output_0"

    def body(w_, p, c, n):
        return w_.fixed_block("MultiAxisReduce", "", [x], p, (), subop,
                              composite_name="_static_axes_subop") + "_Output_0"
    return w.fixed_block("ReduceElements", name, [x], [uid], (), body, {
        "axisVec": P.vector([python_axis(rank - 1 - s) for s in stored]),
        "reductionKeepDimensions": P.boolean(True), "reductionOpName": P.text(op)})


def _mean(w, ins, uids, attrs, out, name):
    """The catalog's mean (``LayerNormalization``'s), kept: CNTK's ReduceElements ``Mean``
    block over all of the sample's axes, or along some of them."""
    x = ins[0]
    nb = 1 if id(x) in w.batched else 0
    axis = attrs["axis"]
    axes = list(range(len(x.shape))) if axis is None else \
        [int(a) % len(x.shape) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    if not attrs["keepdims"] or any(a < nb for a in axes):
        raise CntkWriteUnsupported("mean", "a mean not kept, or along the batch axis")
    if sorted(axes) == list(range(nb, len(x.shape))):
        return reduce_all_block(w, x, uids[0], "Mean", name)
    return reduce_some(w, x, uids[0], "Mean", sorted(axes), name)


# -- convolutions ------------------------------------------------------------------------------
def convolution_attributes(kernel, strides, dilation, auto, lower, upper, transpose=False,
                           output_shape=(0,), groups: int = 1) -> dict:
    """The attributes of CNTK 2.7's ``Convolution`` (every convolution the writer writes: the
    layers', a transposed one, LRN's window sum), its per-axis lists given in NumPy order over
    every axis of the kernel (the channels' first): ``auto`` the axes automatically padded."""
    return {"kernelShape": P.shape(kernel), "strides": P.shape(strides),
            "dilation": P.shape(dilation),
            "sharing": P.vector([P.boolean(True)] * len(kernel)),
            "autoPadding": P.vector([P.boolean(b) for b in tuple(auto)[::-1]]),
            "lowerPad": P.shape(lower), "upperPad": P.shape(upper),
            "transpose": P.boolean(transpose), "sequential": P.boolean(False),
            "outputShape": P.shape(output_shape), "maxTempMemSizeInSamples": P.size_t(0),
            "groups": P.size_t(groups)}


def convolution_and_bias(w, ins, uids, attributes: dict, n: int, name: str) -> str:
    """CNTK's ``Convolution`` of ``ins[1]`` (the weight) over ``ins[0]`` with ``attributes``,
    then, where ``ins[2]`` is a bias, ``Plus`` of it shaped ``(out, 1, ...)`` (reshaped to it
    if given as ``(out,)``), as CNTK's convolution layers add it; ``name`` goes to the last."""
    bias = ins[2] if len(ins) > 2 else None
    conv = w.function("Convolution", [uids[1], uids[0]], attributes,
                      name="" if bias is not None else name)
    if bias is None:
        return conv
    bias, bias_uid = w.folded.get(id(bias), bias), uids[2]
    if len(bias.shape) == n + 1:                  # already (out, 1, 1)
        return w.function("Plus", [conv + "_Output_0", bias_uid], name=name)
    shaped = w.function("Reshape", [bias_uid], {
        "newShape": P.shape((bias.shape[0],) + (1,) * n), "beginAxis": P.static_axis(0),
        "endAxis": P.static_axis(len(bias.shape))})
    return w.function("Plus", [conv + "_Output_0", shaped + "_Output_0"], name=name)


def _deconvolution(w, ins, uids, attrs, out, name):
    """CNTK's transposed convolution: ``Convolution`` with ``transpose`` set over the weight
    ``(in, out, *kernel)``; a crop of the full result (a slice, ``w.crops``: what
    :func:`._cntk_write_graph.fused_crop` found), with zeros in front where CNTK's windows skip
    cells (a ``pad`` over it), is CNTK's automatic padding
    where it is the one CNTK's auto-padding makes (:func:`stadyn.cntk_semantics.auto_padding`'s
    signed padding)."""
    x, weight = ins[0], ins[1]
    nb = 1 if id(x) in w.batched else 0
    if attrs["channel_last"] or attrs["base_axis"] != nb or attrs["group"] != 1 or \
            any(attrs.get("pad") or ()):
        raise CntkWriteUnsupported("deconvolution", "channel-last, groups, a base axis other "
                                                    "than the batch axis, or padding")
    n = len(weight.shape) - 2
    kernel = tuple(weight.shape[2:])
    strides = tuple(attrs.get("stride") or (1,) * n)
    dilation = tuple(attrs.get("dilation") or (1,) * n)
    sizes = tuple(x.shape[-n:])
    full = [(i - 1) * s + d * (k - 1) + 1 for i, s, d, k in zip(sizes, strides, dilation, kernel)]
    extra = tuple(attrs.get("output_padding") or (0,) * n)
    full = [f + e for f, e in zip(full, extra)]
    lows, wanted = [0] * n, list(full)
    front = [0] * n
    # (the crop fold_shapes found: a slice, a zero pad over the result or over the slice)
    chain = {node.spec.name: node for node in w.crops.get(id(out), ())}
    if "pad" in chain:                        # zeros where CNTK's windows skip the first cells
        widths = front_zeros(chain["pad"])
        if any(widths[:-n]):
            raise CntkWriteUnsupported("deconvolution", "zeros in front of a non-spatial axis")
        front = list(widths[-n:])
    crop = chain.get("slice")
    if crop is not None:
        a = node_attributes(crop)
        shape = crop.inputs[0].shape
        ranges = [slice(b, e, s).indices(m) for b, e, s, m in zip(a["start"], a["stop"],
                                                                  a["step"], shape)]
        if any(r != (0, m, 1) for r, m in zip(ranges[:-n], shape[:-n])) or \
                any(r[2] != 1 for r in ranges[-n:]):
            raise CntkWriteUnsupported("deconvolution", "a crop the writer cannot read")
        lows = [r[0] for r in ranges[-n:]]
        wanted = [r[1] - r[0] for r in ranges[-n:]]
    if any(f and lo for f, lo in zip(front, lows)):
        raise CntkWriteUnsupported("deconvolution", "a crop other than CNTK's auto-padding")
    lows = [lo - f for lo, f in zip(lows, front)]
    wanted = [wa + f for wa, f in zip(wanted, front)]
    flags = [lo != 0 or lo + wa < f for lo, wa, f in zip(lows, wanted, full)]
    pads = S.auto_padding(wanted, kernel, strides, dilation, flags)
    if [p[0] for p in pads] != lows:
        raise CntkWriteUnsupported("deconvolution", "a crop other than CNTK's auto-padding")
    default = [(i - 1) * s + 1 if on else (i - 1) * s + d * (k - 1) + 1
               for i, s, on, d, k in zip(sizes, strides, flags, dilation, kernel)]
    output_shape = (0,) if wanted == default else (weight.shape[1], *wanted)
    attributes = convolution_attributes(
        weight.shape[1:], (weight.shape[0], *strides), (1, *dilation), (False, *flags),
        (0,) * (n + 1), (0,) * (n + 1), transpose=True, output_shape=output_shape)
    return convolution_and_bias(w, ins, uids, attributes, n, name)


def _delay(op: str):
    """CNTK's PastValue / FutureValue: the value ``offset`` steps before / after along the
    sequence, the initial value (a scalar constant, as CNTK writes it) at the ends."""
    def rule(w, ins, uids, attrs, out, name):
        if len(ins) != 2 or ins[1].parent is not None or tuple(ins[1].shape) != ():
            raise CntkWriteUnsupported(op, "an initial state other than a scalar constant")
        return w.function(op, uids, {"offset": P.size_t(int(attrs["time_step"]))}, name=name)
    return rule


class _Step:
    """A value of one step of a recurrence the graph does not hold (an LSTM's previous
    output and cell): its shape, with the batch and sequence axes, and type."""

    lead = 2

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype


def _writable_initial(w, v, n: int) -> bool:
    """Whether CNTK 2.7 writes ``v`` as a fused recurrence's initial state, its delays'
    second input: a scalar or one value per unit, or (``RecurrenceFrom``'s) one state per
    sequence, an input of the batch axis alone, read as it is."""
    if id(v) in w.batched:
        return id(v) not in w.sequences and w.lead(v) == 1 and tuple(v.shape[1:]) == (n,)
    return tuple(v.shape) in ((), (1,), (n,))


def _lstm(w, ins, uids, attrs, out, name):
    """``Recurrence(LSTM(n))`` (the compat's fused ``cntk_lstm_sequence``): CNTK 2.7's
    ``LSTM`` block -- ``W x + b + H h``, the gates ``i, c, f, o`` as Slices of it, the cell
    ``f * c' + i * tanh(.)``, the output ``o * tanh(cell)``, both as a Combine -- whose two
    outputs come back through PastValue (FutureValue going backwards) with the initial
    states."""
    if len(ins) != 6:
        raise CntkWriteUnsupported("cntk_lstm_sequence", "inputs the writer cannot read")
    x, h0, c0, weight, hidden, bias = ins
    n = int(hidden.shape[0])
    # (an initial state CNTK 2.7 writes as the delays' second input: a scalar, or one value
    # per output unit, a leaf of the graph or a value computed outside the loop)
    if not all(_writable_initial(w, v, n) for v in (h0, c0)):
        raise CntkWriteUnsupported("cntk_lstm_sequence", "initial states other than a scalar, "
                                                         "one value per unit or one state per "
                                                         "sequence")
    if w.folded.get(id(weight), weight).parent is not None or w.static_rank(x) != 1:
        raise CntkWriteUnsupported("cntk_lstm_sequence", "an input of several axes or a "
                                                         "computed weight")
    x_uid, h0_uid, c0_uid, w_uid, h_uid, b_uid = uids
    delay = "FutureValue" if attrs.get("go_backwards") else "PastValue"
    state = _Step((1, 1, n), x.dtype)

    def body(w_, p_x, states):
        p_h, p_c = states
        times = {"outputRank": P.size_t(1), "inferInputRankToMap": P.integer(-1)}
        t_x = w_.function("Times", [w_uid, p_x], times) + "_Output_0"
        z = w_.function("Plus", [b_uid, t_x]) + "_Output_0"
        t_h = w_.function("Times", [h_uid, p_h], times) + "_Output_0"
        z = w_.function("Plus", [z, t_h]) + "_Output_0"

        def gate(k, op):
            part = w_.function("Slice", [z], {
                "axis": P.static_axis(0), "beginIndex": P.integer(k * n),
                "endIndex": P.integer((k + 1) * n), "sliceStrides": P.integer(1)})
            return w_.function(op, [part + "_Output_0"]) + "_Output_0"
        i = gate(0, "StableSigmoid")
        bit = w_.function("ElementTimes", [i, gate(1, "Tanh")]) + "_Output_0"
        kept = w_.function("ElementTimes", [gate(2, "StableSigmoid"), p_c]) + "_Output_0"
        cell = w_.function("Plus", [kept, bit]) + "_Output_0"
        squashed = w_.function("Tanh", [cell]) + "_Output_0"
        h = w_.function("ElementTimes", [gate(3, "StableSigmoid"), squashed]) + "_Output_0"
        return w_.function("Combine", [h, cell]) + "_Output_0"
    block = w.recurrent_block("LSTM", x, x_uid, [b_uid, w_uid, h_uid],
                              [(delay, 1, h0_uid, state), (delay, 1, c0_uid, state)], body)
    return block


def _sequence_end(delay: str):
    """``sequence.last`` / ``first``: CNTK 2.7's ``Sequence::Slice`` block -- a flag 1 at the
    last (first) step (``FutureValue`` (``PastValue``) of 0s reconciled to the sequence, with 1
    as the initial value), ``Where`` of it (to the batch axis only), ``PackedIndex`` and
    ``GatherPacked`` -- the scalar constants 0 and 1 as the block's leaves."""
    def body(w, p, c, name):
        zeros = w.function("ReconcileDynamicAxis", [c[0], p[0]]) + "_Output_0"
        flag = w.function(delay, [zeros, c[1]], {"offset": P.size_t(1)}) + "_Output_0"
        where = w.function("Where", [flag], {
            "newSequenceAxisLengthScalingFactor": P.size_t(0),
            "newDynamicAxes": P.vector([P.axis(P.STATIC_AXIS_DYNAMIC, "defaultBatchAxis",
                                               False)]),
            "newSequenceAxisLengthAdditiveFactor": P.integer(1)}) + "_Output_0"
        index = w.function("PackedIndex", [p[0], where]) + "_Output_0"
        return w.function("GatherPacked", [p[0], index]) + "_Output_0"

    def rule(w, ins, uids, attrs, out, name):
        if len(ins) != 1 or w.lead(ins[0]) != 2:
            raise CntkWriteUnsupported("Sequence::Slice", "a sequence the writer cannot read")
        return w.fixed_block("Sequence::Slice", name, ins, uids, (0.0, 1.0), body)
    return rule


#: the sequence reductions the writer writes: catalog op -> (CNTK's reduction, the padding
#: UnpackSequenceOp puts past each sequence's end)
SEQUENCE_REDUCTIONS = {"sequence_reduce_sum": ("Sum", 0.0),
                       "sequence_reduce_max": ("Max", float("-inf"))}


def sequence_reduction(w, x, uid: str, name: str, op: str = "sequence_reduce_sum") -> str:
    """The inside of CNTK 2.7's ``Sequence::ReduceElements`` block of ``sequence.reduce_sum``
    or ``reduce_max`` (the compat marks the block; ``op``: the catalog op): ``UnpackSequenceOp``
    (padding 0 for a sum, -inf for a max, no mask output), then a ``ReduceElements`` ``Sum``
    (``Max``) along the unpacked sequence axis (stored after the sample's axes), not kept;
    CNTK 2.7 gives the block's name to the UnpackSequenceOp."""
    if w.lead(x) != 2:
        raise CntkWriteUnsupported("Sequence::ReduceElements", "a value without a sequence axis")
    reduction, padding = SEQUENCE_REDUCTIONS[op]
    unpacked = w.function("UnpackSequenceOp", [uid], {
        "sequenceUnpackPaddingValue": P.double(padding),
        "sequenceUnpackSuppressMaskOutput": P.boolean(True)}, name=w.layer_name) + "_Output_0"
    return w.function("ReduceElements", [unpacked], {
        "axis": P.static_axis(w.static_rank(x)), "reductionOpName": P.text(reduction),
        "reductionKeepDimensions": P.boolean(False)}, name=name)


def _gru(w, ins, uids, attrs, out, name):
    """``Recurrence(GRU(n))`` / ``Fold(GRU(n))`` (the compat's fused ``cntk_gru_sequence``):
    CNTK 2.7's ``GRU`` block -- ``W x + b`` and ``H h`` sliced into the update and reset gates,
    the candidate ``act(x Wc + bc + (h * r) H1)``, ``(1 - z) * candidate + z * h`` with the 1
    as the block's constant -- whose output comes back through PastValue (FutureValue going
    backwards) with the initial state."""
    if len(ins) != 6:
        raise CntkWriteUnsupported("cntk_gru_sequence", "inputs the writer cannot read")
    x, h0, weight, hidden, candidate, bias = ins
    act = {"tanh": "Tanh", "relu": "ReLU"}.get(attrs.get("activation", "tanh"))
    n = int(candidate.shape[0])
    # (an initial state as _lstm's: a scalar, one value per unit or one state per sequence)
    if act is None or not _writable_initial(w, h0, n) or w.static_rank(x) != 1:
        raise CntkWriteUnsupported("cntk_gru_sequence", "an activation, initial state or "
                                                        "input the writer cannot write")
    x_uid, h0_uid, w_uid, h_uid, h1_uid, b_uid = uids
    delay = "FutureValue" if attrs.get("go_backwards") else "PastValue"
    one = w.constant(1.0, x)

    def body(w_, p_x, states):
        [p_h] = states
        times = {"outputRank": P.size_t(1), "inferInputRankToMap": P.integer(-1)}
        px = w_.function("Plus", [b_uid, w_.function("Times", [w_uid, p_x], times) +
                                  "_Output_0"]) + "_Output_0"
        ph = w_.function("Times", [h_uid, p_h], times) + "_Output_0"

        def part(v, k):
            return w_.function("Slice", [v], {
                "axis": P.static_axis(0), "beginIndex": P.integer(k * n),
                "endIndex": P.integer((k + 1) * n), "sliceStrides": P.integer(1)}) + "_Output_0"

        def gate(k):
            both = w_.function("Plus", [part(px, k), part(ph, k)]) + "_Output_0"
            return w_.function("StableSigmoid", [both]) + "_Output_0"
        z, r = gate(0), gate(1)
        reset = w_.function("ElementTimes", [p_h, r]) + "_Output_0"
        inner = w_.function("Times", [h1_uid, reset], times) + "_Output_0"
        c = w_.function(act, [w_.function("Plus", [part(px, 2), inner]) + "_Output_0"])
        keep = w_.function("Minus", [one, z]) + "_Output_0"
        new = w_.function("ElementTimes", [keep, c + "_Output_0"]) + "_Output_0"
        old = w_.function("ElementTimes", [z, p_h]) + "_Output_0"
        return w_.function("Plus", [new, old]) + "_Output_0"
    return w.recurrent_block("GRU", x, x_uid, [one, b_uid, w_uid, h_uid, h1_uid],
                             [(delay, 1, h0_uid, _Step((1, 1, n), x.dtype))], body)


RULES = {
    "cntk_gru_sequence": _gru,
    "sequence_last": _sequence_end("FutureValue"), "sequence_first": _sequence_end("PastValue"),
    "cntk_lstm_sequence": _lstm,
    "past_value": _delay("PastValue"), "future_value": _delay("FutureValue"),
    "softmax": _softmax, "mean": _mean, "deconvolution": _deconvolution,
    "div2": _div2, "pow2": _pow, "cntk:Pow": _pow, "cntk:OneHotOp": _one_hot,
    "cntk:NoOp": _no_op, "identity": _identity,
}
#: The rules above written only where the graph shows CNTK 2.7 computes what Stadyn does
WRITTEN_WHERE = {
    "div2": "the divisor is above 0 (CNTK's x / 0 is 0)",
    "pow2": "the base is above 0 (CNTK's pow(0, -1) is 0)",
    "cntk:Pow": "the base is above 0 (CNTK's pow(0, -1) is 0)",
    "cntk:OneHotOp": "the index is a whole number (CNTK's one_hot(-0.5) has no class)"}

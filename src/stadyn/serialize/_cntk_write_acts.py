"""More of the CNTK v2 model-file writer's op rules (see :mod:`._cntk_write`): the activations
CNTK 2.7 builds as blocks (``SELU``, ``LeakyReLU``, ``PReLU``, ``HardSigmoid``), the primitives
``StraightThrough``, ``LogPlus`` (``log_add_exp``), ``CosDistanceWithNegativeSamples``,
``Pad``, ``Gather``, the norms
(``ReduceL1``, ``ReduceL2``, ``ReduceSumSquare`` blocks) and ``RandomDistribution``
(``cntk.random``'s draws), each written as CNTK 2.7 writes it -- learnt by
making the op in CNTK 2.7, saving it and decoding the file (the forms are kept, decoded, in
``tests/fixtures/cntk_write_forms/written.json``; CNTK 2.7 loads Stadyn's files of them in
``make_forms.py``):

* ``SELU``: a block of attributes ``gamma``, ``alpha`` (doubles) over the scalar constants
  ``gamma, 0, alpha``: ``gamma * Select(x < 0, alpha * ELU(x), x)``;
* ``LeakyReLU``: a block of attribute ``alpha`` (double) over ``0, alpha``:
  ``Select(x < 0, alpha * x, x)``; ``PReLU``: the same with the alpha tensor as the block's
  second argument, no attributes;
* ``HardSigmoid``: a block of ``alpha``, ``beta`` (floats) over ``alpha, beta, 1, 0``: ``x *
  alpha + beta`` clipped by two Selects;
* ``Pad``: ``paddingHead`` / ``paddingFoot`` (size_t's, stored axis order: last axis first),
  ``paddingMode`` (0 constant, 1 reflect, 2 symmetric), ``paddingConstantValue``;
* ``Gather``: the indices first, then the table;
* ``CosDistanceWithNegativeSamples``: ``x``, ``y``, then its shift and count as float32 scalar
  constants (``tests/fixtures/cntk_cos_negative``: CNTK 2.7 reads Stadyn's files of it);
* ``ReduceL1`` / ``ReduceL2`` / ``ReduceSumSquare``: a block (``axisVec``, kept) of ``Abs`` /
  the ``ReduceSumSquare`` block then ``Sqrt`` / ``ElementTimes(x, x)``, then the ``Sum``
  ``ReduceElements`` block CNTK builds for the axes (all, or some: ``MultiAxisReduce``);
* ``RandomDistribution``: ``randomDistributionType`` (``uniform``, ``normal``, ``gumbel``,
  ``bernoulli``), ``randomDistributionArgs`` (doubles), ``rngSeed``, ``rngOffset`` (size_t's);
  the ``*_like`` form reads its operand, the shaped form (``cntk.random.normal(shape)``) reads
  nothing and has ``newShape`` and ``newDataType``.

Example:
    >>> sorted(RULES)[:3]
    ['bernoulli_like', 'cntk:CosDistanceWithNegativeSamples', 'cntk:Gather']
"""

from __future__ import annotations

import warnings

import numpy as np

from ..graph import Variable
from ..ops import RandomStream
from . import _cntk_write_proto as P
from ._cntk_write_graph import CntkWriteUnsupported
from ._cntk_write_more import ALL_STATIC, element_divide, inner_nodes, node_attributes, primitive, \
    python_axis, reduce_all_block, reduce_some
from .op_rules._cntk_read_others import RANDOM_DISTRIBUTIONS

__all__ = ["RULES", "softplus_body"]


def _parent(out, op: str, catalog: str, ins):
    """The catalog node ``catalog`` computing ``out`` straight from ``ins[0]``, or the
    refusal naming the CNTK ``op``."""
    node = out.parent
    if node is None or node.spec.name != catalog or node.inputs[0] is not ins[0]:
        raise CntkWriteUnsupported(op, f"a {op} the writer cannot read")
    return node


# -- activations CNTK 2.7 builds as blocks ----------------------------------------------------
def _selu(w, ins, uids, attrs, out, name):
    a = node_attributes(_parent(out, "SELU", "selu", ins))
    gamma, alpha = float(a["scale"]), float(a["alpha"])

    def body(w_, p, c, n):
        negative = w_.function("Less", [p[0], c[1]]) + "_Output_0"
        elu = w_.function("ELU", [p[0]]) + "_Output_0"
        scaled = w_.function("ElementTimes", [c[2], elu]) + "_Output_0"
        picked = w_.function("Select", [negative, scaled, p[0]]) + "_Output_0"
        return w_.function("ElementTimes", [c[0], picked]) + "_Output_0"
    return w.fixed_block("SELU", name, ins[:1], uids[:1], (gamma, 0.0, alpha), body,
                         {"gamma": P.double(gamma), "alpha": P.double(alpha)})


def _leaky(w, p_x, alpha: str, zero: str) -> str:
    """``Select(x < 0, alpha * x, x)``, the body of CNTK 2.7's LeakyReLU and PReLU."""
    times = w.function("ElementTimes", [alpha, p_x]) + "_Output_0"
    negative = w.function("Less", [p_x, zero]) + "_Output_0"
    return w.function("Select", [negative, times, p_x]) + "_Output_0"


def _leaky_relu(w, ins, uids, attrs, out, name):
    alpha = float(node_attributes(_parent(out, "LeakyReLU", "leaky_relu", ins))["alpha"])
    return w.fixed_block("LeakyReLU", name, ins[:1], uids[:1], (0.0, alpha),
                         lambda w_, p, c, n: _leaky(w_, p[0], c[1], c[0]),
                         {"alpha": P.double(alpha)})


def _prelu(w, ins, uids, attrs, out, name):
    # the compat's max(x, 0) + alpha * min(x, 0): CNTK's block maps (x, alpha), x the input
    # of the max
    node = out.parent
    top = node.inputs[0].parent if node is not None and node.spec.name == "add2" else None
    if len(uids) != 2 or top is None or top.spec.name != "maximum_scalar" or \
            not any(top.inputs[0] is i for i in ins):
        raise CntkWriteUnsupported("PReLU", "a parametric ReLU the writer cannot read")
    k = 0 if top.inputs[0] is ins[0] else 1
    return w.fixed_block("PReLU", name, [ins[k], ins[1 - k]], [uids[k], uids[1 - k]], (0.0,),
                         lambda w_, p, c, n: _leaky(w_, p[0], p[1], c[0]))


def _hard_sigmoid(w, ins, uids, attrs, out, name):
    # the compat's HardSigmoid block (and a loaded file's), shown with its attributes alpha and
    # beta: CNTK 2.7's block of two Selects over alpha, beta, 1 and 0
    if "alpha" not in attrs or "beta" not in attrs or len(uids) != 1:
        raise CntkWriteUnsupported("HardSigmoid", "a hard sigmoid without alpha and beta")
    alpha, beta = float(attrs["alpha"]), float(attrs["beta"])

    def body(w_, p, c, n):
        scaled = w_.function("ElementTimes", [p[0], c[0]]) + "_Output_0"
        shifted = w_.function("Plus", [scaled, c[1]]) + "_Output_0"
        low = w_.function("Less", [shifted, c[2]]) + "_Output_0"
        below = w_.function("Select", [low, shifted, c[2]]) + "_Output_0"
        high = w_.function("Greater", [below, c[3]]) + "_Output_0"
        return w_.function("Select", [high, below, c[3]]) + "_Output_0"
    return w.fixed_block("HardSigmoid", name, ins[:1], uids[:1], (alpha, beta, 1.0, 0.0), body,
                         {"alpha": P.single(alpha), "beta": P.single(beta)})


# -- Pad ----------------------------------------------------------------------------------------
def _pad(w, ins, uids, attrs, out, name):
    """CNTK's Pad over every axis of the sample: constant and reflect (the catalog's ``pad``),
    symmetric (the compat's concatenation of mirrored slices, read off the shapes: before and
    after each axis, the parts concatenated before and after the value padded)."""
    if len(uids) != 1:
        raise CntkWriteUnsupported("Pad", f"{len(uids)} inputs shown, CNTK's has 1")
    x = ins[0]
    rank = w.static_rank(x)
    node = out.parent
    if node is not None and node.spec.name == "pad" and node.inputs[0] is x:
        a = node_attributes(node)
        widths = [int(v) for v in a["pad_width"]]
        mode = {"constant": 0, "reflect": 1}.get(a["mode"])
        if mode is None or len(widths) != 2 * rank:
            raise CntkWriteUnsupported("Pad", f"a {a['mode']} pad or one of some of the "
                                              f"sample's axes")
        pairs = [tuple(widths[k:k + 2]) for k in range(0, len(widths), 2)]
        value = float(a["constant_value"]) if mode == 0 else 0.0
    else:
        pairs, mode, value = _symmetric_pairs(w, x, out, rank), 2, 0.0
    return w.function("Pad", uids, {
        "paddingHead": P.vector([P.size_t(b) for b, _ in reversed(pairs)]),
        "paddingFoot": P.vector([P.size_t(e) for _, e in reversed(pairs)]),
        "paddingMode": P.size_t(mode), "paddingConstantValue": P.double(value)}, name=name)


def _symmetric_pairs(w, x, out, rank: int) -> list:
    """The ``(before, after)`` widths of the compat's symmetric pad: a chain from ``x`` to
    ``out`` of one concatenation per padded axis, each of slices of the value before it and
    that value itself."""
    lead = len(x.shape) - rank
    pairs = [(0, 0)] * rank
    v = out
    while v is not x:
        node = v.parent
        if node is None or node.spec.name != "concatenate":
            raise CntkWriteUnsupported("Pad", "a pad the writer cannot read")
        inner = [i for i in node.inputs if not (i.parent is not None and
                                                i.parent.spec.name == "slice")]
        axis = int(node_attributes(node)["axis"]) % len(v.shape) - lead
        if len(inner) != 1 or not 0 <= axis < rank or pairs[axis] != (0, 0):
            raise CntkWriteUnsupported("Pad", "a pad the writer cannot read")
        at = [k for k, i in enumerate(node.inputs) if i is inner[0]][0]
        pairs[axis] = (at, len(node.inputs) - 1 - at)
        v = inner[0]
    return pairs


# -- Gather ---------------------------------------------------------------------------------
def _gather(w, ins, uids, attrs, out, name):
    """CNTK's Gather along the table's first axis: ``Gather(indices, table)``.  Both truncate a
    fractional index toward 0 (CNTK 2.7: 0.7, -0.99 -> row 0, 3.99 -> row 3); an index out of
    the table is undefined in CNTK 2.7 (it reads past the table), 0s in Stadyn."""
    if len(uids) != 2:
        raise CntkWriteUnsupported("Gather", f"{len(uids)} inputs shown, CNTK's has 2")
    return w.function("Gather", [uids[1], uids[0]], name=name)


# -- ReduceL1, ReduceL2, ReduceSumSquare --------------------------------------------------------
def _norm(op: str):
    """CNTK 2.7's ``ReduceL1`` / ``ReduceL2`` / ``ReduceSumSquare`` blocks (attributes
    ``axisVec``, ``reductionKeepDimensions``) over all of the sample's axes or along some of
    them, kept: ``Abs`` / the ``ReduceSumSquare`` block then ``Sqrt`` / ``ElementTimes(x, x)``,
    then the ``ReduceElements`` ``Sum`` block CNTK builds for those axes."""
    def rule(w, ins, uids, attrs, out, name):
        sums = [n for n in inner_nodes(out, ins) if n.spec.name == "sum"]
        if len(uids) != 1 or len(sums) != 1:
            raise CntkWriteUnsupported(op, f"a {op} the writer cannot read")
        x, a = ins[0], node_attributes(sums[0])
        nb = w.lead(x)
        sample = list(range(nb, len(x.shape)))
        given = a["axis"] if isinstance(a["axis"], (list, tuple)) else \
            sample if a["axis"] is None else [a["axis"]]
        axes = sorted(int(k) % len(x.shape) for k in given)
        if axes == sample and not a["keepdims"]:
            every = True
            vec = P.vector([ALL_STATIC])
        elif a["keepdims"] and set(axes) <= set(sample):
            every = False
            vec = P.vector([python_axis(w.static_rank(x) - 1 - w.static_axis_index(x, k))
                            for k in axes])
        else:
            raise CntkWriteUnsupported(op, "a reduction along some of a sample's axes, not kept")

        def summed(w_, v):
            if every:
                return reduce_all_block(w_, x, v, "Sum", "") + "_Output_0"
            return reduce_some(w_, x, v, "Sum", axes, "") + "_Output_0"

        def square_body(w_, p, c, n):
            return summed(w_, w_.function("ElementTimes", [p[0], p[0]]) + "_Output_0")

        def body(w_, p, c, n):
            if op == "ReduceL1":
                return summed(w_, w_.function("Abs", [p[0]]) + "_Output_0")
            if op == "ReduceSumSquare":
                return square_body(w_, p, c, n)
            square = w_.fixed_block("ReduceSumSquare", "", [x], p, (), square_body, {
                "axisVec": vec, "reductionKeepDimensions": P.boolean(True)})
            return w_.function("Sqrt", [square + "_Output_0"]) + "_Output_0"
        return w.fixed_block(op, name, [x], uids, (), body, {
            "axisVec": vec, "reductionKeepDimensions": P.boolean(True)})
    return rule


# -- RandomDistribution ------------------------------------------------------------------------
def rng_offset(seed, in_layer: bool = False) -> int:
    """A random op's ``rngOffset``: where its stream stands (``RandomStream.position``, the
    stream marked saved there), as CNTK 2.7 saves it so that the loaded function draws on from
    there; 0 for a plain seed (a stream that starts again), and, with a warning, for a stream
    whose position is not found (farther than 2**30 numbers on from the last one found).  An
    op inside a layer (``in_layer``: a block's) keeps the offset its Function shows
    (``RandomStream.saved_offset``: 0 unless made from a file's or a copy's), unmarked: CNTK
    2.7's save brings only the top-level functions' offsets up to date, so a loaded block's
    random op starts again, and so does a clone of the saved block."""
    if not isinstance(seed, RandomStream):
        return 0
    if in_layer:
        return seed.saved_offset()
    found = seed.position()
    seed.mark_saved(found)
    if found is None:
        warnings.warn(f"the random stream of seed {int(seed)} has drawn too many numbers to "
                      "count: rngOffset 0 written (the loaded function starts it again)",
                      RuntimeWarning, stacklevel=2)
        return 0
    return found


def _random(catalog: str):
    kind, keys = RANDOM_DISTRIBUTIONS[catalog]

    def rule(w, ins, uids, attrs, out, name):
        seed = int(attrs["seed"])
        if seed < 0:
            raise CntkWriteUnsupported("RandomDistribution", "an unseeded draw (CNTK's "
                                                             "rngSeed is a number)")
        attributes = {"randomDistributionType": P.text(kind),
                      "randomDistributionArgs": P.vector([P.double(float(attrs[k]))
                                                          for k in keys]),
                      "rngSeed": P.size_t(seed),
                      "rngOffset": P.size_t(rng_offset(attrs["seed"], w.in_layer))}
        like = ins[0]
        if id(like) not in w.batched and (like.parent is None or
                                          like.parent.spec.name == "constant"):
            # cntk.random.normal(shape): no input, the shape and type as attributes (the
            # constant the compat draws "like" is no part of CNTK's file)
            w.drop_leaf(uids[0])
            attributes["newShape"] = P.shape(tuple(like.shape))
            attributes["newDataType"] = P.integer(2 if str(out.dtype) == "float64" else 1)
            return w.function("RandomDistribution", [], attributes, name=name)
        return w.function("RandomDistribution", uids[:1], attributes, name=name)
    return rule


def _random_sample(w, ins, uids, attrs, out, name):
    # CNTK's RandomSample of a vector of class weights (a leaf or a value computed without the
    # batch axis): numSamples, allowDuplicates, rngSeed, rngOffset, as CNTK 2.7 writes it (so
    # CNTK draws from Stadyn's file the rows it draws from its own, the same seed)
    seed = int(attrs["seed"])
    if seed < 0 or id(ins[0]) in w.batched:
        raise CntkWriteUnsupported("RandomSample", "an unseeded draw or weights with the batch "
                                                   "axis")
    return w.function("RandomSample", uids[:1], {
        "allowDuplicates": P.boolean(bool(attrs["allow_duplicates"])),
        "numSamples": P.size_t(int(attrs["num_samples"])),
        "rngOffset": P.size_t(rng_offset(attrs["seed"], w.in_layer)),
        "rngSeed": P.size_t(seed)}, name=name)


def softplus_body(w, p, c, name):
    """The body of CNTK 2.7's ``Softplus`` block (``fixed_block``'s ``body``):
    ``LogPlus(x, 0)``, log(exp(x) + exp(0)), the 0 the block's Constant; the ``LogPlus`` is
    unnamed (CNTK 2.7 names the block: ``C.softplus(x, name='sp')``).

    Example:
        >>> softplus_body.__name__
        'softplus_body'
    """
    return w.function("LogPlus", [p[0], c[0]]) + "_Output_0"


def _softplus(w, ins, uids, attrs, out, name):
    """``softplus(x, beta)`` as CNTK 2.7's ``C.softplus(x, steepness=beta)`` (a Stabilizer's,
    ``steepness`` 4) computes it: its ``Softplus`` block, ``LogPlus(x, 0)`` of a Constant 0,
    and where ``beta`` is not 1 of ``ElementTimes(beta, x)``, then an ``ElementDivide`` block
    by ``beta`` (CNTK 2.7 wraps those three in a ``softplus`` block of its own, which is not
    written: the functions and values are the same)."""
    beta = float(attrs.get("beta", 1.0))
    if beta == 1.0:
        return w.fixed_block("Softplus", name, ins[:1], uids[:1], (0.0,), softplus_body)
    scaled = w.function("ElementTimes", [w.constant(beta, ins[0]), uids[0]]) + "_Output_0"
    soft = w.fixed_block("Softplus", "", ins[:1], [scaled], (0.0,), softplus_body)
    steep = Variable.from_numpy_array(np.asarray(beta, np.dtype(str(ins[0].dtype))))
    return w.fixed_block("ElementDivide", name, [ins[0], steep],
                         [soft + "_Output_0", w.constant(beta, ins[0])], (), element_divide)


RULES = {
    "softplus": _softplus,
    "random_sample": _random_sample,
    "cntk:SELU": _selu, "cntk:LeakyReLU": _leaky_relu, "cntk:PReLU": _prelu,
    "cntk:HardSigmoid": _hard_sigmoid,
    "cntk:StraightThrough": primitive("StraightThrough", 1),
    "cntk:LogPlus": primitive("LogPlus", 2),
    # (x, y, then its shift and count: scalar Constants, as CNTK 2.7 writes them)
    "cntk:CosDistanceWithNegativeSamples": primitive("CosDistanceWithNegativeSamples", 4),
    "cntk:Pad": _pad, "cntk:Gather": _gather,
    **{"cntk:" + op: _norm(op) for op in ("ReduceL1", "ReduceL2", "ReduceSumSquare")},
    **{catalog: _random(catalog) for catalog in RANDOM_DISTRIBUTIONS},
}

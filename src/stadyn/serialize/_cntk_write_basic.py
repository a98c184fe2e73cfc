"""The CNTK v2 writer's rules (:mod:`._cntk_write`) of the first ops it wrote: the element-wise
ops, ``affine`` (``Times`` then ``Plus``), ``reshape``, ``concatenate`` (``Splice``),
``dropout``, ``convolution``, the poolings, CNTK's batch normalisation, and the blocks CNTK
2.7 builds for the logical ops (``And``, ``Or``, ``Xor``, ``Not``).

Each rule: (writer, node's inputs (Variables), their uids, the op's attributes, the output, the
name the last function gets) -> the uid of the function computing the output (None: nothing
written, the input passed on).

Example:
    >>> sorted(k for k in RULES if k.startswith("cntk:") and k[5:] in ("And", "Or", "Not"))
    ['cntk:And', 'cntk:Not', 'cntk:Or']
"""

from __future__ import annotations

from ..cntk_semantics import window_edges
from ..graph import behind_free_dimensions
from . import _cntk_write_proto as P
from ._cntk_write_acts import rng_offset
from ._cntk_write_graph import CntkWriteUnsupported, auto_padding_form
from ._cntk_write_more import convolution_and_bias, convolution_attributes

__all__ = ["RULES"]


# -- the ops ----------------------------------------------------------------------------------
# Each rule: (writer, node's inputs (Variables), their uids, the op's attributes, the output,
# the name the last function gets) -> the uid of the function computing the output.

def _unary(op):
    def rule(w, ins, uids, attrs, out, name):
        return w.function(op, uids[:1], name=name)
    return rule


def _elu(w, ins, uids, attrs, out, name):
    if attrs["alpha"] != 1.0:
        raise CntkWriteUnsupported("elu", f"alpha {attrs['alpha']} (CNTK's ELU has 1)")
    return w.function("ELU", uids[:1], name=name)


def _binary(op):
    def rule(w, ins, uids, attrs, out, name):
        return w.function(op, uids[:2], name=name)
    return rule


def _scalar(op):
    def rule(w, ins, uids, attrs, out, name):
        return w.function(op, [uids[0], w.constant(attrs["val"], ins[0])], name=name)
    return rule


def _r_sub_scalar(w, ins, uids, attrs, out, name):
    # (val - x: CNTK's Minus of the constant and x, as binary_cross_entropy's 1 - t)
    return w.function("Minus", [w.constant(attrs["val"], ins[0]), uids[0]], name=name)


def _affine(w, ins, uids, attrs, out, name):
    # CNTK's Times(W, x) contracts W's axes past its outputRank with as many of x's last
    # (Python's order): a base axis past the batch axis (times of a (3, 5) sample by a (5, 2)
    # weight) is written alike, CNTK inferring the rank it maps
    x, weight = ins[0], ins[1]
    nb = w.lead(x)
    if attrs["base_axis"] < nb or attrs["base_axis"] >= len(x.shape):
        raise CntkWriteUnsupported("affine", f"base_axis {attrs['base_axis']} with "
                                             f"{nb} batch axis")
    in_rank = len(x.shape) - attrs["base_axis"]
    weight = w.folded.get(id(weight), weight)
    weight_shape = tuple(weight.shape)
    if tuple(weight_shape[:in_rank]) != tuple(x.shape[attrs["base_axis"]:]):
        raise CntkWriteUnsupported("affine", "an input flattened before the product")
    # CNTK's Dense says what its input_rank / map_rank were (-1 for input_rank, map_rank,
    # else 0: 'infer W to use all input dims'), which the caller gives as the layer's
    # inferInputRankToMap; C.times' default is -1
    rank = w.layer_options.get("inferInputRankToMap") if w.layer_kind == "Dense" else None
    if rank is None:
        rank = 0 if w.layer_kind == "Dense" and attrs["base_axis"] == nb else -1
    attributes = {"outputRank": P.size_t(len(weight_shape) - in_rank),
                  "inferInputRankToMap": P.integer(rank)}
    bias = ins[2] if len(ins) > 2 else None
    times = w.function("Times", [uids[1], uids[0]], attributes, name="" if bias is not None
                       else name)
    if bias is None:
        return times
    if (w.layer_kind if w.in_layer else w.step_kind) in ("LSTM", "GRU"):
        # (CNTK 2.7's LSTM and GRU add the bias first, b + times(x, W), layers/blocks.py: the
        # order CNTK shows the layer's parameters in once its file is loaded, [b, W, H]; an
        # LSTM step written op by op in a recurrence's block too, return_full_state's, and a
        # GRU step written op by op, a self-stabilized one's: [b, W, H, alpha, H1].  A Dense
        # block a step applies before its GRU cell is the Dense's, times(x, W) + b: CNTK 2.7
        # lists it [W, b], tests/fixtures/cntk_step_dense37)
        return w.function("Plus", [uids[2], times + "_Output_0"], name=name)
    return w.function("Plus", [times + "_Output_0", uids[2]], name=name)


def _reshape(w, ins, uids, attrs, out, name):
    x = ins[0]
    nb = 1 if id(x) in w.batched else 0
    if nb and tuple(out.shape[:1]) != tuple(x.shape[:1]):
        raise CntkWriteUnsupported("reshape", "a reshape that moves the batch axis")
    if w.untyped and w.aligned_for_broadcast(x, out, nb):
        return None           # (CNTK's element-wise ops align it, at any shape applied to)
    attributes = {"newShape": P.shape(out.shape[nb:]), "beginAxis": P.static_axis(0),
                  "endAxis": P.static_axis(w.static_rank(x))}
    return w.function("Reshape", uids[:1], attributes, name=name)


def _concatenate(w, ins, uids, attrs, out, name):
    axis = attrs["axis"] if attrs["axis"] is not None else len(out.shape) - 1
    attributes = {"axis": P.static_axis(w.static_axis_index(out, axis))}
    return w.function("Splice", uids, attributes, name=name)


def _dropout(w, ins, uids, attrs, out, name):
    if not attrs["train_only"] or attrs["output_mask"]:
        raise CntkWriteUnsupported("dropout", "NNabla's dropout (applied in inference too)")
    seed = int(attrs["seed"])
    # where its stream stands, as CNTK 2.7 saves it (the loaded function draws on from there)
    offset = rng_offset(attrs["seed"], w.in_layer)
    attributes = {"dropoutRate": P.double(attrs["p"]), "rngSeed": P.size_t(max(seed, 0)),
                  "rngOffset": P.size_t(offset)}
    return w.function("Dropout", uids[:1], attributes, name=name)


def _spatial(attrs, n: int, key: str, default: int) -> tuple:
    value = attrs.get(key)
    return tuple(value) if value is not None else (default,) * n


def _free_auto_padding(kernel, stride, dilation, pad, auto) -> tuple:
    """``(auto, pad)`` of a convolution over values computed from an input with free
    dimensions (CNTK's ``FreeDimension``): a symmetric pad that is CNTK's automatic padding at
    every length (an odd window every 1) written as the flag, since CNTK 2.7 refuses a file's
    explicit pads over a free dimension ('kernel fills the entire space')."""
    flags = tuple(bool(a) or (int(s) == 1 and int(k) % 2 == 1 and p > 0
                              and int(p) == int(d) * (int(k) - 1) // 2)
                  for k, s, d, p, a in zip(kernel, stride, dilation, pad, auto))
    return flags, tuple(0 if f and not a else p for f, a, p in zip(flags, auto, pad))


def _convolution(w, ins, uids, attrs, out, name):
    x, weight = ins[0], ins[1]
    nb = w.lead(x)              # (a sequence's images: step by step, CNTK's own form)
    if attrs["channel_last"] or attrs["base_axis"] != nb:
        raise CntkWriteUnsupported("convolution", "channel-last or a base axis other than the "
                                                  "dynamic axes")
    n = len(weight.shape) - 2
    pad, stride = _spatial(attrs, n, "pad", 0), _spatial(attrs, n, "stride", 1)
    dilation = _spatial(attrs, n, "dilation", 1)
    # CNTK's automatic padding where the compat padded an even kernel (stored order: the
    # spatial axes, last first, then the channel axis)
    auto = w.auto_padded.get(id(x), (False,) * n)
    if behind_free_dimensions(x):       # (CNTK refuses explicit pads over a free dimension)
        auto, pad = _free_auto_padding(weight.shape[2:], stride, dilation, pad, auto)
    attributes = convolution_attributes(weight.shape[1:], (1, *stride), (1, *dilation),
                                        (False, *auto), (0, *pad), (0, *pad),
                                        groups=attrs["group"])
    return convolution_and_bias(w, ins, uids, attributes, n, name)


_POOLING_LAYERS = ("MaxPooling", "AveragePooling")


def _as_auto_padding(sizes, window, strides, pad, ceil):
    """``(auto, pad)``: explicit pads written as CNTK's automatic padding on the axes where
    that computes the same windows (``C.pooling(..., auto_padding=[True])``, which the compat
    pads so, and CNTK writes as the flag), the others' pads kept."""
    widths = [e for n, k, s, p in zip(sizes, window, strides, pad)
              for e in window_edges(n, k, s, False, p, p, ceil=ceil, refuse=False)]
    form = auto_padding_form(sizes, window, strides, widths, (ceil,))
    if form is None:
        return (False,) * len(pad), pad
    auto = form[1]
    return auto, tuple(0 if a else p for a, p in zip(auto, pad))


def _pooling(kind):
    def rule(w, ins, uids, attrs, out, name):
        if attrs["channel_last"]:
            raise CntkWriteUnsupported(f"{kind}_pooling", "channel-last")
        if not attrs["ignore_border"]:
            raise CntkWriteUnsupported(f"{kind}_pooling", "NNabla's ignore_border=False")
        n = len(attrs["kernel"])
        pad = _spatial(attrs, n, "pad", 0)
        stride = _spatial(attrs, n, "stride", 1) if attrs.get("stride") is not None \
            else tuple(attrs["kernel"])
        # (CNTK's automatic padding and ceilOutDim where the compat padded for them; with
        # ceilOutDim, as C.pooling writes its defaults: one flag and pad for every axis)
        auto = w.auto_padded.get(id(ins[0]), (False,) * n)
        ceil = id(ins[0]) in w.ceil_pooled
        if not any(auto) and any(pad):      # (CNTK's automatic padding, where it is that)
            auto, pad = _as_auto_padding(tuple(ins[0].shape[-n:]), attrs["kernel"], stride,
                                         pad, ceil)
            if all(auto):                   # (a layer writes a flag per axis, C.pooling one)
                auto, pad = auto if w.layer_kind in _POOLING_LAYERS else auto[:1], (0,)
        elif ceil and len(set(auto)) == 1 and not any(pad):
            auto, pad = auto[:1], (0,)
        attributes = {"poolingType": P.size_t(0 if kind == "max" else 1),
                      "poolingWindowShape": P.shape(attrs["kernel"]), "strides": P.shape(stride),
                      "autoPadding": P.vector([P.boolean(a) for a in auto[::-1]]),
                      "lowerPad": P.shape(pad), "upperPad": P.shape(pad),
                      "ceilOutDim": P.boolean(ceil),
                      "includePad": P.boolean(bool(attrs.get("including_pad", False)) and
                                              id(ins[0]) not in w.inside_means)}
        return w.function("Pooling", uids[:1], attributes, name=name)
    return rule


def _batch_normalization(w, ins, uids, attrs, out, name):
    if attrs.get("batch_stat"):
        raise CntkWriteUnsupported("cntk_batch_normalization", "statistics of the batch")
    if len(uids) != 6:
        raise CntkWriteUnsupported("cntk_batch_normalization", "a normalisation over sequences")
    attributes = {"spatial": P.boolean(attrs["spatial"]),
                  "normalizationTimeConstant": P.double(attrs["time_constant"]),
                  "blendTimeConstant": P.double(attrs["blend_time_constant"]),
                  "epsilon": P.double(attrs["epsilon"]),
                  "disableRegularization": P.boolean(False), "useCuDNNEngine": P.boolean(True)}
    return w.function("BatchNormalization", uids, attributes, name=name)


# The blocks CNTK 2.7 builds for one op (as its load_model and graph listing show them, see
# tests/fixtures/cntk_model_write/cntk_native.json): element_divide is ElementTimes(x,
# Reciprocal(y)) (its rule is _cntk_write_seq's, which writes sequence.softmax's too); the
# logical ops read a value above 0 as true, with the one scalar constant
# 0 (Not: 0, then 1) as the block's leaves.
def _fixed_block(op, constants, body):
    def rule(w, ins, uids, attrs, out, name):
        return w.fixed_block(op, name, ins, uids, constants, body)
    return rule


def _truths(w, p, zero):
    return [w.function("Greater", [u, zero]) + "_Output_0" for u in p]


def _and(w, p, c, name):
    a, b = _truths(w, p, c[0])
    both = w.function("ElementTimes", [a, b]) + "_Output_0"
    return w.function("Greater", [both, c[0]]) + "_Output_0"


def _or(w, p, c, name):
    a, b = _truths(w, p, c[0])
    either = w.function("Plus", [a, b]) + "_Output_0"
    return w.function("Greater", [either, c[0]]) + "_Output_0"


def _xor(w, p, c, name):
    a, b = _truths(w, p, c[0])
    return w.function("NotEqual", [a, b]) + "_Output_0"


def _not(w, p, c, name):
    [a] = _truths(w, p, c[0])
    negated = w.function("Negate", [a]) + "_Output_0"
    return w.function("Plus", [negated, c[1]]) + "_Output_0"


RULES = {
    "relu": _unary("ReLU"), "tanh": _unary("Tanh"), "sigmoid": _unary("StableSigmoid"),
    "exp": _unary("Exp"), "cntk_log": _unary("Log"),
    "sqrt": _unary("Sqrt"), "abs": _unary("Abs"),
    "floor": _unary("Floor"), "elu": _elu,
    "add2": _binary("Plus"), "sub2": _binary("Minus"), "mul2": _binary("ElementTimes"),
    "add_scalar": _scalar("Plus"), "mul_scalar": _scalar("ElementTimes"),
    "r_sub_scalar": _r_sub_scalar, "affine": _affine,
    "reshape": _reshape, "concatenate": _concatenate, "dropout": _dropout,
    "convolution": _convolution, "max_pooling": _pooling("max"),
    "average_pooling": _pooling("average"), "cntk_batch_normalization": _batch_normalization,
}
RULES["stop_gradient"] = _unary("StopGradient")
# CNTK ops the caller (stadyn.compat.cntk) shows as one op, over the inputs it shows, however
# Stadyn computes them: one primitive function each, or the block CNTK 2.7 builds
RULES.update({"cntk:" + op: _unary(op) for op in (
    "Floor", "Log", "Reciprocal", "Hardmax", "StopGradient", "Negate")})
RULES.update({"cntk:" + op: _binary(op) for op in (
    "Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual")})
RULES.update({"cntk:And": _fixed_block("And", (0.0,), _and),
               "cntk:Or": _fixed_block("Or", (0.0,), _or),
               "cntk:Xor": _fixed_block("Xor", (0.0,), _xor),
               "cntk:Not": _fixed_block("Not", (0.0, 1.0), _not)})

"""What CNTK 2.7 shows as the root of a Function: the one function behind several outputs
(``top_k``, ``sequence.unpack``, also in a loaded file), the ops it builds as blocks (the
sequence ops, ``sum``, ``mean``): ``root_function``'s ``op_name``, ``name``, ``is_block``,
``uid`` and its ``block_root``; and the tree of pairs its n-ary element-wise ops build."""

import os
import re

import numpy as np

from compat_harness import cntk_case

_LAYER_FILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures",
                            "legacy", "cntk_layers")
_ROOT_NAMES = ["cntk.Function.root_function", "cntk.Function.name", "cntk.Function.op_name",
               "cntk.Function.is_block", "cntk.Function.is_primitive",
               "cntk.Function.is_composite", "cntk.Function.outputs", "cntk.Function.uid"]


def _uid(v):
    return re.sub(r"\d+", "#", v.uid)


def _root(f, nested=False):
    """How ``f`` and its root function show themselves (``nested``: the block's root is a
    block in CNTK 2.7, so only its op_name and name are compared)."""
    rf = f.root_function
    out = [f.name, f.op_name, rf.name, rf.op_name, rf.is_primitive, rf.is_composite,
           rf.is_block, _uid(rf), [o.name for o in rf.outputs]]
    if rf.is_block:
        br = rf.block_root
        out.append([br.op_name, br.name] + ([] if nested else [_uid(br), br.is_block]))
    return out


@cntk_case(names=_ROOT_NAMES + ["cntk.ops.top_k", "cntk.sequence.unpack",
                                "cntk.variables.VariableMixin.owner"],
           note="a Function of two outputs made by one op (top_k, sequence.unpack) is a "
                "composite whose root_function is that op, with both outputs, named as the "
                "op was named (the first output's name); each output's owner is the same op. "
                "Stadyn gave the composite itself as the root (CompositeFunctionOpName) and "
                "the name ''")
def root_function__several_outputs(C, r):
    r.touch(*(_ROOT_NAMES + ["cntk.variables.VariableMixin.owner", "cntk.Function.eval"]))
    x = C.input_variable(5, name="x")
    s = C.sequence.input_variable(3, name="s")
    made = {"top_k": C.top_k(x, 2, name="tk"), "top_k unnamed": C.top_k(x, 2),
            "unpack": C.sequence.unpack(s, 0, name="u"),
            "unpack unnamed": C.sequence.unpack(s, 0),
            "unpack no mask": C.sequence.unpack(s, 0, no_mask_output=True, name="un")}
    res = {}
    for k in sorted(made):
        f = made[k]
        res[k] = _root(f)
        res[k + " owners"] = [[o.owner.name, o.owner.op_name, len(o.owner.outputs)]
                              for o in f.outputs]
    values = made["top_k"].eval({x: r.randn(2, 5)})
    res["top_k values"] = [values[o] for o in made["top_k"].outputs]
    return res


@cntk_case(names=_ROOT_NAMES + ["cntk.Function.block_root", "cntk.sequence.first",
                                "cntk.sequence.last", "cntk.sequence.slice",
                                "cntk.sequence.reduce_sum", "cntk.sequence.reduce_max",
                                "cntk.sequence.broadcast_as", "cntk.sequence.gather",
                                "cntk.sequence.scatter", "cntk.sequence.is_first",
                                "cntk.sequence.is_last", "cntk.sequence.softmax",
                                "cntk.ops.sum", "cntk.ops.mean",
                                "cntk.logging.get_node_outputs"],
           note="CNTK 2.7 builds these ops as blocks: sequence.first, last and slice are "
                "Sequence::Slice around GatherPacked, the sequence reductions "
                "Sequence::ReduceElements, broadcast_as Sequence::BroadcastAs around "
                "ReconcileDynamicAxis, gather and scatter Sequence::Gather/Scatter around "
                "GatherPacked/ScatterPacked, is_first/is_last around PastValue/FutureValue, "
                "sum a block Sum around its last Plus (Combine for one operand), mean Mean "
                "around ElementDivide; the name given is the block's, its root has none, and "
                "a block's uid is Block<n>. Stadyn showed its own ops (First, ReduceSum, "
                "Plus, ...). (The roots of CNTK's mean and sequence.softmax are blocks "
                "themselves: only their op_name and name are compared.)")
def sequence_ops_as_blocks(C, r):
    r.touch(*(_ROOT_NAMES + ["cntk.Function.block_root", "cntk.Function.eval"]))
    x = C.input_variable(3, name="x")
    y = C.input_variable(3, name="y")
    s = C.sequence.input_variable(3, name="s")
    c = C.sequence.input_variable(1, name="c")
    made = {"first": C.sequence.first(s, name="f"), "last": C.sequence.last(s),
            "slice": C.sequence.slice(s, 1, 3, name="sl"), "slice one": C.sequence.slice(s, 1, 2),
            "reduce_sum": C.sequence.reduce_sum(s), "reduce_max": C.sequence.reduce_max(s, "rm"),
            "broadcast_as": C.sequence.broadcast_as(x, s, name="b"),
            "gather": C.sequence.gather(s, c), "scatter": C.sequence.scatter(s, c, name="sc"),
            "is_first": C.sequence.is_first(s), "is_last": C.sequence.is_last(s, name="il"),
            "softmax": C.sequence.softmax(s), "sum": C.sum(x, y), "sum3": C.sum([x, y, x]),
            "sum one": C.sum(x, name="s1"), "mean": C.mean(x, y, name="m")}
    res = {}
    for k in sorted(made):
        res[k] = _root(made[k], nested=k in ("mean", "softmax"))
    seqs = [r.randn(3, 3), r.randn(1, 3)]
    flags = [np.array([[1], [0], [1]], np.float32), np.array([[1]], np.float32)]
    feed = {s: seqs, c: flags, x: r.randn(2, 3), y: r.randn(2, 3)}
    for k in ("first", "reduce_max", "is_last", "sum3", "mean"):
        f = made[k]
        value = f.eval({a: feed[a] for a in f.arguments})
        res[k + " value"] = np.concatenate(value) if isinstance(value, list) else value
    g = C.tanh(C.sequence.last(C.sequence.broadcast_as(x, s) * s + 1, name="l") +
               C.sequence.reduce_sum(s, name="r"), name="t")
    r.touch("cntk.logging.get_node_outputs")
    res["node outputs"] = [[o.name, re.sub(r"\d+", "#", o.uid), o.owner.op_name]
                           for o in C.logging.get_node_outputs(g)]
    return res


@cntk_case(names=["cntk.ops.load_model", "cntk.logging.get_node_outputs",
                  "cntk.logging.depth_first_search", "cntk.variables.VariableMixin.owner"],
           note="a CNTK 2.7-written file holding top_k (tests/fixtures/legacy/cntk_layers, "
                "make_cntk_layers.py): its two outputs are one function, listed once by "
                "depth_first_search and with both outputs by get_node_outputs (the indices "
                "too, which nothing reads), each output's owner having two outputs; along "
                "another axis a block of two outputs. Stadyn listed the block twice and "
                "the unread indices not at all")
def loaded_top_k_is_one_function(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.uid", "cntk.Function.op_name",
            "cntk.Function.outputs", "cntk.variables.VariableMixin.owner")
    res = {}
    for name in ("ops_top_k", "ops_top_k_axis"):
        z = C.load_model(os.path.join(_LAYER_FILES, name + ".model"))
        res[name + " nodes"] = [[o.name, re.sub(r"\d+", "#", o.uid), o.owner.op_name,
                                 len(o.owner.outputs)] for o in C.logging.get_node_outputs(z)]
        res[name + " search"] = [[n.name, re.sub(r"\d+", "#", n.uid)] for n in
                                 C.logging.depth_first_search(z, lambda n: True)[1:]]
        x = z.arguments[0]
        value = z.eval({x: r.randn(*((2,) + tuple(x.shape)))})
        res[name + " value"] = [value[o] for o in z.outputs] if isinstance(value, dict) \
            else value
    return res


@cntk_case(names=["cntk.ops.plus", "cntk.ops.element_times", "cntk.ops.element_max",
                  "cntk.ops.element_min", "cntk.ops.log_add_exp",
                  "cntk.ops.associative_multi_arg"],
           note="CNTK 2.7's plus, element_times, element_max, element_min and log_add_exp take "
                "two or more operands, built as a tree of pairs (f(a, f(b, c)), "
                "f(f(a, b), f(c, d))) whose outermost op takes the name (name=, or a string "
                "after the operands). Stadyn's took two (a TypeError for three). (log_add_exp's "
                "inner ops are Stadyn's: only its value and root op are compared.)")
def n_ary_element_wise_ops(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.root_function", "cntk.Function.op_name",
            "cntk.Function.inputs", "cntk.Function.name", "cntk.variables.VariableMixin.owner")
    xs = [C.input_variable(3, name=n) for n in "xyzw"]
    feed = dict(zip(xs, [r.randn(2, 3) for _ in xs]))
    x, y, z, w = xs

    def tree(f):
        """The ops of ``f``'s tree: each op's name, op_name and its inputs' names."""
        rf = f.root_function
        inner = [i.owner for i in rf.inputs if i.is_output]
        return [[g.name, g.op_name, [i.name for i in g.inputs]] for g in [rf] + inner]
    made = {"plus 3": C.plus(x, y, z, name="p3"), "plus 4": C.plus(x, y, z, w),
            "plus name after": C.plus(x, y, z, "pn"), "plus 2 name after": C.plus(x, y, "two"),
            "element_times 3": C.element_times(x, y, z),
            "element_max 4": C.element_max(x, y, z, w, name="mx"),
            "element_min 3": C.element_min(x, y, z),
            "multi_arg": C.associative_multi_arg(C.element_times)(x, y, z, w)}
    res = {}
    for k in sorted(made):
        f = made[k]
        res[k] = tree(f)
        res[k + " value"] = f.eval({a: feed[a] for a in f.arguments})
    lae = C.log_add_exp(x, y, z, name="l3")
    res["log_add_exp 3"] = [lae.name, lae.root_function.op_name, lae.eval({a: feed[a] for a in
                                                                          (x, y, z)})]
    return res


def _shown(v):
    """A root input as CNTK shows it: its name, or the op whose output it is; CNTK's own
    constants (a block's, a number's) left out."""
    return v.name or (v.owner.op_name if v.is_output else "?")


@cntk_case(names=_ROOT_NAMES + ["cntk.Function.inputs", "cntk.ops.floor", "cntk.ops.ceil",
                                "cntk.ops.round", "cntk.ops.reciprocal",
                                "cntk.ops.element_divide", "cntk.ops.log_add_exp",
                                "cntk.ops.equal", "cntk.ops.not_equal", "cntk.ops.less",
                                "cntk.ops.less_equal", "cntk.ops.greater",
                                "cntk.ops.greater_equal", "cntk.ops.element_and",
                                "cntk.ops.element_or", "cntk.ops.element_xor",
                                "cntk.ops.element_not", "cntk.ops.element_select",
                                "cntk.ops.clip", "cntk.ops.argmax", "cntk.ops.argmin",
                                "cntk.ops.hardmax", "cntk.ops.one_hot", "cntk.ops.times",
                                "cntk.ops.times_transpose", "cntk.losses.squared_error",
                                "cntk.metrics.classification_error" if False else
                                "cntk.ops.cosine_distance", "cntk.ops.reduce_l1",
                                "cntk.ops.reduce_l2", "cntk.ops.reduce_sum_square",
                                "cntk.ops.reduce_log_sum_exp", "cntk.ops.softsign",
                                "cntk.ops.softplus", "cntk.ops.hard_sigmoid",
                                "cntk.ops.mean_variance_normalization",
                                "cntk.losses.binary_cross_entropy",
                                "cntk.losses.weighted_binary_cross_entropy",
                                "cntk.ops.unpack_batch", "cntk.ops.to_batch",
                                "cntk.ops.straight_through_impl", "cntk.ops.log"],
           note="ops Stadyn computes with several of its own show as CNTK's one op reading "
                "the user's operands (floor(x)'s root Floor reads x; Stadyn listed its inner "
                "Cast and Greater); ceil and round are CNTK's Negate(Floor(Negate x)) and "
                "Floor(Plus(x, 0.5)); less reads (x, y) in order; to_batch and unpack_batch are "
                "ToBatchAxis and UnpackBatchAxis, binary_cross_entropy the block "
                "BinaryCrossEntropy, weighted_binary_cross_entropy Logistic. CNTK's own "
                "constants (its blocks' and a number operand's) are left out of the "
                "comparison")
def root_inputs_of_composed_ops(C, r):
    r.touch(*(_ROOT_NAMES + ["cntk.Function.inputs"]))
    x, y = C.input_variable(3, name="x"), C.input_variable(3, name="y")
    z, m = C.input_variable(3, name="z"), C.input_variable((3, 3), name="m")
    made = {
        "floor": C.floor(x), "floor named": C.floor(x, name="fl"), "ceil": C.ceil(x),
        "ceil named": C.ceil(x, name="ce"), "round": C.round(x),
        "round named": C.round(x, name="ro"), "reciprocal": C.reciprocal(x, name="re"),
        "element_divide": C.element_divide(x, y), "divide by 2": C.element_divide(x, 2.0),
        "log": C.log(x), "log of a number": C.log(0.5), "floor of a number": C.floor(2.5),
        "log_add_exp": C.log_add_exp(x, y), "equal": C.equal(x, y),
        "not_equal": C.not_equal(x, y), "less": C.less(x, y), "less_equal": C.less_equal(x, y),
        "greater": C.greater(x, y), "greater_equal": C.greater_equal(x, y),
        "element_and": C.element_and(x, y), "element_or": C.element_or(x, y),
        "element_xor": C.element_xor(x, y), "element_not": C.element_not(x),
        "element_select": C.element_select(x, y, z), "clip": C.clip(x, y, z),
        "argmax": C.argmax(x), "argmin": C.argmin(m, axis=1), "hardmax": C.hardmax(x),
        "one_hot": C.one_hot(x, 4), "times": C.times(x, m),
        "times_transpose": C.times_transpose(x, m), "squared_error": C.squared_error(x, y),
        "cosine_distance": C.cosine_distance(x, y), "reduce_l1": C.reduce_l1(x),
        "reduce_l2": C.reduce_l2(x), "reduce_sum_square": C.reduce_sum_square(x),
        "reduce_log_sum_exp": C.reduce_log_sum_exp(x), "softsign": C.softsign(x),
        "softplus 2": C.softplus(x, steepness=2), "hard_sigmoid": C.hard_sigmoid(x, 0.2, 0.5),
        "mean_variance_normalization": C.mean_variance_normalization(x),
        "binary_cross_entropy": C.binary_cross_entropy(x, y, name="b"),
        "weighted_binary_cross_entropy": C.weighted_binary_cross_entropy(x, y, z),
        "unpack_batch": C.unpack_batch(x), "to_batch": C.to_batch(C.constant(np.ones((2, 3)))),
        "straight_through_impl": C.straight_through_impl(x)}
    res = {}
    for k in sorted(made):
        f = made[k]
        rf = f.root_function
        res[k] = [f.op_name, f.name, [i.name for i in f.inputs if not i.is_constant],
                  rf.op_name, rf.name, [_shown(i) for i in rf.inputs if not i.is_constant]]
    data = {x: np.array([[-1.5, 0.5, 2.5]], np.float32), y: np.array([[2, 0, -3]], np.float32),
            z: np.array([[7, 8, 9]], np.float32)}
    for k in ("floor", "ceil", "round", "element_not", "argmax", "hardmax", "element_and",
              "element_or", "element_xor", "element_select"):
        res[k + " value"] = made[k].eval({v: data[v] for v in made[k].arguments})
    edges = np.array([-0.0, 0.0, 1e20, -1e20, -0.3, 0.7, -2.5, 2.5], np.float32)
    for k, f in (("floor", C.floor), ("ceil", C.ceil), ("round", C.round)):
        out = f(edges).eval()
        res[k + " edges"], res[k + " edges sign"] = out, np.signbit(out).tolist()
    return res


@cntk_case(names=_ROOT_NAMES + ["cntk.layers.UnfoldFrom", "cntk.Function.arguments"],
           note="CNTK 2.7's UnfoldFrom is no block: its graph ends in combine([output], "
                "name='unfold_output') (a name given: an alias NoOp of that; with "
                "until_predicate: the block Sequence::Gather 'valid_output' over the output "
                "and the Recurrence 'valid_frames'). Stadyn showed an UnfoldFrom block. (The "
                "owner of the root's input, CNTK's generator op, is not compared)")
def unfold_from_root(C, r):
    r.touch(*(_ROOT_NAMES + ["cntk.Function.arguments"]))
    s0 = C.input_variable(2, name="s0")
    axis = C.sequence.input_variable(2, name="ax")
    made = {"plain": C.layers.UnfoldFrom(lambda h: h + 1)(s0, axis),
            "named": C.layers.UnfoldFrom(lambda h: h + 1, name="dec")(s0, axis),
            "until": C.layers.UnfoldFrom(lambda h: h + 1, until_predicate=lambda h: C.greater(
                C.reduce_sum(h), 7.))(s0, axis),
            "longer": C.layers.UnfoldFrom(lambda h: h * 2, length_increase=2)(s0, axis)}
    res = {}
    data = {s0: np.array([[1, 2]], np.float32), axis: [np.zeros((3, 2), np.float32)]}
    for k in sorted(made):
        o = made[k]
        rf = o.root_function
        res[k] = [o.name, o.op_name, o.is_block, rf.op_name, rf.name, rf.is_block,
                  [i.name for i in rf.inputs], [i.name for i in o.outputs],
                  sorted(a.name for a in o.arguments)]
        res[k + " value"] = o.eval(data)
    return res

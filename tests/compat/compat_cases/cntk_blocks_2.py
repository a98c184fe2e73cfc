"""CNTK 2.7's blocks as a program walks them: ``binary_cross_entropy``'s block (its three
scalar Constants, its ``Negate`` of a ``Plus`` inside), the placeholders a block's inside
reads (``block_arguments_mapping``, walks from ``block_root``, in memory and loaded from a
file), and ``as_composite(block.block_root)``: the inside over those placeholders."""

import os
import re

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


def _kind(v):
    return ("placeholder" if v.is_placeholder else "parameter" if v.is_parameter else
            "constant" if v.is_constant else "output" if v.is_output else "input")


def _node(n):
    """A node of a walk: a function by its op and name, a variable by its kind, name, shape
    (their uids are numbered differently)."""
    if type(n).__name__ == "Function":
        return [n.op_name, n.name]
    return [_kind(n), n.name, list(n.shape)]


def _variables(vs):
    return [[_kind(v), v.name, list(v.shape)] +
            ([v.owner.op_name] if v.is_output else []) for v in vs]


def _inside(C, block):
    """What a program sees of ``block`` (a root function) and of its inside."""
    root = block.block_root
    walk = C.logging.graph.depth_first_search
    return {"block": [block.op_name, block.name, _variables(block.inputs)],
            "constants": [[list(c.shape), float(c.value)] for c in block.constants],
            "root": [root.op_name, _variables(root.inputs)],
            "mapping": [[_kind(p), p.name, list(p.shape), [str(a) for a in p.dynamic_axes],
                         _kind(a), a.name] for p, a in block.block_arguments_mapping],
            "walk inside": [_node(n) for n in walk(root, lambda n: True, depth=-1)],
            "walk at depth 1": [_node(n) for n in walk(block, lambda n: True, depth=1)],
            "named o inside": [_node(n) for n in
                               C.logging.graph.find_all_with_name(root, "o", depth=-1)]}


@cntk_case(names=["cntk.binary_cross_entropy", "cntk.losses.binary_cross_entropy",
                  "cntk.Function.block_root", "cntk.Function.block_arguments_mapping",
                  "cntk.logging.graph.depth_first_search",
                  "cntk.logging.graph.find_all_with_name", "cntk.load_model"])
def blocks__binary_cross_entropy_inside(C, r):
    r.touch("cntk.Function.block_root", "cntk.Function.block_arguments_mapping",
            "cntk.Function.inputs", "cntk.Function.constants", "cntk.Function.save",
            "cntk.logging.graph.depth_first_search", "cntk.logging.graph.find_all_with_name")
    o = C.input_variable(2, name="o")
    t = C.input_variable(2, name="t")
    z = C.binary_cross_entropy(o, t, name="bce")
    res = {"made " + k: v for k, v in _inside(C, z.root_function).items()}
    data = {o: np.array([[0.2, 0.5]], np.float32), t: np.array([[0.0, 1.0]], np.float32)}
    res["value"] = z.eval(data)
    with r.tempdir() as folder:
        path = os.path.join(folder, "bce.model")
        z.save(path)
        loaded = C.load_model(path)
    res.update({"loaded " + k: v for k, v in _inside(C, loaded.root_function).items()})
    return res


@cntk_case(names=["cntk.as_composite", "cntk.ops.as_composite", "cntk.Function.placeholders"])
def blocks__composite_of_a_block_root(C, r):
    r.touch("cntk.as_composite", "cntk.Function.arguments", "cntk.Function.inputs",
            "cntk.Function.placeholders", "cntk.Function.eval")
    o = C.input_variable(2, name="o")
    t = C.input_variable(2, name="t")
    x = C.input_variable(4, name="x")
    res = {}
    for label, block in (("bce", C.binary_cross_entropy(o, t).root_function),
                         ("dense", C.layers.Dense(3)(x).root_function)):
        inner = C.as_composite(block.block_root)
        res[label] = [inner.op_name, inner.root_function.op_name, inner.is_block,
                      _variables(inner.arguments), _variables(inner.inputs),
                      _variables(inner.placeholders), [str(a) for a in inner.arguments]]
        data = {a: np.ones((1,) + a.shape, np.float32) for a in inner.arguments}
        res[label + " eval"] = outcome(lambda: inner.eval(data))
    return res


def _numbered(text):
    """``text`` with CNTK's numbered uids (``PastValue454_Output_0``) unnumbered."""
    return re.sub(r"([A-Za-z:]+)\d+(_Output_\d+)", r"\1#\2", text)


def _refusal(fn):
    """The built-in type and the first line of what ``fn()`` raised, uids unnumbered."""
    try:
        fn()
    except Exception as e:      # (the built-in type is what is compared)
        kind = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return [kind, _numbered(str(e).splitlines()[0])]
    return "ran"


@cntk_case(names=["cntk.logging.graph.find_by_name", "cntk.Function.eval",
                  "cntk.Function.forward", "cntk.Function.root_function"])
def blocks__root_function_asks_for_each_argument(C, r):
    r.touch("cntk.layers.Recurrence", "cntk.layers.LSTM", "cntk.layers.GRU",
            "cntk.Function.arguments", "cntk.Function.root_function", "cntk.Function.eval",
            "cntk.Function.forward")
    res = {}
    for make in ("LSTM", "GRU"):
        x = C.sequence.input_variable(2, name="x")
        z = C.layers.Recurrence(getattr(C.layers, make)(3, name="cell"))(x)
        found = C.logging.graph.find_by_name(z, "cell")
        data = [np.ones((2, 2), np.float32)]
        res[make + " arguments"] = _variables(found.arguments)
        res[make + " eval"] = _refusal(lambda: found.eval({x: data}))
        res[make + " forward"] = _refusal(lambda: found.forward({x: data}))
    x = C.input_variable(2, name="x")
    y = C.input_variable(2, name="y")
    for label, f in (("Plus", C.plus(x, y)),
                     ("Dense", C.layers.Dense(2, name="d")(x * y))):
        one = {x: np.ones((1, 2), np.float32)}
        res[label + " composite eval"] = _refusal(lambda: f.eval(one))
        res[label + " root eval"] = _refusal(lambda: f.root_function.eval(one))
        res[label + " root eval, nothing"] = _refusal(lambda: f.root_function.eval({}))
    return res


@cntk_case(names=["cntk.as_block", "cntk.ops.as_block", "cntk.combine"])
def blocks__as_block_of_two_outputs(C, r):
    r.touch("cntk.as_block", "cntk.combine", "cntk.Function.outputs", "cntk.Function.eval",
            "cntk.Function.block_root", "cntk.Function.block_arguments_mapping",
            "cntk.Function.save", "cntk.load_model", "cntk.logging.graph.depth_first_search")
    x = C.input_variable(2, name="x")
    p = C.placeholder(name="p")
    inner = C.combine([C.plus(p, 1.0, name="a"), C.element_times(p, 2.0, name="b")])
    blk = C.as_block(inner, [(p, x)], "Two", "two")
    rf = blk.root_function
    data = {x: np.array([[1.0, 2.0]], np.float32)}
    values = blk.eval(data)
    res = {"block": [blk.op_name, blk.is_composite, rf.op_name, rf.is_block, blk.name],
           "outputs": [[_numbered(o.uid), o.name, o.owner.op_name, list(o.shape)]
                       for o in blk.outputs],
           "root": [rf.block_root.op_name, _variables(rf.block_root.inputs)],
           "mapping": [[_kind(q), q.name, _kind(a), a.name]
                       for q, a in rf.block_arguments_mapping],
           "arguments": _variables(blk.arguments), "inputs": _variables(rf.inputs),
           "values": [values[o] for o in blk.outputs],
           "first output, used": (blk.outputs[0] + 0).eval(data),
           "text": [_numbered(repr(blk)), str(blk)],
           "walk at depth 1": [_node(n) for n in C.logging.graph.depth_first_search(
               blk, lambda n: True, depth=1)]}
    r.touch("cntk.as_composite")
    ic = C.as_composite(rf.block_root)
    res["composite of block_root"] = [
        ic.root_function.op_name, [o.owner.op_name for o in ic.outputs],
        [[a.name, a.is_placeholder] for a in ic.arguments]]
    res["composite of block_root eval"] = outcome(
        lambda: ic.eval({ic.arguments[0]: data[x]}),
        lambda got: [np.asarray(got[o]).tolist() for o in ic.outputs])
    with r.tempdir() as folder:
        path = os.path.join(folder, "two.model")
        blk.save(path)
        loaded = C.load_model(path)
        lv = loaded.eval({loaded.arguments[0]: data[x]})
        res["loaded values"] = [lv[o] for o in loaded.outputs]
        res["loaded root"] = [loaded.root_function.op_name, loaded.root_function.is_block,
                              [o.owner.op_name for o in loaded.outputs]]
    return res


@cntk_case(names=["cntk.layers.Fold", "cntk.logging.graph.depth_first_search",
                  "cntk.logging.graph.find_by_name"])
def blocks__fold_walks_see_the_step(C, r):
    """``Fold(GRU(3, name='cell'))`` (and of an ``RNNStep``): a Combine over the
    ``Sequence::Slice`` block over the cell's block, which reads a ``PastValue`` of its own
    output and the sequence (Stadyn computes it as one fused op; its walks see the steps);
    ``sequence.last`` of the ``Recurrence`` reads the cell's output, named as the cell."""
    r.touch("cntk.layers.Fold", "cntk.layers.GRU", "cntk.layers.RNNStep",
            "cntk.logging.graph.depth_first_search", "cntk.logging.graph.find_by_name",
            "cntk.Function.root_function", "cntk.Function.inputs", "cntk.Function.parameters",
            "cntk.Function.eval")
    res = {}
    for make in ("GRU", "RNNStep"):
        x = C.sequence.input_variable(2, name="x")
        cell = getattr(C.layers, make)(3, name="cell", init=C.glorot_uniform(seed=1))
        z = C.layers.Fold(cell)(x)
        root = z.root_function
        sliced = root.inputs[0].owner
        found = C.logging.graph.find_by_name(z, "cell")
        res[make + " walk"] = [_node(n) for n in C.logging.graph.depth_first_search(
            z, lambda n: True)]
        res[make + " root"] = [root.op_name, _variables(root.inputs)]
        res[make + " slice"] = [sliced.op_name, sliced.is_block, _variables(sliced.inputs)]
        res[make + " found"] = [found.op_name, found.name, _variables(found.inputs)]
        res[make + " parameters"] = _variables(z.parameters)
        res[make + " value"] = z.eval({x: [np.arange(6, dtype=np.float32).reshape(3, 2)]})
        last = C.sequence.last(C.layers.Recurrence(cell)(x)).root_function
        res[make + " sequence.last reads"] = [[i.name, i.owner.op_name]
                                              for i in last.inputs if i.is_output]
    return res

"""Ops called on placeholders without a shape (built once the shapes arrive), against
CNTK 2.7: what such a call does as it is called (its name, its checks) and what the Function
it returns exposes before it is bound."""

import re

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome


def _uidless(text):
    """``text`` with the numbers of uids masked (``Plus12_Output_0``: ``Plus#_Output_0``)."""
    return re.sub(r"\d+", "#", text)


@cntk_case(names=["cntk.ops.plus", "cntk.ops.relu", "cntk.ops.dropout", "cntk.ops.reduce_sum",
                  "cntk.random.uniform_like", "cntk.random.normal_like", "cntk.placeholder"],
           note="an op on a placeholder without a shape, its name given positionally "
                "(plus(p, 1, 'f')): CNTK 2.7 names the Function 'f' (its str 'f: Plus(...)', "
                "its output 'f').  Stadyn read the name given by keyword only and left it ''")
def deferred_call__name_given_positionally(C, r):
    r.touch("cntk.Function.name", "cntk.Function.output", "cntk.Variable.name")
    p = C.placeholder(name="p")
    calls = [("plus", lambda: C.plus(p, 1, "f1")), ("relu", lambda: C.relu(p, "f2")),
             ("dropout", lambda: C.dropout(p, 0.5, 3, "f3")),
             ("reduce_sum", lambda: C.reduce_sum(p, 0, True, "f4")),
             ("uniform_like", lambda: C.random.uniform_like(p, 0.0, 1.0, 5, "f5")),
             ("normal_like", lambda: C.random.normal_like(p, 0.0, 1.0, 5, "f6")),
             ("plus by keyword", lambda: C.plus(p, 1, name="f7"))]
    res = {}
    for label, call in calls:
        f = call()
        res[label] = [f.name, str(f), _uidless(f.output.name)]
    x = C.input_variable(2)
    res["bound"] = C.plus(p, 1, "f8").replace_placeholders({p: x}).name
    return res


@cntk_case(names=["cntk.ops.dropout", "cntk.placeholder"],
           note="dropout's rate outside [0, 1) on a placeholder without a shape: CNTK 2.7 "
                "refuses it as it is called (ValueError 'dropout_rate must be in the interval "
                "[0,1)').  Stadyn refused it on an input with a shape only, and built the "
                "placeholder's call")
def dropout__rate_refused_on_placeholder(C, r):
    res = {}
    for rate in (1.5, -0.1, 1.0, 0.0, 0.5):
        x = C.input_variable(2)
        res["input %g" % rate] = str(outcome(lambda: C.dropout(x, rate).shape))
        res["placeholder %g" % rate] = str(outcome(lambda: C.dropout(C.placeholder(),
                                                                      rate).shape))
    return res


def _described(v):
    """A variable as ``[kind, name]`` (an output's uid without its number)."""
    kinds = [k for k in ("placeholder", "parameter", "constant", "output", "input")
             if getattr(v, "is_" + k, False)]
    return [kinds[0] if kinds else "?", _uidless(v.name or v.uid)]


def _graph_of(f):
    """What a Function over placeholders without a shape shows of its graph."""
    root = f.root_function
    return {"inputs": [_described(a) for a in f.inputs],
            "arguments": [_described(a) for a in f.arguments],
            "parameters": [_described(a) for a in f.parameters],
            "constants": [_described(a) for a in f.constants],
            "flags": [f.is_composite, f.is_primitive, f.is_block],
            "root": [root.op_name, root.name, root.is_composite, root.is_primitive,
                     root.is_block, root.root_function.op_name, _uidless(repr(root))],
            "root inputs": [_described(a) for a in root.inputs],
            "root arguments": [_described(a) for a in root.arguments],
            "root placeholders": [_described(a) for a in root.placeholders],
            "root parameters": [_described(a) for a in root.parameters],
            "root outputs": [_described(a) for a in root.outputs],
            "owner": f.owner.op_name}


@cntk_case(names=["cntk.Function.root_function", "cntk.Function.inputs", "cntk.Function.constants",
                  "cntk.Function.parameters", "cntk.Function.owner", "cntk.Function.is_primitive",
                  "cntk.Function.is_block", "cntk.placeholder", "cntk.layers.Dense"],
           note="a Function over placeholders without a shape, before they are bound: CNTK "
                "2.7 lists its inputs (the leaves, depth first; a layer's parameters before its "
                "argument), parameters and constants, and its root_function is the call's op "
                "(Plus over the output of the ReLU it reads, Times, a Dense block).  Stadyn "
                "raised AttributeError ('Deferred has no root_function / inputs'), listed no "
                "parameter of times(p, W), and left a named layer applied to a placeholder "
                "unnamed; then missed the parameters of a Function read through its .output "
                "(plus(p, times(x, V).output): CNTK ['V']), listed a layer's twice where the "
                "graph reads it twice (plus(h, relu(h)): CNTK ['W', 'b']), and listed p twice "
                "among element_times(p, p)'s root's arguments")
def deferred_function__graph_before_binding(C, r):
    r.touch("cntk.parameter", "cntk.constant", "cntk.ops.plus", "cntk.ops.relu",
            "cntk.ops.times", "cntk.ops.element_times", "cntk.Function.root_function",
            "cntk.Function.arguments", "cntk.Function.is_composite", "cntk.Function.op_name",
            "cntk.Function.name", "cntk.Variable.owner", "cntk.Function.inputs",
            "cntk.Function.constants", "cntk.Function.parameters", "cntk.Function.owner",
            "cntk.Function.is_primitive", "cntk.Function.is_block")
    p, q = C.placeholder(name="p"), C.placeholder(name="q")
    W = C.parameter((3, 2), name="W", init=1.0)
    c = C.constant(np.ones(3, np.float32), name="c")
    x, V = C.input_variable(4, name="x"), C.parameter((4, 3), name="V", init=1.0)
    h = C.layers.Dense(2, name="e")(p)
    made = [("plus of a relu", lambda: C.plus(C.relu(p), q, name="g")),
            ("times", lambda: C.times(p, W)),
            ("constant inside", lambda: C.element_times(C.plus(p, c), q)),
            ("dense", lambda: C.layers.Dense(2, name="d")(p)),
            ("plus a number", lambda: C.plus(p, 1, name="f")),
            ("a layer read twice", lambda: C.plus(h, C.relu(h))),
            ("a placeholder read twice", lambda: C.element_times(p, p))]
    res = {}
    for label, make in made:
        res[label] = _graph_of(make())
    # (its root's output has a shape in CNTK 2.7: only its parameters are compared)
    res["parameters of a Function's output read"] = [
        _described(a) for a in C.plus(p, C.times(x, V).output).parameters]
    f = C.plus(C.relu(p), q)
    res["owner of the root's first input"] = f.root_function.inputs[0].owner.root_function.op_name
    return res


@cntk_case(names=["cntk.layers.Sequential", "cntk.layers.Recurrence", "cntk.placeholder"],
           note="the root of a Sequential or a Recurrence applied to a placeholder without a "
                "shape: CNTK 2.7's named one is a NoOp (not a block), an unnamed Sequential's "
                "is its last layer's op (Dense, a block), an unnamed Recurrence's a Combine "
                "(not a block); a Sequential's root reads the output of its steps applied "
                "(named) or its last layer's parameters and the output of the steps before.  "
                "Stadyn "
                "showed a Composite block over every step's parameters for both Sequentials "
                "('Composite(Composite)') and a Combine for the named Recurrence")
def deferred_layer__root_of_a_sequential(C, r):
    r.touch("cntk.Function.op_name", "cntk.Function.is_block", "cntk.layers.Dense",
            "cntk.layers.RNNStep")
    p = C.placeholder(name="p")
    made = [("sequential named", lambda: C.layers.Sequential(
                [C.layers.Dense(3), C.layers.Dense(2)], name="seq")),
            ("sequential", lambda: C.layers.Sequential([C.layers.Dense(3), C.layers.Dense(2)])),
            ("sequential of one named", lambda: C.layers.Sequential([C.layers.Dense(2)],
                                                                    name="one")),
            ("recurrence named", lambda: C.layers.Recurrence(C.layers.RNNStep(2), name="r")),
            ("recurrence", lambda: C.layers.Recurrence(C.layers.RNNStep(2)))]
    res = {}
    for label, make in made:
        layer = make()
        f = layer(p)
        root = f.root_function
        res[label] = [f.name, root.op_name, root.is_block, _uidless(repr(f)),
                      _uidless(repr(layer))]
        res[label + ", its root"] = [[_described(a) for a in root.inputs],
                                     _uidless(repr(root))]
        last = root.inputs[-1]
        if last.is_output:      # (what the root reads: the steps applied, their root)
            res[label + ", what its root reads"] = last.owner.root_function.op_name
    return res


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.RNNStep", "cntk.placeholder"],
           note="calls over placeholders without a shape whose parts are built first: a "
                "recurrence whose step reads its cell through .output (relu(cell(h, x).output)) "
                "runs as CNTK 2.7's (Stadyn once took the cell's state for its input and "
                "raised ShapeError); and plus(q, times(p, W)) with q of an inferred axis keeps "
                "CNTK's unknown shape (-2,) after times(p, W) is given its signature (Stadyn "
                "once read W's lengths from the built part and showed (2,))")
def deferred_parts_built_first(C, r):
    r.touch("cntk.ops.relu", "cntk.ops.plus", "cntk.ops.times", "cntk.parameter",
            "cntk.sequence.input_variable", "cntk.Function.eval", "cntk.Function.shape")
    class Model:
        """(the cell held on an object, as a model's attribute)"""
    m = Model()
    m.cell = C.layers.RNNStep(4, init=0.5)
    x = C.sequence.input_variable(3)
    y = C.layers.Recurrence(lambda h, v: C.relu(m.cell(h, v).output))(x)
    data = [np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)]
    res = {"recurrence shape": list(y.shape), "recurrence": np.asarray(y.eval({x: data})[0])}
    p = C.placeholder(name="p")
    q = C.placeholder(shape=(C.InferredDimension,), name="q")
    W = C.parameter((3, 2), init=1.0, name="W")
    h = C.times(p, W)
    f = C.plus(q, h)
    h.update_signature(3)
    res["after a part is built"] = list(f.shape)
    return res

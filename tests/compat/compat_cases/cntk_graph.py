"""The graph as CNTK shows it: a layer's parameters and named parts as attributes
(``z.W``, ``model.conv1.b``), ``find_by_name``/``find_all_with_name`` with their ``depth`` into
blocks, root functions and blocks, ``clone`` with each ``CloneMethod``, placeholders (bound by
calling a Function, by ``clone`` substitutions, by ``replace_placeholders``), ``combine`` of a
node's owner, the graph helpers of ``cntk.logging.graph``, and the Variable kinds."""

import os

import numpy as np

from compat_harness import cntk_case


def _names(items):
    return [[type(i).__name__, i.name] for i in items]


def _model(C):
    x = C.input_variable(3, name="features")
    with C.layers.default_options(activation=C.relu):
        z = C.layers.Sequential([C.layers.Dense(4, name="hidden"), C.layers.Label("penultimate"),
                                 C.layers.Dense(2, activation=None, name="out")])(x)
    return x, z


@cntk_case(names=["cntk.Function.find_by_name", "cntk.Function.find_all_with_name",
                  "cntk.layers.Label"])
def named_parts(C, r):
    """Attribute access to parameters and named parts, and the depth of a search."""
    x, z = _model(C)
    r.touch("cntk.Function.parameters", "cntk.Function.shape", "cntk.Function.name",
            "cntk.Function.find_by_name", "cntk.Function.find_all_with_name")
    params = r.set_params(z.parameters)
    data = r.randn(2, 3)
    hidden = z.hidden
    res = {"params": params, "z.name": z.name, "hidden.W": list(hidden.W.shape),
           "out.b": list(z.out.b.shape), "penultimate": list(z.penultimate.shape),
           "W depth0": len(z.find_all_with_name("W")),
           "W depth1": len(z.find_all_with_name("W", depth=1)),
           "W all": len(z.find_all_with_name("W", depth=-1)),
           "find hidden": [z.find_by_name("hidden").name, list(z.find_by_name("hidden").shape)],
           "find missing": z.find_by_name("nothing") is None,
           "features": z.find_by_name("features").is_input,
           "hidden value": C.combine([z.penultimate.owner]).eval({x: data})}
    try:
        z.find_by_name("W", depth=-1)
        res["several"] = "no error"
    except ValueError as e:
        res["several"] = ["ValueError", "multiple" in str(e)]
    return res


@cntk_case(names=["cntk.Function.root_function", "cntk.Function.is_block",
                  "cntk.Function.is_composite", "cntk.Function.is_primitive",
                  "cntk.Function.block_root", "cntk.Function.block_arguments_mapping",
                  "cntk.Function.op_name", "cntk.Function.inputs", "cntk.Function.outputs",
                  "cntk.variables.VariableMixin.owner"])
def root_and_block(C, r):
    x = C.input_variable(3, name="x")
    z = C.layers.Dense(2, activation=C.tanh, name="d")(x)
    f = C.plus(x, 1.0, name="p")
    rf = z.root_function
    r.touch("cntk.Function.root_function", "cntk.Function.is_block", "cntk.Function.is_composite",
            "cntk.Function.is_primitive", "cntk.Function.block_root",
            "cntk.Function.block_arguments_mapping", "cntk.Function.op_name",
            "cntk.Function.inputs", "cntk.Function.outputs", "cntk.variables.VariableMixin.owner")
    mapping = rf.block_arguments_mapping
    return {"composite": [z.is_composite, z.is_block, z.op_name],
            "root": [rf.is_block, rf.is_primitive, rf.op_name, rf.name],
            "root inputs": sorted(_names(rf.inputs)),
            "block_root primitive": rf.block_root.is_primitive,
            "mapping": [len(mapping), mapping[0][1].name],
            "plus": [f.root_function.op_name, f.root_function.is_primitive, f.name],
            "owner": [z.output.owner.op_name, z.outputs[0].owner.name],
            "composite inputs": sorted(_names(z.inputs))}


@cntk_case(names=["cntk.Function.clone", "cntk.CloneMethod", "cntk.CloneMethod.share",
                  "cntk.CloneMethod.clone", "cntk.CloneMethod.freeze", "cntk.ops.CloneMethod",
                  "cntk.losses.CloneMethod", "cntk.ops.functions.CloneMethod"])
def clone_methods(C, r):
    """A clone shares, copies or freezes the parameters; substitutions replace inputs."""
    x = C.input_variable(3, name="x")
    y = C.input_variable(3, name="y")
    z = C.layers.Dense(2, name="d")(C.layers.Dense(4)(x))
    r.touch("cntk.CloneMethod.share", "cntk.CloneMethod.clone", "cntk.CloneMethod.freeze")
    r.touch("cntk.Function.clone", "cntk.Function.parameters", "cntk.Function.constants",
            "cntk.Function.eval", "cntk.Function.arguments", "cntk.Parameter.value")
    r.set_params(z.parameters)
    data = r.randn(2, 3)
    before = z.eval({x: data})
    shared = z.clone(C.CloneMethod.share, {x: y})
    copied = z.clone(C.CloneMethod.clone, {x: y})
    frozen = z.clone(C.CloneMethod.freeze, {x: y})
    both = [C.ops.CloneMethod.share, C.losses.CloneMethod.clone,
            C.ops.functions.CloneMethod.freeze]
    for p in z.parameters:
        p.value = p.value * 2.0
    return {"before": before, "shared": shared.eval({y: data}), "copied": copied.eval({y: data}),
            "frozen": frozen.eval({y: data}), "after": z.eval({x: data}),
            "counts": [[len(f.parameters), len(f.constants)] for f in (shared, copied, frozen)],
            "arguments": [f.arguments[0].name for f in (shared, copied, frozen)],
            "same parameters": [shared.parameters[0] == z.parameters[0],
                                copied.parameters[0] == z.parameters[0]],
            "enum": [m.name for m in both]}


@cntk_case(names=["cntk.ops.placeholder", "cntk.Function.placeholders",
                  "cntk.Function.replace_placeholders", "cntk.Function.replace_placeholder",
                  "cntk.Function.argument_map", "cntk.ops.combine"])
def placeholders(C, r):
    """A Function of placeholders applied to inputs, and placeholders replaced in place."""
    p = C.placeholder(name="p")
    q = C.placeholder((3,), name="q")
    f = C.relu(q) * 2.0
    x = C.input_variable(3, name="x")
    data = r.randn(2, 3)
    r.touch("cntk.Function.placeholders", "cntk.Function.replace_placeholders",
            "cntk.Function.replace_placeholder", "cntk.Function.argument_map",
            "cntk.Function.eval", "cntk.Function.arguments", "cntk.Function.shape")
    applied = f(x)
    mapping = f.argument_map(x)
    g = C.tanh(C.placeholder((3,), name="r")) + 1.0
    n_before = len(g.placeholders)
    g.replace_placeholder(x)
    h = C.sigmoid(C.placeholder((3,), name="s"))
    h.replace_placeholders({h.placeholders[0]: x})
    owner = C.combine([applied.owner]) if hasattr(applied, "owner") else applied
    return {"shapeless": [list(p.shape), p.is_placeholder, p.name],
            "f placeholders": [a.name for a in f.placeholders], "applied": applied.eval(
                {x: data}), "applied args": [a.name for a in applied.arguments],
            "argument_map": [k.name for k in mapping], "g before": n_before,
            "g": g.eval({x: data}), "g placeholders": len(g.placeholders),
            "h": h.eval({x: data}), "combined": owner.eval({x: data}),
            "numeric call": applied(data)}


@cntk_case(names=["cntk.Function.clone"],
           note="transfer learning as CNTK 301 does it: the last layers of a loaded model "
                "cloned frozen onto a new input through a placeholder, a new head on top")
def transfer_learning(C, r):
    x = C.input_variable((1, 6, 6), name="features")
    with C.layers.default_options(activation=C.relu, pad=True):
        base = C.layers.Sequential([C.layers.Convolution2D((3, 3), 4, name="conv"),
                                    C.layers.MaxPooling((2, 2), (2, 2), name="pool"),
                                    C.layers.Dense(5, name="z.x"),
                                    C.layers.Dense(3, activation=None, name="z")])(x)
    r.touch("cntk.Function.parameters", "cntk.Function.clone", "cntk.Function.find_by_name",
            "cntk.Function.eval", "cntk.Function.save", "cntk.Function.arguments",
            "cntk.variables.VariableMixin.owner", "cntk.Function.constants")
    r.set_params(base.parameters)
    data = r.randn(2, 1, 6, 6)
    with r.tempdir() as folder:
        path = os.path.join(folder, "base.model")
        base.save(path)
        loaded = C.load_model(path)
    feature_node = C.logging.graph.find_by_name(loaded, "features")
    last_node = C.logging.graph.find_by_name(loaded, "z.x")
    cloned = C.combine([last_node.owner]).clone(C.CloneMethod.freeze,
                                                {feature_node: C.placeholder(name="features")})
    new_input = C.input_variable((1, 6, 6), name="new")
    head = C.layers.Dense(2, name="new_head")(cloned(new_input))
    r.set_params(head.parameters)
    return {"loaded": loaded.eval({loaded.arguments[0]: data}),
            "original": base.eval({x: data}),
            "cloned": cloned(new_input).eval({new_input: data}),
            "head": head.eval({new_input: data}), "head params": len(head.parameters),
            "head constants": len(head.constants)}


@cntk_case(names=["cntk.Function.attributes", "cntk.Function.set_attribute",
                  "cntk.Function.custom_attributes", "cntk.Function.print_node_timing",
                  "cntk.Function.uid", "cntk.variables.VariableMixin.uid"])
def function_misc(C, r):
    x = C.input_variable(20, name="x")
    d = C.dropout(x, 0.5)
    data = np.ones((4, 20), np.float32)
    r.touch("cntk.Function.attributes", "cntk.Function.set_attribute",
            "cntk.Function.custom_attributes", "cntk.Function.print_node_timing",
            "cntk.Function.uid", "cntk.variables.VariableMixin.uid", "cntk.Function.forward",
            "cntk.Function.output")
    d.set_attribute("dropoutRate", 0.0)
    _, out = d.forward({x: data}, [d.output], set([d.output]))
    d.custom_attributes = {"note": "seen"}
    d.print_node_timing()
    return {"rate 0 is the identity": bool(np.array_equal(out[d.output], data)),
            "custom": dict(d.custom_attributes), "composite attributes": len(d.attributes),
            "root attributes": len(d.root_function.attributes) > 0,
            "uids differ": d.uid != x.uid, "uid is str": isinstance(d.uid, str)}


@cntk_case(names=["cntk.Function.restore", "cntk.Function.load", "cntk.ops.load_model"])
def restore_and_load(C, r):
    x = C.input_variable(3, name="x")
    z = C.layers.Dense(2, name="d")(x)
    r.touch("cntk.Function.restore", "cntk.Function.load", "cntk.Function.save",
            "cntk.Function.parameters", "cntk.Function.eval", "cntk.Parameter.value",
            "cntk.Function.arguments")
    r.set_params(z.parameters)
    data = r.randn(2, 3)
    saved = z.eval({x: data})
    with r.tempdir() as folder:
        path = os.path.join(folder, "d.model")
        z.save(path)
        for p in z.parameters:
            p.value = p.value * 0.0
        zeroed = z.eval({x: data})
        z.restore(path)
        restored = z.eval({x: data})
        g = C.Function.load(path)
        h = C.ops.load_model(path)
        with open(path, "rb") as f:
            k = C.load_model(f.read())
    return {"saved": saved, "zeroed": zeroed, "restored": restored,
            "loaded": g.eval({g.arguments[0]: data}), "ops.load_model": h.eval(data),
            "from bytes": k.eval(data)}


@cntk_case(names=["cntk.Function.test"])
def function_test(C, r):
    """``Function.test`` averages a criterion over one sweep of a source."""
    x = C.input_variable(3, name="x")
    y = C.input_variable(2, name="y")
    z = C.times(x, C.parameter((3, 2), init=r.param_value("w", (3, 2))))
    err = C.classification_error(z, y)
    data, labels = r.randn(7, 3), r.onehot(7, 2)
    src = C.io.MinibatchSourceFromData(dict(x=data, y=labels), max_samples=7)
    r.touch("cntk.Function.test")
    summary = err.test(src, minibatch_size=3,
                       model_inputs_to_streams={x: src.streams.x, y: src.streams.y})
    expected = float(np.mean(np.argmax(data.dot(r.param_value("w", (3, 2))), 1)
                             != np.argmax(labels, 1)))
    return {"metric": summary.metric, "samples": summary.samples, "numpy": expected}


@cntk_case(names=["cntk.ops.as_block", "cntk.ops.as_composite", "cntk.ops.BlockFunction",
                  "cntk.ops.functions.BlockFunction"])
def blocks(C, r):
    x = C.input_variable(3, name="x")
    ph = C.placeholder((3,))
    inner = C.tanh(ph) * 3.0
    blk = C.as_block(inner, [(ph, x)], "Scaled", "scaled")
    comp = C.as_composite(blk.root_function)

    @C.ops.BlockFunction("Twice", "twice")
    def twice(v):
        return v * 2.0

    @C.ops.functions.BlockFunction("Thrice", "")
    def thrice(v):
        return v * 3.0
    t = twice(x)
    data = r.randn(2, 3)
    r.touch("cntk.Function.root_function", "cntk.Function.op_name", "cntk.Function.name",
            "cntk.Function.eval", "cntk.Function.is_block")
    return {"block": [blk.root_function.op_name, blk.name, blk.root_function.is_block],
            "value": blk.eval({x: data}), "composite": comp.eval({x: data}),
            "twice": [t.root_function.op_name, t.name], "twice value": t.eval({x: data}),
            "thrice": thrice(x).eval({x: data})}


@cntk_case(names=["cntk.logging.graph.depth_first_search", "cntk.logging.graph.find_by_name",
                  "cntk.logging.graph.find_all_with_name", "cntk.logging.graph.find_by_uid",
                  "cntk.logging.graph.get_node_outputs", "cntk.logging.graph.plot",
                  "cntk.logging.depth_first_search", "cntk.logging.find_by_name",
                  "cntk.logging.find_all_with_name", "cntk.logging.find_by_uid",
                  "cntk.logging.get_node_outputs", "cntk.logging.plot",
                  "cntk.logging.graph.Variable", "cntk.logging.Variable"])
def logging_graph(C, r):
    x, z = _model(C)
    G = C.logging.graph
    r.touch("cntk.Function.name", "cntk.Function.uid", "cntk.Function.op_name")
    params = G.depth_first_search(z, lambda n: isinstance(n, C.Parameter), depth=-1)
    inputs = C.logging.depth_first_search(z, lambda n: isinstance(n, C.logging.Variable)
                                          and n.is_input, depth=-1)
    hidden = G.find_by_name(z, "hidden")
    outs = G.get_node_outputs(z)
    text = G.plot(z)
    return {"parameters": sorted(p.name for p in params), "inputs": [i.name for i in inputs],
            "hidden": [hidden.op_name, hidden.name],
            "logging.find_by_name": C.logging.find_by_name(z, "out").name,
            "find_all": len(G.find_all_with_name(z, "W", depth=-1)),
            "logging.find_all": len(C.logging.find_all_with_name(z, "b", depth=-1)),
            "uid": G.find_by_uid(z, hidden.uid).name == "hidden",
            "logging.uid": C.logging.find_by_uid(z, hidden.uid) is not None,
            "outputs": len(outs) > 0 and isinstance(outs[0], G.Variable),
            "logging outputs": len(C.logging.get_node_outputs(z)) == len(outs),
            "plot": isinstance(text, str) and isinstance(C.logging.plot(z), str)}


@cntk_case(names=["cntk.Variable", "cntk.variables.Variable", "cntk.Variable.as_parameter",
                  "cntk.Variable.as_constant", "cntk.variables.VariableMixin",
                  "cntk.variables.VariableMixin.is_input",
                  "cntk.variables.VariableMixin.is_output",
                  "cntk.variables.VariableMixin.is_parameter",
                  "cntk.variables.VariableMixin.is_constant",
                  "cntk.variables.VariableMixin.is_placeholder",
                  "cntk.variables.VariableMixin.is_sparse",
                  "cntk.variables.VariableMixin.dtype",
                  "cntk.variables.VariableMixin.dynamic_axes",
                  "cntk.variables.VariableMixin.name",
                  "cntk.variables.VariableMixin.needs_gradient",
                  "cntk.variables.VariableMixin.shape", "cntk.variables.TensorOpsMixin",
                  "cntk.Parameter.value", "cntk.Constant.value", "cntk.ops.output_variable",
                  "cntk.logging.graph.depth_first_search"])
def variable_kinds(C, r):
    x = C.input_variable((2, 3), name="x", needs_gradient=True)
    p = C.Parameter((3,), init=0.5, name="p")
    c = C.Constant(np.arange(3, dtype=np.float32), name="c")
    f = x * p + c
    o = f.output
    V = C.variables
    r.touch("cntk.Function.output")
    r.touch("cntk.Function.inputs", "cntk.Variable.as_parameter", "cntk.Variable.as_constant",
            "cntk.Parameter.value", "cntk.Constant.value")
    r.touch(*["cntk.variables.VariableMixin." + m for m in (
        "is_input", "is_output", "is_parameter", "is_constant", "is_placeholder", "is_sparse",
        "dtype", "dynamic_axes", "name", "needs_gradient", "shape")])
    found = C.logging.graph.depth_first_search(f, lambda n: getattr(n, "name", "") in ("p", "c"),
                                               depth=-1)
    as_p = [n.as_parameter().name for n in f.inputs if n.is_parameter]
    as_c = [n.as_constant().name for n in f.inputs if n.is_constant]
    try:
        x.as_parameter()
        bad = "no error"
    except TypeError:
        bad = "TypeError"
    out = C.output_variable((4,), np.float32, [C.Axis.default_batch_axis()], name="o")
    kinds = []
    for v in (x, p, c, o):
        kinds.append([v.is_input, v.is_output, v.is_parameter, v.is_constant, v.is_placeholder,
                      v.is_sparse, v.needs_gradient, v.name, list(v.shape),
                      np.dtype(v.dtype).name, len(v.dynamic_axes)])
    return {"kinds": kinds, "as": [as_p, as_c, bad],
            "types": [isinstance(x, V.Variable), isinstance(p, V.Parameter),
                      isinstance(c, V.Constant), isinstance(p, V.Variable),
                      isinstance(f, C.Function), isinstance(o, C.Variable),
                      isinstance(x, V.VariableMixin), isinstance(p, V.TensorOpsMixin)],
            "output_variable": [list(out.shape), out.name],
            "found": sorted([type(n).__name__, n.name] for n in found),
            "inputs": [type(n).__name__ for n in f.inputs],
            "values": [p.value.tolist(), c.value.tolist()]}


@cntk_case(names=["cntk.logging.get_node_outputs", "cntk.logging.depth_first_search",
                  "cntk.combine", "cntk.load_model", "cntk.Function.save"],
           note="a combine of several outputs is a Combine function CNTK's walks visit first: "
                "get_node_outputs lists its outputs, then each output's graph (CNTK 301 prints "
                "the loaded ResNet's nodes so: ce, errs, top5Errs, z, then ce, z, ...)")
def get_node_outputs__combine(C, r):
    r.touch("cntk.Function.save")
    x = C.input_variable(2, name="x")
    a = C.plus(x, 1.0, name="a")
    b = C.element_times(a, 2.0, name="b")
    m = C.combine([b, a])

    def listing(f):
        return [[o.name, list(o.shape)] for o in C.logging.get_node_outputs(f)]
    res = {"combine": listing(m), "single": listing(b),
           "search": [[type(n).__name__ == "Function", n.name]
                      for n in C.logging.depth_first_search(m, lambda n: True)]}
    with r.tempdir() as folder:
        path = folder + "/m.model"
        m.save(path)
        res["loaded"] = listing(C.load_model(path))
    return res


@cntk_case(names=["cntk.logging.get_node_outputs", "cntk.ops.top_k"],
           note="top_k is one function of two outputs (values, indices): get_node_outputs lists "
                "both, with one uid (TopK<n>_Output_0, _1) and CNTK's name of the indices; "
                "along another axis than the last too (a block in CNTK)")
def get_node_outputs__top_k(C, r):
    import re

    def listing(f):
        outs = C.logging.get_node_outputs(f)
        return [[o.name, list(o.shape), re.sub(r"\d+_Output", "#_Output", o.uid), o.owner.op_name]
                for o in outs] + [len({o.uid.rpartition("_Output_")[0] for o in outs})]
    x = C.input_variable(5, name="x")
    t = C.top_k(x, 1)
    named = C.top_k(C.sin(x), 2, name="tk")
    along = C.top_k(C.input_variable((3, 4)), 2, axis=0)
    return {"top_k": listing(t), "named": listing(named), "axis0": listing(along),
            "outputs": [[o.name, re.sub(r"\d+_Output", "#_Output", o.uid)] for o in named.outputs]}


@cntk_case(names=["cntk.Function.op_name", "cntk.Function.root_function", "cntk.ops.square",
                  "cntk.ops.ceil", "cntk.ops.round", "cntk.ops.alias", "cntk.ops.reduce_sum",
                  "cntk.ops.reduce_mean", "cntk.ops.reduce_max", "cntk.ops.reduce_min",
                  "cntk.ops.reduce_prod", "cntk.ops.reduce_log_sum_exp", "cntk.ops.reduce_l1",
                  "cntk.ops.argmax", "cntk.ops.argmin", "cntk.ops.transpose",
                  "cntk.ops.zeros_like", "cntk.ops.ones_like", "cntk.ops.cosine_distance",
                  "cntk.ops.to_sequence", "cntk.ops.to_sequence_like", "cntk.sequence.unpack",
                  "cntk.sequence.delay"],
           note="the op_name of the root function of common ops built in code, and its uid's "
                "prefix (CNTK's ceil is Negate of Floor, round Floor, square ElementTimes; "
                "its reductions and argmax ReduceElements); sequence.unpack is one function "
                "of two outputs")
def op_names_of_ops(C, r):
    import re
    r.touch("cntk.Function.op_name", "cntk.Function.root_function", "cntk.Function.uid")
    x = C.input_variable(3, name="x")
    m = C.input_variable((2, 3), name="m")
    s = C.sequence.input_variable(3, name="s")
    made = {"square": C.square(x), "ceil": C.ceil(x), "round": C.round(x), "alias": C.alias(x),
            "reduce_sum": C.reduce_sum(x), "reduce_mean": C.reduce_mean(x, axis=0),
            "reduce_max": C.reduce_max(x), "reduce_min": C.reduce_min(x),
            "reduce_prod": C.reduce_prod(x), "reduce_log_sum_exp": C.reduce_log_sum_exp(x),
            "reduce_l1": C.reduce_l1(x), "argmax": C.argmax(x), "argmin": C.argmin(x),
            "transpose": C.transpose(m, (1, 0)), "zeros_like": C.zeros_like(x),
            "ones_like": C.ones_like(x), "cosine_distance": C.cosine_distance(x, x),
            "to_sequence": C.to_sequence(m),
            "to_sequence_like": C.to_sequence_like(C.sequence.unpack(s, 0, True), s),
            "unpack no mask": C.sequence.unpack(s, 0, no_mask_output=True),
            "delay": C.sequence.delay(s), "delay back": C.sequence.delay(s, time_step=-1)}
    res = {}
    for k in sorted(made):
        root = made[k].root_function
        res[k] = [root.op_name]
        if not k.startswith("reduce"):      # (CNTK's Python makes its reductions blocks)
            res[k].append(re.sub(r"\d+$", "", root.uid))
    unpacked = C.sequence.unpack(s, 0, name="u")
    res["unpack outputs"] = [[o.name, re.sub(r"\d+_Output", "#_Output", o.uid),
                              o.owner.op_name] for o in unpacked.outputs]
    res["unpack nodes"] = [[o.name, re.sub(r"\d+_Output", "#_Output", o.uid)]
                           for o in C.logging.get_node_outputs(unpacked)]
    return res


@cntk_case(names=["cntk.layers.Label", "cntk.layers.Recurrence", "cntk.ops.combine"],
           note="a value named inside a Recurrence's step, looked up twice: the same Function "
                "(one uid) both times, and combine keeps each of its three roots")
def step_value_looked_up_twice(C, r):
    r.touch("cntk.Function.uid", "cntk.Function.outputs", "cntk.Function.eval")
    x = C.sequence.input_variable(2, name="x")
    y = C.layers.Recurrence(lambda h, u: C.layers.Label("doubled")(h * 2.0) + u)(x)
    a, b = y.doubled, y.doubled
    out = C.combine([y, a, b])
    values = out.eval({x: [r.randn(3, 2), r.randn(2, 2)]})
    return {"same uid": a.uid == b.uid, "same output uid": a.output.uid == b.output.uid,
            "combined outputs": len(out.outputs),
            "values": [np.concatenate(values[o]) for o in out.outputs]}


@cntk_case(names=["cntk.layers.Dense"],
           note="a node named like a Variable member ('shape', 'name', 'dtype') does not hide "
                "the member: CNTK looks names up in the graph only when they are no member")
def member_names_are_not_graph_lookups(C, r):
    r.touch("cntk.Function.shape", "cntk.Function.dtype")
    x = C.input_variable(3)
    h = C.layers.Dense(4, name="shape")(x)
    h = C.layers.Dense(4, name="dtype")(h)
    z = C.layers.Dense(2, name="out")(h)
    return {"shape": tuple(z.shape), "dtype": str(np.dtype(z.dtype)),
            "named node found": z.out.name, "its shape": tuple(z.out.shape)}

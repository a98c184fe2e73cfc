"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (twenty-second round): the name of
an unnamed Sequential of a named last layer; the types of a walk's nodes in a layer not applied
yet; the graphs of the pooling and transposed convolution layers and ops."""

from compat_harness import cntk_case


@cntk_case(names=["cntk.layers.Sequential"],
           note="an unnamed Sequential not applied yet whose last step is a named layer (or a "
                "named Sequential): CNTK 2.7's name is that layer's (its output is the "
                "Sequential's); Stadyn's name was ''")
def unnamed_sequential__named_by_its_last_layer(C, r):
    r.touch("cntk.layers.Dense", "cntk.ops.relu", "cntk.Function.root_function")
    makes = {"last named": lambda: C.layers.Sequential(
                 [C.layers.Dense(3), C.layers.Dense(2, name="last")]),
             "last an op": lambda: C.layers.Sequential([C.layers.Dense(3), C.relu]),
             "one named": lambda: C.layers.Sequential([C.layers.Dense(3, name="only")]),
             "first named": lambda: C.layers.Sequential(
                 [C.layers.Dense(3, name="a"), C.layers.Dense(2)]),
             "named": lambda: C.layers.Sequential(
                 [C.layers.Dense(3), C.layers.Dense(2, name="last")], name="s"),
             "last a named Sequential": lambda: C.layers.Sequential(
                 [C.layers.Dense(3), C.layers.Sequential([C.layers.Dense(2)], name="inner")]),
             "nested, last named": lambda: C.layers.Sequential(
                 [C.layers.Dense(3), C.layers.Sequential(
                     [C.layers.Dense(2), C.layers.Dense(2, name="deep")])]),
             "chained": lambda: C.layers.Dense(3) >> C.layers.Dense(2, name="last")}
    res = {}
    for label, make in makes.items():
        s = make()
        res[label] = {"name": s.name, "root name": s.root_function.name,
                      "applied name": s(C.input_variable(4)).name}
    return res


def _kinds(C, n):
    """What a visitor sees of a node: its class (``n.__class__``), CNTK's classes it is an
    instance of, its name."""
    return [n.__class__.__name__,
            isinstance(n, C.Function), isinstance(n, C.Variable), isinstance(n, C.Parameter),
            isinstance(n, C.Constant), n.name]


_DECLARED = ("the parameters of a layer not applied yet are Stadyn's stand-ins "
             "(_layers_declared._DeclaredParameter), not instances of C.Parameter / "
             "C.Constant: Stadyn's functions take a C.Parameter for a value of its graph, "
             "which such a stand-in does not hold yet")


@cntk_case(names=["cntk.logging.graph.depth_first_search"],
           known={"Dense, variables": _DECLARED, "Sequential, variables": _DECLARED,
                  "Embedding, weights, variables": _DECLARED},
           note="the nodes of a depth-first search of a layer not applied yet (a Dense, a "
                "Sequential, an Embedding of given weights): CNTK 2.7's are Functions, "
                "Parameters, Constants and Variables (a visitor's isinstance(n, C.Function) "
                "holds for its functions); Stadyn's were objects of their own classes.  A "
                "search of its root function walks the same (Stadyn: TypeError)")
def unapplied_layer_walks__nodes_are_functions_and_parameters(C, r, np):
    r.touch("cntk.layers.Dense", "cntk.layers.Sequential", "cntk.layers.Embedding",
            "cntk.Function", "cntk.Variable", "cntk.Parameter", "cntk.Constant")
    makes = {"Dense": lambda: C.layers.Dense(3, name="d"),
             "Sequential": lambda: C.layers.Sequential(
                 [C.layers.Dense(3), C.layers.Dense(2, name="last")]),
             "Embedding, weights": lambda: C.layers.Embedding(
                 weights=np.ones((4, 2), np.float32))}
    res = {}
    for label, make in makes.items():
        layer = make()
        walk = C.logging.graph.depth_first_search(layer, lambda n: True)
        res[label + ", functions"] = [_kinds(C, n) for n in walk if hasattr(n, "op_name")]
        res[label + ", variables"] = [_kinds(C, n) for n in walk if not hasattr(n, "op_name")]
        res[label + ", visited functions"] = [
            n.op_name for n in C.logging.graph.depth_first_search(
                layer, lambda n: isinstance(n, C.Function))]
        res[label + ", root"] = _kinds(C, layer.root_function)
        res[label + ", walk of its root function"] = [
            [getattr(n, "op_name", ""), n.name]
            for n in C.logging.graph.depth_first_search(layer.root_function, lambda n: True)]
    return res


def _walked(C, f):
    """A depth-first search of every level: ``[op name, name]`` for a function, ``[kind,
    name, shape]`` for a variable."""
    out = []
    for n in C.logging.graph.depth_first_search(f, lambda n: True, depth=-1):
        if hasattr(n, "op_name"):
            out.append([n.op_name, n.name])
        else:
            kind = "parameter" if n.is_parameter else "constant" if n.is_constant \
                else "input" if n.is_input else "other"
            out.append([kind, n.name, list(n.shape)])
    return out


def _shown(C, np, f, x, data):
    root = f.root_function
    out = {"walk": _walked(C, f), "op": root.op_name,
           "inputs": [[i.name, list(i.shape)] for i in root.inputs], "shape": list(f.shape)}
    if root.is_block:
        inner = root.block_root
        out["block root"] = inner.op_name
        out["block root inputs"] = [[i.name, list(i.shape)] for i in inner.inputs]
    if x is not None:
        out["value"] = np.asarray(f.eval({x: data})).round(4).tolist()
    return out


@cntk_case(names=["cntk.layers.MaxPooling", "cntk.layers.AveragePooling",
                  "cntk.layers.ConvolutionTranspose", "cntk.convolution_transpose",
                  "cntk.convolution"],
           note="the graphs of the pooling layers and of the transposed convolution (layer "
                "and op): CNTK 2.7 holds one Pooling in a pooling layer's block (Stadyn: "
                "MaxPooling, AveragePooling; with an even window padded ElementDivide, two "
                "AveragePooling, StopGradient, PowScalar); a ConvolutionTranspose layer's "
                "block holds Plus(Convolution(W, x), b) (Stadyn: Slice, Deconvolution, Reshape "
                "of the bias) and the op is one Convolution(W, x) (Stadyn: "
                "ConvolutionTranspose over Deconvolution(x, W)); a convolution of an input "
                "without dynamic axes is one Convolution(W, x) (Stadyn: a Reshape over it, "
                "its root's inputs [''])")
def pooling_and_transposed_convolution__graphs(C, r, np):
    r.touch("cntk.input_variable", "cntk.parameter", "cntk.Function.root_function",
            "cntk.Function.block_root", "cntk.Function.inputs", "cntk.Function.eval",
            "cntk.logging.graph.depth_first_search")
    x = C.input_variable((2, 5, 5), name="x")
    data = np.arange(50, dtype=np.float32).reshape(1, 2, 5, 5) / 10.0
    init = C.glorot_uniform(seed=1)
    res = {}
    layers = {
        "MaxPooling": lambda: C.layers.MaxPooling((2, 2), name="mp"),
        "MaxPooling, padded, strided": lambda: C.layers.MaxPooling((3, 3), strides=2,
                                                                   pad=True),
        "AveragePooling": lambda: C.layers.AveragePooling((2, 2)),
        "AveragePooling, padded": lambda: C.layers.AveragePooling((3, 3), pad=True),
        "AveragePooling, even window padded": lambda: C.layers.AveragePooling(
            (2, 2), strides=2, pad=True),
        "ConvolutionTranspose": lambda: C.layers.ConvolutionTranspose((2, 2), 3, init=init),
        "ConvolutionTranspose, no bias": lambda: C.layers.ConvolutionTranspose(
            (2, 2), 3, init=init, bias=False),
        "ConvolutionTranspose, padded, strided": lambda: C.layers.ConvolutionTranspose(
            (3, 3), 2, init=init, pad=True, strides=2, name="ct"),
        "ConvolutionTranspose, output_shape": lambda: C.layers.ConvolutionTranspose(
            (3, 3), 2, init=init, strides=2, output_shape=(11, 11))}
    for label, make in layers.items():
        res[label] = _shown(C, np, make()(x), x, data)
    w = C.parameter((2, 3, 3, 3), init=init, name="W")
    res["convolution_transpose op"] = _shown(
        C, np, C.convolution_transpose(w, x, auto_padding=[False, True, True]), x, data)
    res["convolution_transpose op, strided"] = _shown(
        C, np, C.convolution_transpose(w, x, strides=2, auto_padding=[False, False, False]),
        x, data)
    # (no dynamic axes: CNTK 2.7 builds it; its run fails, 'Resize: Cannot resize the
    # matrix because it is a view', so only its graph is compared)
    z = C.input_variable((1, 4, 4), dynamic_axes=[], name="z")
    m = C.parameter((2, 1, 2, 2), init=1.0, name="M")
    res["convolution, no dynamic axes"] = _shown(C, np, C.convolution(m, z), None, None)
    res["convolution, no dynamic axes, unpadded"] = _shown(
        C, np, C.convolution(m, z, auto_padding=[False]), None, None)
    return res


def _builtin(e):
    return next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")


@cntk_case(names=["cntk.as_block"],
           note="a block of as_block whose argument is a placeholder made on a sequence axis, "
                "the placeholder then bound (in place, or by calling the Function) to an "
                "input with the batch axis only or with no dynamic axis: CNTK 2.7 builds the "
                "block anew on the input; Stadyn refused ('... cannot be built again on that "
                "value (a block of as_block over the placeholder)')")
def as_block__over_a_sequence_placeholder_bound_to_a_non_sequence(C, r, np):
    r.touch("cntk.placeholder", "cntk.input_variable", "cntk.ops.relu", "cntk.ops.reduce_sum",
            "cntk.Axis.default_input_variable_dynamic_axes", "cntk.Axis.default_batch_axis",
            "cntk.Function.replace_placeholders", "cntk.Function.eval",
            "cntk.Function.arguments", "cntk.Function.root_function")
    res = {}
    for batched in (True, False):
        for how in ("replace", "call"):
            key = "%s, %s" % (how, "batch" if batched else "no dynamic axis")
            try:
                p = C.placeholder((2,), dynamic_axes=C.Axis.default_input_variable_dynamic_axes(),
                                  name="p")
                q = C.placeholder(name="q")
                b = C.as_block(C.relu(q * 2.0 - 1.0), [(q, p)], "MyBlock", "blk")
                s = C.reduce_sum(b, 0)
                x = C.input_variable(2, name="x", dynamic_axes=(
                    [C.Axis.default_batch_axis()] if batched else []))
                if how == "replace":
                    s.replace_placeholders({p: x})
                    z = b
                else:
                    z, s = b(x), s(x)
                data = np.arange(4 if batched else 2, dtype=np.float32).reshape(
                    (2, 2) if batched else (2,))
                res[key] = {"shape": list(z.shape),
                            "dynamic axes": [str(a) for a in z.output.dynamic_axes],
                            "op": z.root_function.op_name, "name": z.name,
                            "arguments": [a.name for a in s.arguments],
                            "value": np.asarray(z.eval({x: data})).tolist(),
                            "sum": np.asarray(s.eval({x: data})).tolist()}
            except Exception as e:      # (whether it refuses is compared, and the type)
                res[key] = {"refused": _builtin(e)}
    return res


@cntk_case(names=["cntk.sequence.where", "cntk.sequence.gather", "cntk.sequence.scatter"],
           note="where, gather and scatter of operands with the batch axis alone: CNTK 2.7 "
                "builds them (each sample a sequence of one step) and fails when they run "
                "with a condition of 0 (RuntimeError 'AddSequence: Sequences must be a least "
                "one frame long'); of operands without dynamic axes it refuses them when "
                "built (RuntimeError); Stadyn refused them when built (ShapeError, a "
                "ValueError, naming sd.sequence.input_variable).  A condition of 3 numbers "
                "per sample: CNTK 2.7 builds them and refuses to run them (ValueError 'Where "
                "operation can only operate on scalar input.'); Stadyn refused scatter when "
                "built (ShapeError) and where and gather when run with a RuntimeError")
def selecting_sequence_ops__on_the_batch_axis_alone(C, r, np):
    r.touch("cntk.input_variable", "cntk.sequence.input_variable", "cntk.Function.eval")
    x = C.input_variable(1, name="x")
    v = C.input_variable(2, name="v")
    s = C.sequence.input_variable(1, name="s")
    x0 = C.input_variable(1, name="x0", dynamic_axes=[])
    v0 = C.input_variable(2, name="v0", dynamic_axes=[])
    x3 = C.input_variable(3, name="x3")
    data = {"x": np.array([[1], [0], [1]], np.float32),
            "x3": np.array([[1, 0, 1]] * 3, np.float32),
            "v": np.arange(6, dtype=np.float32).reshape(3, 2),
            "s": [np.array([[1], [0], [1]], np.float32)] * 3}
    makes = {"where": lambda: C.sequence.where(x),
             "gather": lambda: C.sequence.gather(v, x),
             "gather, condition a sequence": lambda: C.sequence.gather(v, s),
             "scatter": lambda: C.sequence.scatter(v, x),
             "where, no dynamic axes": lambda: C.sequence.where(x0),
             "gather, no dynamic axes": lambda: C.sequence.gather(v0, x0),
             "where, condition (3,)": lambda: C.sequence.where(x3),
             "gather, condition (3,)": lambda: C.sequence.gather(v, x3),
             "scatter, condition (3,)": lambda: C.sequence.scatter(v, x3)}
    res = {}
    for label, make in makes.items():
        try:
            f = make()
        except Exception as e:
            res[label] = {"refused when built": _builtin(e)}
            continue
        out = {"shape": list(f.shape)}
        try:
            f.eval({a: data[a.name] for a in f.arguments})
            out["ran"] = True
        except Exception as e:
            out["refused when run"] = _builtin(e)
        res[label] = out
    return res

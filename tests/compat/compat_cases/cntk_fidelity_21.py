"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (twenty-first round): layers on a
placeholder made on a sequence axis bound to a value without one; the refusals of the sequence
ops on a non-sequence; ops and losses over operands without dynamic axes; graph views of
unapplied layers and of a padded convolution."""

import re

from compat_harness import cntk_case


def _builtin(e):
    return next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")


def _layer_bound(C, np, make, how, batched):
    """``make()`` (a layer) applied to a placeholder made on a sequence axis, then under a
    ``reduce_sum`` over its static axis; the placeholder bound (``how``: in place, or by
    calling the Function) to an input with the batch axis only or with no dynamic axis."""
    p = C.placeholder((2,), dynamic_axes=C.Axis.default_input_variable_dynamic_axes(),
                      name="p")
    x = C.input_variable(2, name="x", dynamic_axes=(
        [C.Axis.default_batch_axis()] if batched else []))
    data = np.arange(4 if batched else 2, dtype=np.float32).reshape((2, 2) if batched else (2,))
    out = {}
    try:
        layer = make()
        y = layer(p)
        s = C.reduce_sum(y, 0, name="s")
        if how == "replace":
            s.replace_placeholders({p: x})
            z, total = y, s
        else:
            z, total = y(x), s(x)
        out["shape"] = list(z.shape)
        out["dynamic axes"] = [str(a) for a in z.output.dynamic_axes]
        out["arguments"] = [a.name for a in total.arguments]
        out["value"] = np.asarray(z.eval({x: data})).tolist()
        out["sum"] = np.asarray(total.eval({x: data})).tolist()
        out["parameters"] = sorted(list(q.shape) for q in total.parameters)
    except Exception as e:      # (whether it refuses is compared, and the type)
        out["refused"] = _builtin(e)
    return out


@cntk_case(names=["cntk.layers.Dense", "cntk.layers.Sequential", "cntk.placeholder",
                  "cntk.Function.replace_placeholders"],
           note="a layer (Dense, a Sequential of Dense and relu, of two Denses) or a Function "
                "over a placeholder applied to a "
                "placeholder made on a sequence axis, the placeholder then bound to an input "
                "with the batch axis only or with no dynamic axis (in place or by calling "
                "the Function): CNTK 2.7 infers the layer anew on the input; Stadyn refused "
                "('a layer or a Function applied to the placeholder ... cannot be built "
                "again on that value')")
def layer_on_sequence_placeholder__bound_to_a_non_sequence(C, r, np):
    r.touch("cntk.input_variable", "cntk.Axis.default_input_variable_dynamic_axes",
            "cntk.Axis.default_batch_axis", "cntk.ops.reduce_sum", "cntk.ops.relu",
            "cntk.glorot_uniform", "cntk.Function.eval", "cntk.Function.parameters",
            "cntk.Function.arguments", "cntk.Function.replace_placeholders")
    makes = {"Dense": lambda: C.layers.Dense(3, init=C.glorot_uniform(seed=1)),
             "Dense relu": lambda: C.layers.Sequential(
                 [C.layers.Dense(3, init=C.glorot_uniform(seed=1)), C.relu]),
             "two Dense": lambda: C.layers.Sequential(
                 [C.layers.Dense(3, init=C.glorot_uniform(seed=1)),
                  C.layers.Dense(2, init=C.glorot_uniform(seed=2))]),
             "a Function": lambda: C.relu(C.placeholder(2, name="a") * 2.0 - 1.0)}
    res = {}
    for label, make in makes.items():
        for how in ("replace", "call"):
            for batched in (True, False):
                key = "%s, %s, %s" % (label, how, "batch" if batched else "no dynamic axis")
                res[key] = _layer_bound(C, np, make, how, batched)
    return res


@cntk_case(names=["cntk.sequence.last", "cntk.sequence.first", "cntk.sequence.past_value",
                  "cntk.sequence.future_value", "cntk.sequence.reduce_sum",
                  "cntk.sequence.reduce_max", "cntk.sequence.softmax", "cntk.sequence.slice",
                  "cntk.sequence.is_first", "cntk.sequence.is_last", "cntk.sequence.delay",
                  "cntk.sequence.unpack"],
           note="the sequence ops on an input with the batch axis alone and on one with no "
                "dynamic axis: CNTK 2.7 refuses them as they are called, with RuntimeError "
                "(its PastValue's check: first, last, slice, is_first on the batch axis "
                "alone; past_value, future_value, delay on both) or ValueError; Stadyn raised "
                "its ShapeError for each")
def sequence_ops__on_non_sequences_refused_as_cntk(C, r):
    x = C.input_variable(3, name="x")
    x0 = C.input_variable(3, name="x0", dynamic_axes=[])
    ops = {"last": C.sequence.last, "first": C.sequence.first,
           "past_value": C.sequence.past_value, "future_value": C.sequence.future_value,
           "reduce_sum": C.sequence.reduce_sum, "reduce_max": C.sequence.reduce_max,
           "softmax": C.sequence.softmax, "slice": lambda v: C.sequence.slice(v, 0, 1),
           "is_first": C.sequence.is_first, "is_last": C.sequence.is_last,
           "delay": C.sequence.delay, "unpack": lambda v: C.sequence.unpack(v, 0)}
    res = {}
    for label, op in ops.items():
        for which, v in (("batch axis alone", x), ("no dynamic axis", x0)):
            try:
                op(v)
                res[label + ", " + which] = "built"
            except Exception as e:      # (the built-in type is compared)
                res[label + ", " + which] = _builtin(e)
    return res


@cntk_case(names=["cntk.cross_entropy_with_softmax", "cntk.classification_error"],
           note="cross_entropy_with_softmax and classification_error along the default axis "
                "of (3, 4) samples, with the batch axis and without dynamic axes: CNTK 2.7 "
                "computes them with TransposeTimes (a (3, 3) matrix; the hardmax of the "
                "classification error each row's without dynamic axes, the whole sample's "
                "with the batch axis); Stadyn gave (3, 1) for the cross entropy and the "
                "classification error without dynamic axes; the gradient of the cross "
                "entropy's sum with respect to the scores")
def losses__of_matrices_along_the_default_axis(C, r, np):
    r.touch("cntk.input_variable", "cntk.Function.eval", "cntk.Function.grad",
            "cntk.ops.reduce_sum")
    rng = np.random.RandomState(0)
    pred = rng.randn(3, 4).astype(np.float32)
    lab = np.eye(4, dtype=np.float32)[[1, 3, 0]]
    res = {}
    for which, axes in (("batch axis", None), ("no dynamic axis", [])):
        kw = {} if axes is None else {"dynamic_axes": axes}
        z = C.input_variable((3, 4), name="z", needs_gradient=True, **kw)
        t = C.input_variable((3, 4), name="t", **kw)
        feed = {z: pred, t: lab} if axes is not None else {z: pred[None], t: lab[None]}
        for label, f in (("ce", C.cross_entropy_with_softmax),
                         ("error", C.classification_error)):
            y = f(z, t)
            res[label + ", " + which] = {"shape": list(y.shape),
                                         "value": np.asarray(y.eval(feed)).tolist()}
        g = C.reduce_sum(C.cross_entropy_with_softmax(z, t)).grad(feed, wrt=[z])
        res["ce gradient, " + which] = np.asarray(g).tolist()
    return res


def _walked(C, f, depth=0):
    """A depth-first search's nodes: ``[op name, name]`` for a function, ``[kind, name,
    shape]`` for a variable."""
    out = []
    for n in C.logging.graph.depth_first_search(f, lambda n: True, depth=depth):
        if hasattr(n, "op_name"):
            out.append([n.op_name, n.name])
        else:
            kind = "parameter" if n.is_parameter else "placeholder" if n.is_placeholder \
                else "input" if n.is_input else "other"
            out.append([kind, n.name, list(n.shape)])
    return out


@cntk_case(names=["cntk.layers.Convolution", "cntk.convolution", "cntk.pooling"],
           note="a convolution padded with an even kernel (the layer with pad=True, the op "
                "with auto_padding) and a max pooling padded with an even window: CNTK 2.7's "
                "graph holds no Pad (its Convolution and Pooling pad inside); Stadyn's walks "
                "showed the Pad it adds before the op, and its convolution op listed x before "
                "W (CNTK 2.7's Convolution(W, x))")
def padded_even_kernels__graph_without_pad(C, r):
    r.touch("cntk.input_variable", "cntk.parameter", "cntk.logging.graph.depth_first_search",
            "cntk.Function.root_function", "cntk.Function.inputs")
    x = C.input_variable((1, 5, 5), name="x")
    w = C.parameter((3, 1, 2, 2), name="W")
    layer = C.layers.Convolution((2, 2), 3, pad=True, name="c")(x)
    op = C.convolution(w, x, auto_padding=[False, True, True])
    pooled = C.pooling(x, C.MAX_POOLING, (2, 2), auto_padding=[True])
    return {"layer": _walked(C, layer, -1), "layer shape": list(layer.shape),
            "op": _walked(C, op, -1), "op inputs": [i.name for i in op.root_function.inputs],
            "pooling": _walked(C, pooled, -1), "pooling shape": list(pooled.shape)}


@cntk_case(names=["cntk.layers.Sequential", "cntk.logging.graph.depth_first_search"],
           note="layers not applied yet: an unnamed Sequential whose last step is a named "
                "layer has that layer's output (its name, outputs, repr and str: 'last: "
                "Composite(keep: ...)'); Stadyn's output was unnamed (Block<n>_Output_0).  A "
                "depth-first search of a layer not applied yet (Dense, Sequentials, "
                "Embedding, Convolution) walks its root function over its declared "
                "parameters and its placeholder, and the functions of the steps before; "
                "Stadyn refused it (TypeError: expected a CNTK Function)")
def unapplied_layers__names_and_walks(C, r):
    r.touch("cntk.layers.Dense", "cntk.layers.Embedding", "cntk.layers.Convolution",
            "cntk.ops.relu", "cntk.Function.outputs", "cntk.Function.output")
    mask = lambda s: re.sub(r"\d+_Output", "#_Output", s)   # noqa: E731
    res = {}
    makes = {"last named": lambda: C.layers.Sequential(
                 [C.layers.Dense(3), C.layers.Dense(2, name="last")]),
             "last an op": lambda: C.layers.Sequential([C.layers.Dense(3), C.relu]),
             "one named": lambda: C.layers.Sequential([C.layers.Dense(3, name="only")]),
             "first named": lambda: C.layers.Sequential(
                 [C.layers.Dense(3, name="a"), C.layers.Dense(2)]),
             "chained": lambda: C.layers.Dense(3) >> C.layers.Dense(2, name="last")}
    for label, make in makes.items():
        s = make()
        res[label] = {"output": mask(repr(s.output)), "outputs": [mask(repr(o))
                                                                   for o in s.outputs],
                      "repr": mask(repr(s)), "str": str(s)}
    walks = {"Dense": lambda: C.layers.Dense(3, name="dd"),
             "Sequential": makes["last named"],
             "Sequential, op inside": lambda: C.layers.Sequential(
                 [C.layers.Dense(3), C.relu, C.layers.Dense(2)]),
             "Sequential, last an op": makes["last an op"],
             "named Sequential": lambda: C.layers.Sequential(
                 [C.layers.Dense(3), C.layers.Dense(2)], name="s"),
             "Embedding": lambda: C.layers.Embedding(4),
             "Convolution": lambda: C.layers.Convolution((3, 3), 2)}
    for label, make in walks.items():
        res["walk, " + label] = _walked(C, make())
    return res

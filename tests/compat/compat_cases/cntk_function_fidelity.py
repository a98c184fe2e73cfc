"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (Functions, placeholders and
layers, eighth round): layers CNTK builds on a sparse input but refuses to run."""

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import builtin_type, outcome

_TENSOR_OP = "TensorOp: Tensor operations are currently not supported for sparse matrices"


@cntk_case(names=["cntk.layers.LayerNormalization", "cntk.layers.Stabilizer"],
           note="CNTK 2.7 builds LayerNormalization and Stabilizer on a sparse input and "
                "refuses them at the first eval (RuntimeError 'TensorOp: Tensor operations are "
                "currently not supported for sparse matrices'); Stadyn ran them")
def layers__sparse_input_refused_when_run(C, r):
    r.touch("cntk.layers.LayerNormalization", "cntk.layers.Stabilizer",
            "cntk.layers.BatchNormalization", "cntk.layers.Dropout", "cntk.layers.Dense",
            "cntk.layers.Embedding")
    import scipy.sparse as sp
    xs = C.input_variable(5, is_sparse=True, name="xs")
    data = sp.csr_matrix(np.eye(5, dtype=np.float32)[:2])
    res = {}
    for label, make in [("LayerNormalization", lambda: C.layers.LayerNormalization()),
                        ("LayerNormalization named", lambda: C.layers.LayerNormalization(
                            name="n")),
                        ("Stabilizer", lambda: C.layers.Stabilizer()),
                        ("BatchNormalization", lambda: C.layers.BatchNormalization()),
                        ("Dropout", lambda: C.layers.Dropout(0.5)),
                        ("Dense", lambda: C.layers.Dense(2, init=1.0)),
                        ("Embedding", lambda: C.layers.Embedding(2, init=1.0))]:
        z = make()(xs)          # built, in both
        try:
            out = np.asarray(z.eval({xs: data}), np.float32).shape
        except Exception as e:      # (compared by its built-in type and CNTK's reason)
            out = ["raises " + builtin_type(e), _TENSOR_OP in str(e)]
        res[label] = {"str": str(z), "run": out}
    return res


@cntk_case(names=["cntk.placeholder", "cntk.Function.op_name"],
           note="CNTK 2.7 prints a Function on placeholders without a shape as any other "
                "('Plus(p: Sequence[tensor]) -> Sequence[tensor]'; 'Composite(...)' over "
                "several ops) and, once its placeholders are replaced, as the Function it is; "
                "Stadyn printed 'Composite(plus: placeholders [...])' in both cases, and had "
                "no op_name or is_composite before it was built")
def placeholder__functions_on_shapeless_placeholders_printed(C, r):
    r.touch("cntk.placeholder", "cntk.Function.replace_placeholders",
            "cntk.Function.update_signature", "cntk.Function.op_name",
            "cntk.Function.is_composite", "cntk.Function.arguments")
    p, q, u = C.placeholder(name="p"), C.placeholder(name="q"), C.placeholder()
    x = C.input_variable(3, name="x")
    made = {
        "plus": lambda: C.plus(p, 1.0), "p + 1": lambda: p + 1, "p * q": lambda: p * q,
        "plus(p, q)": lambda: C.plus(p, q), "plus(p, unnamed)": lambda: C.plus(p, u),
        "named": lambda: C.plus(p, 1, name="pl"), "times": lambda: C.times(
            p, C.parameter((3, 2))), "relu": lambda: C.relu(p), "sigmoid": lambda: C.sigmoid(p),
        "reduce_sum": lambda: C.reduce_sum(p), "element_times": lambda: C.element_times(p, 2.0),
        "square": lambda: C.square(p), "softmax": lambda: C.softmax(p),
        "cross_entropy_with_softmax": lambda: C.cross_entropy_with_softmax(p, q),
        "sequence.reduce_sum": lambda: C.sequence.reduce_sum(p),
        "sequence.last": lambda: C.sequence.last(p),
        "sequence.past_value": lambda: C.sequence.past_value(p),
        "tanh of plus": lambda: C.tanh(C.plus(p, 1)),
        "splice look-ahead": lambda: C.splice(p, C.sequence.future_value(p)),
        "Dense applied": lambda: C.layers.Dense(3)(p),
        "Dense named applied": lambda: C.layers.Dense(3, name="d")(p),
        "plus(p, x)": lambda: C.plus(p, x), "plus(x, p)": lambda: C.plus(x, p),
        "minus(p, x)": lambda: C.minus(p, x), "greater(p, x)": lambda: C.greater(p, x),
        "times(p, x)": lambda: C.times(p, x), "splice(p, x)": lambda: C.splice(p, x),
        "times(p, sequence)": lambda: C.times(p, C.sequence.input_variable(3, name="s")),
        "plus(p, sequence)": lambda: C.plus(p, C.sequence.input_variable(3, name="s"))}
    res = {}
    for label, make in made.items():
        f = make()
        res[label] = str(f)
    f = C.plus(p, x)
    res["plus(p, x) arguments"] = [a.name for a in f.arguments]
    g = C.plus(p, 1.0)
    res["op_name"], res["is_composite"] = g.op_name, g.is_composite
    ph = C.placeholder(name="r")
    g = C.plus(ph, 1.0)
    g.replace_placeholders({ph: x})
    res["after replace_placeholders"] = [str(g), g.op_name]
    h = C.relu(C.placeholder(name="r2"))
    h.update_signature(3)
    res["after update_signature"] = [str(h), h.op_name]
    return res


def _attributes(v):
    return {"dtype": None if v.dtype is None else np.dtype(v.dtype).name,
            "shape": list(v.shape), "dynamic_axes": [a.name for a in v.dynamic_axes],
            "is_sparse": v.is_sparse, "needs_gradient": v.needs_gradient,
            "is_placeholder": v.is_placeholder, "repr": repr(v)}


@cntk_case(names=["cntk.placeholder", "cntk.Variable.dtype", "cntk.Variable.dynamic_axes"],
           note="CNTK 2.7's placeholder has dtype None and, made without dynamic axes, "
                "(Axis('UnknownAxes'),) (Stadyn: float32 and the batch axis, or none); made "
                "with some, it has and prints them ([#], [#, *], []; Stadyn printed [???]); "
                "placeholder((-2,)) is one without a shape (Stadyn refused -2)")
def placeholder__dtype_and_dynamic_axes(C, r):
    r.touch("cntk.placeholder", "cntk.Variable.dtype", "cntk.Variable.dynamic_axes",
            "cntk.Variable.shape", "cntk.Variable.is_sparse", "cntk.Variable.needs_gradient",
            "cntk.Function.replace_placeholders")
    batch, seq = C.Axis.default_batch_axis(), C.Axis.default_dynamic_axis()
    made = {"no shape": lambda: C.placeholder(name="a"),
            "(-2,)": lambda: C.placeholder((-2,), name="b"),
            "(2,)": lambda: C.placeholder((2,), name="c"),
            "(2,) over the batch axis": lambda: C.placeholder((2,), dynamic_axes=[batch],
                                                              name="d"),
            "(2,) a sequence": lambda: C.placeholder((2,), dynamic_axes=[batch, seq],
                                                     name="e"),
            "(2,) no dynamic axes": lambda: C.placeholder((2,), dynamic_axes=[], name="f"),
            "no shape, over the batch axis": lambda: C.placeholder(dynamic_axes=[batch],
                                                                   name="g")}
    res = {}
    for label, make in made.items():
        p = make()
        res[label] = _attributes(p)
    x = C.input_variable(3, name="x")
    q = C.placeholder(name="q")
    f = C.plus(q, 1.0)
    f.replace_placeholders({q: x})
    res["after replace_placeholders"] = _attributes(q)
    g = C.placeholder(dynamic_axes=[batch], name="g")
    res["relu over the batch axis"] = str(C.relu(g))
    res["times over the batch axis"] = str(C.times(g, g))
    res["plus of (-2,)"] = str(C.plus(C.placeholder((-2,), name="h"), 1.0))
    return res


@cntk_case(names=["cntk.layers.Dense", "cntk.Function.arguments", "cntk.Function.placeholders"],
           note="CNTK 2.7's layer not applied yet is a Function over placeholders: shape "
                "(-2,), its argument placeholders (x; dh, dc, x for an LSTM; keep for a "
                "Sequential), a composite, not a block, float32 (Stadyn raised AttributeError "
                "'parameters exist once the layer is applied' for each); an op applied to a "
                "layer reads its placeholder x (Stadyn's was named keep)")
def layers__not_applied_yet_as_functions(C, r):
    r.touch("cntk.layers.Dense", "cntk.layers.Sequential", "cntk.layers.Convolution2D",
            "cntk.layers.Embedding", "cntk.layers.LayerNormalization", "cntk.layers.LSTM",
            "cntk.layers.GRU", "cntk.Function.shape", "cntk.Function.arguments",
            "cntk.Function.placeholders", "cntk.Function.is_composite",
            "cntk.Function.is_block", "cntk.Function.dtype")
    made = {"Dense": lambda: C.layers.Dense(3),
            "Dense named": lambda: C.layers.Dense(3, name="dd"),
            "Sequential": lambda: C.layers.Sequential([C.layers.Dense(4), C.layers.Dense(2)]),
            "Convolution2D": lambda: C.layers.Convolution2D((3, 3), 8),
            "Embedding": lambda: C.layers.Embedding(5),
            "LayerNormalization": lambda: C.layers.LayerNormalization(),
            "LSTM": lambda: C.layers.LSTM(4), "GRU": lambda: C.layers.GRU(4)}
    res = {}
    for label, make in made.items():
        layer = make()
        res[label] = {"shape": outcome(lambda: list(layer.shape)),
                      "arguments": [repr(a) for a in layer.arguments],
                      "placeholders": [a.name for a in layer.placeholders],
                      "same placeholders": [a.uid for a in layer.arguments] == [
                          a.uid for a in layer.placeholders],
                      "is_composite": layer.is_composite, "is_block": layer.is_block,
                      "dtype": outcome(lambda: np.dtype(layer.dtype).name),
                      "str": str(layer)}
    res["op on a layer"] = str(C.sequence.reduce_sum(C.layers.Dense(3)))
    res["its placeholders"] = [p.name for p in C.sequence.reduce_sum(
        C.layers.Dense(3)).placeholders]
    return res


@cntk_case(names=["cntk.layers.Label", "cntk.layers.Sequential", "cntk.Function"],
           note="CNTK 2.7's Label and named Sequential end in a NoOp (Stadyn: Identity); "
                "its @C.Function of untyped arguments prints the graph the Python function "
                "makes of placeholders ('Plus(a: Sequence[tensor], b: Sequence[tensor]) -> "
                "Sequence[tensor]'), and once typed the Function it is (Stadyn printed "
                "'Composite(f: untyped arguments [...])' in both cases)")
def function__user_program_printed(C, r):
    r.touch("cntk.layers.Label", "cntk.layers.Sequential", "cntk.Function.root_function",
            "cntk.Function.op_name", "cntk.Function.update_signature")
    x = C.input_variable(4, name="features")
    model = C.layers.Sequential([C.layers.Dense(8, activation=C.relu, name="h1"),
                                 C.layers.Dense(2, name="out")], name="mlp")
    z = model(x)
    res = {"named Sequential": [str(z), z.name, z.op_name, z.root_function.op_name,
                                z.root_function.name]}
    lab = C.layers.Label("lab")(x)
    res["Label"] = [str(lab), lab.root_function.op_name, lab.name]

    @C.Function
    def f(a, b):
        return a + b

    @C.Function
    def g(a, b):
        return C.tanh(a) * C.sequence.last(b)

    res["untyped"] = [str(f), str(g), [p.name for p in f.arguments]]
    f.update_signature(3, 3)
    res["typed"] = str(f)
    return res


@cntk_case(names=["cntk.Function.root_function", "cntk.Function.arguments",
                  "cntk.Function.inputs"],
           note="CNTK 2.7's root function (an op, a block) has as arguments its own inputs "
                "but parameters and constants, the outputs of the functions before it among "
                "them, and prints with them ('cls: Dense(Tensor[4]) -> Tensor[3]'); Stadyn "
                "gave and printed the graph's inputs ('cls: Dense(x: Tensor[5]) -> ...'); "
                "its inputs show parameters as Parameter(...) (Stadyn: Variable(...))")
def function__root_function_arguments(C, r):
    r.touch("cntk.Function.root_function", "cntk.Function.arguments", "cntk.Function.inputs",
            "cntk.Function.find_by_name")
    x = C.input_variable(5, name="x")
    h = C.layers.Dense(4, name="h1")(x)
    a = C.relu(h)
    z = C.layers.Dense(3, name="cls")(a)
    k = C.plus(x, 1.0, name="pp")

    def described(f):
        return {"str": str(f), "arguments": [(v.name, list(v.shape), v.is_output, v.is_input)
                                             for v in f.arguments],
                "inputs": [repr(v).split("(")[0] for v in f.inputs]}
    return {"Dense's root": described(z.root_function),
            "ReLU's root": described(a.root_function),
            "first Dense's root": described(h.root_function),
            "found h1": described(z.find_by_name("h1")),
            "plus's root": described(k.root_function),
            "composite": described(z)}


@cntk_case(names=["cntk.Function.clone"],
           note="CNTK 2.7 clones a Function on placeholders without a shape, substituting "
                "them (the graph built on the substitutes, the original left as it is); "
                "Stadyn's had no clone (AttributeError)")
def clone__of_a_function_on_shapeless_placeholders(C, r):
    r.touch("cntk.Function.clone", "cntk.CloneMethod", "cntk.Function.replace_placeholders")
    p, y = C.placeholder(name="ph"), C.input_variable(7, name="y")
    h = C.layers.Dense(4, name="hd", init=C.glorot_uniform(seed=1))(p)
    shared = h.clone(C.CloneMethod.share, {p: y})
    res = {"shared": [str(shared), [list(q.shape) for q in shared.parameters]],
           "original after": str(h)}
    frozen = C.tanh(p).clone(C.CloneMethod.freeze, {p: y})
    res["frozen"] = [str(frozen), [a.name for a in frozen.arguments]]
    h.replace_placeholders({p: y})
    res["original replaced"] = [str(h), [list(q.shape) for q in h.parameters],
                                [q.uid for q in h.parameters] == [q.uid for q in
                                                                  shared.parameters]]
    data = r.randn(2, 7).astype(np.float32)
    res["same values"] = bool(np.allclose(shared.eval({y: data}), h.eval({y: data})))
    return res


@cntk_case(names=["cntk.layers.Dense", "cntk.Function.update_signature"],
           note="CNTK 2.7 names the inputs update_signature gives a layer after its arguments "
                "(x; Stadyn left them unnamed: 'Dense(Tensor[4])', Input('Input6', ...)); a "
                "layer applied to a layer not applied yet prints as a Composite (Stadyn: as "
                "the outer layer)")
def layers__typed_and_composed_printed(C, r):
    r.touch("cntk.layers.Dense", "cntk.Function.update_signature", "cntk.layers.GRU")
    d = C.layers.Dense(3, name="d")
    d.update_signature(4)
    g = C.layers.GRU(3)
    g.update_signature(3, 2)
    return {"typed Dense": [str(d), [a.name for a in d.arguments]],
            "typed GRU": [str(g), [a.name for a in g.arguments]],
            "Dense of a Dense": str(C.layers.Dense(3)(C.layers.Dense(2))),
            "named Dense of a Dense": str(C.layers.Dense(3, name="o")(C.layers.Dense(2))),
            "Dense of a placeholder": str(C.layers.Dense(3)(C.placeholder(name="p")))}

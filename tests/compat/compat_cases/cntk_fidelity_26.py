"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (twenty-sixth round): a Function of
two outputs given to a layer, ``times`` or ``splice``; blocks over inputs; how a waiting
``combine`` of several outputs prints; the shape of an element-wise op of a placeholder and
an input; the words of a sampling op that cannot run."""

from compat_harness import cntk_case
from compat_cases.cntk_fidelity_23 import _masked, _said


@cntk_case(names=["cntk.layers.Dense", "cntk.layers.Embedding", "cntk.layers.Sequential",
                  "cntk.layers.LayerNormalization", "cntk.layers.BatchNormalization",
                  "cntk.layers.Dropout", "cntk.layers.Label", "cntk.layers.Activation",
                  "cntk.layers.Recurrence", "cntk.layers.Fold", "cntk.layers.Stabilizer",
                  "cntk.layers.For", "cntk.layers.Convolution", "cntk.layers.MaxPooling",
                  "cntk.Function.output", "cntk.ops.times", "cntk.ops.splice"],
           note="a Function of two outputs given to a layer, or its output read: CNTK 2.7's "
                "RuntimeError 'A Function instance 'Composite(Combine): ...' with more than "
                "one output cannot be implicitly converted to a Variable.'; times reads each "
                "operand's one output (ValueError 'expected single output, but got 2'), "
                "splice refuses the list (TypeError 'cannot convert list element to "
                "CNTK::Variable').  Stadyn applied the layers to the first output")
def layers__of_a_function_of_two_outputs(C, r, np):
    r.touch("cntk.Function.output")
    x = C.input_variable(3, name="x")
    two = C.combine([x * 1, x * 2])
    L = C.layers
    made = {"Dense": lambda: L.Dense(2), "Embedding": lambda: L.Embedding(2),
            "Sequential": lambda: L.Sequential([L.Dense(2), C.relu]),
            "LayerNormalization": lambda: L.LayerNormalization(),
            "BatchNormalization": lambda: L.BatchNormalization(),
            "Dropout": lambda: L.Dropout(0.5), "Label": lambda: L.Label("l"),
            "Activation": lambda: L.Activation(C.relu),
            "Recurrence": lambda: L.Recurrence(L.LSTM(2)), "Fold": lambda: L.Fold(L.GRU(2)),
            "Stabilizer": lambda: L.Stabilizer(),
            "For": lambda: L.For(range(2), lambda: L.Dense(2)),
            "Convolution": lambda: L.Convolution((1,), 2),
            "MaxPooling": lambda: L.MaxPooling((2,))}
    res = {label: _said(lambda: make()(two)) for label, make in made.items()}
    res["output"] = _said(lambda: two.output)
    res["times left"] = _said(lambda: C.times(two, C.parameter((3, 2))))
    res["times right"] = _said(lambda: C.times(C.parameter((2, 3)), two))
    res["splice"] = _said(lambda: C.splice(two, x))
    res["splice second"] = _said(lambda: C.splice(x, two))
    res["Dense of one output"] = L.Dense(2, init=1.0)(two.outputs[1]).eval(
        {x: np.ones((1, 3), np.float32)})
    return res


@cntk_case(names=["cntk.ops.as_block"],
           note="as_block of a composite one of whose arguments is an input, not a "
                "placeholder: CNTK 2.7's ValueError 'The composite implementing Block 'inst' "
                "has an argument 'Input('x', [#], [3])' which is not a placeholder. All "
                "arguments of the composite underlying a Block must be placeholders', its "
                "placeholders mapped or not.  Stadyn made the block")
def as_block__of_a_composite_over_inputs(C, r, np):
    x = C.input_variable(3, name="x")
    y = C.input_variable(3, name="y")
    p = C.placeholder((3,), name="p")
    q = C.placeholder(name="q")
    res = {}
    res["relu"] = _said(lambda: C.as_block(C.relu(x), [], "blk"))
    res["two inputs"] = _said(lambda: C.as_block(C.relu(x) * y, [], "blk", "inst"))
    res["placeholder mapped"] = _said(lambda: C.as_block(C.relu(x) + p, [(p, y)], "blk"))
    res["placeholder without a shape"] = _said(
        lambda: C.as_block(C.relu(x) + q, [(q, y)], "blk"))
    res["Dense"] = _said(lambda: C.as_block(C.layers.Dense(2)(x), [], "blk"))
    res["parameter only"] = _masked(str(C.as_block(C.parameter((3,)) * 2, [], "blk", "inst")))
    b = C.as_block(C.relu(p), [(p, x)], "blk", "inst")
    res["mapped"] = [_masked(str(b)), b.eval({x: np.array([[-1.0, 0.0, 2.0]], np.float32)})]
    return res


@cntk_case(names=["cntk.ops.combine", "cntk.ops.placeholder", "cntk.Function.outputs"],
           note="str of a combine of several outputs over placeholders without a shape: "
                "CNTK 2.7 prints its outputs' types as a Tuple ('Composite(Sequence[tensor], "
                "Tensor[3]) -> Tuple[Sequence[tensor], Tensor[3]]'), each as its op alone "
                "would; a named one has two outputs.  Stadyn printed one unknown output, and "
                "counted the name among a named one's outputs")
def combine__waiting_of_several_outputs_printed(C, r, np):
    r.touch("cntk.Function.outputs")
    a, b = C.placeholder(name="a"), C.placeholder(name="b")
    x = C.input_variable(3, name="x")
    made = {"two": lambda: C.combine([C.relu(a), C.sigmoid(b)]),
            "one": lambda: C.combine([C.relu(a)]),
            "with input": lambda: C.combine([C.relu(a), x * 2]),
            "input first": lambda: C.combine([x * 2, C.relu(a)]),
            "plus input": lambda: C.combine([C.relu(a) + x, C.relu(a)]),
            "three": lambda: C.combine([C.relu(a), C.sigmoid(b), C.tanh(b)]),
            "nested": lambda: C.combine([C.combine([C.relu(a), C.sigmoid(b)]), C.tanh(b)]),
            "named": lambda: C.combine([C.relu(a), C.sigmoid(b)], name="c"),
            "Dense": lambda: C.combine([C.relu(a), C.layers.Dense(2)(b)])}
    res = {}
    for label, make in made.items():
        f = make()
        res[label] = [str(f), len(f.outputs)]
    return res


@cntk_case(names=["cntk.ops.plus", "cntk.ops.minus", "cntk.ops.element_times",
                  "cntk.ops.element_divide", "cntk.ops.greater", "cntk.ops.pow",
                  "cntk.ops.element_max", "cntk.ops.log_add_exp", "cntk.Function.shape",
                  "cntk.Function.dynamic_axes", "cntk.Function.replace_placeholders"],
           note="an element-wise binary op of a placeholder without a shape and a value of "
                "known shape and dynamic axes (C.input_variable(3) * 2): CNTK 2.7 gives it "
                "that value's shape and axes ((3,), [#]; broadcast with a number after), so a "
                "@C.Function with one of its placeholders replaced shows its output's shape; "
                "of a placeholder and a constant, a parameter or another placeholder it stays "
                "unknown.  Stadyn showed (-2,) and unknown axes")
def ops__elementwise_of_a_placeholder_and_an_input(C, r, np):
    r.touch("cntk.Function.shape", "cntk.Function.dynamic_axes",
            "cntk.Function.replace_placeholders")
    x = C.input_variable(3, name="x")
    x2 = C.input_variable((2, 3), name="x2")
    s = C.sequence.input_variable(3, name="s")
    P = C.placeholder
    made = {"x*2+p": lambda: C.plus(x * 2, P()), "p+x": lambda: C.plus(P(), x),
            "p+x2": lambda: C.plus(P(), x2), "relu(p)+x": lambda: C.plus(C.relu(P()), x),
            "p*x": lambda: C.element_times(P(), x), "p-x": lambda: C.minus(P(), x),
            "p/x": lambda: C.element_divide(P(), x), "p>x": lambda: C.greater(P(), x),
            "pow": lambda: C.pow(P(), x), "max": lambda: C.element_max(P(), x),
            "log_add_exp": lambda: C.log_add_exp(P(), x),
            "(p+x)*2": lambda: C.plus(P(), x) * 2, "p+s": lambda: C.plus(P(), s),
            "p+1": lambda: C.plus(P(), 1),
            "p+constant": lambda: C.plus(P(), C.constant(np.ones(3, np.float32))),
            "p+q": lambda: C.plus(P(), P()),
            "p+parameter": lambda: C.plus(P(), C.parameter((2, 3))),
            "p+placeholder of a shape": lambda: C.plus(P(), P((4,)))}
    res = {}
    for label, make in made.items():
        f = make()
        res[label] = [list(f.shape), [a.name for a in f.output.dynamic_axes]]

    @C.Function
    def g(u, v):
        return u * 2 + v

    h = g.replace_placeholders({g.arguments[0]: C.input_variable(3, name="i")})
    res["replaced"] = [list(h.shape), [_masked(repr(o)) for o in h.outputs]]
    y = C.input_variable(3, name="y")
    k = C.plus(x * 2, P(name="p"))
    k2 = k.replace_placeholders({k.placeholders[0]: y})
    res["bound"] = k2.eval({x: np.ones((1, 3), np.float32), y: np.full((1, 3), 3, np.float32)})
    return res


@cntk_case(names=["cntk.ops.random_sample", "cntk.ops.random_sample_inclusion_frequency",
                  "cntk.Function.eval"],
           note="a sampling op of weights with the batch axis, run: CNTK 2.7's RuntimeError "
                "opens with its words, \"Node 'Input55' (InputValue operation): Minibatch data "
                "cannot be interpreted as a single 2D tensor.\".  Stadyn put the name of its "
                "own stand-in op before them ('python_function: ')")
def random_sample__batched_weights_refused_in_cntk_words(C, r, np):
    r.touch("cntk.Function.eval")
    res = {}
    for key, make in (("sample", lambda w: C.random_sample(w, 3, True, seed=1)),
                      ("inclusion", lambda w: C.random_sample_inclusion_frequency(w, 3, True))):
        w = C.input_variable(5, name="w")
        said = _said(lambda: make(w).eval({w: np.ones((2, 5), np.float32)}))
        # (the first sentence; Stadyn adds the user's line after it)
        res[key] = said[:1] + [said[1].split(" tensor.")[0]] if len(said) > 1 else said
    return res


@cntk_case(names=["cntk.debugging.dump_function", "cntk.ops.functions.Function"],
           note="dump_function of a @C.Function without types yet: CNTK 2.7 lists the graph "
                "over its placeholders, each shape unknown ('ReLU e (a:[?](-2,)) -> "
                "(c:[?](-2,))').  Stadyn raised ValueError")
def debugging__dump_of_an_untyped_function(C, r, np):
    import contextlib
    import io

    @C.Function
    def f(a):
        return C.relu(a) + 1

    @C.Function
    def g(a, b):
        return C.relu(a) * b + 1

    res = {}
    for label, fn in (("f", f), ("g", g)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            said = _said(lambda: C.debugging.dump_function(fn))
        # (the columns' padding follows the uids' lengths: spaces collapsed)
        res[label] = said + [_masked(" ".join(line.split()))
                             for line in out.getvalue().splitlines()]
    return res


@cntk_case(names=["cntk.losses.lambda_rank", "cntk.metrics.ndcg_at_1", "cntk.Function.grad"],
           note="lambda_rank and ndcg_at_1 of vectors longer than (1,): CNTK 2.7 builds them "
                "and reads each sample's first element (the first row of its minibatch "
                "matrix), of output, gain and group alike; lambda_rank's gradient reaches "
                "that element only.  Stadyn refused them: 'output needs shape (1,)'")
def ranking__of_longer_vectors(C, r, np):
    r.touch("cntk.Function.grad")
    res = {}
    for seed, shapes in ((0, (3, 3, 3)), (1, (3, 1, 1)), (2, (1, 2, 3)), (3, (4, 4, 1))):
        rng = np.random.RandomState(seed)
        n = 7
        data = [rng.randn(n, shapes[0]).astype(np.float32),
                rng.randint(0, 5, (n, shapes[1])).astype(np.float32),
                np.sort(rng.randint(0, 3, (n, shapes[2])), axis=0).astype(np.float32)]
        o = C.input_variable(shapes[0], needs_gradient=True)
        gain = C.input_variable(shapes[1])
        group = C.input_variable(shapes[2])
        feed = dict(zip((o, gain, group), data))
        f = C.lambda_rank(o, gain, group)
        key = "x".join(map(str, shapes))
        res[key + " ndcg_at_1"] = C.ndcg_at_1(o, gain, group).eval(feed)
        res[key + " lambda_rank"] = f.eval(feed)
        res[key + " gradient"] = f.grad(feed, wrt=[o])
    return res


@cntk_case(names=["cntk.Function.find_by_name", "cntk.Function.find_all_with_name",
                  "cntk.logging.graph.find_all_with_name", "cntk.layers.Recurrence",
                  "cntk.layers.LSTM"],
           note="find_by_name of a layer or an op inside a recurrence's step "
                "(Recurrence(LSTM(4, name='lstm')), a Dense or a named plus in a Python "
                "step): CNTK 2.7 gives out the step's function over its PastValues (the LSTM "
                "block of two outputs; evaluated, its ValueError for the values not given).  "
                "Stadyn found none")
def graph__names_inside_a_recurrence_step(C, r, np):
    r.touch("cntk.Function.find_by_name", "cntk.Function.find_all_with_name",
            "cntk.logging.graph.find_all_with_name")
    x = C.sequence.input_variable(3, name="x")
    res = {}
    z = C.layers.Recurrence(C.layers.LSTM(4, name="lstm"))(x)
    f = z.find_by_name("lstm")
    res["lstm"] = [_masked(str(f)), f.op_name, f.is_block, [list(o.shape) for o in f.outputs],
                   [_masked(repr(a)) for a in f.arguments]]
    res["lstm all"] = len(z.find_all_with_name("lstm"))
    res["lstm depth -1"] = [_masked(str(n)) for n in
                            C.logging.graph.find_all_with_name(z, "lstm", depth=-1)]
    d = C.layers.Dense(3, name="d", init=0.5)
    z2 = C.layers.Recurrence(lambda h, v: C.plus(d(h), v, name="p"))(x)
    data = [np.arange(6, dtype=np.float32).reshape(2, 3)]
    for n in ("d", "p"):
        g = z2.find_by_name(n)
        res[n] = [_masked(str(g)), [_masked(repr(a)) for a in g.arguments],
                  _said(lambda: g.eval({x: data}))[:1]]
    z3 = C.layers.Recurrence(C.layers.GRU(4, name="gru"))(x)   # (kept: CNTK frees its graph)
    g = z3.find_by_name("gru")
    res["gru"] = [_masked(str(g)), len(g.outputs)]
    return res

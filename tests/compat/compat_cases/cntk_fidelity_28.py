"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (twenty-eighth round): the shape of
an op over an element-wise op of a placeholder and an input; a ``Sequential`` of ``@C.Function``
steps; ``copy`` and ``pickle`` of Functions and Variables."""

from compat_harness import cntk_case
from compat_cases.cntk_fidelity_23 import _masked, _said


@cntk_case(names=["cntk.ops.relu", "cntk.ops.sigmoid", "cntk.ops.times", "cntk.ops.splice",
                  "cntk.ops.reduce_sum", "cntk.ops.reshape", "cntk.ops.slice",
                  "cntk.ops.softmax", "cntk.ops.dropout", "cntk.ops.combine",
                  "cntk.ops.alias", "cntk.Function.shape", "cntk.Function.dynamic_axes"],
           note="an op over an element-wise op of a placeholder and an input "
                "(relu(plus(placeholder(), x)), x of (3,)): CNTK 2.7 infers it from the "
                "known shape ((3,), [#]; times by W (3, 2): (2,); splice with x: (6,)); over "
                "a placeholder alone it stays unknown.  Stadyn showed (-2,) and unknown axes "
                "beyond the element-wise op itself")
def ops__over_an_elementwise_op_of_a_placeholder(C, r, np):
    r.touch("cntk.Function.shape", "cntk.Function.dynamic_axes")
    x = C.input_variable(3, name="x")
    s = C.sequence.input_variable(3, name="s")
    P = C.placeholder
    made = {"relu(p+x)": lambda: C.relu(C.plus(P(), x)),
            "sigmoid(p*x)": lambda: C.sigmoid(C.element_times(P(), x)),
            "relu(relu(p+x))": lambda: C.relu(C.relu(C.plus(P(), x))),
            "times(p+x, W)": lambda: C.times(C.plus(P(), x), C.parameter((3, 2))),
            "times(p, W)": lambda: C.times(P(), C.parameter((3, 2))),
            "splice(p+x, x)": lambda: C.splice(C.plus(P(), x), x),
            "reduce_sum(p+x)": lambda: C.reduce_sum(C.plus(P(), x)),
            "reshape(p+x)": lambda: C.reshape(C.plus(P(), x), (3, 1)),
            "slice(p+x)": lambda: C.slice(C.plus(P(), x), 0, 0, 2),
            "softmax(p+x)": lambda: C.softmax(C.plus(P(), x)),
            "relu(p+x)*2": lambda: C.relu(C.plus(P(), x)) * 2,
            "dropout(p+x)": lambda: C.dropout(C.plus(P(), x), 0.5),
            "combine(p+x)": lambda: C.combine([C.plus(P(), x)]),
            "alias(p+x)": lambda: C.alias(C.plus(P(), x)),
            "relu(p+s)": lambda: C.relu(C.plus(P(), s)),
            "sequence.last(p+s)": lambda: C.sequence.last(C.plus(P(), s)),
            "relu(p)": lambda: C.relu(P())}
    res = {}
    for label, make in made.items():
        f = make()
        res[label] = [list(f.shape), [a.name for a in f.output.dynamic_axes]]
    p = P(name="p")
    f = C.relu(C.plus(p, x))
    y = C.input_variable(3, name="y")
    g = f.replace_placeholders({p: y})
    res["bound"] = g.eval({x: np.ones((1, 3), np.float32),
                           y: np.array([[-3.0, 0.0, 2.0]], np.float32)})
    return res


@cntk_case(names=["cntk.layers.Sequential", "cntk.ops.functions.Function"],
           note="a Sequential of @C.Function steps without types: CNTK 2.7 makes it where "
                "each step takes one argument (repr 'Composite(ReLU): Placeholder('keep', "
                "[???], [???]) -> Output(...)'; applied, it computes), and refuses at once a "
                "step of two arguments after one value (TypeError 'CNTK Function expected 2 "
                "arguments, got 1').  Stadyn's repr raised ValueError ('its parameters are "
                "known once it is applied') and the two-argument step was refused only as "
                "the Sequential was shown or applied")
def layers__sequential_of_untyped_functions(C, r, np):
    @C.Function
    def twice(a):
        return a * 2

    @C.Function
    def both(a, b):
        return a * b

    x = C.input_variable(3, name="x")
    data = {x: np.array([[-1.0, 0.0, 2.0]], np.float32)}
    L = C.layers
    made = {"untyped first": lambda: L.Sequential([twice, C.relu]),
            "untyped last": lambda: L.Sequential([C.relu, twice]),
            "untyped alone": lambda: L.Sequential([twice]),
            "after Dense": lambda: L.Sequential([L.Dense(2, init=1.0), twice]),
            "two arguments first": lambda: L.Sequential([both, C.relu]),
            "two arguments after relu": lambda: L.Sequential([C.relu, both, C.relu]),
            "two arguments after Dense": lambda: L.Sequential([L.Dense(2), both]),
            "two arguments after a tuple": lambda: L.Sequential(
                [(C.relu, L.identity), both])}
    res = {}
    for label, make in made.items():
        said = _said(make)
        if said != ["returns"]:
            res[label] = said
            continue
        s = make()
        res[label] = [_masked(repr(s)), list(s.shape), s(x).eval(data)]
    return res


@cntk_case(names=["cntk.ops.parameter", "cntk.ops.constant", "cntk.ops.placeholder",
                  "cntk.Function.uid", "cntk.Function.output", "cntk.Function.eval"],
           note="copy.copy of a Function: CNTK 2.7 gives another handle on the same graph "
                "(its uid and name, computing the same) that is not equal to the original "
                "(Functions' wrappers compare by identity: not found as a dict key, not in "
                "[f]); of a Variable, Parameter, Constant, output or placeholder, an equal "
                "one; copy.deepcopy and pickle.dumps of each: TypeError \"can't pickle "
                "SwigPyObject objects\".  Stadyn's Function copy was equal, and Variables, "
                "Parameters and Constants deep-copied (an input came back a Constant) and "
                "pickled")
def function__copies_and_pickles(C, r, np):
    import copy
    import pickle
    r.touch("cntk.Function.uid", "cntk.Function.output", "cntk.Function.eval")
    x = C.input_variable(3, name="x")
    f = C.relu(x, name="r")
    objects = {"Function": f, "input": x, "Parameter": C.parameter((2,), name="W"),
               "Constant": C.constant(np.ones(2, np.float32), name="c"),
               "output": f.output, "placeholder": C.placeholder(name="p")}
    res = {}
    for label, o in objects.items():
        c = copy.copy(o)
        res[label + " copy"] = [c == o, o == c, c != o, c is o, c.uid == o.uid, c.name,
                                c in [o], c == c]
        res[label + " deepcopy"] = _said(lambda: copy.deepcopy(o))
        res[label + " pickle"] = _said(lambda: pickle.dumps(o))
    c = copy.copy(f)
    res["Function copy as a key"] = _said(lambda: {f: 1}[c])
    res["Function copy eval"] = c.eval({x: np.array([[-1.0, 0.0, 2.0]], np.float32)})
    return res


@cntk_case(names=["cntk.ops.input_variable", "cntk.Function.eval", "cntk.Function.forward",
                  "cntk.Function.grad", "cntk.Trainer.train_minibatch",
                  "cntk.Trainer.test_minibatch"],
           note="data of another shape for an input without dynamic axes "
                "(input_variable(3, dynamic_axes=[]) fed (4,), (2, 4), (3, 1), a scalar): "
                "CNTK 2.7 refuses it as it is fed, ValueError 'The trailing dimensions of the "
                "Value shape '[4]' do not match the Variable 'Input('x', [], [3])' shape "
                "'[3]'.' (a leading axis longer than 1: 'The dimension size (2) of the axis "
                "(1) of the Value ...must be 1'; lower rank: 'Value's rank (0) should be >= "
                "...'), and takes (1, 3) as (3,).  Stadyn took (4,) as the input's new shape "
                "(the op then failed or computed with it), and refused (1, 3)")
def input__without_dynamic_axes_fed_another_shape(C, r, np):
    r.touch("cntk.Function.eval", "cntk.Function.forward", "cntk.Function.grad",
            "cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch")
    res = {}
    x = C.input_variable(3, dynamic_axes=[], name="x")
    f = C.relu(x)
    for shape in ((3,), (4,), (2, 4), (1, 3), (2, 3), (3, 1), (), (1, 1, 3)):
        data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 1
        res["eval " + str(shape)] = _said(lambda: f.eval({x: data}))
        if res["eval " + str(shape)] == ["returns"]:
            res["value " + str(shape)] = f.eval({x: data})
    res["eval list"] = _said(lambda: f.eval({x: [np.ones(4, np.float32)]}))
    x2 = C.input_variable((2, 3), dynamic_axes=[], name="x2")
    g = C.reduce_sum(x2)
    for shape in ((3, 2), (2, 2, 3), (6,), (1, 2, 3)):
        res["x2 " + str(shape)] = _said(lambda: g.eval({x2: np.ones(shape, np.float32)}))
    y = C.input_variable(3, name="y")
    p = C.parameter(3, init=1.0, name="p")
    loss = C.reduce_sum(y * x * p)
    feeds = {"fits": {x: np.ones(3, np.float32), y: np.ones((2, 3), np.float32)},
             "longer": {x: np.ones(4, np.float32), y: np.ones((2, 3), np.float32)}}
    for label, feed in feeds.items():
        res["forward " + label] = _said(lambda: loss.forward(feed))
        res["grad " + label] = _said(lambda: loss.grad(feed, wrt=[p]))
    tr = C.Trainer(loss, (loss, None), C.sgd(loss.parameters, C.learning_parameter_schedule(0.1)))
    res["train longer"] = _said(lambda: tr.train_minibatch(feeds["longer"]))
    res["test longer"] = _said(lambda: tr.test_minibatch(feeds["longer"]))
    res["grad"] = loss.grad(feeds["fits"], wrt=[p])
    res["x after"] = list(x.shape)
    return res


@cntk_case(names=["cntk.ops.reconcile_dynamic_axes", "cntk.Function.eval",
                  "cntk.Function.forward"],
           note="reconcile_dynamic_axes of a sequence on another sequence axis, run with "
                "other lengths (or another number of sequences) than the sequence it is put "
                "on: CNTK 2.7's ValueError 'ReconcileDynamicAxis5 ReconcileDynamicAxis "
                "operation discovered that Input3 InputValue operation produced an MB "
                "layout that is incompatible with that of Input4 InputValue.' (an op's "
                "output named by its uid and operation).  Stadyn raised a ShapeError "
                "'sequence_reconcile: cannot apply to inputs [...]'")
def reconcile_dynamic_axes__layouts_that_differ_at_run(C, r, np):
    r.touch("cntk.Function.eval", "cntk.Function.forward")
    a = C.sequence.input_variable(2, name="a")
    b = C.sequence.input_variable(2, name="b", sequence_axis=C.Axis("other"))

    def seqs(*lengths):
        return [np.arange(n * 2, dtype=np.float32).reshape(n, 2) for n in lengths]

    res = {}
    f = C.reconcile_dynamic_axes(a, b)
    for data, (la, lb) in (("same", ((3, 1), (3, 1))), ("longer", ((3, 1), (2, 1))),
                           ("fewer", ((3,), (3, 1)))):
        feed = {a: seqs(*la), b: seqs(*lb)}
        res[data] = _said(lambda: f.eval(feed))
        if res[data] == ["returns"]:
            res[data] = f.eval(feed)
    res["forward"] = _said(lambda: f.forward({a: seqs(3, 1), b: seqs(2, 1)}))
    g = C.reconcile_dynamic_axes(a * 2, b) + b
    res["of an op"] = _said(lambda: g.eval({a: seqs(3, 1), b: seqs(2, 1)}))
    return res


@cntk_case(names=["cntk.train.trainer.Trainer", "cntk.Trainer.train_minibatch",
                  "cntk.Trainer.previous_minibatch_loss_average"],
           note="a Trainer whose model is another Function over the loss's graph (the "
                "loss's model itself, a combine of its output, an inner layer, a clone, an "
                "op over it, the loss, a combine with another model) or a model outside it "
                "with the learners given the loss's parameters: CNTK 2.7 trains each alike.  "
                "(Learners given parameters the loss is not computed from crash CNTK 2.7 "
                "in train_minibatch: Stadyn refuses to train such a Trainer, "
                "test_cntk_trainer_parameters.py)")
def trainer__models_over_the_loss_graph(C, r, np):
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.previous_minibatch_loss_average")
    res = {}
    feed = None
    for label in ("model", "combine", "inner layer", "clone", "relu of it", "loss",
                  "alias", "combine with another", "another model"):
        x = C.input_variable(3, name="x")
        y = C.input_variable(2, name="y")
        h = C.layers.Dense(4, activation=C.relu, init=0.1, name="h")(x)
        z = C.layers.Dense(2, init=C.glorot_uniform(seed=1), name="z")(h)
        loss = C.cross_entropy_with_softmax(z, y)
        other = C.layers.Dense(2, init=0.3, name="o")(x)
        model = {"model": z, "combine": C.combine([z.output]), "inner layer": h,
                 "clone": z.clone("share"), "relu of it": C.relu(z), "loss": loss,
                 "alias": C.alias(z), "combine with another": C.combine([z, other]),
                 "another model": other}[label]
        tr = C.Trainer(model, (loss, None),
                       C.sgd(loss.parameters, C.learning_parameter_schedule(0.5)))
        feed = {x: np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]], np.float32),
                y: np.array([[1, 0], [0, 1]], np.float32)}
        for _ in range(2):
            tr.train_minibatch(feed)
        res[label] = [tr.previous_minibatch_loss_average, z.parameters[0].value]
    return res

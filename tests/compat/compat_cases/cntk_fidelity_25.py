"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (twenty-fifth round): untyped
``@C.Function``s given to ops, ``combine``, ``as_block`` and a Trainer; blocks over
placeholders without a shape."""

from compat_harness import cntk_case
from compat_cases.cntk_fidelity_23 import _masked, _said


def _shown(call):
    """``["returns", str, repr]`` of what ``call`` makes (uids' numbers masked), or
    ``[error type, its first line]``."""
    made = []
    outcome = _said(lambda: made.append(call()))
    if made:
        return outcome + [_masked(str(made[0])), _masked(repr(made[0]))]
    return outcome


def _unprovided(call):
    """``_said(call)`` up to the outputs a run asked for."""
    said = _said(call)
    return said[:1] + [said[1].split(", that the requested")[0]] if len(said) > 1 else said


@cntk_case(names=["cntk.ops.combine", "cntk.ops.as_block", "cntk.ops.relu",
                  "cntk.Trainer", "cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch",
                  "cntk.Trainer.model", "cntk.Trainer.evaluation_function"],
           note="an untyped @C.Function (a graph over placeholders of unknown shape): CNTK 2.7 "
                "takes it as an op's operand (relu, +), in combine and as_block (a block over "
                "its placeholders, its unmapped ones a ValueError), and as a Trainer's metric "
                "or model (a layer not applied too), each run then its ValueError 'Values for "
                "1 required arguments ... have not been provided.'.  Stadyn raised TypeError, "
                "AttributeError or ShapeError")
def function__untyped_as_operand(C, r, np):
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch",
            "cntk.Trainer.model", "cntk.Trainer.evaluation_function")

    @C.Function
    def f(x):
        return x * 2

    @C.Function
    def g(a):
        return C.reshape(a, (-1,))

    x = C.input_variable(2, name="i")
    one = np.array([[-1.0, 2.0]], np.float32)
    res = {}
    for key, h in (("elementwise", f), ("reshape", g)):
        res[key + " relu"] = _shown(lambda: C.relu(h))
        res[key + " plus"] = _shown(lambda: h + 1)
        res[key + " combine"] = _shown(lambda: C.combine([h]))
        res[key + " combine one"] = _shown(lambda: C.combine(h))
        res[key + " relu applied"] = C.relu(h)(x).eval({x: one})
        res[key + " combine applied"] = C.combine([h])(x).eval({x: one})
    res["combine outputs"] = [_masked(repr(o)) for o in C.combine([f]).outputs]
    res["combine two"] = [_masked(repr(o)) for o in C.combine([C.relu(f), C.sigmoid(f)]).outputs]
    res["as_block unmapped"] = _shown(lambda: C.as_block(f, [], "blk"))
    # (CNTK 2.7 gives f a new placeholder as it makes a block of it: its arguments read anew)
    res["as_block"] = _shown(lambda: C.as_block(f, [(f.arguments[0], f.arguments[0])], "blk"))
    b = C.as_block(f, [(f.arguments[0], f.arguments[0])], "blk", "inst")
    res["as_block names"] = [b.name, b.root_function.name, b.root_function.op_name,
                             b.root_function.is_block, b.is_block]
    res["as_block applied"] = _shown(lambda: b(x))
    res["as_block value"] = b(x).eval({x: one})
    p, q = C.placeholder(name="p"), C.placeholder(name="q")
    w = C.relu(p) + q
    res["as_block two unmapped"] = _shown(lambda: C.as_block(w, [], "blk", "inst"))
    res["as_block one unmapped"] = _shown(lambda: C.as_block(w, [(p, p)], "blk"))
    res["as_block to another"] = _shown(lambda: C.as_block(C.relu(p), [(p, q)], "blk"))

    @C.Function
    def m(a):
        return C.reduce_sum(a)

    y = C.input_variable(2, name="y")
    par = C.parameter(2, init=1.0)
    loss = C.reduce_sum(y * par)
    learner = C.sgd(loss.parameters, C.learning_parameter_schedule(0.1))
    res["trainer metric"] = _said(lambda: C.Trainer(None, (loss, m), [learner]))
    t = C.Trainer(None, (loss, m), [learner])
    res["trainer metric function"] = _masked(str(t.evaluation_function))
    data = {y: np.ones((1, 2), np.float32)}
    # (the outputs CNTK 2.7 names after these words come in its hash map's order: left out)
    res["train"] = _unprovided(lambda: t.train_minibatch(data))
    res["train outputs"] = _unprovided(lambda: t.train_minibatch(
        data, outputs=[t.evaluation_function.output]))
    res["test"] = _unprovided(lambda: t.test_minibatch(data))
    res["parameter after"] = par.value
    dense = C.layers.Dense(3)
    res["trainer model"] = _said(lambda: C.Trainer(dense, (loss, loss), [
        C.sgd(loss.parameters, C.learning_parameter_schedule(0.1))]))
    t2 = C.Trainer(dense, (loss, loss), [
        C.sgd(loss.parameters, C.learning_parameter_schedule(0.1))])
    res["trainer model is"] = _masked(str(t2.model))
    res["trainer model train"] = _said(lambda: t2.train_minibatch(data))
    res["trainer model test"] = _said(lambda: t2.test_minibatch(data))
    return res


_ONE_OPERAND = ["relu", "sigmoid", "tanh", "elu", "selu", "leaky_relu", "softplus", "softsign",
                "exp", "log", "sqrt", "square", "abs", "negate", "reciprocal", "floor", "ceil",
                "round", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
                "atanh", "straight_through_impl", "stop_gradient", "alias", "softmax",
                "log_softmax", "hardmax", "reduce_sum", "reduce_mean", "reduce_max",
                "reduce_min", "reduce_prod", "reduce_log_sum_exp", "reduce_sum_square",
                "argmax", "argmin", "element_not"]


@cntk_case(names=["cntk.ops." + n for n in _ONE_OPERAND] + [
    "cntk.ops.reshape", "cntk.ops.cast", "cntk.ops.dropout", "cntk.ops.top_k"],
           note="a one-operand op given a Function of two outputs: CNTK 2.7 hands it to its "
                "C++ op, which SWIG refuses (NotImplementedError 'Wrong number or type of "
                "arguments for overloaded function 're_lu'.'); floor, ceil, round, cast and "
                "stop_gradient read its one output first (ValueError 'expected single output, "
                "but got 2').  Stadyn took its first output")
def ops__one_operand_of_two_outputs(C, r, np):
    a = C.input_variable(2)
    two = C.combine([a * 1, a * 2])
    res = {}
    for n in _ONE_OPERAND:
        res[n] = _said(lambda: getattr(C, n)(two))
    res["reshape"] = _said(lambda: C.reshape(two, (2,)))
    res["cast"] = _said(lambda: C.cast(two, np.float64))
    res["dropout"] = _said(lambda: C.dropout(two, 0.5))
    res["top_k"] = _said(lambda: C.top_k(two, 1))
    res["relu of one output"] = _said(lambda: C.relu(two.outputs[1]))
    res["relu of one output combined"] = _said(lambda: C.relu(C.combine([a * 3])))
    return res


@cntk_case(names=["cntk.ops.plus", "cntk.ops.minus", "cntk.ops.element_times",
                  "cntk.ops.element_divide", "cntk.ops.element_max", "cntk.ops.pow",
                  "cntk.ops.log_add_exp", "cntk.ops.equal", "cntk.ops.not_equal",
                  "cntk.ops.less", "cntk.ops.less_equal", "cntk.ops.greater",
                  "cntk.ops.greater_equal", "cntk.ops.times", "cntk.ops.splice",
                  "cntk.losses.squared_error", "cntk.Function.eval"],
           note="an op of two sequences of different sequence axes (C.Axis('other')): CNTK 2.7's "
                "RuntimeError 'Operation 'Plus': Operand 'Input('t', [#, other], [2])' has "
                "dynamic axes, that do not match the dynamic axes '[#, *]' of the other "
                "operands.' as it is made (it reconciles a value without a sequence axis, not "
                "another sequence axis); of the same axis, sequences of other lengths are its "
                "ValueError at the run.  Stadyn computed the primitive binary ops")
def ops__sequences_of_other_axes(C, r, np):
    r.touch("cntk.Function.eval")
    s = C.sequence.input_variable(2, name="s")
    t = C.sequence.input_variable(2, name="t", sequence_axis=C.Axis("other"))
    u = C.sequence.input_variable(2, name="u")
    ops = ["plus", "minus", "element_times", "element_divide", "element_max", "pow",
           "log_add_exp", "equal", "not_equal", "less", "less_equal", "greater",
           "greater_equal", "splice", "squared_error"]
    res = {}
    for n in ops:
        res[n + " s,t"] = _said(lambda: getattr(C, n)(s, t))
        res[n + " t,s"] = _said(lambda: getattr(C, n)(t, s))
    res["+"] = _said(lambda: s + t)
    res["times"] = _said(lambda: C.times(s, C.sequence.input_variable(
        (2, 3), sequence_axis=C.Axis("other"))))
    res["plus s,u"] = _said(lambda: s + u)
    f = s + u
    two, three = np.ones((2, 2), np.float32), np.ones((3, 2), np.float32)
    res["run other lengths"] = _said(lambda: f.eval({s: [two], u: [three]}))
    res["run other counts"] = _said(lambda: f.eval({s: [two], u: [two, two]}))
    res["run"] = f.eval({s: [two], u: [two * 3]})
    return res


@cntk_case(names=["cntk.ops.constant", "cntk.variables.Constant", "cntk.Trainer.test_minibatch",
                  "cntk.ops.random_sample", "cntk.ops.random_sample_inclusion_frequency"],
           note="C.constant() and C.Constant() with neither value nor shape: CNTK 2.7's ValueError "
                "'you need to specify at least shape or value' (Stadyn made a 0).  "
                "test_minibatch of a Trainer without a metric: its ValueError "
                "'Evaluator::TestMinibatch: Cannot test when no evaluation function was "
                "specified during construction.' (after data of a type it refuses, before "
                "layouts that differ).  random_sample and its inclusion frequency without "
                "duplicates of as many samples as classes or more: its ValueError as they are "
                "made, of weights from an input too (Stadyn's ShapeError for a constant only, "
                "in its own words)")
def variables__refusals_as_made(C, r, np):
    r.touch("cntk.Trainer.test_minibatch")
    res = {}
    res["constant()"] = _said(lambda: C.constant())
    res["constant(name)"] = _said(lambda: C.constant(name="k"))
    res["constant(dtype)"] = _said(lambda: C.constant(dtype=np.float64))
    res["Constant()"] = _said(lambda: C.Constant())
    res["constant(shape)"] = C.constant(shape=(2,)).value
    res["constant(None, shape)"] = C.constant(None, (2,)).value
    s = C.sequence.input_variable(2, name="s")
    u = C.sequence.input_variable(2, name="u")
    p = C.parameter(2, init=1.0)
    loss = C.sequence.reduce_sum(C.reduce_sum(s * p + u))
    t = C.Trainer(None, loss, [C.sgd(loss.parameters, C.learning_parameter_schedule(0.1))])
    two, three = np.ones((2, 2), np.float32), np.ones((3, 2), np.float32)
    res["test, layouts differ"] = _said(lambda: t.test_minibatch({s: [two], u: [three]}))
    res["test"] = _said(lambda: t.test_minibatch({s: [two], u: [two]}))
    res["test, int32 data"] = _said(lambda: t.test_minibatch({s: [two.astype(np.int32)],
                                                               u: [two]}))
    w = C.input_variable(3, name="w")
    k = C.constant(np.array([0.2, 0.3, 0.5], np.float32))
    for n in (3, 4):
        res["random_sample input %d" % n] = _said(lambda: C.random_sample(w, n, False))
        res["random_sample constant %d" % n] = _said(lambda: C.random_sample(k, n, False))
        res["inclusion input %d" % n] = _said(
            lambda: C.random_sample_inclusion_frequency(w, n, False))
        res["inclusion constant %d" % n] = _said(
            lambda: C.random_sample_inclusion_frequency(k, n, False))
    res["random_sample duplicates"] = _said(lambda: C.random_sample(k, 4, True))
    res["random_sample 2"] = _said(lambda: C.random_sample(k, 2, False))
    return res


@cntk_case(names=["cntk.Function.name", "cntk.Function.root_function", "cntk.Function.output",
                  "cntk.Function.clone", "cntk.Function.find_by_name", "cntk.Trainer.model",
                  "cntk.layers.Dense", "cntk.layers.Sequential"],
           note="an unnamed Function renamed (z.name = 'm'): CNTK 2.7 names the composite "
                "only, its root function and output keep theirs ('', the output shown by "
                "its uid), a clone and the Trainer's model keep the new name.  Stadyn renamed "
                "the root function and its output")
def function__renamed_composite(C, r, np):
    r.touch("cntk.Function.name", "cntk.Function.root_function", "cntk.Function.output",
            "cntk.Function.clone", "cntk.Function.find_by_name", "cntk.Trainer.model")
    x = C.input_variable(3, name="x")
    res = {}
    for label, make in (("Dense", lambda: C.layers.Dense(2)(x)), ("relu", lambda: C.relu(x)),
                        ("Sequential", lambda: C.layers.Sequential(
                            [C.layers.Dense(4, name="h"), C.layers.Dense(2)])(x))):
        z = make()
        z.name = "renamed"
        res[label] = [z.name, z.output.name, z.root_function.name, z.root_function.op_name,
                      _masked(repr(z)), _masked(str(z)), z.find_by_name("renamed") is None,
                      z.clone(C.CloneMethod.share).name, C.combine([z]).name,
                      C.as_composite(z.root_function).name, (z + 1).name,
                      z.output.owner.name]
        if label == "Sequential":
            res[label + " layer"] = [_masked(repr(z.find_by_name("h"))),
                                     _masked(str(z.find_by_name("h")))]
    z = C.layers.Dense(2)(x)
    z.name = "m"
    loss = C.reduce_sum(z)
    t = C.Trainer(z, loss, [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    res["trainer model"] = t.model.name
    res["renamed again"] = _said(lambda: setattr(z, "name", "n"))
    return res


@cntk_case(names=["cntk.logging.graph.depth_first_search", "cntk.Function.root_function",
                  "cntk.layers.Dense", "cntk.layers.Embedding", "cntk.layers.Sequential",
                  "cntk.layers.Convolution"],
           note="a walk (depth_first_search) of a layer not applied yet: CNTK 2.7 shows its root "
                "function as any function (Dense: Placeholder('x', [???], [???]) -> "
                "Output('Block5_Output_0', [???], [???])) and its parameters with their "
                "inferred axes as '?' (Parameter('W', [], [? x 2])).  Stadyn showed them in "
                "words of its own")
def graph__walk_of_a_layer_not_applied(C, r, np):
    r.touch("cntk.Function.root_function")
    L = C.layers
    made = {"Dense": lambda: L.Dense(2), "Dense named": lambda: L.Dense(2, name="d"),
            "Embedding": lambda: L.Embedding(5),
            "Sequential": lambda: L.Sequential([L.Dense(4), C.relu, L.Dense(2)]),
            "Convolution": lambda: L.Convolution((2, 2), 3)}
    res = {}
    for label, make in made.items():
        layer = make()
        res[label] = [_masked(repr(n)) for n in C.logging.graph.depth_first_search(
            layer, lambda n: True)]
        res[label + " root"] = _masked(repr(layer.root_function))
    return res

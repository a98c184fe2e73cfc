"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (twenty-fourth round): ops of a
sequence and a value of the batch axis alone that CNTK refuses to build, minibatch layouts
that differ in ``Function.eval``, data converted to an input's type, numbers and strings given
as a parameter's ``init``, crops."""

from compat_harness import cntk_case
from compat_cases.cntk_fidelity_23 import _masked, _said


@cntk_case(names=["cntk.ops.element_divide", "cntk.ops.element_max", "cntk.ops.element_min",
                  "cntk.ops.element_and", "cntk.ops.element_or", "cntk.ops.element_xor",
                  "cntk.ops.element_select", "cntk.ops.splice", "cntk.ops.plus",
                  "cntk.ops.minus", "cntk.ops.element_times", "cntk.ops.times",
                  "cntk.ops.less", "cntk.ops.log_add_exp", "cntk.ops.pow",
                  "cntk.losses.squared_error", "cntk.losses.cross_entropy_with_softmax",
                  "cntk.losses.binary_cross_entropy", "cntk.losses.cosine_distance",
                  "cntk.metrics.classification_error"],
           note="an op of a sequence and a value of the batch axis alone: CNTK 2.7 puts a "
                "ReconcileDynamicAxis on the batch value for its primitive binary ops (plus, "
                "minus, element_times, the comparisons, log_add_exp, pow, times, "
                "cosine_distance) and computes; element_divide, element_max/min, "
                "element_and/or/xor, element_select, splice and the losses it makes of other "
                "ops are its RuntimeError 'Operation ... has dynamic axes, that do not match "
                "...' as they are built.  Stadyn computed them")
def ops__of_a_sequence_and_a_batch_value(C, r, np):
    s = C.sequence.input_variable(3, name="s")
    b = C.input_variable(3, name="b")
    u = C.input_variable(3)
    res = {}
    two = {
        "element_divide": C.element_divide, "element_max": C.element_max,
        "element_min": C.element_min, "element_and": C.element_and,
        "element_or": C.element_or, "element_xor": C.element_xor,
        "squared_error": C.squared_error,
        "cross_entropy_with_softmax": C.cross_entropy_with_softmax,
        "classification_error": C.classification_error,
        "binary_cross_entropy": C.binary_cross_entropy,
        "splice": C.splice, "plus": C.plus, "minus": C.minus,
        "element_times": C.element_times, "less": C.less, "log_add_exp": C.log_add_exp,
        "pow": C.pow, "cosine_distance": C.cosine_distance,
    }
    for key in sorted(two):
        f = two[key]
        res[key + " s,b"] = _said(lambda: f(s, b))
        res[key + " b,s"] = _said(lambda: f(b, s))
    res["element_max s,unnamed"] = _said(lambda: C.element_max(s, u))
    res["squared_error s,named output"] = _said(lambda: C.squared_error(s, C.plus(b, 1,
                                                                                   name="pb")))
    res["element_divide s,constant"] = _said(lambda: C.element_divide(s, np.ones(3, np.float32)))
    res["element_divide number,b"] = _said(lambda: C.element_divide(2, b))
    res["times"] = _said(lambda: C.times(s, C.input_variable((3, 2))))
    for flags in ("bss", "sbs", "ssb", "bbs"):
        pick = {"s": s, "b": b}
        res["element_select " + flags] = _said(
            lambda: C.element_select(pick[flags[0]], pick[flags[1]], pick[flags[2]]))
    res["splice s,s,b"] = _said(lambda: C.splice(s, s, b))
    res["splice b,s,s"] = _said(lambda: C.splice(b, s, s))
    f = C.element_times(s, b)
    res["element_times value"] = f.eval({s: [np.ones((2, 3), np.float32)],
                                         b: np.full((1, 3), 2, np.float32)})
    return res


def _warned(call):
    """``[the outcome, [[warning category, its text (uids' numbers masked)], ...]]`` of
    ``call`` (CNTK's own import-time and deprecation warnings left out)."""
    import warnings
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        outcome = _said(call)
    said = [[w.category.__name__, _masked(str(w.message))] for w in seen
            if "your data is of type" in str(w.message)]
    return [outcome, said]


@cntk_case(names=["cntk.Function.eval", "cntk.Function.forward",
                  "cntk.Trainer.train_minibatch"],
           note="data CNTK 2.7 converts to an input's type (int64, float64 or bool for a float32 "
                "input, float32 for a float64 one; sparse matrices too): its UserWarning 'your "
                "data is of type ..., but your input variable (uid ...) expects ...' once an "
                "array (a sequence each); SciPy sparse int32 data is its dtype ValueError.  "
                "Stadyn converted silently, and took sparse int32 data")
def feeding__converted_data_warned(C, r, np):
    import scipy.sparse as sp
    r.touch("cntk.Function.eval", "cntk.Function.forward", "cntk.Trainer.train_minibatch")
    x = C.input_variable(2, name="x")
    d = C.input_variable(2, dtype=np.float64, name="d")
    s = C.sequence.input_variable(2, name="s")
    f = x * 1
    res = {}
    for t in ("int64", "float64", "float16", "bool", "float32"):
        res["eval " + t] = _warned(lambda: f.eval({x: np.ones((1, 2)).astype(t)}))
    res["list of float64"] = _warned(lambda: f.eval({x: [np.ones(2), np.ones(2)]}))
    res["numbers"] = _warned(lambda: f.eval({x: [[1, 2]]}))
    res["float64 input, float32"] = _warned(
        lambda: (d * 1).eval({d: np.ones((1, 2), np.float32)}))
    res["sequences of float64"] = _warned(
        lambda: (s * 1).eval({s: [np.ones((2, 2)), np.ones((3, 2))]}))
    res["forward"] = _warned(lambda: f.forward({x: np.ones((1, 2))}))
    xs = C.input_variable(3, is_sparse=True, name="xs")
    g = C.times(xs, C.parameter((3, 2), init=1.0))
    for t in ("int32", "int64", "float64"):
        res["sparse " + t] = _warned(
            lambda: g.eval({xs: sp.csr_matrix(np.eye(3)[:2].astype(t))}))
    res["sparse list int32"] = _warned(
        lambda: g.eval({xs: [sp.csr_matrix(np.eye(3)[:1].astype("int32"))]}))
    p = C.parameter(2, init=1.0)
    loss = C.reduce_sum(x * p)
    trainer = C.Trainer(loss, (loss, loss), C.sgd(loss.parameters,
                                                  C.learning_parameter_schedule(0.1)))
    res["train float64"] = _warned(lambda: trainer.train_minibatch({x: np.ones((1, 2))}))
    return res


@cntk_case(names=["cntk.ops.parameter", "cntk.variables.Parameter"],
           note="a parameter's init as a NumPy scalar other than float64 (np.float32, np.int64, "
                "np.bool_) or a string: CNTK 2.7's NotImplementedError 'Wrong number or type of "
                "arguments for overloaded function 'constant_initializer'.' (Python's numbers, "
                "bool and np.float64, a float, are taken).  Stadyn took the NumPy scalars and "
                "number strings, and raised ValueError for other strings")
def parameter__init_of_numpy_scalars_and_strings(C, r, np):
    res = {}
    inits = {"np.float32": np.float32(2.0), "np.float64": np.float64(2.0),
             "np.int64": np.int64(3), "np.bool_": np.bool_(True), "abc": "abc", "1.5": "1.5",
             "True": True, "2": 2, "2.0": 2.0, "0-d array": np.array(2.0, np.float32)}
    for key in sorted(inits):
        init = inits[key]
        res["parameter " + key] = _said(lambda: C.parameter(3, init=init).value)
        res["scalar " + key] = _said(lambda: C.parameter(init=init).value)
        res["Parameter " + key] = _said(lambda: C.Parameter(3, init=init).value)
        if res["parameter " + key] == ["returns"]:
            res["value " + key] = C.parameter(3, init=init).value
    return res


@cntk_case(names=["cntk.Function.eval", "cntk.Function.forward", "cntk.Function.grad"],
           note="Function.eval, forward and grad given inputs on the same dynamic axes with "
                "different numbers of samples (or sequences of different numbers or lengths): "
                "CNTK 2.7's ValueError 'Different minibatch layouts detected ...' naming the "
                "two inputs.  Stadyn raised a ShapeError from the op that met both, broadcast "
                "one sample against several, or computed sequences of different counts")
def function__runs_of_different_minibatch_layouts(C, r, np):
    r.touch("cntk.Function.eval", "cntk.Function.forward", "cntk.Function.grad")
    x, y = C.input_variable(2, name="x"), C.input_variable(2, name="y")
    two, three = np.ones((2, 2), np.float32), np.ones((3, 2), np.float32)
    res = {}
    res["eval 2,3"] = _said(lambda: (x + y).eval({x: two, y: three}))
    res["eval 1,3"] = _said(lambda: (x + y).eval({x: two[:1], y: three}))
    res["eval 3,2"] = _said(lambda: (x + y).eval({y: three, x: two}))
    res["forward"] = _said(lambda: (x * y).forward({x: two, y: three}))
    g = C.times(x, C.parameter((2, 2), init=1.0)) * y
    res["grad"] = _said(lambda: g.grad({x: two, y: three}, wrt=g.parameters))
    res["reduced"] = _said(lambda: (C.reduce_sum(x) + C.reduce_sum(y)).eval({x: two, y: three}))
    res["combine"] = _said(lambda: C.combine([x * 1, y * 1]).eval({x: two, y: three}))
    s, t = C.sequence.input_variable(2, name="s"), C.sequence.input_variable(2, name="t")
    res["same layouts"] = (x + y).eval({x: two, y: two * 2})
    res["same sequences"] = [np.asarray(v).tolist() for v in (s + t).eval(
        {s: [two, three], t: [two * 2, three * 3]})]
    res["sequence lengths"] = _said(lambda: (s + t).eval({s: [two], t: [three]}))
    res["sequence counts"] = _said(lambda: (s + t).eval({s: [two], t: [two, two]}))
    return res


@cntk_case(names=["cntk.ops.crop_manual", "cntk.ops.crop_automatic",
                  "cntk.Function.arguments", "cntk.Function.eval"],
           note="a crop's referent is one of its inputs, so among a Function's arguments, and a "
                "run without its data is CNTK 2.7's ValueError 'Values for 1 required "
                "arguments ...'.  Stadyn's crop read its input alone: one argument, and a run "
                "without the referent's data computed")
def crop__referent_among_the_arguments(C, r, np):
    r.touch("cntk.Function.arguments", "cntk.Function.eval")
    x = C.input_variable((1, 5, 5), name="x")
    ref = C.input_variable((1, 3, 3), name="ref")
    img = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    c = C.crop_manual(x, ref, 1, 1)
    res = {"arguments": [a.name for a in c.arguments],
           "inputs": [i.name for i in c.root_function.inputs],
           "without the referent": _said(lambda: c.eval({x: img})),
           "value": c.eval({x: img, ref: np.zeros((1, 1, 3, 3), np.float32)})}
    res["two arguments expected"] = _said(lambda: c.eval(img))
    auto = C.crop_automatic(x, ref)
    res["automatic arguments"] = [a.name for a in auto.arguments]
    return res

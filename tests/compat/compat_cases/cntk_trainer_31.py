"""Where ``stadyn.compat.cntk``'s Evaluator and Trainer did otherwise than CNTK 2.7 (round 31):
what an Evaluator writes as it is made; the samples ``test_minibatch`` averages a metric
without dynamic axes over; learners over a parameter given twice, or two learners over one
(rmE37)."""

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome
from compat_cases.cntk_fidelity_13 import _stderr_of


@cntk_case(names=["cntk.Evaluator"],
           note="an Evaluator of a metric over parameters no learner covers (it has no "
                "learners), with and without progress writers: CNTK 2.7's Evaluator writes "
                "nothing (the '[Note:] Trainer ctor: <n> of the model parameters are not "
                "covered ...' line is its Trainer's, Source/CNTKv2LibraryDll/Trainer.cpp; a "
                "ProgressPrinter writes CNTK's build information as it is made, before the "
                "Evaluator, and is made outside here).  Stadyn's Evaluator wrote the Trainer's "
                "note")
def evaluator__writes_nothing_as_it_is_made(C, r):
    r.touch("cntk.logging.ProgressPrinter", "cntk.layers.Dense",
            "cntk.losses.cross_entropy_with_softmax", "cntk.metrics.classification_error")
    x, y = C.input_variable(3), C.input_variable(2)
    z = C.layers.Dense(2, init=0.5)(x)
    metric = C.classification_error(z, y)
    writer = C.logging.ProgressPrinter(freq=1)
    res = {"no writers": _stderr_of(lambda: C.Evaluator(metric)),
           "a writer": _stderr_of(lambda: C.Evaluator(metric, [writer])),
           "without dynamic axes": _stderr_of(lambda: C.Evaluator(C.reduce_sum(
               C.input_variable(3, dynamic_axes=[]) * C.parameter(3, init=1.0))))}
    # (the Trainer still writes its note: W and b of the metric's Dense, no learner)
    loss = C.cross_entropy_with_softmax(z, y)
    res["a Trainer"] = _stderr_of(lambda: C.Trainer(z, (loss, metric), [C.sgd([z.W], 0.1)]))
    return res


@cntk_case(names=["cntk.Trainer.test_minibatch", "cntk.Evaluator.test_minibatch"],
           note="test_minibatch of a metric without dynamic axes (a reduction over all axes, "
                "one over an input made with dynamic_axes=[]): CNTK 2.7 divides the metric by "
                "the samples of the first input of the metric's root function "
                "(Source/CNTKv2LibraryDll/Evaluator.cpp:38-46, m_testSampleCountVar = "
                "RootFunction()->Inputs()[0]; GetSampleCount, :67-76: its value's size past "
                "the Variable's own axes, 1 for a Variable without dynamic axes), not by the "
                "first Variable with a batch axis under it as its Trainer counts a loss "
                "(Trainer.cpp:62-92).  Stadyn counted the first Variable with a batch axis "
                "(1.2 where CNTK gives 2.4 over two samples), the fed samples where there was "
                "none (0.6, 0.3), and refused an Evaluator of a metric no Variable with a "
                "dynamic axis is under (its Trainer's error for such a loss)")
def test_minibatch__metric_without_dynamic_axes(C, r):
    r.touch("cntk.Trainer.test_minibatch", "cntk.Evaluator.test_minibatch", "cntk.sgd",
            "cntk.reduce_sum", "cntk.reduce_mean", "cntk.parameter")
    x = C.input_variable(3, name="x")
    w = C.input_variable(3, dynamic_axes=[], name="w")
    p = C.parameter(3, init=1.0, name="p")
    loss = C.reduce_sum(x * p)
    every = C.Axis.all_axes()
    metrics = {
        "sum w": lambda: C.reduce_sum(w),
        "sum w * p": lambda: C.reduce_sum(w * p),
        "sum w + all of x": lambda: C.plus(C.reduce_sum(w), C.reduce_sum(x, axis=every)),
        "all of x + sum w": lambda: C.plus(C.reduce_sum(x, axis=every), C.reduce_sum(w)),
        "mean of all of x * w": lambda: C.reduce_mean(x * w, axis=every),
    }
    wv = np.array([0.2, 0.4, 0.6], np.float32)
    res = {}
    for label, metric in sorted(metrics.items()):
        m = metric()
        t = C.Trainer(loss, (loss, m), [C.sgd([p], 0.0)])
        for n in (1, 2, 4):
            xv = np.arange(3 * n, dtype=np.float32).reshape(n, 3) / 4
            res["%s, %d" % (label, n)] = outcome(
                lambda: t.test_minibatch({x: xv, w: wv}))
        if "x" not in label:
            ev = C.Evaluator(m)
            res[label + ", evaluator"] = outcome(lambda: ev.test_minibatch({w: wv}))
    return res


def _first_line(fn):
    """The first line of what ``fn()`` raised (CNTK's words), or ``"returns"``."""
    try:
        fn()
    except Exception as e:      # (the words are what is compared)
        return [next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins"),
                str(e).splitlines()[0]]
    return "returns"


@cntk_case(names=["cntk.ops.input_variable", "cntk.Function.eval"],
           note="data of another shape for an input with a free dimension "
                "(input_variable((FreeDimension, 3)), with and without dynamic axes): CNTK "
                "2.7's ValueError writes the free dimension '*' in the Variable's shape "
                "('...do not match the Variable 'Input('x', [], [* x 3])' shape '[* x 3]'.').  "
                "Stadyn wrote '[-3 x 3]' for an input without dynamic axes; and refused "
                "(N, 1, 5, 3) for the input with a batch axis (a sequence axis of length 1, "
                "which CNTK 2.7 takes as it takes (N, 1, 2, 3) for one of shape (2, 3))")
def fed__free_dimension_in_the_words(C, r):
    r.touch("cntk.FreeDimension", "cntk.reduce_sum", "cntk.Function.eval")
    x = C.input_variable((C.FreeDimension, 3), dynamic_axes=[], name="x")
    y = C.input_variable((C.FreeDimension, 3), name="y")
    res = {}
    for label, v, shape in (("x (2, 4)", x, (2, 4)), ("x (4,)", x, (4,)),
                            ("x (2, 2, 3)", x, (2, 2, 3)), ("x (1, 5, 3)", x, (1, 5, 3)),
                            ("y (2, 2, 4)", y, (2, 2, 4)), ("y (2,)", y, (2,)),
                            ("y (2, 3, 5, 3)", y, (2, 3, 5, 3)),
                            ("y (2, 1, 5, 3)", y, (2, 1, 5, 3))):
        f = C.reduce_sum(v)
        data = np.ones(shape, np.float32)
        res[label] = _first_line(lambda: f.eval({v: data}))
    return res


@cntk_case(names=["cntk.learners.sgd", "cntk.learners.adam", "cntk.learners.universal",
                  "cntk.learners.UserLearner", "cntk.Trainer",
                  "cntk.train.distributed.data_parallel_distributed_learner"],
           note="a learner given a parameter twice: CNTK 2.7's ValueError 'Learner's "
                "parameters list must not contain duplicates.' (sgd, adam, universal; "
                "Stadyn's message was its own; a UserLearner is made on CNTK 2.7: "
                "a known row); two learners over one parameter "
                "(the same learner twice, a UserLearner or a universal one beside sgd, a "
                "distributed learner beside sgd, a clone(share)'s parameters): the Trainer's "
                "ValueError 'covered by 2 different learners' (Utils.cpp:1021); a "
                "clone(clone)'s parameters are others: trained by a second learner",
           known={"UserLearner": "CNTK 2.7 makes a UserLearner over a list holding a "
                  "parameter twice; Stadyn's learners (learners/_learner.py "
                  "_parameter_list, under compat.cntk's UserLearner) refuse it with their "
                  "ParameterError (found by rmE37, left)"})
def learners__parameter_given_twice(C, r):
    x = C.input_variable(3)
    z = C.layers.Dense(4, init=C.glorot_uniform(seed=1))(x)
    W, b = z.W, z.b
    lr = C.learning_parameter_schedule(0.1)

    def update(ps, gs):
        return C.combine([C.assign(p, p - 0.1 * g) for p, g in zip(ps, gs)])

    class Keep(C.UserLearner):
        def update(self, gradient_values, training_sample_count, sweep_end):
            return True

    def message(make):
        try:
            make()
            return "made"
        except ValueError as e:
            return ["ValueError", str(e).split("\n")[0]]
    res = {"sgd": message(lambda: C.sgd([W, W, b], lr)),
           "adam": message(lambda: C.adam([b, W, b], lr, C.momentum_schedule(0.9))),
           "universal": message(lambda: C.universal(update, [W, W])),
           "UserLearner": message(lambda: Keep([W, b, W], lr)),
           "Trainer, one learner twice": message(lambda: C.Trainer(
               z, C.reduce_sum(z), [C.sgd([W, b], lr)] * 2)),
           "Trainer, UserLearner and sgd": message(lambda: C.Trainer(
               z, C.reduce_sum(z), [Keep([W], lr), C.sgd([W, b], lr)])),
           "Trainer, universal and sgd": message(lambda: C.Trainer(
               z, C.reduce_sum(z), [C.universal(update, [b]), C.sgd([W, b], lr)])),
           "Trainer, distributed and sgd": message(lambda: C.Trainer(
               z, C.reduce_sum(z), [C.train.distributed.data_parallel_distributed_learner(
                   C.sgd([W, b], lr)), C.sgd([b], lr)]))}
    shared = z.clone(C.CloneMethod.share, {x: C.input_variable(3)})
    res["Trainer, clone(share)"] = message(lambda: C.Trainer(
        shared, C.reduce_sum(shared), [C.sgd([W, b], lr), C.sgd(shared.parameters, lr)]))
    cloned = z.clone(C.CloneMethod.clone)
    res["Trainer, clone(clone)"] = message(lambda: C.Trainer(
        cloned, C.reduce_sum(cloned) + C.reduce_sum(z),
        [C.sgd([W, b], lr), C.sgd(cloned.parameters, lr)]))
    r.touch("cntk.Function.clone", "cntk.CloneMethod", "cntk.assign", "cntk.combine")
    return res

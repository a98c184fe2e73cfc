"""Where ``stadyn.compat.cntk``'s Evaluator and Trainer did otherwise than CNTK 2.7 (round 31):
what an Evaluator writes as it is made; the samples ``test_minibatch`` averages a metric
without dynamic axes over."""

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

"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (review B of round 31): the
samples ``test_minibatch`` averages a metric given as a Variable or a Combine over; an
Evaluator of a Function of several outputs; a clone's criteria without a batch axis."""

import re

import numpy as np

from compat_harness import cntk_case, outcome
from compat_cases.cntk_trainer_31 import _first_line


@cntk_case(names=["cntk.Trainer.test_minibatch", "cntk.Evaluator.test_minibatch"],
           note="test_minibatch of a metric without dynamic axes given as a Variable "
                "(f.output, either output of a (loss, metric)-valued Function) or a "
                "C.combine: CNTK 2.7's sanitize_function makes a Variable combine([v]) "
                "(cntk/internal/sanitize.py), whose root function's Inputs()[0] -- what its "
                "Evaluator counts a test on, Source/CNTKv2LibraryDll/Evaluator.cpp:38-46 -- "
                "is the metric itself: one sample, the test's average the plain sum (15.0 "
                "for reduce_sum(x, all_axes).output over two rows, 7.5 for the Function).  "
                "Stadyn looked under the Variable's op whichever was given")
def test_minibatch__metric_given_as_a_variable(C, r):
    r.touch("cntk.Trainer.test_minibatch", "cntk.Evaluator.test_minibatch", "cntk.sgd",
            "cntk.reduce_sum", "cntk.parameter", "cntk.combine", "cntk.Function.output",
            "cntk.Function.outputs")
    x = C.input_variable(3, name="x")
    w = C.input_variable(3, dynamic_axes=[], name="w")
    p = C.parameter(3, init=1.0, name="p")
    loss = C.reduce_sum(x * p)
    every = C.Axis.all_axes()
    res = {}
    for n in (1, 2, 3):
        xv = np.arange(3 * n, dtype=np.float32).reshape(n, 3) / 4
        wv = np.array([0.2, 0.4, 0.6], np.float32)
        feed = {x: xv, w: wv}
        s = C.reduce_sum(x * w, axis=every)
        given = {"function": s, "output": s.output, "combine": C.combine([s]),
                 "combine of output": C.combine([s.output])}
        for label, m in sorted(given.items()):
            t = C.Trainer(loss, (loss, m), [C.sgd([p], 0.0)])
            res["trainer %s, %d" % (label, n)] = outcome(lambda: t.test_minibatch(feed))
            ev = C.Evaluator(m)
            res["evaluator %s, %d" % (label, n)] = outcome(lambda: ev.test_minibatch(feed))
        # a (loss, metric)-valued Function: its outputs are Variables
        both = C.combine([loss, s])
        t = C.Trainer(loss, both, [C.sgd([p], 0.0)])
        res["two-output criterion, %d" % n] = outcome(lambda: t.test_minibatch(feed))
    return res


@cntk_case(names=["cntk.Evaluator"],
           note="an Evaluator of a Function of several outputs: CNTK 2.7 refuses it as it is "
                "made (RuntimeError: A Function instance 'Composite(Combine): ...' with more "
                "than one output cannot be implicitly converted to a Variable.).  Stadyn made "
                "it and tested one of the outputs")
def evaluator__several_outputs_refused(C, r):
    r.touch("cntk.combine", "cntk.classification_error")
    x = C.input_variable(2, name="x")
    y = C.input_variable(2, name="y")

    def words(fn):      # (the outputs' uids masked: they count the ops made before)
        kind, text = _first_line(fn)
        return [kind, re.sub(r"[A-Za-z]+\d+_Output_0", "<uid>", text)]
    res = {"two": words(lambda: C.Evaluator(C.combine([x * 1, x * 2]))),
           "three": words(lambda: C.Evaluator(C.combine(
               [x * 1, C.classification_error(x, y), x + 1])))}
    ev = C.Evaluator(C.combine([C.classification_error(x, y)]))
    feed = {x: np.eye(2, dtype=np.float32), y: np.eye(2, dtype=np.float32)[::-1]}
    res["one"] = outcome(lambda: ev.test_minibatch(feed))
    return res


@cntk_case(names=["cntk.Function.clone"],
           note="clone (each method) of a function whose output has no batch axis though its "
                "inputs have one (classification_error with topN, a reduce_sum over all "
                "axes): CNTK 2.7's copy has no dynamic axes either, and evaluates to one "
                "number.  Stadyn's rebuilt op had the batch axis again")
def clone__keeps_an_output_without_a_batch_axis(C, r):
    r.touch("cntk.classification_error", "cntk.reduce_sum", "cntk.Function.eval",
            "cntk.CloneMethod", "cntk.Function.output", "cntk.Function.clone")
    z = C.input_variable(3, name="z")
    y = C.input_variable(3, name="y")
    feed = {z: np.array([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1]], np.float32),
            y: np.array([[1, 0, 0], [0, 0, 1]], np.float32)}
    made = {"top 2 error": C.classification_error(z, y, topN=2),
            "sum of all": C.reduce_sum(z, axis=C.Axis.all_axes())}
    res = {}
    for label, f in sorted(made.items()):
        for method in ("share", "clone", "freeze"):
            g = f.clone(getattr(C.CloneMethod, method))
            key = "%s, %s" % (label, method)
            res[key + ", axes"] = [[a.name, bool(a.is_ordered)] for a in g.output.dynamic_axes]
            res[key] = np.asarray(g.eval({g.arguments[k]: feed[a] for k, a in
                                          enumerate(f.arguments)}))
    return res

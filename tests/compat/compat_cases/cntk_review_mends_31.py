"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (review B of round 31): the
samples ``test_minibatch`` averages a metric given as a Variable or a Combine over; an
Evaluator of a Function of several outputs; a clone's criteria without a batch axis."""

import io
import re

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome
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


@cntk_case(names=["cntk.losses.weighted_binary_cross_entropy"],
           note="weighted_binary_cross_entropy that CNTK 2.7 builds but refuses when it runs: "
                "an output without dynamic axes ('Node 'Logistic<n>' (Logistic operation): "
                "Expected MBLayout in Input 0.', ValidateBinaryReduce, ComputationNode.cpp:"
                "470-490, before the weight's size is checked); a weight on other dynamic axes "
                "than the output's (the batch axis beside a sequence's, or the reverse: "
                "ColumnRangeWithMBLayoutFor, naming the weight an InputValue).  Stadyn said "
                "the weights' dimensions do not match, computed an all-unbatched one and a "
                "sequence output with a batch-only weight, and refused a sequence weight "
                "beside a sequence output (1.27498 in CNTK 2.7)")
def weighted_logistic__refusals_on_dynamic_axes(C, r):
    r.touch("cntk.Function.eval", "cntk.sequence.input_variable")
    bo, bt = C.input_variable(1, name="bo"), C.input_variable(1, name="bt")
    so, st = C.sequence.input_variable(1, name="so"), C.sequence.input_variable(1, name="st")
    uo = C.input_variable(1, dynamic_axes=[], name="uo")
    ut = C.input_variable(1, dynamic_axes=[], name="ut")
    bw, sw = C.input_variable(1, name="bw"), C.sequence.input_variable(1, name="sw")
    uw = C.input_variable(1, dynamic_axes=[], name="uw")
    uw2 = C.input_variable(2, dynamic_axes=[], name="uw2")
    sw2 = C.sequence.input_variable(2, name="sw2")
    values = {"b": np.array([[0.3], [0.6]], np.float32), "t": np.array([[1.], [0.]], np.float32),
              "s": [np.array([[0.3], [0.5]], np.float32), np.array([[0.8]], np.float32)],
              "st": [np.array([[1.], [0.]], np.float32), np.array([[1.]], np.float32)],
              "sw": [np.array([[2.], [1.]], np.float32), np.array([[3.]], np.float32)],
              "u": np.array([0.3], np.float32), "ut": np.array([1.], np.float32),
              "uw": np.array([2.], np.float32), "uw2": np.array([2., 1.], np.float32),
              "bw": np.array([[2.], [3.]], np.float32),
              "sw2": [np.ones((2, 2), np.float32), np.ones((1, 2), np.float32)]}
    cases = {"unbatched o, t; batched w": (uo, ut, bw, "u", "ut", "bw"),
             "unbatched o, t, w": (uo, ut, uw, "u", "ut", "uw"),
             "unbatched o, t; w of 2": (uo, ut, uw2, "u", "ut", "uw2"),
             "unbatched o, t; sequence w": (uo, ut, sw, "u", "ut", "sw"),
             "batched o, t; unbatched w": (bo, bt, uw, "b", "t", "uw"),
             "batched o, t; sequence w": (bo, bt, sw, "b", "t", "sw"),
             "sequence o, t; batched w": (so, st, bw, "s", "st", "bw"),
             "sequence o, t; sequence w": (so, st, sw, "s", "st", "sw"),
             "sequence o, t; sequence w of 2": (so, st, sw2, "s", "st", "sw2")}

    def words(fn):      # (the nodes' uids masked: they count the ops made before)
        got = _first_line(fn)
        if got == "returns":
            return [float(np.asarray(fn()))]
        return [got[0], re.sub(r"\b(Input|Logistic)\d+\b", r"\1<n>", got[1])]
    res = {}
    for label, (o, t, w, ov, tv, wv) in sorted(cases.items()):
        f = C.weighted_binary_cross_entropy(o, t, w)
        bound = {o: values[ov], t: values[tv], w: values[wv]}
        res[label] = words(lambda: f.eval(bound))
    return res


@cntk_case(names=["cntk.debugging.debug_model"],
           note="debug_model of a go_backwards Recurrence (a loop of FutureValues) over "
                "sequences of 3 and 1 steps, differentiated with 'n' at each stop: CNTK 2.7 "
                "stops at the FutureValue 3 times (once a step) in the forward pass and once "
                "in the backward pass (after the RNNStep), where Stadyn stopped 3 times in "
                "both (a PastValue loop: 3 times in both, in CNTK too)",
           known={"debugged grads": "CNTK 2.7's gradients through its debug nodes in a "
                  "FutureValue loop are not its plain grad's (the RNNStep's W 0.12513 where "
                  "its grad gives 0.12642, the Dense's b 0.20076 for 0.20335: CNTK's own "
                  "'plain grads' here); Stadyn's debugged model gives the plain gradients"})
def debug_model_backwards_recurrence(C, r):
    r.touch("cntk.layers.Recurrence", "cntk.layers.RNNStep", "cntk.layers.Dense",
            "cntk.layers.Sequential", "cntk.sequence.input_variable", "cntk.Function.grad")
    x = C.sequence.input_variable(2, name="x")
    m = C.layers.Sequential([C.layers.Recurrence(C.layers.RNNStep(2, init=0.1),
                                                 go_backwards=True),
                             C.layers.Dense(1, init=0.2)])(x)
    data = [np.ones((3, 2), np.float32) * 0.5, np.ones((1, 2), np.float32)]
    out = io.StringIO()
    dz = C.debugging.debug_model(m, io.StringIO("n\n" * 80), out)
    debugged = dz.grad({dz.arguments[0]: data}, wrt=dz.parameters)
    plain = m.grad({x: data}, wrt=m.parameters)
    stops = [re.sub(r"\(.*", "", ln.split(" with uid")[0]) for ln in out.getvalue().splitlines()
             if " with uid" in ln]
    return {"stops": stops, "debugged grads": [debugged[p] for p in dz.parameters],
            "plain grads": [plain[p] for p in m.parameters]}

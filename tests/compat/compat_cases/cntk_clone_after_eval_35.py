"""clonebatch35: a clone made after an earlier run fed a shared input a batch of 2 or 3.  CNTK
2.7's inputs hold nothing between runs, so ``splice(z, y).clone(share, {z: w})`` after
``plus(x, y)`` was evaluated on 2 samples is of (1, 6) on one sample each; Stadyn's clone copied
``y`` with the batch that run fed it (and without a free batch axis) and refused the splice."""

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


def _one(n, value=1.0):
    return np.full((n, 3), value, np.float32)


def _run(C, how, n, x, y):
    """Feed ``x`` and ``y`` a batch of ``n`` by ``how`` (eval, forward, backward, a Trainer)."""
    if how == "eval":
        C.plus(x, y).eval({x: _one(n), y: _one(n)})
    elif how == "forward":
        p = C.plus(x, y)
        p.forward({x: _one(n), y: _one(n)})
    elif how == "backward":
        xg = C.input_variable(3, needs_gradient=True)
        q = C.plus(xg, y)
        state, _ = q.forward({xg: _one(n), y: _one(n)}, [q.output], set([q.output]))
        q.backward(state, {q.output: _one(n)}, set([xg]))
    else:
        w = C.parameter((3, 3), init=0.1)
        z = C.times(x, w)
        learner = C.sgd(z.parameters, C.learning_parameter_schedule(0.1))
        C.Trainer(z, (C.squared_error(z, y), None), [learner]).train_minibatch(
            {x: _one(n), y: _one(n)})


def _cloned(C, op, how, n):
    x, y, z = C.input_variable(3), C.input_variable(3), C.input_variable(3)
    _run(C, how, n, x, y)
    g = op(z, y).clone(C.CloneMethod.share, {z: C.input_variable(3)})
    a = g.arguments
    value = np.asarray(g.eval({a[0]: _one(1, 2.0), a[1]: _one(1)}))
    return {"shape": list(g.output.shape), "value": value}


@cntk_case(names=["cntk.ops.splice", "cntk.Function.clone", "cntk.ops.plus",
                  "cntk.ops.times_transpose", "cntk.ops.element_times", "cntk.ops.reduce_sum",
                  "cntk.Trainer", "cntk.ops.input_variable"],
           note="after a run (eval, forward, backward, a Trainer step) fed a shared input a "
                "batch of 2 or 3, cloning another function over it onto a new input gives "
                "CNTK 2.7's shape and one sample's value: Stadyn's splice clones raised "
                "CloneShapeError (Expected 1 ... got 2)")
def clone__after_a_run_fed_a_shared_input(C, r, np):
    res = {}
    r.touch("cntk.Function.clone")      # (a method: reached through the Function)
    ops = {"splice": lambda a, b: C.splice(a, b),
           "splice axis 0": lambda a, b: C.splice(a, b, axis=0),
           "times_transpose": C.times_transpose, "plus": C.plus,
           "element_times": C.element_times,
           "reduce_sum + y": lambda a, b: C.reduce_sum(a) + b}
    for name, op in ops.items():
        for n in (2, 3):
            for how in ("eval", "forward", "backward", "trainer"):
                res[f"{name}, {how} of {n}"] = outcome(lambda: _cloned(C, op, how, n),
                                                        convert=as_returned, raised=as_raised)
    return res


@cntk_case(names=["cntk.ops.splice", "cntk.Function.clone", "cntk.FreeDimension",
                  "cntk.sequence.input_variable"],
           note="the same over an input with a FreeDimension fed (2, 4, 3) (Stadyn's clone kept "
                "the batch and the length 4 and refused), and over sequence inputs fed two "
                "sequences of 4")
def clone__after_a_run_free_dimension_and_sequences(C, r, np):
    res = {}
    r.touch("cntk.Function.clone")

    def free():
        x, y = C.input_variable((C.FreeDimension, 3)), C.input_variable((C.FreeDimension, 3))
        C.plus(x, y).eval({x: np.ones((2, 4, 3), np.float32), y: np.ones((2, 4, 3), np.float32)})
        z = C.input_variable((C.FreeDimension, 3))
        g = C.splice(z, y).clone(C.CloneMethod.share, {z: C.input_variable((C.FreeDimension, 3))})
        a = g.arguments
        value = np.asarray(g.eval({a[0]: np.full((1, 2, 3), 2, np.float32),
                                   a[1]: np.ones((1, 2, 3), np.float32)}))
        return {"shape": list(g.output.shape), "value": value}

    def sequences():
        x, y = C.sequence.input_variable(3), C.sequence.input_variable(3)
        four = [np.ones((4, 3), np.float32)] * 2
        C.plus(x, y).eval({x: four, y: four})
        z = C.sequence.input_variable(3)
        g = C.splice(z, y).clone(C.CloneMethod.share, {z: C.sequence.input_variable(3)})
        a = g.arguments
        value = g.eval({a[0]: [np.full((2, 3), 2, np.float32)],
                        a[1]: [np.ones((2, 3), np.float32)]})
        return {"shape": list(g.output.shape), "value": np.asarray(value[0])}

    res["free dimension"] = outcome(free, convert=as_returned, raised=as_raised)
    res["sequences"] = outcome(sequences, convert=as_returned, raised=as_raised)
    return res

"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 with ops over a parameter whose
inferred axes no op had fixed yet (cntkinfer41): CNTK 2.7 builds such an op, shows ``-1`` for
the axes it cannot know, and refuses the graph only when it is run; Stadyn refused the op as
it was made."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)
_first_line = functools.partial(outcome, convert=as_returned,
                                raised=functools.partial(as_raised, first_line=True))


def _shape(f):
    return list(f.shape)


@cntk_case(names=["cntk.ops.parameter", "cntk.ops.tanh", "cntk.ops.times", "cntk.ops.relu",
                  "cntk.ops.reduce_sum", "cntk.Function.shape"],
           note="an op over a parameter whose InferredDimension axes no op has fixed: CNTK 2.7 "
                "builds it (tanh(p) of p (?, 3): shape (-1, 3); times(W (3, ?), x (4)): "
                "(3, -1, 4)) and refuses it only when run (eval, forward, grad: ValueError "
                "'Parameter or Constant ... with unresolved shape [? x 3] found when compiling "
                "the Function graph.'); Stadyn refused the op as it was made (ValueError)")
def unresolved_parameter__op_built_refused_when_run(C, r, np):
    inferred = C.InferredDimension
    r.touch("cntk.Function.shape")

    def run(make, how):
        def ran():
            p = C.parameter((inferred, 3), init=0.5, name="p")
            f = make(p)
            if how == "eval":
                return f.eval()
            if how == "forward":
                return f.forward({})[1]
            return f.grad({}, wrt=[p])
        return ran

    def shown(make):
        def made():
            p = C.parameter((inferred, 3), init=0.5, name="p")
            f = make(p)
            return {"shape": _shape(f), "p": _shape(p), "dynamic axes": len(f.dynamic_axes)}
        return made

    def times_run():
        W = C.parameter((3, inferred), init=0.5, name="W")
        x = C.input_variable(4, name="x")
        return C.times(W, x).eval({x: np.ones((1, 4), np.float32)})

    tanh = C.tanh
    return {
        "tanh shape": _outcome(shown(tanh)),
        "relu shape": _outcome(shown(C.relu)),
        "tanh * 2 shape": _outcome(shown(lambda p: C.tanh(p) * 2)),
        "reduce_sum axis 1 shape": _outcome(shown(lambda p: C.reduce_sum(p, axis=1))),
        "times(W (3, ?), x (4)) shape": _outcome(lambda: _shape(C.times(
            C.parameter((3, inferred), name="W"), C.input_variable(4)))),
        "times(W (3, ?, 5), x (4)) shape": _outcome(lambda: _shape(C.times(
            C.parameter((3, inferred, 5), name="W"), C.input_variable(4)))),
        "tanh eval": _first_line(run(tanh, "eval")),
        "tanh forward": _first_line(run(tanh, "forward")),
        "tanh grad": _first_line(run(tanh, "grad")),
        "tanh * 2 eval": _first_line(run(lambda p: C.tanh(p) * 2, "eval")),
        "times eval": _first_line(times_run),
    }


@cntk_case(names=["cntk.ops.parameter", "cntk.ops.tanh", "cntk.ops.plus", "cntk.ops.relu",
                  "cntk.Function.shape",
                  "cntk.Parameter.shape"],
           note="an op built over a parameter whose axes another op infers later: CNTK 2.7 "
                "keeps the shape it showed ((-1,)) until its first run, which computes over the "
                "inferred parameter (5 values) and shows (5,) after; relu infers nothing (in "
                "relu(p) + x, p stays (-1,)). Stadyn refused tanh(p) as it was made")
def unresolved_parameter__inferred_after_the_op(C, r, np):
    inferred = C.InferredDimension
    r.touch("cntk.Function.shape")
    r.touch("cntk.Parameter.shape")

    def later():
        p = C.parameter((inferred,), init=0.5, name="p2")
        t = C.tanh(p)
        before = _shape(t)
        s = p + C.input_variable(5)
        shown = {"p": _shape(p), "t": _shape(t)}
        value = t.eval()
        return {"before": before, "after plus": shown, "eval": value, "after eval": _shape(t),
                "sum shape": _shape(s)}

    def later_chain():
        p = C.parameter((inferred,), init=0.5, name="p2")
        t = C.tanh(p) * 2
        before = _shape(t)
        C.element_times(p, C.input_variable(3))
        return {"before": before, "eval": t.eval(), "after eval": _shape(t)}

    def later_grad():
        p = C.parameter((inferred,), init=0.5, name="p2")
        t = C.tanh(p)
        C.plus(p, C.input_variable(2))
        return t.grad({}, wrt=[p])

    def through_relu():
        p = C.parameter((inferred,), init=0.5, name="p3")
        x = C.input_variable(5)
        z = C.relu(p) + x
        return {"p": _shape(p), "z": _shape(z)}

    return {
        "tanh, then p + x": _outcome(later),
        "tanh * 2, then p * x": _outcome(later_chain),
        "tanh, then p + x, grad": _outcome(later_grad),
        "relu(p) + x": _outcome(through_relu),
    }


@cntk_case(names=["cntk.ops.parameter", "cntk.ops.times", "cntk.Parameter.shape",
                  "cntk.Function.shape"],
           note="times(W, x) with W's last axis inferred, W the LEFT operand (CNTK's "
                "Times(x, W): PrimitiveFunction.h TimesOpOutputShape matches W's trailing "
                "axes with x's leading rank(x) - output_rank ones): x (4, 2) makes W (3, 4) "
                "and the output (3, 2); x (3, 2, 5): W (3, 2), output (5,); x (4) reduces "
                "nothing (output (3, -1, 4), W waits); x (4, 2, 5): ValueError. Stadyn "
                "inferred the right operand only and refused the op (ValueError)")
def unresolved_parameter__times_infers_its_left_operand(C, r, np):
    r.touch("cntk.Parameter.shape")
    r.touch("cntk.Function.shape")

    def made(given):
        def run():
            W = C.parameter((3, C.InferredDimension), init=1.0, name="W")
            x = C.input_variable(given)
            z = C.times(W, x)
            return {"shape": _shape(z), "W": _shape(W),
                    "eval": z.eval({x: np.ones((1,) + given, np.float32)})}
        return run

    def waiting():
        W = C.parameter((3, C.InferredDimension), init=1.0, name="W")
        return {"shape": _shape(C.times(W, C.input_variable(4))), "W": _shape(W)}

    return {
        "x (4, 2)": _outcome(made((4, 2))),
        "x (3, 2, 5)": _outcome(made((3, 2, 5))),
        "x (4, 2, 5)": _outcome(made((4, 2, 5))),
        "x (4)": _outcome(waiting),
    }


def _view_refusal(exc):
    """The built-in type, and whether the message is CNTK's for making a value of an unknown
    shape (Stadyn adds its hint after CNTK's words)."""
    return {"raises": as_raised(exc)["raises"],
            "NDArrayView": str(exc).startswith("Cannot create an NDArrayView using a view "
                                               "shape '[?]' that has unknown dimensions")}


@cntk_case(names=["cntk.ops.parameter", "cntk.learners.sgd", "cntk.train.trainer.Trainer",
                  "cntk.learners.learning_parameter_schedule", "cntk.ops.tanh"],
           note="a learner over a parameter whose inferred axes no op has fixed: CNTK 2.7's "
                "sgd (and a Trainer given one) raises ValueError 'Cannot create an NDArrayView "
                "using a view shape '[?]' that has unknown dimensions for any of its axes.'; "
                "Stadyn raised its ValueError for an unresolved parameter (another message)")
def unresolved_parameter__learner_refuses_it(C, r, np):
    refused = functools.partial(outcome, convert=as_returned, raised=_view_refusal)

    def sgd():
        p = C.parameter((C.InferredDimension,), init=0.5, name="p4")
        C.sgd([p], C.learning_parameter_schedule(0.1))
        return "made"

    def trainer():
        p = C.parameter((C.InferredDimension,), init=0.5, name="p4")
        t = C.tanh(p)
        C.Trainer(t, (t, None), [C.sgd(t.parameters, C.learning_parameter_schedule(0.1))])
        return "made"

    return {"sgd": refused(sgd), "Trainer": refused(trainer)}

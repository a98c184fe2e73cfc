"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (cntkfn41): a ``@C.Function`` of
untyped arguments whose body makes a user function (CNTK 2.7 runs the body once and each call
clones its graph, the user function by its ``clone``; Stadyn ran the body again on each
call's operands), and ``times`` over a parameter with an inferred axis that it refuses
(CNTK 2.7 infers nothing then; Stadyn had fixed the axis before refusing)."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


@cntk_case(names=["cntk.ops.times", "cntk.ops.parameter", "cntk.Parameter.shape",
                  "cntk.Function.shape", "cntk.Function.eval"],
           note="times(W (3, ?), x (4, 2, 5)) refused (ValueError, both): CNTK 2.7 leaves W "
                "(3, -1), so a later times(W, x (3, 6)) infers W (3, 3) and gives (3, 6) "
                "(all 3s over ones); Stadyn had fixed W (3, 2) before refusing, so the later "
                "op was refused too (and times(W (?, 3), x (4, 2, 5)), times(x (4, 2), "
                "W (3, ?, 5)) fixed W likewise)")
def times__refused_op_infers_nothing(C, r, np):
    r.touch("cntk.Parameter.shape")
    r.touch("cntk.Function.shape")
    r.touch("cntk.Function.eval")
    inferred = C.InferredDimension

    def refused_then_valid():
        W = C.parameter((3, inferred), init=1.0, name="W")
        refused = outcome(lambda: C.times(W, C.input_variable((4, 2, 5))),
                          convert=lambda f: "built", raised=as_raised)
        after = list(W.shape)
        x = C.input_variable((3, 6), name="x")
        z = C.times(W, x)
        return {"refused": refused,
                "W after the refusal": after, "later shape": list(z.shape),
                "W after the later op": list(W.shape),
                "later eval": z.eval({x: np.ones((1, 3, 6), np.float32)}).tolist()}

    def refused_shape(make_W, make):
        def run():
            W = make_W()
            try:
                make(W)
            except ValueError:
                return {"W": list(W.shape)}
            return {"W": list(W.shape), "built": True}
        return run

    return {
        "times(W (3, ?), x (4, 2, 5)) then times(W, x (3, 6))": _outcome(refused_then_valid),
        "times(W (?, 3), x (4, 2, 5))": _outcome(refused_shape(
            lambda: C.parameter((inferred, 3), init=1.0),
            lambda W: C.times(W, C.input_variable((4, 2, 5))))),
        "times(x (4, 2), W (3, ?, 5))": _outcome(refused_shape(
            lambda: C.parameter((3, inferred, 5), init=1.0),
            lambda W: C.times(C.input_variable((4, 2)), W))),
        "times(x (4, 2), W (?, 3, 5))": _outcome(refused_shape(
            lambda: C.parameter((inferred, 3, 5), init=1.0),
            lambda W: C.times(C.input_variable((4, 2)), W))),
    }

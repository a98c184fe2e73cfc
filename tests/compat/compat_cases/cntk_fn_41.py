"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (cntkfn41): a ``@C.Function`` of
untyped arguments whose body makes a user function (CNTK 2.7 runs the body once and each call
clones its graph, the user function by its ``clone``; Stadyn ran the body again on each
call's operands), and ``times`` over a parameter with an inferred axis that it refuses
(CNTK 2.7 infers nothing then; Stadyn had fixed the axis before refusing)."""

import functools

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome


_outcome = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _scale_classes(C):
    UserFunction = C.ops.functions.UserFunction

    class Scale(UserFunction):
        def __init__(self, arg, k=2.0, name="Scale"):
            super(Scale, self).__init__([arg], name=name)
            self.k = k

        def forward(self, argument, device=None, outputs_to_retain=None):
            return None, argument * self.k

        def backward(self, state, root_gradients):
            return root_gradients * self.k

        def infer_outputs(self):
            x = self.inputs[0]
            return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]

    class Scale10(Scale):
        def clone(self, cloned_inputs):
            return Scale10(cloned_inputs[0], k=self.k * 10, name=self.name)

    return Scale, Scale10


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.user_function",
                  "cntk.ops.functions.Function", "cntk.ops.functions.UserFunction.clone",
                  "cntk.Function.eval"],
           note="@C.Function of an untyped argument whose body makes a UserFunction "
                "(k = 3 + the number of times the body ran): CNTK 2.7 runs the body once as "
                "it is decorated (k 4) and each call clones it: the default clone makes the "
                "class again with its default k (2.0: x2), a clone making ten times k x40, "
                "on every call; Stadyn ran the body again per call (x5, x6, ...)")
def function_decorator__user_function_cloned_per_call(C, r, np):
    r.touch("cntk.Function.eval")
    r.touch("cntk.ops.functions.UserFunction.clone")
    r.touch("cntk.ops.functions.Function")
    out = {}
    for cls in _scale_classes(C):
        runs = []

        @C.Function
        def f(x):
            runs.append(1)
            return C.user_function(cls(x, k=3.0 + len(runs)))

        values = []
        for _ in range(2):
            y = C.input_variable(2)
            values.append(f(y).eval({y: np.ones((1, 2), np.float32)}).tolist())
        out[cls.__name__] = values
    return out


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


@cntk_case(names=["cntk.ops.functions.UserFunction", "cntk.user_function",
                  "cntk.Function.update_signature", "cntk.Function.eval"],
           note="@C.Function of an untyped argument whose body makes a UserFunction (k = 4 + "
                "the number of times the body ran), then update_signature(2): CNTK 2.7 binds "
                "the graph its one run made in place (k 5: x5); Stadyn ran the body again "
                "(x7)")
def function_decorator__user_function_bound_in_place(C, r, np):
    r.touch("cntk.Function.eval")
    r.touch("cntk.Function.update_signature")
    Scale = _scale_classes(C)[0]
    runs = []

    @C.Function
    def f(x):
        runs.append(1)
        return C.user_function(Scale(x, k=4.0 + len(runs)))

    f.update_signature(2)
    return {"eval": f.eval({f.arguments[0]: np.ones((1, 2), np.float32)}).tolist()}

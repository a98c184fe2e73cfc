"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (eleventh round, found running
CNTK's examples): ``hard_sigmoid`` at NaN and at its bounds; the ValueError for a minibatch
whose shape does not fit the input."""

import numpy as np

from compat_harness import cntk_case


@cntk_case(names=["cntk.ops.hard_sigmoid"],
           note="CNTK 2.7's HardSigmoid block is s = x * alpha + beta, Select(s < 1, s, 1), "
                "then Select(b > 0, b, 0): NaN gives 1 and the gradient is 0 where s is "
                "exactly 0 or 1; Stadyn clipped (NaN stayed NaN, gradient alpha at the bounds)")
def hard_sigmoid__nan_and_bounds(C, r):
    r.touch("cntk.ops.hard_sigmoid")
    x = C.input_variable(7, needs_gradient=True)
    data = np.array([[np.nan, -1.0, 1.0, 0.2, -3.0, 4.0, 0.0]], np.float32)
    res = {}
    for alpha, beta in ((0.5, 0.5), (0.2, 0.5), (0.25, 0.0)):
        y = C.hard_sigmoid(x, alpha, beta)
        key = "%g_%g" % (alpha, beta)
        res["value_" + key] = y.eval({x: data})
        res["grad_" + key] = y.grad({x: data}, wrt=[x])
    return res


def _raised(fn):
    """The built-in type and the first line of what ``fn()`` raised."""
    try:
        fn()
    except Exception as e:
        builtin = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
        return [builtin, str(e).splitlines()[0].split(";")[0].split("'")[0]]
    return ["no error"]


@cntk_case(names=["cntk.Function.eval"],
           note="a minibatch of lower rank than the input's sample: CNTK 2.7 raises ValueError "
                "\"Value's rank (2) should be >= the Variable's rank (3)\", one whose trailing "
                "dimensions differ \"The trailing dimensions of the Value shape ... do not "
                "match\"; Stadyn raised a StadynError (no ValueError) of its own wording")
def eval__minibatch_of_the_wrong_shape(C, r):
    r.touch("cntk.Function.eval")
    x = C.input_variable((3, 2, 2))
    f = C.reduce_sum(x)
    res = {}
    for shape in ((2, 2), (5, 2, 2), (4, 3, 2, 3)):
        res["x".join(map(str, shape))] = _raised(
            lambda: f.eval({x: np.zeros(shape, np.float32)}))
    return res

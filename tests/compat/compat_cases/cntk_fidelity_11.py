"""Where ``stadyn.compat.cntk`` did otherwise than CNTK 2.7 (eleventh round, found running
CNTK's examples): ``hard_sigmoid`` at NaN and at its bounds."""

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

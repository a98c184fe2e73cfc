"""What CNTK 2.7's graph shows once it has run: its first run clones each float32 constant of
a float64 op as a float64 constant (the same name), and the walks (``constants``, ``inputs``)
show the clone from then on; the constant the user holds stays float32.  A float64 ``Fold``'s
two ``Sequence::Slice`` scalars likewise turn float64."""

import numpy as np

from compat_harness import cntk_case


def _constants(f):
    return sorted([list(c.shape), np.dtype(c.dtype).name, np.asarray(c.value).dtype.name,
                   c.name] for c in f.constants)


@cntk_case(names=["cntk.constant", "cntk.Function.constants", "cntk.Function.inputs",
                  "cntk.Function.eval", "cntk.Function.grad", "cntk.layers.Fold",
                  "cntk.layers.default_options"],
           note="before and after the first run (eval, grad, or a run of a Function built on "
                "it): float32 constants in float64 ops, a float64 Fold's scalars. Stadyn kept "
                "showing them float32 after runs")
def float32_constants_after_the_first_run(C, r):
    r.touch("cntk.Function.constants", "cntk.Function.inputs", "cntk.Function.eval",
            "cntk.Function.grad")
    res = {}
    x = C.input_variable(2, dtype=np.float64)
    c = C.constant(np.ones(2, np.float32), name="c32")
    g = x * c + C.constant(np.full(2, 0.5, np.float64), name="c64")
    res["user before"] = _constants(g)
    res["eval"] = g.eval({x: np.ones((1, 2))})
    res["user after"] = _constants(g)
    res["held constant"] = [np.dtype(c.dtype).name, np.asarray(c.value).dtype.name]
    res["times inputs"] = [[i.name, np.dtype(i.dtype).name]
                           for i in g.root_function.inputs[0].owner.inputs]
    for key, run in [("eval", lambda f, s: f.eval({s: [np.ones((3, 2))]})),
                     ("grad", lambda f, s: f.grad({s: [np.ones((3, 2))]},
                                                  wrt=f.parameters[:1])),
                     ("outer eval", lambda f, s: C.reduce_sum(f).eval({s: [np.ones((3, 2))]}))]:
        s = C.sequence.input_variable(2, dtype=np.float64)
        with C.layers.default_options(dtype=np.float64):
            f = C.layers.Fold(C.layers.GRU(2))(s)
        res["Fold before " + key] = _constants(f)
        run(f, s)
        res["Fold after " + key] = _constants(f)
    s32 = C.sequence.input_variable(2)
    f32 = C.layers.Fold(C.layers.GRU(2))(s32)
    f32.eval({s32: [np.ones((3, 2), np.float32)]})
    res["float32 Fold after eval"] = _constants(f32)
    return res

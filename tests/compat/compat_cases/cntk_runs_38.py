"""Which outputs a CNTK Function's runs may request: CNTK 2.7 refuses one outside the graph
of the Function's outputs (ValueError), and, once a training-phase run (``grad``,
``forward`` with ``keep_for_backward``) has compiled the graph for the outputs it requested,
any other output in a later run (RuntimeError); a plain ``forward`` compiles nothing."""

import numpy as np

from compat_cases.cntk_sequence_begin import _attempt
from compat_harness import cntk_case


def _graph(C):
    x = C.input_variable(2, needs_gradient=True)
    h = C.sqrt(x)
    k = C.log(h + 1)
    return x, h, k, k * 3, C.exp(x)


@cntk_case(names=["cntk.Function.grad", "cntk.Function.forward", "cntk.Function.eval"],
           note="grad/forward/eval with requested outputs outside the graph, and after a "
                "training-phase run an output it did not request: CNTK 2.7 ValueError and "
                "RuntimeError (Stadyn computed every one)")
def requested_outputs_outside_the_compiled_set(C, r):
    r.touch("cntk.Function.grad", "cntk.Function.forward", "cntk.Function.eval")
    data = np.array([[1.0, 4.0]], np.float32)
    res = {}

    def run(name, steps):
        x, h, k, f, g = _graph(C)
        nodes = {"x": x, "h": h, "k": k, "f": f, "g": g, "f+1": None}
        nodes["f+1"] = C.plus(f, 1)

        def call():
            out = None
            for kind, wanted in steps:
                outs = [nodes[w] for w in wanted]
                if kind == "grad":
                    out = f.grad({x: data}, wrt=[x], outputs=outs or None)
                elif kind == "keep":
                    out = f.forward({x: data}, [o.output for o in outs], {f.output})[1]
                    out = [out[o.output] for o in outs]
                elif kind == "forward":
                    out = f.forward({x: data}, [o.output for o in outs])[1]
                    out = [out[o.output] for o in outs]
            return out
        res[name] = _attempt(call)

    run("grad, outside the graph", [("grad", ["g"])])
    run("grad, an input", [("grad", ["x"])])
    run("grad, a later node", [("grad", ["f+1"])])
    run("forward, outside the graph", [("forward", ["g"])])
    run("grad h, then grad k", [("grad", ["h"]), ("grad", ["k"])])
    run("grad h, then grad h", [("grad", ["h"]), ("grad", ["h"])])
    run("grad h, then grad root only", [("grad", ["h"]), ("grad", [])])
    run("grad, then grad h", [("grad", []), ("grad", ["h"])])
    run("grad k, then grad f", [("grad", ["k"]), ("grad", ["f"])])
    run("forward h, then grad k", [("forward", ["h"]), ("grad", ["k"])])
    run("grad h, then forward k", [("grad", ["h"]), ("forward", ["k"])])
    run("keep h, then forward k", [("keep", ["h"]), ("forward", ["k"])])
    run("keep h, then grad k", [("keep", ["h"]), ("grad", ["k"])])
    run("keep h, then forward h", [("keep", ["h"]), ("forward", ["h"])])
    return res


@cntk_case(names=["cntk.unpack_batch", "cntk.reshape"],
           note="reshapes with a -1 of unpack_batch's output (its batch a free dimension): "
                "CNTK 2.7 shows the inferred axis as -3 ((-1,) is (-3,), (3, -1) is (3, -3)); "
                "Stadyn showed the size of the batch it was built with ((6,), (3, 2)); the "
                "values of runs of two batch sizes")
def reshape_of_unpack_batch_keeps_the_free_axis(C, r):
    r.touch("cntk.unpack_batch", "cntk.reshape")
    y = C.input_variable((3, 2))
    ub = C.unpack_batch(y)
    res = {}
    for target in [(-1,), (3, -1), (-1, 2), (-1, 3, 2), (-1, 6)]:
        z = C.reshape(ub, target)
        res["shape %s" % (target,)] = list(z.shape)
        for n in (4, 2):
            res["%s, batch %d" % (target, n)] = np.asarray(
                z.eval({y: np.arange(n * 6, dtype=np.float32).reshape(n, 3, 2)}))
        res["shape %s after runs" % (target,)] = list(z.shape)
    return res

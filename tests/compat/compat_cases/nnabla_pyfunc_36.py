"""NNabla 1.39 fidelity (session 36): what a ``PythonFunction``'s ``backward_impl`` sees in
``inputs[i].grad`` for an input needing no gradient.

NNabla hands ``backward_impl`` the Variables themselves (``backward_callback`` in
python/src/nnabla/function.pyx.tmpl wraps the C++ inputs, ``to_unsafe_variables``): an
input needing no gradient (``propagate_down[i]`` False) shows its Variable's gradient as it
stands (``c.g = 7`` set before: [7, 7, 7], float32, the input's shape; zeros when never set or
zeroed), and what ``backward_impl`` writes there stays in ``c.g``.  Stadyn handed it a fresh
array of zeros, and what was written there was lost.
"""

import numpy as np

from compat_harness import nnabla_case


def _mul2(PythonFunction, seen):
    class Mul2(PythonFunction):         # a * b; writes 99 into inputs[1].grad, needed or not
        @property
        def name(self):
            return "Mul2"

        def min_outputs(self):
            return 1

        def grad_depends_output_data(self, i, o):
            return False

        def grad_depends_input_data(self, i, j):
            return True

        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            outputs[0].d = inputs[0].d * inputs[1].d

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            g1 = inputs[1].g
            seen.append(([bool(p) for p in propagate_down], [bool(a) for a in accum],
                         inputs[0].g.copy(), g1.copy(), str(g1.dtype), list(g1.shape)))
            inputs[0].g = inputs[1].d * outputs[0].g
            inputs[1].g = 99.0

    return Mul2()


# c's gradient before the backward -> how it is set (None: never)
_SETS = {"c.g = 7": 7.0, "c never given a gradient": None, "c.grad.zero()": "zero",
         "c.g = 7, read first by c * 2": 7.0}


@nnabla_case(names=["nnabla.function.PythonFunction", "nnabla.Variable.backward"],
             note="x = [0.5, -1, 2] (need_grad), c = [2, 3, 4] (need_grad False), "
                  "sum(Mul2(x, c)) (Mul2 a PythonFunction x * c whose backward_impl writes "
                  "99 into inputs[1].g too), c.g set to 7, never set, zeroed, or 7 with "
                  "sum(c * 2) added first; h = c * 2 (no gradient) in Mul2(x, h), h.g = 5 "
                  "after the forward; static and dynamic: propagate_down, accum, inputs[0].g, "
                  "inputs[1].g (values, dtype, shape) backward_impl sees, c.g / h.g and x.g "
                  "after")
def python_function__input_needing_no_gradient(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch("nnabla.function.PythonFunction", "nnabla.Variable.backward")
    res = {}
    for how in sorted(_SETS) + ["h = c * 2, h.g = 5"]:
        for dynamic in (False, True):
            key = "%s: %s: " % (how, "dynamic" if dynamic else "static")
            seen = []
            nn.set_auto_forward(dynamic)
            try:
                x = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32),
                                                 need_grad=True)
                c = nn.Variable.from_numpy_array(np.array([2.0, 3.0, 4.0], np.float32),
                                                 need_grad=False)
                given = _SETS.get(how)
                if given == "zero":
                    c.grad.zero()
                elif given is not None:
                    c.g = given
                other = c * 2.0 if how.startswith("h") else c
                loss = F.sum(_mul2(PythonFunction, seen)(x, other))
                if how.endswith("read first by c * 2"):
                    loss = F.sum(c * 2.0) + loss
            finally:
                nn.set_auto_forward(False)
            if not dynamic:
                loss.forward()
            if other is not c:
                other.g = 5.0
            loss.backward()
            for k, (down, accum, g0, g1, dtype, shape) in enumerate(seen):
                res[key + "backward_impl %d" % k] = [down, accum, dtype, shape]
                res[key + "backward_impl %d inputs[0].g" % k] = g0
                res[key + "backward_impl %d inputs[1].g" % k] = g1
            res[key + "x.g"] = x.g.copy()
            res[key + ("h.g" if other is not c else "c.g")] = other.g.copy()
    return res

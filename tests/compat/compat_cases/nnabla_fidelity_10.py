"""NNabla 1.39 fidelity, tenth round: ``F.scatter_nd(data, indices, out=x)``, NNabla's
in-place form: ``x`` gets no gradient through the result (NNabla's backward leaves ``x.g`` as
it was, whether ``x`` is a leaf or computed), and in the dynamic mode ``x`` holds the written
values once the call returns.
"""

import numpy as np

from compat_harness import nnabla_case

FN = "nnabla.functions."


@nnabla_case(names=[FN + "scatter_nd"],
             note="out=x: x.g untouched by the backward (Stadyn gave x the gradient of the "
                  "places not written), x.d written in the dynamic mode (Stadyn kept it); "
                  "a static forward writing x, and x.d = v showing in y, are not compared "
                  "(Stadyn's result is an array of its own: docs/nnabla-names.md)")
def scatter_nd__out_in_place(nn, F, r):
    res = {}
    idx = np.array([[0, 2, 4]])
    dy = np.arange(1.0, 6.0, dtype=np.float32)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            for leaf in (True, False):
                a = nn.Variable.from_numpy_array(np.full(5, 9.0, np.float32), need_grad=True)
                x = a if leaf else a * 1.0
                d = nn.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0], np.float32),
                                                 need_grad=True)
                y = F.scatter_nd(d, nn.Variable.from_numpy_array(idx), out=x)
                key = mode + ("leaf" if leaf else "computed")
                if dynamic:
                    res[key + " x.d after the call"] = x.d.copy()
                y.forward()
                res[key + " y"] = y.d.copy()
                a.g = 7.0
                d.g = 0.0
                y.backward(dy)
                res[key + " a.g (was 7)"] = a.g.copy()
                res[key + " d.g"] = d.g.copy()
                res[key + " parent inputs"] = len(y.parent.inputs)
        finally:
            nn.set_auto_forward(False)
    return res

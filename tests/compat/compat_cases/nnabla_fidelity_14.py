"""NNabla 1.39 fidelity, fourteenth round: the gradient of a Variable of integers or bools is
float32 (Stadyn allocated one of the value's type).
"""

import numpy as np

from compat_harness import nnabla_case

_V = "nnabla.Variable."
_PF = "nnabla.parametric_functions."


def _dt(a):
    return str(np.asarray(a).dtype)


@nnabla_case(names=[_V + "g", _V + "grad", "nnabla.NdArray.fill"],
             known={k + " assigned g dtype": "a gradient assigned a float64 array stays float32 "
                    "on Stadyn (every floating value the compat layer is handed is float32); "
                    "NNabla's takes the array's type" for k in ("int32", "int64", "uint8",
                                                                  "bool")},
             note="the values assigned to the gradient are compared as float64")
def integer_leaf__float32_gradient(nn, F, r):
    r.touch(_V + "g", _V + "grad", "nnabla.NdArray.fill")
    res = {}
    values = {"int32": np.array([1, 0, 3], np.int32), "int64": np.array([1, 0, 3], np.int64),
              "uint8": np.array([1, 0, 3], np.uint8), "bool": np.array([True, False, True])}
    for key, value in values.items():
        v = nn.Variable.from_numpy_array(value)
        res[key + " g"] = v.g.copy()
        res[key + " grad.data dtype"] = _dt(v.grad.data)
        res[key + " d dtype"] = _dt(v.d)
        v.grad.fill(1.5)
        res[key + " filled g"] = v.g.copy()
        v.g = np.array([0.5, 1.5, 2.5])
        res[key + " assigned g dtype"] = _dt(v.g)
        res[key + " assigned g"] = np.asarray(v.g, np.float64)
    # an integer input of a graph whose other input is trained: its gradient buffer stays
    # float32 zeros through a backward
    t = nn.Variable.from_numpy_array(np.array([[2, -1]], np.int32))
    w = nn.Variable.from_numpy_array(np.array([[0.5, 1.0]], np.float32), need_grad=True)
    loss = F.sum(F.mul2(t, w))
    loss.forward()
    w.grad.zero()
    loss.backward()
    res["graph loss"] = float(loss.d)
    res["graph w.g"] = w.g.copy()
    res["graph t.g"] = t.g.copy()
    res["graph t.d"] = t.d.copy()
    return res

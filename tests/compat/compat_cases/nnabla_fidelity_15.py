"""NNabla 1.39 fidelity, fifteenth round: integers assigned to an op's output keep their type
until its next forward (Stadyn wrote them into its float32 array); integers beyond 2**24 in a
Variable that needs a gradient (NNabla keeps them exactly, Stadyn holds float32); the result of
``F.scatter_nd(data, indices, out=x)`` holds ``x``'s array (a static forward writes ``x``, and
``x.d = ...`` is what the next forward reads); and a view ``x.reshape(shape, unlink=True)`` of an
op's output when a forward gives the output another shape (the same number of elements: the
view follows it; another number: the two part).
"""

import numpy as np

from compat_harness import nnabla_case

_V = "nnabla.Variable."
FN = "nnabla.functions."


def _dt(a):
    return str(np.asarray(a).dtype)


@nnabla_case(names=[_V + "reshape", "nnabla.Variable.reset_shape"],
             note="the input of an op's output given another shape between forwards")
def output_view__new_shape(nn, F, r):
    r.touch(_V + "reshape", "nnabla.Variable.reset_shape")
    res = {}
    # another number of elements: the output and its view part, value and gradient
    a = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32), need_grad=True)
    x = F.add_scalar(a, 1.0)
    x.forward()
    v = x.reshape((2, 2), unlink=True)
    a.reset_shape((8,), force=True)
    a.d = np.arange(8.0)
    x.forward()
    res["grown x"] = x.d.copy()
    res["grown v"] = v.d.copy()
    kept = x.d
    a.reset_shape((4,), force=True)
    a.d = np.arange(10.0, 14.0)
    x.forward()
    a.d = np.arange(20.0, 24.0)
    x.forward()
    res["back x"] = x.d.copy()
    res["back v"] = v.d.copy()
    res["back kept"] = kept.copy()
    v.g = np.ones((2, 2))
    res["back x.g"] = x.g.copy()
    v.d = np.full((2, 2), 7.0)
    res["back x after v.d ="] = x.d.copy()
    # as many elements in another shape: the view reads what each forward writes
    b = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32), need_grad=True)
    y = F.mul_scalar(b, 2.0)
    y.forward()
    w = y.reshape((4,), unlink=True)
    b.reset_shape((2, 2), force=True)
    b.d = np.ones((2, 2))
    y.forward()
    res["reshaped y"] = y.d.copy()
    res["reshaped w"] = w.d.copy()
    b.d = np.full((2, 2), 3.0)
    y.forward()
    res["reshaped w rerun"] = w.d.copy()
    w.d = np.arange(4, dtype=np.float32)
    res["reshaped y after w.d ="] = y.d.copy()
    w.g = np.arange(4, dtype=np.float32)
    res["reshaped y.g"] = y.g.copy()
    y.g = np.full((2, 2), 5.0, np.float32)
    res["reshaped w.g"] = w.g.copy()
    return res

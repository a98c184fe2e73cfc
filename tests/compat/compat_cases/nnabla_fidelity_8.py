"""NNabla 1.39 where Stadyn differed, found running nnabla-examples (eighth round):

* ``x[key] = v`` on an INTEGER Variable: NNabla's ``ScatterNd`` writes float32, so ``x``
  becomes a float32 array holding ``v`` as given (``x = arange(6, int32); x[1:3] = [2.7,
  -1.5]`` gives ``[0, 2.7, -1.5, 3, 4, 5]`` float32, an int ``v`` float32 too); Stadyn's
  ``scatter_nd(v, indices, out=x)`` cast ``v`` to ``x``'s int32, truncating it to ``[0, 2,
  -1, 3, 4, 5]``; ``F.scatter_nd(v, idx, out=x)`` over an int32 ``x`` alike;
* ``F.scatter_nd``'s ``indices`` given as a nested list or a NumPy array (NNabla converts
  them): Stadyn failed with ``'list' object has no attribute 'long'``.
"""

import numpy as np

from compat_harness import nnabla_case

FN = "nnabla.functions."
EXACT = dict(rtol=0.0, atol=0.0)


@nnabla_case(names=["nnabla.Variable.forward"], **EXACT,
             note="x[key] = v over an int32 Variable: float32 values, v untruncated (a "
                  "Variable, an array, a number, an int32 array; a basic and an advanced key)")
def setitem__integer_array_becomes_float32(nn, F, r):
    res = {}
    values = (("variable", lambda: nn.Variable.from_numpy_array(np.array([2.7, -1.5]))),
              ("array", lambda: np.array([2.7, -1.5])),
              ("number", lambda: 2.7),
              ("int_array", lambda: np.array([7, -8], np.int32)))
    for name, value in values:
        for kname, key in (("slice", slice(1, 3)), ("list", [4, 1])):
            x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.int32))
            x[key] = value()
            x.forward()
            res["%s_%s" % (name, kname)] = x.d.copy()
    o = nn.Variable.from_numpy_array(np.arange(4, dtype=np.int32))
    y = F.scatter_nd(nn.Variable.from_numpy_array(np.array([2.7])), [[1]], out=o)
    y.forward()
    res["scatter_nd_out_int32"] = y.d.copy()
    r.touch("nnabla.Variable.forward")
    return res


@nnabla_case(names=[FN + "scatter_nd"], **EXACT,
             note="F.scatter_nd with indices as a nested list and a NumPy array (shape= and "
                  "out=): the same values and data gradient as with a Variable of indices")
def scatter_nd__indices_list_or_array(nn, F, r):
    res = {}
    w = r.randn(3, 4).astype(np.float32)
    for iname, make in (("list", lambda: [[2, 0, 2], [1, 3, 0]]),
                        ("ndarray", lambda: np.array([[2, 0, 2], [1, 3, 0]])),
                        ("variable", lambda: nn.Variable.from_numpy_array(
                            np.array([[2, 0, 2], [1, 3, 0]])))):
        for form in ("shape", "out"):
            data = nn.Variable.from_numpy_array(r.randn(3).astype(np.float32), need_grad=True)
            if form == "shape":
                y = F.scatter_nd(data, make(), shape=(3, 4), add=True)
            else:
                o = nn.Variable.from_numpy_array(r.randn(3, 4).astype(np.float32))
                y = F.scatter_nd(data, make(), out=o)
            loss = F.sum(y * nn.Variable.from_numpy_array(w))
            loss.forward()
            data.grad.zero()
            loss.backward()
            key = "%s_%s" % (iname, form)
            res[key + "_y"], res[key + "_gdata"] = y.d.copy(), data.g.copy()
    return res

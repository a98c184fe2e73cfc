"""NNabla 1.39 in a ``cpu:half`` context, mended in nnhalf40: its reductions fold in float16,
rounding after every addition."""

import numpy as np

from compat_harness import nnabla_case

_HALF = ["nnabla.context_scope", "nnabla.ext_utils.get_extension_context"]
_FNS = ["nnabla.functions.sum", "nnabla.functions.mean", "nnabla.functions.reduce_sum",
        "nnabla.functions.reduce_mean"]

_G_DTYPE = ("a float32 leaf's gradient written by a function made in cpu:half is float16 on "
            "NNabla 1.39 (the function's backward casts the grad array to Half) and float32 "
            "in Stadyn, whose cast back to a leaf's dtype is autograd's (graph/_precision.py); "
            "the values are the same")


def _array(a):
    return [str(a.dtype), np.asarray(a, np.float32).ravel().tolist()]


@nnabla_case(names=_HALF + _FNS, rtol=0.0, atol=0.0,
             known={"static x.g dtype": _G_DTYPE, "dyn x.g dtype": _G_DTYPE})
def half40__sum_mean_fold(nn, F, r):
    """NNabla 1.39's CPU ``Sum`` and ``Mean`` in ``cpu:half`` add the float16 values one after
    another, rounding each partial sum to float16 (Eigen's ``rowwise().sum()`` over its
    ``Half``, sum.cpp:118-124 and half.cpp:104-106), over the reduced axes moved last and
    sorted (sum.hpp:54): 4 x 300 values sum to 452.8 where float32 gives 453.15, and a long
    sum sticks at 8192.  ``Mean`` divides by the count made a float16 (5001 is 5000: 2048 /
    5000 = 0.4097, not 0.4094), its backward too.  Stadyn summed in float32 and gave float32.
    Static and dynamic; the outputs (dtype, values), ``x.g`` of a float32 leaf after
    ``backward(0.3)``; ``F.reduce_sum``/``F.reduce_mean`` (a ``+=`` loop, reduce_sum.cpp)."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + _FNS))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(40)
    inputs = {"a": (rs.rand(4, 300) * 3).astype(np.float32),
              "b": (rs.rand(3, 50, 70) * 3).astype(np.float32),
              "c": rs.rand(2, 5001).astype(np.float32),
              "d": (rs.randn(6, 7) * 100).astype(np.float32)}
    calls = [("a", F.sum, 1, False), ("a", F.mean, 1, False), ("b", F.sum, (0, 2), True),
             ("b", F.mean, (2, 0), False), ("b", F.sum, None, False),
             ("b", F.mean, None, False), ("b", F.sum, (1, 2), False), ("c", F.mean, 1, True),
             ("c", F.sum, -1, False), ("d", F.sum, 0, False), ("d", F.mean, (0, 1), False)]
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        dtypes = set()
        for i, (name, fn, axis, keepdims) in enumerate(calls):
            x = nn.Variable.from_numpy_array(inputs[name], need_grad=True)
            with nn.context_scope(half):
                y = fn(x, axis=axis, keepdims=keepdims)
            y.forward()
            y.backward(np.full(y.shape, 0.3, np.float32))
            key = "%s%d %s %s axis=%r keepdims=%r" % (k, i, name, fn.__name__, axis, keepdims)
            res[key] = _array(y.d)
            res[key + " x.g"] = np.asarray(x.g, np.float32)
            dtypes.add(str(x.g.dtype))
        res[k + "x.g dtype"] = sorted(dtypes)
        for fn in (F.reduce_sum, F.reduce_mean):
            x = nn.Variable.from_numpy_array(inputs["b"], need_grad=True)
            with nn.context_scope(half):
                y = fn(x)
            y.forward()
            y.backward(0.3)
            res[k + fn.__name__] = _array(y.d)
            res[k + fn.__name__ + " x.g"] = np.asarray(x.g, np.float32)
        nn.set_auto_forward(False)
    return res

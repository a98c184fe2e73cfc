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


_SCALAR_NAMES = ["nnabla.functions.mul_scalar", "nnabla.functions.pow_scalar",
                 "nnabla.functions.add_scalar", "nnabla.functions.maximum_scalar",
                 "nnabla.Variable.__mul__", "nnabla.Variable.__add__", "nnabla.Variable.__sub__",
                 "nnabla.Variable.__truediv__", "nnabla.Variable.__pow__",
                 "nnabla.Variable.__rsub__", "nnabla.Variable.__rtruediv__",
                 "nnabla.Variable.__rpow__"]

@nnabla_case(names=_HALF + _SCALAR_NAMES, rtol=0.0, atol=0.0,
             known=dict([(k + "x.g dtype", _G_DTYPE) for k in ("static ", "dyn ")]))
def half40__scalar_functions(nn, F, r):
    """NNabla 1.39's scalar functions made in ``cpu:half`` compute with their scalar converted
    to Half, ``(T)a0`` (mul_scalar.hpp and the others), and NNabla's operators with a number
    are those functions (``x / y`` is ``F.mul_scalar(x, 1. / y)``, ``x - y``
    ``F.add_scalar(x, -y)``: nnabla/_arithmetic_ops.pyx): ``x * 3.3`` multiplies by
    3.30078125 (2.2246 * 3.3 gives float16 7.34375; Stadyn multiplied by float32's 3.3:
    7.33984375), ``F.mul_scalar(x, 1.1)`` by 1.099609375, and the gradients by the same.
    Static and dynamic, a float32 and a float16 leaf: outputs (dtype, values) and ``x.g``
    after ``backward(0.37)``."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + _SCALAR_NAMES))
    half = EU.get_extension_context("cpu", type_config="half")
    x0 = (np.random.RandomState(41).rand(8) * 3 + 0.1).astype(np.float32)
    fns = [("x * 3.3", lambda v: v * 3.3), ("3.3 * x", lambda v: 3.3 * v),
           ("x + 0.1", lambda v: v + 0.1), ("x - 0.3", lambda v: v - 0.3),
           ("0.3 - x", lambda v: 0.3 - v), ("x / 0.3", lambda v: v / 0.3),
           ("0.7 / x", lambda v: 0.7 / v), ("x ** 2.5", lambda v: v ** 2.5),
           ("1.3 ** x", lambda v: 1.3 ** v), ("F.mul_scalar 1.1", lambda v: F.mul_scalar(v, 1.1)),
           ("F.add_scalar val=0.7", lambda v: F.add_scalar(v, val=0.7)),
           ("F.pow_scalar 1.7", lambda v: F.pow_scalar(v, 1.7)),
           ("F.maximum_scalar 1.3", lambda v: F.maximum_scalar(v, 1.3))]
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        dtypes = []
        for name, fn in fns:
            for leaf in (np.float32, np.float16):
                x = nn.Variable.from_numpy_array(x0.astype(leaf), need_grad=True)
                with nn.context_scope(half):
                    y = fn(x)
                y.forward()
                x.grad.zero()
                y.backward(np.full(y.shape, 0.37, np.float32))
                key = "%s%s %s" % (k, name, np.dtype(leaf).name)
                res[key] = _array(y.d)
                if leaf is np.float32:
                    res["%s%s x.g" % (k, name)] = np.asarray(x.g, np.float32)
                dtypes.append(str(x.g.dtype))
        res[k + "x.g dtype"] = dtypes
        nn.set_auto_forward(False)
    return res


@nnabla_case(names=_HALF + ["nnabla.functions.squared_error", "nnabla.functions.absolute_error",
                            "nnabla.functions.mean"], rtol=0.0, atol=0.0,
             known={"static x.g dtype": _G_DTYPE, "dyn x.g dtype": _G_DTYPE})
def half40__squared_and_absolute_error(nn, F, r):
    """NNabla 1.39's CPU ``SquaredError`` and ``AbsoluteError`` run in Half in ``cpu:half``
    (function_types.yaml), their binary transform evaluating the formula in float from the
    Half inputs and rounding once (base_transform_binary.hpp, ``force_float``): float16
    outputs, ``(-1.798 - 3.148)**2`` = 24.46875 where rounding the difference first gives
    24.453125.  Stadyn computed them in float32 (float32 outputs, and ``F.mean`` over them then
    read float32).  Static and dynamic: outputs, both inputs' gradients for a seeded ``dy``,
    and ``F.mean(F.squared_error(y, t))``."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + ["nnabla.functions.squared_error", "nnabla.functions.absolute_error",
                       "nnabla.functions.mean"]))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(42)
    a = (rs.randn(5, 40) * 2).astype(np.float32)
    b = (rs.randn(5, 40) * 2).astype(np.float32)
    dy = rs.randn(5, 40).astype(np.float32)
    fns = [("squared_error", F.squared_error), ("absolute_error", F.absolute_error),
           ("mse", lambda u, v: F.mean(F.squared_error(u, v)))]
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        dtypes = []
        for name, fn in fns:
            x0 = nn.Variable.from_numpy_array(a, need_grad=True)
            x1 = nn.Variable.from_numpy_array(b, need_grad=True)
            with nn.context_scope(half):
                y = fn(x0, x1)
            y.forward()
            y.backward(dy if y.ndim else 1.0)
            res[k + name] = _array(y.d)
            res[k + name + " x0.g"] = np.asarray(x0.g, np.float32)
            res[k + name + " x1.g"] = np.asarray(x1.g, np.float32)
            dtypes += [str(x0.g.dtype), str(x1.g.dtype)]
        res[k + "x.g dtype"] = dtypes
        nn.set_auto_forward(False)
    return res


@nnabla_case(names=_HALF + ["nnabla.functions.sigmoid_cross_entropy"], rtol=0.0, atol=0.0,
             known={"static x.g dtype": _G_DTYPE, "dyn x.g dtype": _G_DTYPE})
def half40__sigmoid_cross_entropy(nn, F, r):
    """NNabla 1.39's CPU ``SigmoidCrossEntropy`` runs in Half in ``cpu:half``
    (function_types.yaml: ``[Half, int]``): its formula ``-(x * (t - (x >= 0)) - log(1 +
    exp(x - 2x(x >= 0))))`` and its backward ``dy * (1 / (1 + exp(-x)) - t)`` in Half, every
    operation rounded (sigmoid_cross_entropy.cpp, half.cpp): a float16 loss, and here a first
    gradient -0.6191406 where Stadyn computed in float32 (-0.61939394, a float32 loss).
    Static and dynamic: the loss and the logits' gradient for a seeded ``dy``, 0/1
    labels."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + ["nnabla.functions.sigmoid_cross_entropy"]))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(43)
    a = (rs.randn(6, 50) * 3).astype(np.float32)
    t = (rs.rand(6, 50) > 0.5).astype(np.float32)
    dy = rs.randn(6, 50).astype(np.float32)
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        x = nn.Variable.from_numpy_array(a, need_grad=True)
        with nn.context_scope(half):
            y = F.sigmoid_cross_entropy(x, nn.Variable.from_numpy_array(t))
        y.forward()
        y.backward(dy)
        res[k + "loss"] = _array(y.d)
        res[k + "x.g"] = np.asarray(x.g, np.float32)
        res[k + "x.g dtype"] = str(x.g.dtype)
        nn.set_auto_forward(False)
    return res

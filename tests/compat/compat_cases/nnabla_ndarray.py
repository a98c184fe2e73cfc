"""``nnabla.NdArray``: construction, the NumPy view ``data`` (writes reach the array), ``fill``,
``zero``, ``cast``, ``copy_from``, ``narrow``, ``get_data``; and NNabla's imperative mode:
operators and ``F.*`` on NdArrays compute at once and give NdArrays (float32).
"""

import numpy as np

from compat_harness import nnabla_case

N = "nnabla.NdArray."


def _dt(a):
    return str(np.dtype(a.dtype))


@nnabla_case(names=["nnabla.NdArray", N + "shape", N + "size", N + "ndim", N + "dtype",
                    N + "data", N + "fill", N + "zero", N + "zeroing", N + "size_from_axis"])
def ndarray_basics(nn, F, r):
    r.touch(*[N + m for m in ("shape", "size", "ndim", "dtype", "data", "fill", "zero", "zeroing",
                              "size_from_axis")])
    a = nn.NdArray((2, 3))
    res = {"shape": list(a.shape), "size": a.size, "ndim": a.ndim,
           "zeros": a.data.copy(), "size_from_axis": a.size_from_axis(1)}
    res["dtype"] = _dt(a)                       # NNabla knows it once the array is read
    a.fill(2.5)
    res["filled"] = a.data.copy()
    view = a.data
    view[0, 1] = 7.0                      # a view: the array changes
    a.data[1, 2] = -1.0
    res["written"] = a.data.copy()
    a.zero()
    res["zeroing"] = a.zeroing
    res["zeroed"] = a.data.copy()
    res["zeroing_after_read"] = a.zeroing
    a.data = r.randn(2, 3).astype(np.float64)   # takes the assigned array's dtype
    res["assigned"] = a.data.copy()
    res["assigned_dtype"] = _dt(a)
    a.data = 4.0                                # broadcast
    res["broadcast"] = a.data.copy()
    s = nn.NdArray((4,))
    res["vector"] = [list(s.shape), s.size, s.ndim]
    return res


@nnabla_case(names=[N + "from_numpy_array", N + "cast", N + "copy_from", N + "narrow",
                    N + "get_data"])
def ndarray_conversions(nn, F, r):
    r.touch(*[N + m for m in ("from_numpy_array", "cast", "copy_from", "narrow", "get_data")])
    src = r.randn(3, 2)
    a = nn.NdArray.from_numpy_array(src)
    src[0, 0] = 100.0                           # a copy: the array keeps its value
    res = {"copied": a.data.copy(), "float32": _dt(a)}
    ints = nn.NdArray.from_numpy_array(np.arange(6).reshape(2, 3))
    res["int_dtype"] = _dt(ints)
    cast = ints.cast(np.float32)
    res["cast"] = cast.copy()
    res["cast_dtype_after"] = _dt(ints)
    res["float64"] = _dt(nn.NdArray.from_numpy_array(np.ones(2)))
    b = nn.NdArray((2, 3))
    b.copy_from(nn.NdArray.from_numpy_array(np.arange(6).reshape(2, 3).astype(np.int32)))
    res["copy_from"] = b.data.copy()
    res["copy_from_dtype"] = _dt(b)
    n = a.narrow(0, 1, 2)
    res["narrow"] = n.data.copy()
    res["narrow_shape"] = list(n.shape)
    n.data[...] = 9.0                           # shares memory with a
    res["after_narrow_write"] = a.data.copy()
    res["read_only"] = bool(a.get_data("r").flags.writeable)
    a.get_data("w")[0, 0] = 5.0
    res["get_data_w"] = a.data.copy()
    return res


@nnabla_case(names=["nnabla.NdArray"])
def ndarray_operators(nn, F, r):
    a = nn.NdArray.from_numpy_array(r.rand(2, 3, low=0.5, high=2.0))
    b = nn.NdArray.from_numpy_array(r.rand(2, 3, low=0.5, high=2.0))
    outs = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b, "pow": a ** b,
            "add_s": a + 1.5, "radd_s": 1.5 + a, "rsub_s": 2.0 - a, "rmul_s": 3.0 * a,
            "rdiv_s": 2.0 / a, "pow_s": a ** 2, "rpow_s": 2.0 ** a, "neg": -a, "pos": +a,
            "np_scalar": np.float32(2.0) * a}
    res = {}
    for k, v in outs.items():
        res[k] = v.data.copy()
        res[k + " type"] = type(v).__name__
    ints = nn.NdArray.from_numpy_array(np.array([1, 2, 3], np.int32))
    res["int_plus_1"] = (ints + 1).data.copy()
    f64 = nn.NdArray.from_numpy_array(np.array([1.0, -2.0]))
    res["f64_times_2"] = (f64 * 2).data.copy()
    c = nn.NdArray.from_numpy_array(np.array([1.0, 2.0], np.float32))
    alias = c
    c += 1.0
    c *= b.narrow(0, 0, 1).data[0, :2].sum()
    res["inplace"] = alias.data.copy()
    res["inplace_same"] = alias is c
    return res


@nnabla_case(names=["nnabla.NdArray"])
def ndarray_functions(nn, F, r):
    """F.* on NdArrays runs at once and gives NdArrays, in any auto_forward setting."""
    x = nn.NdArray.from_numpy_array(r.randn(2, 4))
    w = nn.NdArray.from_numpy_array(r.randn(4, 3))
    b = nn.NdArray.from_numpy_array(r.randn(3))
    res = {}
    y = F.relu(x)
    res["relu"] = y.data.copy()
    res["relu type"] = type(y).__name__
    res["affine"] = F.affine(x, w, b).data.copy()
    m = F.mean(x)
    res["mean"] = m.data.copy()
    res["mean shape"] = list(m.shape)
    res["sum axis"] = F.sum(x, axis=1, keepdims=True).data.copy()
    parts = F.split(x, axis=0)
    res["split"] = [type(parts).__name__, type(parts[0]).__name__, list(parts[1].shape)]
    res["concat"] = F.concatenate(x, x * 2.0, axis=1).data.copy()
    res["f64 relu dtype"] = str(F.relu(nn.NdArray.from_numpy_array(np.array([-1.0, 2.0])))
                                .dtype)
    with nn.auto_forward():
        res["in auto_forward"] = F.tanh(x).data.copy()
    return res

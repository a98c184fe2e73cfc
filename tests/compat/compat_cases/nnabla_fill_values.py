"""NNabla 1.39: scalars and arrays written into ``.d`` / ``.data`` over dtypes.

* A scalar (``t.d = 5``, ``a.data = 5``, ``a.fill(5)``) goes through float32 whatever the
  array's dtype: ``2**24 + 5`` into int32 reads ``16777220``, ``2**31 - 1`` reads ``INT_MIN``,
  ``300`` into uint8 ``44``, ``7.9`` into a float64 NdArray ``7.900000095367432``; an integer
  above 2**53 is written as an int64 array instead (exactly).  Stadyn wrote the exact value, or
  raised torch's "cannot be converted ... without overflow".
* A float16 leaf given a float32 or float64 array takes a wider type (NNabla the written one,
  its functions reading float32): Stadyn kept float16, so 7.9 became 7.8984375 for every
  function reading it.
"""

import numpy as np

from compat_harness import nnabla_case

_SCALARS = (("big24", 2 ** 24 + 5), ("int_max", 2 ** 31 - 1), ("f79", 7.9), ("true", True),
            ("neg3", -3), ("e10", 1e10), ("i300", 300), ("i70000", 70000), ("neg1", -1),
            ("nan", float("nan")), ("big53", 2 ** 53 + 1), ("big60", 2 ** 60),
            ("np_i32", np.int32(2 ** 24 + 5)), ("np_f32", np.float32(7.9)))
_VAR_DTYPES = ("int32", "float16", "bool", "float32", "uint8", "int8")
_ND_DTYPES = _VAR_DTYPES + ("float64",)


@nnabla_case(names=["nnabla.Variable.d", "nnabla.NdArray.data", "nnabla.NdArray.fill"],
             rtol=0, atol=0,
             note="every scalar of _SCALARS written into a (2,) Variable's .d, its "
                  ".data.data and .data.fill(), and into an NdArray's .data and .fill(), over "
                  "int32, float16, bool, float32, uint8, int8 (and float64 for NdArrays): the "
                  "dtype and values read back")
def scalar_writes__through_float32(nn, F, r):
    r.touch("nnabla.Variable.d", "nnabla.NdArray.data", "nnabla.NdArray.fill")
    res = {}
    for dt in _ND_DTYPES:
        for key, value in _SCALARS:
            ways = ["nd_data", "nd_fill"]
            if dt in _VAR_DTYPES:
                ways += ["var_d", "var_data_data", "var_data_fill"]
            for way in ways:
                if way.startswith("nd"):
                    a = nn.NdArray.from_numpy_array(np.zeros(2, dt))
                    if way == "nd_data":
                        a.data = value
                    else:
                        a.fill(value)
                    got = a.data
                else:
                    v = nn.Variable.from_numpy_array(np.zeros(2, dt))
                    if way == "var_d":
                        v.d = value
                    elif way == "var_data_data":
                        v.data.data = value
                    else:
                        v.data.fill(value)
                    got = v.d
                res["%s_%s_%s" % (way, dt, key)] = got.copy()
    return res


@nnabla_case(names=["nnabla.Variable.d", "nnabla.NdArray.data",
                    "nnabla.functions.mul_scalar"],
             rtol=0, atol=0,
             known={"var_int32_f64": "documented in docs/nnabla-names.md (Variable.d = "
                                     "values of another floating dtype): a Variable holds "
                                     "float32 where NNabla 1.39's takes the written float64",
                    "var_bool_f64": "as var_int32_f64: float32 on Stadyn, float64 on NNabla",
                    "var_float32_f64": "as var_int32_f64: float32 on Stadyn, float64 on "
                                       "NNabla",
                    "var_float16_f64": "as var_int32_f64: float32 on Stadyn, float64 on "
                                       "NNabla"},
             note="arrays [7.9, -2.5] of float32 and float64, [3, 2**40] of int64 and "
                  "[True, False] written into (2,) Variables' .d and NdArrays' .data of "
                  "int32, float16, bool, float32; "
                  "the dtype and values read back; and F.mul_scalar(v, 1.0) of each Variable")
def written_arrays__dtypes(nn, F, r):
    r.touch("nnabla.Variable.d", "nnabla.NdArray.data")
    res = {}
    arrays = (("f32", np.array([7.9, -2.5], np.float32)), ("f64", np.array([7.9, -2.5])),
              ("i64", np.array([3, 2 ** 40], np.int64)), ("b", np.array([True, False])))
    for dt in ("int32", "float16", "bool", "float32"):
        for key, arr in arrays:
            v = nn.Variable.from_numpy_array(np.zeros(2, dt))
            v.d = arr
            res["var_%s_%s" % (dt, key)] = v.d.copy()
            if key.startswith("f"):
                y = F.mul_scalar(v, 1.0)
                y.forward()
                res["y_%s_%s" % (dt, key)] = y.d.copy()
            a = nn.NdArray.from_numpy_array(np.zeros(2, dt))
            a.data = arr
            res["nd_%s_%s" % (dt, key)] = a.data.copy()
    return res

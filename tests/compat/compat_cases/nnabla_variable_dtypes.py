"""The dtypes of NNabla's Variables: what ``from_numpy_array``, ``v.d = array``,
``v.data.cast`` and ``v.grad.cast`` leave in ``.d`` / ``.data.dtype``, and what a function
computes from a Variable of another floating type.

NNabla keeps a Variable's array in the dtype last written to it (a float64 array stays float64,
``v.d = ints`` makes it int64) and its functions read their inputs as float32 (the default
context's type) and write float32.  Stadyn holds one tensor per Variable and computes in its
dtype, so the compat layer keeps floating values float32 where NNabla would store float64 (a
float64 leaf would make every op downstream float64) and casts an assigned floating array to
the Variable's dtype (an integer array's type is taken, as NNabla's: case
``nnabla_fidelity_12.assigned_integers__keep_their_type``).  The keys where that shows are
``known``.
"""

import numpy as np

from compat_harness import nnabla_case

V = "nnabla.Variable."

_STORE = ("Stadyn keeps a floating Variable float32 where NNabla stores the float64 array (one "
          "tensor per Variable, which the ops compute in: stadyn.graph.Variable."
          "from_numpy_array, compat nnabla _variable._set)")
_ASSIGN = ("v.d = floating array casts into the Variable's dtype on Stadyn (an integer array's "
           "type is taken: compat nnabla _written_types.take_written_type); NNabla's array takes "
           "the assigned array's dtype")


def _dt(a):
    return str(np.asarray(a).dtype)


@nnabla_case(names=[V + "from_numpy_array", V + "d", V + "data"],
             known={"float64 .d": _STORE, "float64 .data.dtype": _STORE,
                    "float64 values": _STORE, "float64 leaf .d after backward": _STORE,
                    "float64 scalar": _STORE},
             note="float64 through a function: the output and the leaf's gradient are float32 "
                  "on both")
def from_numpy_array__dtypes(nn, F, r):
    r.touch(V + "from_numpy_array", V + "d", V + "data")
    a64 = np.arange(6, dtype=np.float64).reshape(2, 3) / 3.0
    v = nn.Variable.from_numpy_array(a64, need_grad=True)
    res = {"float64 .d": _dt(v.d), "float64 .data.dtype": str(v.data.dtype),
           "float64 values": v.d.copy()}
    y = F.tanh(v)
    y.forward()
    v.g = 0
    y.backward()
    res.update({"through tanh": y.d.copy(), "tanh .d dtype": _dt(y.d), "leaf .g": v.g.copy(),
                "leaf .g dtype": _dt(v.g), "float64 leaf .d after backward": _dt(v.d)})
    for name, dt in (("int32", np.int32), ("int64", np.int64), ("uint8", np.uint8),
                     ("float16", np.float16), ("float32", np.float32), ("bool", np.bool_)):
        w = nn.Variable.from_numpy_array(np.arange(3).astype(dt))
        res[name] = [_dt(w.d), str(w.data.dtype)]
    res["float64 scalar"] = _dt(nn.Variable.from_numpy_array(np.float64(3.5)).d)
    a = nn.Variable.from_numpy_array(a64[0])
    b = nn.Variable.from_numpy_array(np.arange(3, dtype=np.float32))
    s = a + b
    s.forward()
    res["float64 + float32"] = s.d.copy()
    return res


@nnabla_case(names=[V + "d", "nnabla.NdArray.cast"],
             known={"v.d = float64": _ASSIGN,
                    "int32 then v.d = floats": _ASSIGN},
             note="cast converts the values in place (1.5 -> 1 for int32) and returns them; "
                  "a scalar fill keeps the dtype; a function made in a float context reads a "
                  "float16 input as float32 (compat.nnabla binds the context to the function: "
                  "stadyn.graph._precision.cast_for_node)")
def assignment_and_cast__dtypes(nn, F, r):
    r.touch(V + "d", "nnabla.NdArray.cast")
    res = {}
    v = nn.Variable((2, 3))
    res["default"] = [_dt(v.d), str(v.data.dtype), _dt(v.g)]
    v.d = np.arange(6).reshape(2, 3)
    res["v.d = ints"] = _dt(v.d)
    res["values after v.d = ints"] = np.asarray(v.d, np.float64)
    v.d = np.arange(6).reshape(2, 3) * 1.6
    res["v.d = float64"] = _dt(v.d)
    v.d = 1.5
    got = v.data.cast(np.float16)
    res["cast float16"] = [type(got).__name__, _dt(got), _dt(v.d), str(v.data.dtype)]
    v.data.cast(np.int32)
    res["cast int32"] = v.d.copy()
    v.d = 7
    res["scalar fill of int32"] = v.d.copy()
    v.d = np.arange(6).reshape(2, 3) * 1.6
    res["int32 then v.d = floats"] = _dt(v.d)
    u = nn.Variable.from_numpy_array(np.arange(6).reshape(2, 3) / 4.0)
    y = F.tanh(u)
    u.data.cast(np.float16)
    y.forward()
    res["float16 input"] = _dt(y.d)
    res["float16 input values"] = np.asarray(y.d, np.float64)
    return res


@nnabla_case(names=[V + "d"],
             known={"list .d dtype": _ASSIGN, "list .data.dtype": _ASSIGN,
                    "list .d after forward": _ASSIGN, "thirds .d": _ASSIGN},
             tols={"thirds .d": (1e-12, 0.0)},   # float64 values, not float32 ones
             note="v.d = a list of floats (or a float64 array) on a float32 Variable: NNabla "
                  "stores float64 and keeps it through forward and backward, but its functions "
                  "read it as float32, so what they compute (outputs, gradients) is Stadyn's "
                  "float32 computation of the values rounded to float32")
def assign_list__dtypes(nn, F, r):
    r.touch(V + "d")
    v = nn.Variable((2,), need_grad=True)
    v.d = [7.0, -7.0]
    res = {"list .d dtype": _dt(v.d), "list .data.dtype": str(v.data.dtype),
           "list values": np.asarray(v.d, np.float32)}
    y = F.tanh(v * 0.125)
    y.forward()
    v.g = 0
    y.backward(np.array([1.0, 2.0], np.float32))
    res.update({"y": y.d.copy(), "y dtype": _dt(y.d), "v.g": v.g.copy(), "v.g dtype": _dt(v.g),
                "list .d after forward": _dt(v.d)})
    u = nn.Variable((3,))
    u.d = np.array([1.0, 2.0, 4.0]) / 3.0
    res["thirds .d"] = [float(a) for a in u.d]
    t = nn.Variable((2,))
    t.d = np.array([1.0 + 1e-9, 2.0])
    z = (t - 1.0) * 1e9
    z.forward()
    # 1 + 1e-9 is 1 in float32: 0 where a float64 computation gives about 1
    res["(t - 1) * 1e9"] = z.d.copy()
    res["(t - 1) * 1e9 dtype"] = _dt(z.d)
    return res

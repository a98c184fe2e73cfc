"""NNabla 1.39 fidelity, twelfth round: the type of a parameter made from an integer array
(``nn.parameter.get_parameter_or_create(..., initializer=np.array(..., np.int32))``), and a
parametric function given a NumPy array of several values as ``b_init`` (Stadyn tested the
array's truth value).
"""

import numpy as np

from compat_harness import nnabla_case

P = "nnabla.parameter."
PFN = "nnabla.parametric_functions."

_TRAINED = ("a parameter needing a gradient is float32 on Stadyn (torch computes gradients of "
            "floating-point tensors only); NNabla keeps the integer array and writes a float32 "
            "gradient beside it (compat nnabla _parameter.get_parameter_or_create)")
_FLOAT64 = ("Stadyn keeps floating values float32 where NNabla stores a float64 array (one "
            "tensor per Variable, which the ops compute in: compat nnabla "
            "_parameter.get_parameter_or_create)")


def _dt(a):
    return str(np.asarray(a).dtype)


@nnabla_case(names=[P + "get_parameter_or_create"],
             known={"int32 trained": _TRAINED, "float64": _FLOAT64},
             note="an integer array makes a parameter of its type (int32, int64, uint8, bool); "
                  "the functions read it as float32")
def integer_initializer__keeps_its_type(nn, F, r):
    r.touch(P + "get_parameter_or_create")
    res = {}
    for key, dt in (("int32", np.int32), ("int64", np.int64), ("uint8", np.uint8),
                    ("bool", np.bool_)):
        p = nn.parameter.get_parameter_or_create(
            "p_" + key, (3,), initializer=np.array([1, 0, 3]).astype(dt), need_grad=False)
        registered = nn.get_parameters(grad_only=False)["p_" + key]
        res[key] = [_dt(p.d), str(p.data.dtype), _dt(registered.d), p.d.tolist()]
    p = nn.parameter.get_parameter_or_create(
        "p_int32", (3,), initializer=np.array([7, 7, 7], np.int32), need_grad=False)
    res["existing int32"] = [_dt(p.d), p.d.tolist()]
    y = F.mul_scalar(p, 2.5)
    z = F.add2(p, p)
    y.forward()
    z.forward()
    res["int32 * 2.5"] = [_dt(y.d), y.d.tolist()]
    res["int32 + int32"] = [_dt(z.d), z.d.tolist()]
    t = nn.parameter.get_parameter_or_create(
        "t", (2,), initializer=np.array([4, 5], np.int32))
    res["int32 trained"] = _dt(t.d)
    res["int32 trained values"] = np.asarray(t.d, np.float64)
    f = nn.parameter.get_parameter_or_create(
        "f", (2,), initializer=np.array([0.5, 1.5]), need_grad=False)
    res["float64"] = _dt(f.d)
    res["float64 values"] = np.asarray(f.d, np.float64)
    nn.clear_parameters()
    return res


@nnabla_case(names=[PFN + "affine", PFN + "convolution", PFN + "depthwise_convolution"],
             note="a NumPy array of several values as b_init is the bias's initial value "
                  "(Stadyn raised NumPy's 'truth value of an array is ambiguous')")
def pf_bias_array_initializer(nn, PF, r):
    r.touch(PFN + "affine", PFN + "convolution", PFN + "depthwise_convolution")
    x2 = nn.Variable.from_numpy_array(np.ones((2, 3), np.float32))
    x4 = nn.Variable.from_numpy_array(np.ones((1, 2, 3, 3), np.float32))
    res = {}
    y = PF.affine(x2, 2, w_init=np.ones((3, 2), np.float32),
                  b_init=np.array([1.0, -2.0], np.float32))
    c = PF.convolution(x4, 2, (1, 1), w_init=np.ones((2, 2, 1, 1), np.float32),
                       b_init=np.array([0.5, 3.0], np.float32))
    d = PF.depthwise_convolution(x4, (1, 1), w_init=np.ones((2, 1, 1), np.float32),
                                 b_init=np.array([2.0, -1.0], np.float32))
    for key, v in (("affine", y), ("convolution", c), ("depthwise_convolution", d)):
        v.forward()
        res[key] = v.d.copy()
    z = PF.affine(x2, 1, w_init=np.ones((3, 1), np.float32), b_init=np.array([0.0], np.float32),
                  name="one")
    z.forward()
    res["zero bias of one value"] = z.d.copy()
    nn.clear_parameters()
    return res

"""NNabla 1.39 fidelity, fourteenth round: the gradient of a Variable of integers or bools is
float32 (Stadyn allocated one of the value's type); and the parameters a parametric function
creates with no gradient from an integer array keep its type where NNabla's do (INQ's
indicator ``I``, read and rewritten as int32; ``min_max_quantize``'s levels ``ql_min`` /
``ql_max``, int64 from a Python int).
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


_NEED_GRAD_INT = ("a parameter that needs a gradient holds float32 on Stadyn (torch computes "
                  "gradients of floating-point tensors only); NNabla keeps the integer array")
_WB_GRAD = ("NNabla 1.39's binary_connect_affine backward writes the binarized weights' "
            "gradient into Wb.g (it then copies it to W.g); Stadyn leaves Wb.g, which needs no "
            "gradient, at zero")


@nnabla_case(names=[_PF + "inq_affine", _PF + "min_max_quantize",
                    _PF + "fixed_point_quantized_affine", _PF + "binary_connect_affine",
                    _PF + "binary_weight_affine"],
             known={"bicon Wb.g": _WB_GRAD},
             note="the parameters needing a gradient made from integer arrays (W, b) are left "
                  "out: their dtype is a known difference (" + _NEED_GRAD_INT + ")")
def integer_initializers__no_gradient(nn, F, PF, r):
    res = {}
    x = nn.Variable.from_numpy_array(np.array([[0.5, -1.0, 2.0]], np.float32), need_grad=True)
    w = np.array([[0.5, -0.25], [0.125, 0.3], [-0.7, 0.2]], np.float32)
    ind = np.array([[1, 0], [0, 0], [0, 1]], np.int32)
    y = PF.inq_affine(x, 2, w_init=w, i_init=ind, inq_iterations=(2,), num_bits=4)
    params = nn.get_parameters(grad_only=False)
    res["inq I dtype"] = _dt(params["inq_affine/I"].d)
    for step in range(4):
        y.forward()
        res["inq y %d" % step] = y.d.copy()
        res["inq I %d" % step] = params["inq_affine/I"].d.copy()
    loss = F.sum(y)
    loss.forward()
    x.grad.zero()
    params["inq_affine/W"].grad.zero()
    loss.backward()
    res["inq x.g"] = x.g.copy()
    res["inq W.g"] = params["inq_affine/W"].g.copy()
    nn.clear_parameters()

    y = PF.min_max_quantize(x, ql_min=0, ql_max=15)
    y.forward()
    res["min_max y"] = y.d.copy()
    for k, p in sorted(nn.get_parameters(grad_only=False).items()):
        res["min_max %s" % k] = p.d.copy()
    nn.clear_parameters()

    wi = np.array([[1, -2], [3, 0], [-1, 2]], np.int32)
    bi = np.array([1, -1], np.int32)
    for key, make in (("fixed_point", lambda: PF.fixed_point_quantized_affine(
                           x, 2, w_init=wi, b_init=bi)),
                      ("bicon", lambda: PF.binary_connect_affine(x, 2, w_init=wi, wb_init=wi,
                                                                 b_init=bi)),
                      ("bwn", lambda: PF.binary_weight_affine(x, 2, w_init=wi, wb_init=wi,
                                                              b_init=bi))):
        y = make()
        loss = F.sum(y)
        loss.forward()
        x.grad.zero()
        params = nn.get_parameters(grad_only=False)
        for p in params.values():
            p.grad.zero()
        loss.backward()
        res[key + " y"] = y.d.copy()
        res[key + " x.g"] = x.g.copy()
        for name, p in sorted(params.items()):
            short = name.split("/")[-1]
            if short in ("W", "b"):
                res["%s %s.d" % (key, short)] = np.asarray(p.d, np.float32)
                res["%s %s.g" % (key, short)] = p.g.copy()
            else:                   # written by the function: float32 on both
                res["%s %s" % (key, short)] = p.d.copy()
                res["%s %s.g" % (key, short)] = p.g.copy()
        nn.clear_parameters()
    return res

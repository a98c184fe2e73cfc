"""NNabla 1.39 fidelity, fourteenth round: the gradient of a Variable of integers or bools is
float32 (Stadyn allocated one of the value's type); the parameters a parametric function
creates with no gradient from an integer array keep its type where NNabla's do (INQ's
indicator ``I``, read and rewritten as int32; ``min_max_quantize``'s levels ``ql_min`` /
``ql_max``, int64 from a Python int); and ``x.reshape(shape, unlink=True)`` holds ``x``'s
array, not a copy that a cast or ``x.d = ints`` leaves behind.
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
_WB_GRAD = ("NNabla 1.39's BinaryConnectAffine::backward_impl runs the affine's backward "
            "into Wb with accum false, then Sign's backward adds Wb.g to W.g "
            "(src/nbla/function/generic/binary_connect_affine.cpp:79-93): Wb.g, which needs "
            "no gradient, holds the last backward's weight gradient (overwritten each "
            "backward, a written Wb.g too, while W.g accumulates; binary_weight_affine leaves "
            "its Wb.g 0); Stadyn's op (ops/_binary.py) passes the gradient straight through "
            "to W inside one autograd node and writes no gradient buffer of a leaf that needs "
            "none, so Wb.g stays 0")


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


def _fresh(nn):
    x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32))
    return x, x.reshape((2, 3), unlink=True)


_WRITES = {
    "x.d = int32": lambda nn, x, v: setattr(x, "d", np.arange(10, 16, dtype=np.int32)),
    "x.d = int64": lambda nn, x, v: setattr(x, "d", np.arange(10, 16)),
    "x.d = floats": lambda nn, x, v: setattr(x, "d", np.arange(10, 16, dtype=np.float32)),
    "x.d[1] = 9": lambda nn, x, v: x.d.__setitem__(1, 9),
    "x.data.fill(3)": lambda nn, x, v: x.data.fill(3),
    "x.data.cast(int32)": lambda nn, x, v: x.data.cast(np.int32),
    "x.data.data = int32": lambda nn, x, v: setattr(x.data, "data",
                                                    np.arange(20, 26, dtype=np.int32)),
    "x.grad.fill(2)": lambda nn, x, v: x.grad.fill(2),
    "v.d = int32": lambda nn, x, v: setattr(v, "d", np.arange(40, 46, dtype=np.int32)
                                            .reshape(2, 3)),
    "v.data.fill(4)": lambda nn, x, v: v.data.fill(4),
    "v.data.cast(int32)": lambda nn, x, v: v.data.cast(np.int32),
}
_READ_AS_FLOAT = ("integers written into a leaf that a graph built before reads as float data "
                  "are held as float32 on Stadyn (compat nnabla _written_types.stays_float, here "
                  "through the view the graph reads); NNabla gives the array the integer type "
                  "and its functions read it as float32")


@nnabla_case(names=[_V + "reshape", _V + "d", "nnabla.NdArray.cast", "nnabla.NdArray.fill"],
             known={"graph x dtype": _READ_AS_FLOAT, "graph v dtype": _READ_AS_FLOAT})
def reshaped_view__shares_the_array(nn, F, S, r):
    r.touch(_V + "reshape", _V + "d", "nnabla.NdArray.cast", "nnabla.NdArray.fill")
    res = {}
    for key, write in _WRITES.items():
        x, v = _fresh(nn)
        kept = x.d                  # a NumPy array of x handed out: fill() gives new memory
        v.g
        write(nn, x, v)
        res[key + " x"] = x.d.copy()
        res[key + " v"] = v.d.copy()
        res[key + " v.g"] = v.g.copy()
        res[key + " x.g"] = x.g.copy()
        res[key + " kept"] = kept.copy()
    # a graph built on the view, run again after integers were written into x
    x, v = _fresh(nn)
    y = F.mul_scalar(v, 2.0)
    y.forward()
    x.d = np.arange(10, 16, dtype=np.int32)
    y.forward()
    res["graph y"] = y.d.copy()
    res["graph x dtype"] = _dt(x.d)
    res["graph v dtype"] = _dt(v.d)
    # the gradient reaching the view is x's
    x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32), need_grad=True)
    v = x.reshape((3, 2), unlink=True)
    loss = F.sum(F.mul_scalar(v, 3.0))
    loss.forward()
    x.grad.zero()
    loss.backward()
    res["trained x.g"] = x.g.copy()
    # a solver trains x through the view (its zero_grad drops x's gradient)
    x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32), need_grad=True)
    v = x.reshape((2, 3), unlink=True)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters({"x": x})
    loss = F.sum(F.squared_error(v, nn.Variable.from_numpy_array(np.ones((2, 3), np.float32))))
    for step in range(3):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res["solver loss %d" % step] = float(loss.d)
        res["solver x %d" % step] = x.d.copy()
        res["solver v.g %d" % step] = v.g.copy()
    # a view of an op's output reads what each forward writes
    x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32))
    h = F.mul_scalar(x, 2.0)
    v = h.reshape((2, 3), unlink=True)
    h.forward()
    res["output view"] = v.d.copy()
    x.d = np.ones(6, np.float32)
    h.forward()
    res["output view rerun"] = v.d.copy()
    # the op output holds what its view is given: integers (A), new memory for fill() while
    # NumPy arrays of both are kept (K), another dtype (M); the next forward writes float32
    # into the array both read again (N), not into the arrays kept
    a = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32))
    x = F.add_scalar(a, 1.0)
    x.forward()
    v = x.reshape((2, 2), unlink=True)
    v.d = np.array([[5, 6], [7, 8]], np.int32)
    res["output view A x"] = x.d.copy()
    x.forward()
    res["output view A forward x"] = x.d.copy()
    res["output view A forward v"] = v.d.copy()
    kept, kept_x = v.d, x.d
    v.data.fill(3)
    res["output view K x"] = x.d.copy()
    res["output view K kept"] = kept.copy()
    res["output view K kept x"] = kept_x.copy()
    a.d = np.arange(10, 50, 10, dtype=np.float32)
    x.forward()
    res["output view K forward v"] = v.d.copy()
    res["output view K forward kept x"] = kept_x.copy()
    v.d = np.full((2, 2), 7, np.float32)
    v.data.cast(np.float64)
    res["output view M x"] = x.d.copy()
    x.forward()
    res["output view N v"] = v.d.copy()
    # the same from the output's side: cast, then a forward
    x.data.cast(np.float64)
    res["output cast v"] = v.d.copy()
    a.d = np.ones(4, np.float32)
    x.forward()
    res["output cast forward v"] = v.d.copy()
    return res

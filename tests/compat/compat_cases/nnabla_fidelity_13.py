"""NNabla 1.39 fidelity, thirteenth round: a fractional float class id given to
``F.softmax_cross_entropy``, ``F.categorical_cross_entropy`` or ``F.top_n_error`` (NNabla
truncates it toward zero; Stadyn refused it); an integer array made a Variable or a parameter
that needs a gradient (NNabla keeps it and writes a float32 gradient); and integer data written
through ``v.data`` into a leaf a built static graph reads as floats.
"""

import numpy as np

from compat_harness import nnabla_case

FN = "nnabla.functions."
_CLASS_ID_OPS = ("softmax_cross_entropy", "categorical_cross_entropy", "top_n_error")

_SCORES = np.array([[0.1, 0.5, -0.3], [1.0, 0.2, 0.0], [0.3, 0.3, 0.9], [0.0, 1.0, 2.0],
                    [0.5, 0.1, 0.2], [0.2, 0.3, 0.4]], np.float32)
# 1.9 is class 1, -0.5 class 0 (toward zero), 2.99 class 2, -1.5 is -1 (ignored), -2 ignored
_TARGETS = np.array([[1.9], [-0.5], [2.99], [-1.5], [0.3], [-2.0]], np.float32)


def _scores_for(name):
    if name == "categorical_cross_entropy":       # probabilities
        p = np.abs(_SCORES) + 0.1
        return (p / p.sum(axis=1, keepdims=True)).astype(np.float32)
    return _SCORES


@nnabla_case(names=[FN + n for n in _CLASS_ID_OPS],
             note="the top_n_error rows with a negative target are left out: NNabla 1.39 "
                  "reads the score before the row's (out of bounds), Stadyn raises an index "
                  "error")
def class_ids__fractional(nn, F, r):
    r.touch(*(FN + n for n in _CLASS_ID_OPS))
    res = {}
    for auto in (False, True):
        nn.set_auto_forward(auto)
        for name in _CLASS_ID_OPS:
            targets = _TARGETS if name != "top_n_error" else np.abs(_TARGETS)
            x = nn.Variable.from_numpy_array(_scores_for(name), need_grad=True)
            t = nn.Variable.from_numpy_array(targets)
            y = getattr(F, name)(x, t)
            if not auto:
                y.forward()
            key = "%s %s" % ("dynamic" if auto else "static", name)
            res[key] = y.d.copy()
            if name != "top_n_error":
                x.grad.zero()
                y.backward()
                res[key + " x.g"] = x.g.copy()
    nn.set_auto_forward(False)
    # a built static graph given other fractional targets on its next forward
    x = nn.Variable.from_numpy_array(_SCORES)
    t = nn.Variable((6, 1))
    t.d = np.zeros((6, 1), np.float32)
    loss = F.mean(F.softmax_cross_entropy(x, t))
    loss.forward()
    res["static mean, targets 0"] = float(loss.d)
    t.d = np.array([[0.5], [1.7], [2.2], [1.0], [0.99], [2.999]], np.float32)
    loss.forward()
    res["static mean, fractional targets"] = float(loss.d)
    return res


_FLOAT32_VALUES = ("a Variable needing a gradient holds float32 on Stadyn (torch computes "
                   "gradients of floating-point tensors only); NNabla keeps the integer array and "
                   "writes a float32 gradient beside it (compat nnabla Variable.from_numpy_array, "
                   "need_grad, get_parameter_or_create)")
_V = "nnabla.Variable."


def _dt(a):
    return str(np.asarray(a).dtype)


@nnabla_case(names=[_V + "from_numpy_array", _V + "need_grad", "nnabla.parameter."
                    "get_parameter_or_create"],
             known={k + " d dtype": _FLOAT32_VALUES
                    for k in ("int32", "int64", "with grad", "dynamic", "need_grad set",
                              "parameter asked again")},
             note="the values of an integer array that needs a gradient keep their numbers, "
                  "in float32")
def integer_array__needing_a_gradient(nn, F, r):
    r.touch(_V + "from_numpy_array", _V + "need_grad",
            "nnabla.parameter.get_parameter_or_create")
    res = {}
    for key, dt in (("int32", np.int32), ("int64", np.int64)):
        v = nn.Variable.from_numpy_array(np.array([1, 2, 3], dt), need_grad=True)
        res[key + " need_grad"] = v.need_grad
        res[key + " g dtype"] = _dt(v.g)
        res[key + " d dtype"] = _dt(v.d)
        y = F.sum(F.mul_scalar(v, 2.5))
        y.forward()
        v.grad.zero()
        y.backward()
        res[key + " y"] = float(y.d)
        res[key + " g"] = v.g.copy()
        res[key + " d"] = np.asarray(v.d, np.float64)
    v = nn.Variable.from_numpy_array(np.array([1, 2], np.int32),
                                     np.array([0.5, 0.5], np.float32), need_grad=True)
    res["with grad need_grad"] = v.need_grad
    res["with grad g"] = v.g.copy()
    res["with grad d dtype"] = _dt(v.d)
    nn.set_auto_forward(True)
    v = nn.Variable.from_numpy_array(np.array([1, 2, 3], np.int32), need_grad=True)
    y = F.sum(F.mul2(v, v))
    y.backward()
    res["dynamic g"] = v.g.copy()
    res["dynamic d dtype"] = _dt(v.d)
    nn.set_auto_forward(False)
    v = nn.Variable.from_numpy_array(np.array([4, 5], np.int32))
    res["need_grad unset"] = v.need_grad
    v.need_grad = True
    y = F.sum(F.mul_scalar(v, 3.0))
    y.forward()
    v.grad.zero()
    y.backward()
    res["need_grad set g"] = v.g.copy()
    res["need_grad set d dtype"] = _dt(v.d)
    p = nn.parameter.get_parameter_or_create("p", (2,), initializer=np.array([4, 5], np.int32),
                                             need_grad=False)
    res["parameter need_grad"] = p.need_grad
    res["parameter g dtype"] = _dt(p.g)        # a gradient buffer before it needs one
    q = nn.parameter.get_parameter_or_create("p", (2,), need_grad=True)
    res["parameter asked again need_grad"] = q.need_grad
    res["parameter asked again g dtype"] = _dt(q.g)
    res["parameter asked again d dtype"] = _dt(q.d)
    y = F.sum(F.mul_scalar(q, 3.0))
    y.forward()
    q.grad.zero()
    y.backward()
    res["parameter asked again g"] = q.g.copy()
    res["parameter asked again d"] = np.asarray(q.d, np.float64)
    res["parameter registered g"] = nn.get_parameters()["p"].g.copy()
    nn.clear_parameters()
    return res


_KEPT_FLOAT = ("integers written through .data into a leaf that a graph built before reads as "
               "float data (or that needs a gradient) are held as float32 on Stadyn, as for "
               "v.d = ints (compat nnabla _variable._set_data); NNabla gives the leaf the "
               "integer type and its functions read it as float32")
_WRITES = {
    "cast int32": lambda x: x.data.cast(np.int32),
    "cast int": lambda x: x.data.cast(int),
    "data.data = int32": lambda x: setattr(x.data, "data", np.array([[4, 5, -6]], np.int32)),
    "data.data = int64": lambda x: setattr(x.data, "data", np.array([[4, 5, -6]])),
    "get_data int32": lambda x: x.data.get_data("rw", np.int32),
}


@nnabla_case(names=["nnabla.NdArray.cast", "nnabla.NdArray.data", "nnabla.NdArray.get_data"],
             known={k + " x dtype": _KEPT_FLOAT for k in list(_WRITES) + ["trained"]},
             note="the values are compared as float64; their dtype is a known difference")
def integer_data__written_into_a_read_leaf(nn, F, r):
    r.touch("nnabla.NdArray.cast", "nnabla.NdArray.data", "nnabla.NdArray.get_data")
    res = {}
    for key, write in _WRITES.items():
        x = nn.Variable.from_numpy_array(np.array([[1.5, -2.0, 3.0]], np.float32))
        w = nn.Variable.from_numpy_array(np.ones((3, 2), np.float32))
        y = F.affine(x, w)
        z = F.relu(x)
        y.forward()
        z.forward()
        write(x)
        res[key + " x dtype"] = _dt(x.d)
        res[key + " x"] = np.asarray(x.d, np.float64)
        y.forward()
        z.forward()
        res[key + " affine"] = y.d.copy()
        res[key + " relu"] = z.d.copy()
    # a leaf that needs a gradient, cast to integers after its graph was built
    x = nn.Variable.from_numpy_array(np.array([[1.0, 2.0, 3.0]], np.float32))
    w = nn.Variable.from_numpy_array(np.full((3, 2), 0.5, np.float32), need_grad=True)
    loss = F.sum(F.affine(x, w))
    loss.forward()
    w.data.cast(np.int32)
    loss.forward()
    w.grad.zero()
    loss.backward()
    res["trained x dtype"] = _dt(w.d)
    res["trained w"] = np.asarray(w.d, np.float64)
    res["trained loss"] = float(loss.d)
    res["trained w.g"] = w.g.copy()
    return res

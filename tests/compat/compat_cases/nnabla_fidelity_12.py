"""NNabla 1.39 fidelity, twelfth round: the type of a parameter made from an integer array
(``nn.parameter.get_parameter_or_create(..., initializer=np.array(..., np.int32))``), and a
parametric function given a NumPy array of several values as ``b_init`` (Stadyn tested the
array's truth value).
"""

import gc

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


V = "nnabla.Variable."
_BUILT_AS_FLOAT = ("a leaf a graph already reads as float data stays float32 on Stadyn (the "
                   "graph holds no cast: compat nnabla _float_inputs.read_as_float); NNabla's "
                   "takes the integer type and its functions cast at each forward")
_NEEDS_GRAD = ("a leaf needing a gradient stays float32 on Stadyn (torch's gradients are "
               "floating point only); NNabla's takes the integer type")
_F64 = ("Stadyn keeps floating values float32 where NNabla stores the float64 array (compat "
        "nnabla _written_types.take_written_type)")


def _labels_run(nn, F, res, key):
    """A loss and an error over labels written as int64 after the graph was built, and an
    integer picture written before."""
    x = nn.Variable.from_numpy_array(np.array([[1.0, 2.0, 3.0], [3.0, 1.0, 0.0]], np.float32))
    t = nn.Variable((2, 1))
    loss = F.mean(F.softmax_cross_entropy(x, t))
    err = F.mean(F.top_n_error(x, t, n=1))
    t.d = np.array([[2], [1]])
    loss.forward()
    err.forward()
    res[key + " label dtype"] = [_dt(t.d), str(t.data.dtype)]
    res[key + " loss"] = float(loss.d)
    res[key + " error"] = float(err.d)
    res[key + " one-hot by label"] = np.eye(3)[t.d.ravel()]
    t.d = np.array([[0], [0]], np.int32)
    loss.forward()
    res[key + " label dtype, int32 then"] = _dt(t.d)
    res[key + " loss, int32 labels"] = float(loss.d)
    p = nn.Variable((2, 3))
    p.d = np.array([[0, 128, 255], [10, 20, 30]], np.uint8)
    y = F.mul_scalar(p, 1.0 / 255)
    y.forward()
    res[key + " picture dtype"] = _dt(p.d)
    res[key + " picture scaled"] = [_dt(y.d), y.d.copy()]


@nnabla_case(names=[V + "d"],
             known={"built as float": _BUILT_AS_FLOAT, "needs grad": _NEEDS_GRAD,
                    "ints then floats": _F64},
             note="v.d = an integer array gives the leaf its type (labels read back as "
                  "int64, usable as NumPy indices), static and dynamic; the loss reads them "
                  "as class ids, the functions reading data cast them to float32")
def assigned_integers__keep_their_type(nn, F, r):
    r.touch(V + "d")
    res = {}
    _labels_run(nn, F, res, "static")
    with nn.auto_forward():
        x = nn.Variable.from_numpy_array(np.array([[1.0, 2.0, 3.0]], np.float32))
        t = nn.Variable((1, 1))
        t.d = np.array([[1]])
        loss = F.softmax_cross_entropy(x, t)
        res["dynamic label dtype"] = _dt(t.d)
        res["dynamic loss"] = loss.d.copy()
        u = nn.Variable((3,))
        u.d = np.array([1, 2, 3], np.int32)
        s = F.sum(u)
        res["dynamic sum of int32"] = [_dt(u.d), _dt(s.d), float(s.d)]
    a = nn.Variable((2,))
    b = F.relu(a)
    a.d = np.array([3, -4])
    b.forward()
    res["built as float"] = _dt(a.d)
    res["built as float, relu"] = b.d.copy()
    g = nn.Variable((2,), need_grad=True)
    g.d = np.array([1, 2], np.int32)
    res["needs grad"] = _dt(g.d)
    w = nn.Variable((2,))
    w.d = np.array([1, 2])
    w.d = np.array([0.5, 1.5])
    res["ints then floats"] = _dt(w.d)
    res["ints then floats, values"] = np.asarray(w.d, np.float64)
    return res


def _ints(shape):
    return np.arange(int(np.prod(shape))).reshape(shape).astype(np.int32)


@nnabla_case(names=[V + "d", V + "__getitem__", V + "reshape", V + "get_unlinked_variable"],
             note="a graph built on a floating leaf through x[...], x.reshape or a view of x "
                  "reads int32 later written into x as float32, as one built straight on x; "
                  "once no graph reads x, x.d = int32 gives x int32 (Stadyn, mendn: the "
                  "slice's node did not mark x, so the graph read int32 and failed)")
def read_as_float__every_path(nn, F, PF, r):
    r.touch(V + "d", V + "__getitem__", V + "reshape", V + "get_unlinked_variable")
    res = {}
    builds = {
        "x[:, 1:] softmax": lambda x: F.softmax(x[:, 1:]),
        "x[0] softmax": lambda x: F.softmax(x[0]),
        "x[[1, 0]] relu": lambda x: F.relu(x[[1, 0]]),
        "x.reshape relu": lambda x: F.relu(x.reshape((3, 2))),
        "unlinked view softmax": lambda x: F.softmax(x.get_unlinked_variable()),
        "PF.affine of x[:, 1:]": lambda x: PF.affine(x[:, 1:], 2,
                                                      w_init=np.ones((2, 2), np.float32)),
    }
    for key, build in builds.items():
        x = nn.Variable((2, 3))
        y = build(x)
        x.d = _ints((2, 3))
        y.forward()
        res[key] = y.d.copy()
    a = nn.Variable((2,))
    b = F.relu(a)
    del b
    gc.collect()
    a.d = np.array([1, -2], np.int32)
    res["graph gone: leaf dtype"] = _dt(a.d)
    c = nn.Variable((2,))
    u = c.get_unlinked_variable()
    e = F.relu(u)
    del e, u
    gc.collect()
    c.d = np.array([1, -2], np.int32)
    res["graph on a view gone: leaf dtype"] = _dt(c.d)
    nn.clear_parameters()
    return res


_WRITTEN_AT_BUILD = ("running statistics a forward writes are made float32 when the graph is "
                     "built on Stadyn (stadyn.parametric._pf_common.parameter, read_by="
                     "'writing'), at the forward that writes them on NNabla")


@nnabla_case(names=[PFN + "batch_normalization", PFN + "affine"],
             known={"fixed affine b": _TRAINED,
                    "batch_stat=True built: mean, var dtypes": _WRITTEN_AT_BUILD},
             note="a parametric function's parameter needing no gradient made from an integer "
                  "array keeps its type (batch normalisation's running statistics given as "
                  "param_init), read as float32, made float32 by a forward writing it; "
                  "fix_parameters=True still registers a trainable parameter (float32 here)")
def pf_integer_parameters__keep_their_type(nn, PF, r):
    r.touch(PFN + "batch_normalization", PFN + "affine")
    res = {}
    x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3))
    stats = {"mean": np.array([[1, 2, 3]]), "var": np.array([[1, 2, 4]], np.int32)}
    for batch_stat in (False, True):
        key = "batch_stat=%s" % batch_stat
        with nn.parameter_scope(key):
            y = PF.batch_normalization(x, batch_stat=batch_stat, param_init=stats)
            registered = nn.get_parameters(grad_only=False)
            res[key + " built: mean, var dtypes"] = [_dt(registered["bn/mean"].d),
                                                     _dt(registered["bn/var"].d)]
            y.forward()
            res[key] = y.d.copy()
            res[key + " mean after"] = np.asarray(registered["bn/mean"].d, np.float64)
            res[key + " mean, var dtypes after"] = [_dt(registered["bn/mean"].d),
                                                    _dt(registered["bn/var"].d)]
    for batch_stat in (False, True):
        key = "registered int32 var, batch_stat=%s" % batch_stat
        with nn.parameter_scope(key):
            var = nn.parameter.get_parameter_or_create(
                "bn/var", (1, 3), initializer=np.array([[1, 2, 4]], np.int32), need_grad=False)
            y = PF.batch_normalization(x, batch_stat=batch_stat)
            y.forward()
            res[key] = y.d.copy()
            res[key + ", var after"] = [_dt(var.d), np.asarray(var.d, np.float64)]
    with nn.parameter_scope("fixed"):
        PF.affine(x, 2, b_init=np.array([1, 2]), fix_parameters=True)
        res["fixed affine b"] = _dt(nn.get_parameters(grad_only=False)["affine/b"].d)
    nn.clear_parameters()
    return res

"""NNabla 1.39 fidelity, fifteenth round: integers assigned to an op's output keep their type
until its next forward (Stadyn wrote them into its float32 array); integers beyond 2**24 in a
Variable that needs a gradient (NNabla keeps them exactly, Stadyn holds float32); the result of
``F.scatter_nd(data, indices, out=x)`` holds ``x``'s array (a static forward writes ``x``, and
``x.d = ...`` is what the next forward reads); and a view ``x.reshape(shape, unlink=True)`` of an
op's output when a forward gives the output another shape (the same number of elements: the
view follows it; another number: the two part).
"""

import numpy as np

from compat_harness import nnabla_case

_V = "nnabla.Variable."
FN = "nnabla.functions."


def _dt(a):
    return str(np.asarray(a).dtype)


@nnabla_case(names=[_V + "d"],
             known={k + "float64 dtype": "Stadyn keeps floating values float32 where NNabla's "
                                         "array takes float64 (one tensor per Variable, which "
                                         "the ops compute in)" for k in ("", "dynamic ")},
             note="integer and bool arrays assigned to an op's output, in both modes")
def output_written_integers__keep_their_type(nn, F, r):
    r.touch(_V + "d")
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32), need_grad=True)
            y = F.add_scalar(x, 1.0)
            loss = F.sum(F.mul2(y, y))
            loss.forward()
            for key, value in (("int32", np.array([5, 6, 7, 8], np.int32)),
                               ("int64", np.array([5, 6, 7, 9], np.int64)),
                               ("uint8", np.array([5, 6, 7, 10], np.uint8)),
                               ("bool", np.array([True, False, True, True]))):
                y.d = value
                res[mode + key + " dtype"] = _dt(y.d)
                res[mode + key] = y.d.copy()
            y.d = np.array([1, 2, 3, 4], np.int32)
            kept = y.d
            y.d = np.array([1.5, 2.0, 3.0, 4.0])
            res[mode + "float64 dtype"] = _dt(y.d)
            res[mode + "float64"] = np.asarray(y.d, np.float64)
            res[mode + "kept int32"] = kept.copy()
            y.d = np.array([2, 3, 4, 5], np.int32)
            x.grad.zero()
            loss.backward()         # it reads the values assigned since the forward
            res[mode + "x.g after ints"] = x.g.copy()
            loss.forward()
            x.grad.zero()
            loss.backward()
            res[mode + "forward dtype"] = _dt(y.d)
            res[mode + "forward"] = y.d.copy()
            res[mode + "y.g dtype"] = _dt(y.g)
            res[mode + "loss"] = float(loss.d)
            res[mode + "x.g"] = x.g.copy()
            z = F.mul_scalar(y, 2.0)
            y.d = np.array([3, 1, 4, 1], np.int64)
            if dynamic:
                z = F.mul_scalar(y, 2.0)
            else:
                z.forward()
            res[mode + "read by a function"] = z.d.copy()
        finally:
            nn.set_auto_forward(False)
    return res


_ROUNDED = ("integers beyond 2**24 given to a Variable that needs a gradient are held as float32 "
            "on Stadyn (torch computes gradients of floating-point tensors only), which rounds "
            "them, with a warning at the user's line (compat nnabla _written_types.warn_rounded); "
            "NNabla keeps the integer array")


@nnabla_case(names=[_V + "from_numpy_array", _V + "d"],
             known={k: _ROUNDED for k in ("leaf d", "leaf dtype", "assigned d", "assigned dtype",
                                          "made trainable d", "made trainable dtype")},
             tols={k: (0, 0) for k in ("leaf d", "assigned d", "made trainable d")},
             note="what the functions compute from them (float32, rounded alike) is compared; "
                  "the values read back exactly")
def large_integers__need_grad(nn, F, r):
    r.touch(_V + "from_numpy_array", _V + "d")
    res = {}
    big = np.array([2 ** 24 + 1, 2 ** 30 + 3, -(2 ** 25) - 1, 7], np.int64)
    v = nn.Variable.from_numpy_array(big, need_grad=True)
    res["leaf d"] = np.asarray(v.d, np.float64)
    res["leaf dtype"] = _dt(v.d)
    res["leaf g dtype"] = _dt(v.g)
    u = F.mul_scalar(v, 1.0)
    loss = F.sum(F.mul_scalar(u, 0.5))
    loss.forward()
    v.grad.zero()
    loss.backward()
    res["function"] = u.d.copy()
    res["loss"] = float(loss.d)
    res["grad"] = v.g.copy()
    w = nn.Variable((4,), need_grad=True)
    w.d = big
    res["assigned d"] = np.asarray(w.d, np.float64)
    res["assigned dtype"] = _dt(w.d)
    t = nn.Variable.from_numpy_array(big.astype(np.int32))
    t.need_grad = True
    res["made trainable d"] = np.asarray(t.d, np.float64)
    res["made trainable dtype"] = _dt(t.d)
    res["made trainable g dtype"] = _dt(t.g)
    small = nn.Variable.from_numpy_array(np.array([3, -4]), need_grad=True)
    res["small d"] = np.asarray(small.d, np.float64)
    return res


@nnabla_case(names=[FN + "scatter_nd"],
             note="out=x of a leaf x in a static graph: the result holds x's array")
def scatter_nd__out_shares_x(nn, F, r):
    res = {}
    idx = nn.Variable.from_numpy_array(np.array([[0, 2, 4]]))
    d = nn.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0], np.float32), need_grad=True)
    for add in (False, True):
        key = "add " if add else ""
        x = nn.Variable.from_numpy_array(np.full(5, 9.0, np.float32), need_grad=True)
        kept = x.d
        y = F.scatter_nd(d, idx, out=x, add=add)
        res[key + "x before"] = x.d.copy()
        for step in range(2):
            y.forward()
            res[key + "y %d" % step] = y.d.copy()
            res[key + "x %d" % step] = x.d.copy()
        res[key + "kept"] = kept.copy()
        y.d = np.arange(5, dtype=np.float32)
        res[key + "x after y.d ="] = x.d.copy()
        x.d = np.ones(5)
        loss = F.sum(F.mul_scalar(y, 2.0))
        loss.forward()
        res[key + "y after x.d ="] = y.d.copy()
        res[key + "loss"] = float(loss.d)
        x.g = 7.0
        d.grad.zero()
        loss.backward()
        res[key + "x.g (was 7)"] = x.g.copy()
        res[key + "d.g"] = d.g.copy()
    return res


@nnabla_case(names=[_V + "reshape", "nnabla.Variable.reset_shape"],
             note="the input of an op's output given another shape between forwards")
def output_view__new_shape(nn, F, r):
    r.touch(_V + "reshape", "nnabla.Variable.reset_shape")
    res = {}
    # another number of elements: the output and its view part, value and gradient
    a = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32), need_grad=True)
    x = F.add_scalar(a, 1.0)
    x.forward()
    v = x.reshape((2, 2), unlink=True)
    a.reset_shape((8,), force=True)
    a.d = np.arange(8.0)
    x.forward()
    res["grown x"] = x.d.copy()
    res["grown v"] = v.d.copy()
    kept = x.d
    a.reset_shape((4,), force=True)
    a.d = np.arange(10.0, 14.0)
    x.forward()
    a.d = np.arange(20.0, 24.0)
    x.forward()
    res["back x"] = x.d.copy()
    res["back v"] = v.d.copy()
    res["back kept"] = kept.copy()
    v.g = np.ones((2, 2))
    res["back x.g"] = x.g.copy()
    v.d = np.full((2, 2), 7.0)
    res["back x after v.d ="] = x.d.copy()
    # as many elements in another shape: the view reads what each forward writes
    b = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32), need_grad=True)
    y = F.mul_scalar(b, 2.0)
    y.forward()
    w = y.reshape((4,), unlink=True)
    b.reset_shape((2, 2), force=True)
    b.d = np.ones((2, 2))
    y.forward()
    res["reshaped y"] = y.d.copy()
    res["reshaped w"] = w.d.copy()
    b.d = np.full((2, 2), 3.0)
    y.forward()
    res["reshaped w rerun"] = w.d.copy()
    w.d = np.arange(4, dtype=np.float32)
    res["reshaped y after w.d ="] = y.d.copy()
    w.g = np.arange(4, dtype=np.float32)
    res["reshaped y.g"] = y.g.copy()
    y.g = np.full((2, 2), 5.0, np.float32)
    res["reshaped w.g"] = w.g.copy()
    return res


@nnabla_case(names=[FN + "sink", FN + "dropout"],
             note="nnabla-examples' Graph U-Nets: F.sink(loss, acc).forward(), then "
                  "loss.backward(); Stadyn ran loss's forward again, drawing new dropout masks")
def sink_forward__then_backward_of_an_input(nn, F, PF, r):
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(4, 6).astype(np.float32), need_grad=True)
    labels = nn.Variable.from_numpy_array(np.array([[0], [2], [1], [2]]))
    h = F.dropout(PF.affine(x, 8, name="fc0"), 0.5)
    out = F.softmax(PF.affine(F.relu(h), 3, name="fc1"))
    loss = F.mean(F.categorical_cross_entropy(out, labels))
    pred = F.reshape(F.max(out, axis=1, only_index=True), (4, 1))
    acc = F.mean(F.equal(pred, labels))
    params = nn.get_parameters()
    r.set_params(params)
    for step in range(2):
        for p in params.values():
            p.grad.zero()
        x.grad.zero()
        F.sink(loss, acc).forward()
        res["loss %d" % step] = float(loss.d)
        res["acc %d" % step] = float(acc.d)
        loss.backward()
        res["loss after backward %d" % step] = float(loss.d)
        res["x.g %d" % step] = x.g.copy()
        for name, p in sorted(params.items()):
            res["%s.g %d" % (name, step)] = p.g.copy()
    return res

"""Arrays a program keeps from a Variable across training steps: which keep their values and
which follow the Variable.

In NNabla 1.39 a Variable's ``data`` and ``grad`` are handles (``NdArray``) over memory the
handle can exchange.  ``zero()``, ``fill()`` (and ``solver.zero_grad()``, ``.g = 0``, which call
them) give the handle new memory and leave the old to whoever holds it: a NumPy array kept from
``.g`` or ``.grad.data`` keeps its values through ``zero_grad()`` and the next backward, while a
kept ``.grad`` handle reads the new gradient.  A backward without ``zero_grad`` adds into the
same memory, so an array kept then follows; so does one kept from ``.d`` through
``solver.update()``, which writes the value in place.  Stadyn's static plans reuse a large weight's
gradient memory from step to step: a NumPy array kept from ``.g`` once showed every later step's
gradient (three equal values where NNabla logs three), and a kept ``.grad`` handle of a dynamic
graph kept the old gradient.

Each case runs in three ways: a static graph (``forward()`` / ``backward()`` each step), a
dynamic graph rebuilt each step, and a dynamic graph with an explicit ``forward()`` (which runs
Stadyn's static plan).  The weight is 512 x 512 (1 MB: what a plan's backward writes into a
reused buffer); the results are a few entries of each kept array.
"""

import numpy as np

from compat_harness import nnabla_case

_MODES = ("static", "dynamic", "dynamic with forward()")
_N = 512


def _model(nn, F, PF, S, r, mode):
    """An affine layer (``_N`` x ``_N``) under SGD, and ``loss()``: the step's loss, forwarded
    as ``mode`` does."""
    nn.clear_parameters()
    nn.set_auto_forward(mode != "static")
    x = nn.Variable.from_numpy_array(r.randn(4, _N).astype(np.float32))

    def make():
        with nn.parameter_scope("kept"):
            return F.mean(PF.affine(x, _N, name="fc") ** 2)

    graph = make()
    params = nn.get_parameters()
    W = params["kept/fc/affine/W"]
    W.d = (r.randn(_N, _N) * 0.01).astype(np.float32)
    solver = S.Sgd(lr=0.5)
    solver.set_parameters(params)
    state = {"loss": graph}

    def loss():
        if mode == "static":
            state["loss"].forward()
        else:
            state["loss"] = make()
            if mode != "dynamic":
                state["loss"].forward()
        return state["loss"]
    return W, solver, loss


def _few(a):
    return np.array(np.asarray(a)[1, :4])


@nnabla_case(names=["nnabla.Variable.g", "nnabla.Variable.grad", "nnabla.NdArray.data",
                    "nnabla.solvers.Sgd", "nnabla.set_auto_forward"],
             rtol=1e-4, atol=1e-8,
             note="three steps of forward, zero_grad, backward, update; kept every step: .g and "
                  ".grad.data after the backward (keep their step's gradient), the .grad handle "
                  "(reads the last one), .g taken before the backward (its step's gradient), "
                  ".d and .data (the last value); and .g kept with backward(clear_buffer=True)")
def kept_gradients_keep_their_values(nn, F, PF, S, r):
    r.touch("nnabla.Variable.g", "nnabla.Variable.grad", "nnabla.NdArray.data",
            "nnabla.Variable.d", "nnabla.Variable.data")
    res = {}
    for mode in _MODES:
        W, solver, loss = _model(nn, F, PF, S, r, mode)
        kept = {".g": [], ".grad.data": [], ".grad": [], ".g before backward": [], ".d": [],
                ".data": []}
        for step in range(3):
            l = loss()
            solver.zero_grad()
            kept[".g before backward"].append(W.g)
            l.backward()
            kept[".g"].append(W.g)
            kept[".grad.data"].append(W.grad.data)
            kept[".grad"].append(W.grad)
            kept[".d"].append(W.d)
            kept[".data"].append(W.data)
            res["%s: step %d gradient" % (mode, step)] = _few(W.g)
            solver.update()
        res["%s: last value" % mode] = _few(W.d)
        for what, arrays in sorted(kept.items()):
            arrays = [a.data if what in (".grad", ".data") else a for a in arrays]
            res["%s: kept %s" % (mode, what)] = np.stack([_few(a) for a in arrays])
        W, solver, loss = _model(nn, F, PF, S, r, mode)
        arrays = []
        for step in range(3):
            l = loss()
            solver.zero_grad()
            l.backward(clear_buffer=True)
            arrays.append(W.g)
            solver.update()
        res["%s: kept .g, clear_buffer=True" % mode] = np.stack([_few(a) for a in arrays])
    nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.Variable.g", "nnabla.Variable.grad", "nnabla.solvers.Sgd"],
             rtol=1e-4, atol=1e-8,
             note="two backwards without zero_grad add into the same array (a .g kept after the "
                  "first shows the sum); after zero_grad the kept .g keeps the sum, the kept "
                  ".grad handle reads zeros, and after the next backward the new gradient")
def kept_gradients_through_accumulation(nn, F, PF, S, r):
    r.touch("nnabla.Variable.g", "nnabla.Variable.grad", "nnabla.NdArray.data")
    res = {}
    for mode in _MODES:
        W, solver, loss = _model(nn, F, PF, S, r, mode)
        l = loss()
        solver.zero_grad()
        l.backward()
        g, handle = W.g, W.grad
        res[mode + ": first"] = _few(W.g)
        if mode != "static":
            l = loss()
        l.backward()
        res[mode + ": kept .g after a second backward"] = _few(g)
        res[mode + ": kept .grad after a second backward"] = _few(handle.data)
        solver.zero_grad()
        res[mode + ": kept .g after zero_grad"] = _few(g)
        res[mode + ": kept .grad after zero_grad"] = _few(handle.data)
        l = loss()
        l.backward()
        res[mode + ": kept .g after the next backward"] = _few(g)
        res[mode + ": kept .grad after the next backward"] = _few(handle.data)
        res[mode + ": now"] = _few(W.g)
    nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.NdArray.zero", "nnabla.NdArray.fill", "nnabla.Variable.g"],
             rtol=1e-4, atol=1e-8,
             note="the gradient zeroed by hand each step instead of zero_grad: grad.zero(), "
                  "grad.fill(0), g = 0 and grad.data = 0 leave a kept .g its step's gradient; "
                  "writing zeros into the array itself (g[...] = 0) writes the kept array, "
                  "which then holds the last gradient")
def kept_gradients_zeroed_by_hand(nn, F, PF, S, r):
    r.touch("nnabla.NdArray.zero", "nnabla.NdArray.fill", "nnabla.Variable.g",
            "nnabla.Variable.grad", "nnabla.NdArray.data")
    res = {}
    for mode in _MODES:
        for how in ("grad.zero()", "grad.fill(0)", "g = 0", "grad.data = 0", "g[...] = 0"):
            W, solver, loss = _model(nn, F, PF, S, r, mode)
            arrays = []
            for step in range(3):
                l = loss()
                if how == "grad.zero()":
                    W.grad.zero()
                elif how == "grad.fill(0)":
                    W.grad.fill(0)
                elif how == "g = 0":
                    W.g = 0
                elif how == "grad.data = 0":
                    W.grad.data = 0
                else:
                    W.g[...] = 0
                l.backward()
                arrays.append(W.g)
                solver.update()
            res["%s: %s, kept .g" % (mode, how)] = np.stack([_few(a) for a in arrays])
    nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.NdArray.zero", "nnabla.NdArray.fill", "nnabla.Variable.d"],
             rtol=1e-4, atol=1e-8,
             note="a parameter's .d kept, then data.fill(3) and data.zero(): NNabla's kept "
                  "array keeps the old values, the Variable reads the new")
def kept_values_zeroed_by_hand(nn, F, PF, S, r):
    r.touch("nnabla.NdArray.zero", "nnabla.NdArray.fill", "nnabla.Variable.d",
            "nnabla.Variable.data")
    W, solver, loss = _model(nn, F, PF, S, r, "static")
    kept = W.d
    res = {"before": _few(kept)}
    W.data.fill(3.0)
    res["kept .d after data.fill(3)"] = _few(kept)
    res["now after data.fill(3)"] = _few(W.d)
    W.data.zero()
    res["kept .d after data.zero()"] = _few(kept)
    res["now after data.zero()"] = _few(W.d)
    return res


@nnabla_case(names=["nnabla.parameter.get_parameter_or_create", "nnabla.solvers.Sgd",
                    "nnabla.Variable.get_unlinked_variable"],
             rtol=1e-5, atol=1e-7,
             note="a get_parameter_or_create view's gradient and the registered parameter's are "
                  "one array: .g of each kept after a step keeps that step's gradient through "
                  "zero_grad and the next backward, both dynamic and static; so does a leaf's "
                  ".g when the solver holds an unlinked view of it (static)")
def kept_gradients_of_a_parameter_view(nn, F, S, r):
    r.touch("nnabla.Variable.g", "nnabla.Variable.get_unlinked_variable")
    res = {}
    nn.set_auto_forward(False)
    x = nn.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0], np.float32), need_grad=True)
    u = x.get_unlinked_variable(need_grad=True)
    solver = S.Sgd(0.1)
    solver.set_parameters({"u": u})
    loss = F.sum(u ** 3)
    kept = []
    for step in range(3):
        loss.forward()
        solver.zero_grad()
        loss.backward()
        kept.append(x.g)
        solver.update()
    res["unlinked view in the solver: kept leaf .g"] = np.stack([np.array(a) for a in kept])
    for mode in _MODES[:2]:
        nn.clear_parameters()
        nn.set_auto_forward(mode == "dynamic")
        with nn.parameter_scope("vq"):
            w = nn.parameter.get_parameter_or_create("W", (3,), np.array([1.0, -2.0, 0.5]))
        registered = nn.get_parameters()["vq/W"]
        solver = S.Sgd(0.1)
        solver.set_parameters(nn.get_parameters())
        loss = F.sum(w ** 3)
        kept_view, kept_registered = [], []
        for step in range(3):
            if mode == "dynamic":
                loss = F.sum(w ** 3)
            else:
                loss.forward()
            solver.zero_grad()
            loss.backward()
            kept_view.append(w.g)
            kept_registered.append(registered.g)
            solver.update()
        res[mode + ": kept view .g"] = np.stack([np.array(a) for a in kept_view])
        res[mode + ": kept registered .g"] = np.stack([np.array(a) for a in kept_registered])
    nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.NdArray.data", "nnabla.Variable.data"],
             note="a scalar assigned to .data fills the array in its own dtype (an array "
                  "assigned gives its dtype)")
def ndarray_data_assigned_a_scalar(nn, F, PF, S, r):
    r.touch("nnabla.NdArray.data", "nnabla.Variable.data")    # (property setters)
    res = {}
    a = nn.NdArray.from_numpy_array(np.arange(3, dtype=np.float32))
    a.data = 2
    res["float32 array = 2"] = a.data.copy()
    x = nn.Variable.from_numpy_array(np.arange(3, dtype=np.float32))
    x.data.data = 2
    res["variable's value = 2"] = x.d.copy()
    c = nn.NdArray.from_numpy_array(np.arange(3, dtype=np.int32))
    c.data = 1.5
    res["int32 array = 1.5"] = c.data.copy()
    b = nn.NdArray.from_numpy_array(np.arange(3, dtype=np.float32))
    b.data = np.array([1, 2, 3])
    res["float32 array = int64 array"] = b.data.copy()
    return res


@nnabla_case(names=["nnabla.parameter.get_parameter_or_create", "nnabla.NdArray.fill",
                    "nnabla.NdArray.zero", "nnabla.Variable.get_unlinked_variable",
                    "nnabla.NdArray.zeroing"],
             rtol=1e-5, atol=1e-7,
             note="a view (get_parameter_or_create with another need_grad, get_unlinked_variable) "
                  "and the Variable it views hold one array: .d kept from either keeps its "
                  "values when the other is filled, zeroed or assigned a scalar (new memory); "
                  "a solver's zero_grad still reads zeroing after a fill while .d is kept")
def kept_values_of_a_parameter_view(nn, F, S, r):
    r.touch("nnabla.NdArray.fill", "nnabla.NdArray.zero", "nnabla.NdArray.zeroing",
            "nnabla.Variable.get_unlinked_variable")
    res = {}
    with nn.parameter_scope("kv"):
        P = nn.parameter.get_parameter_or_create("P", (3,), need_grad=True)
        P.d = 1.0
        V = nn.parameter.get_parameter_or_create("P", (3,), need_grad=False)
    kept = V.d
    P.data.fill(9)
    res["view's kept .d after the parameter's fill(9)"] = kept.copy()
    res["view's .d after fill(9)"] = V.d.copy()
    kept = V.d
    P.data.zero()
    res["view's kept .d after zero()"] = kept.copy()
    kept = V.d
    P.d = 4
    res["view's kept .d after .d = 4"] = kept.copy()
    kept = P.d
    V.data.fill(7)
    res["parameter's kept .d after the view's fill(7)"] = kept.copy()
    res["parameter's .d after fill(7)"] = P.d.copy()

    W = nn.Variable.from_numpy_array(np.ones((3,), np.float32), need_grad=True)
    U = W.get_unlinked_variable(need_grad=True)
    x = nn.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0], np.float32))
    loss = F.sum(U * U * x)
    solver = S.Momentum(0.1, 0.9)
    solver.set_parameters({"W": W})
    for step in range(4):
        if step == 2:
            kept_w = W.d
            W.data.fill(0.5)
        if step == 3:
            kept_u = U.d
            U.data.fill(0.25)
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
        res["unlinked: W.d after step %d" % step] = W.d.copy()
    res["unlinked: W's kept .d"] = kept_w.copy()
    res["unlinked: the view's kept .d"] = kept_u.copy()

    solver = S.Sgd(0.1)
    solver.set_parameters({"W": W})
    loss.forward()
    loss.backward()
    solver.zero_grad()
    kept = W.d
    W.data.fill(2.0)
    res["zeroing after zero_grad and fill with .d kept"] = np.array(W.grad.zeroing)
    return res


@nnabla_case(names=["nnabla.NdArray.fill", "nnabla.Variable.d"],
             note="an op output's .d kept follows the next forward, but a fill of the output "
                  "while it is kept gives the output new memory: the kept array keeps the "
                  "values it had, through the fill and the next forward")
def kept_output_array_through_a_fill(nn, F, r):
    r.touch("nnabla.NdArray.fill", "nnabla.Variable.d")
    res = {}
    x = nn.Variable.from_numpy_array(np.ones(3, np.float32))
    y = x * 2.0
    y.forward()
    kept = y.d
    x.d = 2.0
    y.forward()
    res["kept .d after the next forward"] = kept.copy()
    y.data.fill(5.0)
    res["kept .d after fill(5)"] = kept.copy()
    x.d = 3.0
    y.forward()
    res["kept .d after fill and forward"] = kept.copy()
    res[".d after fill and forward"] = y.d.copy()
    return res

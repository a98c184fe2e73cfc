"""NNabla 1.39's object model around parameters and solver states: what a value written with
``fill()`` / ``zero()`` / a scalar gives to arrays kept before, what the graphs and solvers
holding the parameter see next, and what ``solver.get_states()`` hands out.

In NNabla 1.39 ``W.data.fill(v)``, ``W.data.zero()``, ``W.d = v`` (a scalar) and
``W.data.data = v`` give the parameter's array new memory: a NumPy array kept from ``W.d``
before keeps the old values, while the Variable, ``nn.get_parameters()``, a graph built
before, a ``get_parameter_or_create`` view and the solver read the new ones; the gradient is
left alone.  ``W.d[...] = v`` writes the array itself (the kept array follows).
``get_states()`` gives ``SolverState`` objects whose ``pstate`` holds ``nn.Variable``s (with
NdArray ``.data``) over the solver's own state arrays: a write to them (``fill``, ``.d = ``)
reaches the solver, and the solver's update writes into them.
"""

import os

import numpy as np

from compat_harness import nnabla_case

N = "nnabla."


def _net(nn, F, PF, r):
    x = nn.Variable.from_numpy_array(r.randn(4, 3))
    t = nn.Variable.from_numpy_array(r.randn(4, 2))
    with nn.parameter_scope("om"):
        y = PF.affine(x, 2, name="fc")
    return F.mean(F.squared_error(y, t))


_PROTOBUF = ("NNabla 1.39's load_parameters of a .protobuf assigns float64 arrays, which its "
             "Variables then hold; Stadyn's v.d = array casts into the Variable's dtype "
             "(compat nnabla _variable._set; see assign_list__dtypes)")


def _fill_d(W):
    W.d[...] = 1


# The writes of a parameter's whole value, in the order the case makes them.
_WRITES = [("data.fill(0.5)", lambda W: W.data.fill(0.5)),
           ("d = 0.25", lambda W: setattr(W, "d", 0.25)),
           ("data.data = 2", lambda W: setattr(W.data, "data", 2)),
           ("data.zero()", lambda W: W.data.zero()),
           ("d[...] = 1", _fill_d)]


def _first(a):
    return np.array(np.asarray(a).ravel()[:3])


@nnabla_case(names=[N + "NdArray.fill", N + "NdArray.zero", N + "Variable.d",
                    N + "Variable.data", N + "NdArray.data", N + "get_parameters",
                    N + "solvers.Momentum", N + "parameter.get_parameter_or_create"],
             note="a static graph and a Momentum solver set up, one step; then the weight "
                  "written by data.fill, d = scalar, data.data = scalar, data.zero() and "
                  "d[...] = (each with a NumPy array kept from .d before it, and the step's "
                  "forward, backward and update after it): the kept arrays, the values the "
                  "graph, nn.get_parameters(), a get_parameter_or_create view and the solver "
                  "see, and the gradient through the write")
def parameter_values_written_whole(nn, F, PF, S, r):
    r.touch(N + "NdArray.fill", N + "NdArray.zero", N + "Variable.d", N + "Variable.data",
            N + "NdArray.data", N + "Variable.g")
    res = {}
    for mode in ("static", "dynamic"):
        nn.clear_parameters()
        nn.set_auto_forward(mode == "dynamic")
        loss = _net(nn, F, PF, r)
        params = nn.get_parameters()
        W = params["om/fc/affine/W"]
        W.d = r.randn(3, 2)
        with nn.parameter_scope("om/fc/affine"):
            view = nn.parameter.get_parameter_or_create("W", (3, 2))
        solver = S.Momentum(lr=0.1, momentum=0.9)
        solver.set_parameters(params)

        def step():
            l = loss if mode == "static" else _net(nn, F, PF, r)
            l.forward()
            solver.zero_grad()
            l.backward()
            solver.update()
            return float(l.d)

        res[mode + ": first loss"] = step()
        grad = W.g.copy()
        for how, write in _WRITES:
            kept = W.d
            before = kept.copy()
            write(W)
            key = "%s: %s: " % (mode, how)
            res[key + "kept .d keeps its values"] = bool(np.array_equal(kept, before))
            res[key + "kept .d"] = _first(kept)
            res[key + "W.d"] = _first(W.d)
            res[key + "get_parameters"] = _first(nn.get_parameters()["om/fc/affine/W"].d)
            res[key + "view"] = _first(view.d)
            res[key + "gradient kept"] = bool(np.array_equal(W.g, grad))
            res[key + "loss of the next step"] = step()
            res[key + "W.d after the update"] = _first(W.d)
            res[key + "kept .d after the update"] = _first(kept)
            grad = W.g.copy()
        res[mode + ": parameters are the same objects"] = \
            nn.get_parameters()["om/fc/affine/W"] is W
    nn.set_auto_forward(False)
    return res


@nnabla_case(names=[N + "solvers.Adam", N + "solver.Solver.get_states",
                    N + "solver.Solver.set_states", N + "solver.SolverState"],
             note="get_states' pstate Variables: their classes, need_grad and shape; a fill, "
                  ".d = scalar and .d[...] = of them reach the solver (the next update starts "
                  "from them), a fill with a .d kept too (which keeps its values); the update "
                  "writes into them (a .d kept follows); set_states "
                  "with them into a second solver shares them, and a fill through the second "
                  "solver's states reaches the first")
def solver_state_variables(nn, F, PF, S, r):
    r.touch(N + "solver.Solver.get_states", N + "solver.Solver.set_states", N + "NdArray.fill",
            N + "Variable.d", N + "Variable.data", N + "solver.SolverState")
    nn.clear_parameters()
    loss = _net(nn, F, PF, r)
    params = nn.get_parameters()
    solver = S.Adam(alpha=0.1)
    solver.set_parameters(params)

    def step(s):
        loss.forward()
        s.zero_grad()
        loss.backward()
        s.update()

    step(solver)
    name = "om/fc/affine/W"
    state = solver.get_states()[name]
    mean = state.pstate["mean"]
    res = {"classes": [type(state).__name__, type(state.pstate).__name__, type(mean).__name__,
                       type(mean.data).__name__, type(mean.d).__name__],
           "names": sorted(state.pstate), "t": int(state.t), "need_grad": bool(mean.need_grad),
           "shape": list(mean.shape), "mean": np.array(mean.d)}
    mean.data.fill(5.0)
    res["solver reads the fill"] = np.array(solver.get_states()[name].pstate["mean"].d)
    kept = mean.d
    step(solver)
    res["mean after an update"] = np.array(mean.d)
    res["kept .d after an update"] = np.array(kept)
    state.pstate["var"].d = 0.5
    res["solver reads var = 0.5"] = np.array(solver.get_states()[name].pstate["var"].d)
    var = state.pstate["var"]
    kept_var = var.d
    before = kept_var.copy()
    var.data.fill(0.75)
    res["kept var keeps its values after a fill"] = bool(np.array_equal(kept_var, before))
    res["solver reads the fill of var"] = np.array(solver.get_states()[name].pstate["var"].d)
    mean.d[...] = 1.0
    res["solver reads mean[...] = 1"] = np.array(solver.get_states()[name].pstate["mean"].d)
    step(solver)
    res["W after a step from the written states"] = np.array(params[name].d)
    second = S.Adam(alpha=0.1)
    second.set_parameters(params)
    second.set_states(solver.get_states())
    second.get_states()[name].pstate["mean"].data.fill(2.0)
    res["first solver reads the second's fill"] = \
        np.array(solver.get_states()[name].pstate["mean"].d)
    step(second)
    res["first solver's mean after the second's update"] = \
        np.array(solver.get_states()[name].pstate["mean"].d)
    res["t"] = [int(solver.get_states()[name].t), int(second.get_states()[name].t)]
    return res


@nnabla_case(names=[N + "get_parameters", N + "solvers.Momentum", N + "save_parameters",
                    N + "load_parameters", N + "Variable.need_grad",
                    N + "solver.Solver.weight_decay", N + "solver.Solver.clip_grad_by_norm",
                    N + "solver.Solver.check_inf_or_nan_grad",
                    N + "solver.Solver.set_learning_rate", N + "solver.Solver.zero_grad"],
             known={"protobuf: W": _PROTOBUF, "protobuf: base b": _PROTOBUF},
             note="a fine-tuning program: two scoped layers, the first frozen by need_grad "
                  "(get_parameters(grad_only=True/False)), weight decay, gradient clipping, a "
                  "NaN check, a rate change, zero_grad leaving the frozen layer's gradient; "
                  "then the parameters saved to .h5 and .protobuf and loaded back into "
                  "changed parameters (the same Variables, their values)")
def fine_tuning_program(nn, F, PF, S, r):
    r.touch(N + "Variable.need_grad", N + "solver.Solver.weight_decay",
            N + "solver.Solver.clip_grad_by_norm", N + "solver.Solver.check_inf_or_nan_grad",
            N + "solver.Solver.set_learning_rate", N + "solver.Solver.zero_grad",
            N + "Variable.g", N + "Variable.d")
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(r.randn(4, 3))
    t = nn.Variable.from_numpy_array(r.randn(4, 2))
    with nn.parameter_scope("base"):
        h = F.tanh(PF.affine(x, 4))
    with nn.parameter_scope("head"):
        y = PF.affine(h, 2)
    loss = F.mean(F.squared_error(y, t))
    r.set_params(nn.get_parameters(grad_only=False))
    for p in nn.get_parameters(grad_only=False).values():
        p.g = 0
    for name, p in nn.get_parameters(grad_only=False).items():
        if name.startswith("base/"):
            p.need_grad = False
    res = {"trainable": sorted(nn.get_parameters()),
           "all": sorted(nn.get_parameters(grad_only=False))}
    solver = S.Momentum(lr=0.5, momentum=0.9)
    solver.set_parameters(nn.get_parameters())
    res["solver holds"] = sorted(solver.get_parameters())
    for step in range(3):
        if step == 2:
            solver.set_learning_rate(0.05)
        loss.forward()
        solver.zero_grad()
        loss.backward()
        res["step %d loss" % step] = float(loss.d)
        res["step %d nan" % step] = bool(solver.check_inf_or_nan_grad())
        solver.weight_decay(0.01)
        solver.clip_grad_by_norm(0.1)
        res["step %d clipped head W.g" % step] = np.array(
            nn.get_parameters()["head/affine/W"].g)
        res["step %d base W.g" % step] = np.array(
            nn.get_parameters(grad_only=False)["base/affine/W"].g)
        solver.update()
    res["rate"] = float(solver.learning_rate())
    res["params"] = dict((k, np.array(v.d))
                         for k, v in nn.get_parameters(grad_only=False).items())
    with r.tempdir() as folder:
        for ext in ("h5", "protobuf"):
            _save_and_load(nn, os.path.join(folder, "params." + ext), ext, res)
    return res


def _save_and_load(nn, path, ext, res):
    if True:
        nn.save_parameters(path)
        W = nn.get_parameters()["head/affine/W"]
        kept = W.d
        W.d = 0.0
        nn.get_parameters(grad_only=False)["base/affine/b"].d = 1.0
        nn.load_parameters(path)
        res[ext + ": same Variable"] = nn.get_parameters()["head/affine/W"] is W
        res[ext + ": W"] = np.array(W.d)
        res[ext + ": kept W.d"] = np.array(kept)
        res[ext + ": base b"] = np.array(nn.get_parameters(grad_only=False)["base/affine/b"].d)
        res[ext + ": base need_grad"] = bool(
            nn.get_parameters(grad_only=False)["base/affine/W"].need_grad)
        res[ext + ": trainable"] = sorted(nn.get_parameters())


@nnabla_case(names=[N + "Variable.persistent", N + "Variable.get_unlinked_variable",
                    N + "Variable.rewire_on", N + "Variable.need_grad",
                    N + "solver.Solver.zero_grad", N + "NdArray.zeroing"],
             note="a static graph's gradients: two backwards add up, zero_grad zeroes "
                  "(zeroing is False once read); a persistent intermediate keeps its value "
                  "through backward(clear_buffer=True); an unlinked view shares the value and "
                  "takes the gradient; an input's need_grad set on and off; a head graph "
                  "rewired onto an intermediate; in dynamic mode an output's need_grad and "
                  "two backwards adding up")
def graph_arrays_program(nn, F, PF, S, r):
    r.touch(N + "Variable.persistent", N + "Variable.get_unlinked_variable",
            N + "Variable.rewire_on", N + "Variable.need_grad", N + "solver.Solver.zero_grad",
            N + "NdArray.zeroing", N + "Variable.g", N + "Variable.d")
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(r.randn(4, 3))
    with nn.parameter_scope("p"):
        h = PF.affine(x, 4, name="a")
        h2 = F.relu(h)
        y = PF.affine(h2, 2, name="b")
    loss = F.sum(y ** 2)
    params = nn.get_parameters()
    r.set_params(params)
    solver = S.Sgd(0.01)
    solver.set_parameters(params)
    W = params["p/b/affine/W"]
    loss.forward()
    solver.zero_grad()
    loss.backward()
    res = {"one backward": np.array(W.g)}
    loss.backward()
    res["two backwards"] = np.array(W.g)
    solver.zero_grad()
    res["zeroing after zero_grad"] = bool(W.grad.zeroing)
    res["after zero_grad"] = np.array(W.g)
    res["zeroing once read"] = bool(W.grad.zeroing)
    h.persistent = True
    loss.forward(clear_no_need_grad=True)
    loss.backward(clear_buffer=True)
    res["persistent value"] = np.array(h.d)
    loss.forward()
    u = h2.get_unlinked_variable(need_grad=True)
    head = F.sum(u * 2.0)
    head.forward()
    u.grad.zero()
    head.backward()
    res["unlinked value"] = np.array(u.d)
    res["unlinked gradient"] = np.array(u.g)
    res["its source's gradient"] = np.array(h2.g)
    x.need_grad = True
    loss.forward()
    x.grad.zero()
    loss.backward()
    res["x.g"] = np.array(x.g)
    x.need_grad = False
    x.grad.zero()
    loss.forward()
    loss.backward()
    res["x.g with need_grad off"] = np.array(x.g)
    z = nn.Variable((4, 4))
    with nn.parameter_scope("q"):
        out = F.sum(PF.affine(z, 1, name="c"))
    nn.get_parameters()["q/c/affine/W"].d = r.randn(4, 1)
    nn.get_parameters()["q/c/affine/b"].d = 0.5
    z.rewire_on(h)
    out.forward()
    res["rewired head"] = float(out.d)
    nn.set_auto_forward(True)
    a = nn.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0], np.float32), need_grad=True)
    b = F.mul_scalar(a, 3.0)
    res["dynamic output need_grad"] = bool(b.need_grad)
    F.sum(b).backward()
    F.sum(b * b).backward()
    res["dynamic gradients added"] = np.array(a.g)
    nn.set_auto_forward(False)
    return res

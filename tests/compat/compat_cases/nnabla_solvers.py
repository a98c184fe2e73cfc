"""``nnabla.solvers``: every solver over several steps of a small model (parameters set from
their names, seeded minibatches), with ``weight_decay``, learning-rate changes, gradient
clipping and scaling, and the state round trip ``get_states``/``set_states``."""

import numpy as np

from compat_harness import nnabla_case

STEPS = 4


def _model(nn, F, PF, r):
    x = nn.Variable((4, 3))
    t = nn.Variable((4, 2))
    with nn.parameter_scope("fc1"):
        h = F.tanh(PF.affine(x, 3))
    with nn.parameter_scope("fc2"):
        y = PF.affine(h, 2)
    loss = F.mean(F.squared_error(y, t))
    return x, t, loss


def train(nn, F, PF, S, r, make, steps=STEPS, decay=None, before_update=None):
    x, t, loss = _model(nn, F, PF, r)
    params = nn.get_parameters()
    r.set_params(params)
    solver = make(S)
    solver.set_parameters(params)
    res = {}
    for step in range(steps):
        x.d = r.randn(4, 3)
        t.d = r.randn(4, 2)
        loss.forward()
        solver.zero_grad()
        loss.backward()
        if decay is not None:
            solver.weight_decay(decay)
        if before_update is not None:
            before_update(solver, step)
        solver.update()
        res["loss%d" % step] = loss.d.copy()
        for k, v in params.items():
            res["%s %d" % (k, step)] = v.d.copy()
    res["learning_rate"] = np.float32(solver.learning_rate())
    return res


def solver_case(name, make, names, **kw):
    opts = dict((k, kw.pop(k)) for k in ("steps", "decay", "before_update") if k in kw)

    def fn(nn, F, PF, S, r):
        return train(nn, F, PF, S, r, make, **opts)
    fn.__name__ = name
    nnabla_case(name=name, names=names, **kw)(fn)


N = "nnabla.solvers."

solver_case("Sgd", lambda S: S.Sgd(lr=0.1), [N + "Sgd"])
solver_case("Sgd__weight_decay", lambda S: S.Sgd(lr=0.1), [N + "Sgd"], decay=0.05)
solver_case("Momentum", lambda S: S.Momentum(lr=0.05, momentum=0.8), [N + "Momentum"])
solver_case("Momentum__weight_decay", lambda S: S.Momentum(lr=0.05, momentum=0.8),
            [N + "Momentum"], decay=0.01)
solver_case("Nesterov", lambda S: S.Nesterov(lr=0.05, momentum=0.9), [N + "Nesterov"])
solver_case("Adam", lambda S: S.Adam(), [N + "Adam"])
solver_case("Adam__options", lambda S: S.Adam(alpha=0.01, beta1=0.8, beta2=0.99, eps=1e-4),
            [N + "Adam"])
solver_case("Adam__weight_decay", lambda S: S.Adam(alpha=0.01), [N + "Adam"], decay=0.1)
solver_case("AdamW", lambda S: S.AdamW(alpha=0.01, wd=0.1), [N + "AdamW"])
solver_case("AdamW__weight_decay", lambda S: S.AdamW(alpha=0.01, wd=0.1), [N + "AdamW"],
            decay=0.2, note="NNabla's AdamW.weight_decay(rate) leaves .g unchanged and decays "
                            "by rate, decoupled, in the next update() only")
solver_case("AMSGRAD", lambda S: S.AMSGRAD(alpha=0.01), [N + "AMSGRAD"])
solver_case("AMSGrad", lambda S: S.AMSGrad(alpha=0.01), [N + "AMSGrad"],
            substitutes={N + "AMSGrad": N + "AMSGRAD"},
            note="Stadyn's spelling AMSGrad; NNabla's AMSGRAD on the real side")
solver_case("AMSGrad__bias_correction", lambda S: S.AMSGrad(alpha=0.01, bias_correction=True),
            [N + "AMSGrad"], substitutes={N + "AMSGrad": N + "AMSGRAD"})
solver_case("RMSprop", lambda S: S.RMSprop(lr=0.01, decay=0.8, eps=1e-6), [N + "RMSprop"])
solver_case("Adagrad", lambda S: S.Adagrad(lr=0.1, eps=1e-6), [N + "Adagrad"])
solver_case("Adadelta", lambda S: S.Adadelta(lr=1.0, decay=0.9, eps=1e-5), [N + "Adadelta"])
solver_case("Lion", lambda S: S.Lion(lr=0.01, beta1=0.8, beta2=0.95), [N + "Lion"])


def _set_lr(solver, step):
    if step == 1:
        solver.set_learning_rate(0.02)


solver_case("set_learning_rate", lambda S: S.Momentum(lr=0.1, momentum=0.9), [N + "Momentum"],
            before_update=_set_lr)


def _clip(solver, step):
    solver.clip_grad_by_norm(0.1)


solver_case("clip_grad_by_norm", lambda S: S.Sgd(lr=0.5), [N + "Sgd"], before_update=_clip)


def _scale(solver, step):
    solver.scale_grad(0.5)


solver_case("scale_grad", lambda S: S.Sgd(lr=0.5), [N + "Sgd"], before_update=_scale)


@nnabla_case(names=[N + "Solver", N + "Adam"])
def solver_base(nn, F, PF, S, r):
    """Every solver is an ``S.Solver``; its name and its parameters."""
    x, t, loss = _model(nn, F, PF, r)
    solver = S.Adam()
    solver.set_parameters(nn.get_parameters())
    return {"is_solver": isinstance(solver, S.Solver), "name": solver.name,
            "params": sorted(solver.get_parameters().keys())}


@nnabla_case(names=[N + "Adam"],
             note="states taken after two steps and given to a new solver continue the same "
                  "run")
def states_round_trip(nn, F, PF, S, r):
    x, t, loss = _model(nn, F, PF, r)
    params = nn.get_parameters()
    r.set_params(params)
    solver = S.Adam(alpha=0.01)
    solver.set_parameters(params)
    batches = [(r.randn(4, 3), r.randn(4, 2)) for _ in range(4)]

    def step(s, data):
        x.d, t.d = data
        loss.forward()
        s.zero_grad()
        loss.backward()
        s.update()

    for data in batches[:2]:
        step(solver, data)
    states = solver.get_states()
    fresh = S.Adam(alpha=0.01)
    fresh.set_parameters(params)
    fresh.set_states(states)
    for data in batches[2:]:
        step(fresh, data)
    return dict((k, v.d.copy()) for k, v in params.items())


@nnabla_case(names=[N + "Adam", N + "SolverState"],
             note="get_states() gives SolverState objects (.pstate with NNabla's state names, .t)")
def states_structure(nn, F, PF, S, r):
    x, t, loss = _model(nn, F, PF, r)
    params = nn.get_parameters()
    solver = S.Adam()
    solver.set_parameters(params)
    x.d, t.d = r.randn(4, 3), r.randn(4, 2)
    loss.forward()
    solver.zero_grad()
    loss.backward()
    solver.update()
    states = solver.get_states()
    listing = []
    for k in sorted(states):
        st = states[k]
        try:
            listing.append([k, sorted(st.pstate.keys()), int(st.t)])
        except AttributeError:
            listing.append([k, type(st).__name__])
    return {"keys": sorted(states), "states": listing,
            "solver_states": all(isinstance(states[k], S.SolverState) for k in states)}

"""``nnabla.solvers``: what NNabla 1.39's solvers share and keep -- ``set_states`` holds the
given state arrays themselves (updates show in them, writes to them reach the solver, two
solvers given one set of states update the same arrays; the step count ``t`` is copied),
``learning_rate()`` and ``info`` give the float32 the solver keeps, as a Python float, and a
state for a parameter not set raises ``RuntimeError`` (``Set weight parameter for ... first.``)
after the states before it were set.  Update, zero_grad and weight_decay before
``set_parameters`` do nothing.
"""

from collections import OrderedDict

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_solvers import N, _model


def _step(solver, x, t, loss, data):
    x.d, t.d = data
    loss.forward()
    solver.zero_grad()
    loss.backward()
    solver.update()


@nnabla_case(names=[N + "Adam", N + "Solver.set_states", N + "Solver.get_states"],
             note="set_states shares the given arrays (NNabla's solver holds them)")
def set_states_shares_the_arrays(nn, F, PF, S, r):
    x, t, loss = _model(nn, F, PF, r)
    params = nn.get_parameters()
    r.set_params(params)
    batches = [(r.randn(4, 3), r.randn(4, 2)) for _ in range(4)]
    first = S.Adam(alpha=0.01)
    first.set_parameters(params)
    _step(first, x, t, loss, batches[0])
    given = first.get_states()
    second = S.Adam(alpha=0.01)
    second.set_parameters(params)
    second.set_states(given)
    name = sorted(given)[0]
    mean = given[name].pstate["mean"]
    before = np.array(mean.d)
    res = {"t given": int(given[name].t)}
    _step(second, x, t, loss, batches[1])
    # the second solver's update wrote into the given array, the first solver's array too
    res["given mean after second update"] = np.array(mean.d)
    res["given mean changed"] = bool(not np.allclose(before, mean.d))
    res["first solver mean"] = np.array(first.get_states()[name].pstate["mean"].d)
    res["t after second update"] = [int(first.get_states()[name].t),
                                    int(second.get_states()[name].t), int(given[name].t)]
    # a write to the given array reaches the solver; t was copied
    mean.d[...] = 0.25
    given[name].t = 50
    res["second sees the write"] = np.array(second.get_states()[name].pstate["mean"].d)
    res["second t"] = int(second.get_states()[name].t)
    _step(first, x, t, loss, batches[2])
    res["second mean after first's update"] = np.array(
        second.get_states()[name].pstate["mean"].d)
    res["params"] = dict((k, np.array(v.d)) for k, v in params.items())
    r.touch(N + "Solver.set_states", N + "Solver.get_states")
    return res


@nnabla_case(names=[N + "Sgd", N + "Adam", N + "Momentum", N + "Solver.learning_rate",
                    N + "Solver.set_learning_rate", N + "Solver.info"],
             note="the rate is the float32 NNabla keeps, as a Python float")
def learning_rate_is_float32(nn, F, PF, S, r):
    res = {}
    sgd = S.Sgd(lr=0.1)
    res["Sgd(lr=0.1)"] = repr(sgd.learning_rate())
    res["type"] = type(sgd.learning_rate()).__name__
    for value in (0.3, 1e-3, 0.7, 5, 2.5e-5):
        sgd.set_learning_rate(value)
        res["set %r" % value] = repr(sgd.learning_rate())
    adam = S.Adam(alpha=0.1)
    res["Adam(alpha=0.1)"] = repr(adam.learning_rate())
    res["Adam info"] = dict((k, repr(v)) for k, v in sorted(adam.info.items()))
    res["Momentum info"] = dict((k, repr(v)) for k, v in
                                sorted(S.Momentum(lr=0.1, momentum=0.9).info.items()))
    r.touch(N + "Solver.learning_rate", N + "Solver.set_learning_rate", N + "Solver.info")
    return res


@nnabla_case(names=[N + "Adam", N + "Solver.set_states", N + "Solver.update",
                    N + "Solver.zero_grad", N + "Solver.weight_decay"],
             note="NNabla's error for a state of a parameter not set; the states before it "
                  "are set")
def set_states_unknown_parameter(nn, F, PF, S, r):
    x, t, loss = _model(nn, F, PF, r)
    params = nn.get_parameters()
    r.set_params(params)
    res = {}
    idle = S.Adam()
    idle.update()
    idle.zero_grad()
    idle.weight_decay(0.1)
    res["before set_parameters"] = sorted(idle.get_states())
    solver = S.Adam()
    solver.set_parameters(params)
    states = solver.get_states()
    name = sorted(states)[0]
    state = S.SolverState()
    state.t = 5
    state.pstate = dict(states[name].pstate)
    for label, target, given in (("unknown", solver, [(name, state), ("zzz", state)]),
                                 ("no parameters", S.Adam(), [(name, state)])):
        try:
            target.set_states(OrderedDict(given))
            res[label] = "accepted"
        except RuntimeError as exc:
            missing = given[-1][0]
            res[label] = ["RuntimeError",
                          "Set weight parameter for %s first." % missing in str(exc)]
    res["t set before the error"] = int(solver.get_states()[name].t)
    r.touch(N + "Solver.set_states", N + "Solver.update", N + "Solver.zero_grad",
            N + "Solver.weight_decay")
    return res

"""NNabla solvers' states of contiguous CPU parameters lie end to end, one buffer per state
name (``Solver._init_states`` through ``stadyn.solvers.end_to_end``), so the exact blocks read
a run of small parameters' states in place.  The layout changes no number: an update gives,
bit for bit, what the same solver gives with every state in a tensor of its own, and
``get_states``/``set_parameters`` behave as NNabla 1.39's (one state per parameter)."""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.solvers as S

SHAPES = [(3, 4), (5,), (2, 3, 2), (7,), (1,)]

SOLVERS = {
    "Sgd": lambda: S.Sgd(0.1),
    "Momentum": lambda: S.Momentum(0.1, 0.9),
    "Adam": lambda: S.Adam(0.01),
    "AMSGRAD": lambda: S.AMSGRAD(0.01),
    "RMSprop": lambda: S.RMSprop(0.01),
    "Adadelta": lambda: S.Adadelta(1.0),
    "Adamax": lambda: S.Adamax(0.01),
    "AdaBelief": lambda: S.AdaBelief(0.01, amsgrad=True),
    "AdaBound": lambda: S.AdaBound(0.01),
    "Lion": lambda: S.Lion(0.01),
    "Lamb": lambda: S.Lamb(0.01),
    "Lars": lambda: S.Lars(0.01),
    "SgdW": lambda: S.SgdW(0.01, wd=0.01),
    "RMSpropGraves": lambda: S.RMSpropGraves(0.01),
}


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return {f"p{i}": sd.Variable.from_numpy_array(rng.standard_normal(s).astype(np.float32),
                                                  need_grad=True)
            for i, s in enumerate(SHAPES)}


def _run(solver, params, apart: bool, steps=4):
    solver.set_parameters(params)
    if apart:                    # every state in memory of its own (the layout before)
        for st in solver._states.values():
            for k, t in st.items():
                if isinstance(t, torch.Tensor):
                    st[k] = t.clone()
    rng = np.random.default_rng(1)
    for _ in range(steps):
        for v in params.values():
            v.g = rng.standard_normal(v.shape).astype(np.float32)
        solver.weight_decay(1e-3)
        solver.update()
    return {k: v.d.copy() for k, v in params.items()}, solver.get_states()


def test_fresh_states_lie_end_to_end_in_the_parameters_order():
    solver = S.Adam(0.01)
    solver.set_parameters(_params())
    for key in ("mean", "var"):
        ts = [solver._states[f"p{i}"][key] for i in range(len(SHAPES))]
        for a, b in zip(ts, ts[1:]):
            assert b.data_ptr() == a.data_ptr() + a.numel() * 4
        assert [tuple(t.shape) for t in ts] == SHAPES
        assert all(t.dtype == torch.float32 and not t.any() for t in ts)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_end_to_end_states_update_as_states_apart(name):
    together, states1 = _run(SOLVERS[name](), _params(), apart=False)
    apart, states2 = _run(SOLVERS[name](), _params(), apart=True)
    for k in together:
        assert together[k].tobytes() == apart[k].tobytes(), k
    for k, st in states1.items():
        assert st.t == states2[k].t
        for key, var in st.pstate.items():
            assert var.d.tobytes() == states2[k].pstate[key].d.tobytes(), (k, key)


def test_parameters_added_later_keep_the_earlier_states():
    params = _params()
    first = dict(list(params.items())[:2])
    solver = S.Momentum(0.1, 0.9)
    solver.set_parameters(first)
    for v in first.values():
        v.g = np.ones(v.shape, np.float32)
    solver.update()
    held = solver.get_states()["p0"].pstate["m"].d.copy()
    solver.set_parameters(dict(list(params.items())[2:]), reset=False)
    states = solver.get_states()
    assert list(states) == ["p4", "p3", "p2", "p1", "p0"]     # NNabla 1.39's order (run)
    assert states["p0"].pstate["m"].d.tobytes() == held.tobytes() and states["p0"].t == 1
    assert all(states[f"p{i}"].t == 0 and not states[f"p{i}"].pstate["m"].d.any()
               for i in range(2, len(SHAPES)))


def test_a_bad_parameter_leaves_the_earlier_ones_set_with_their_states():
    params = _params()
    solver = S.Adam(0.01)
    with pytest.raises(sd.ParameterError):
        solver.set_parameters({"p0": params["p0"], "bad": np.zeros(2), "p1": params["p1"]})
    assert list(solver.get_parameters()) == ["p0"]
    assert list(solver.get_states()) == ["p0"]

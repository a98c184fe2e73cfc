"""Nesterov's state ``m`` is NNabla 1.39's ``v = momentum v - lr g`` (its sign), in
``get_states`` and ``.h5`` files both ways (``tests/fixtures/nnabla_nesterov_states/``: NNabla
1.39's state file and its numbers of resuming from it); Stadyn's own state files and state
dicts written before (state format 1, ``-v``: ``tests/fixtures/solver_states_v1``) still
resume where they left off.

Before mendD33 Stadyn kept ``-v``: resuming from NNabla's ``.h5`` gave ``q`` =
``[0.34766155 0.21375977 -0.58204544]`` where NNabla 1.39 gives
``[0.09176037 0.1315215 -6.616129]``.
"""

from __future__ import annotations

import os

import h5py
import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.solvers as NS
import stadyn.solvers as S

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
HERE = os.path.join(FIXTURES, "nnabla_nesterov_states")
VALUES = np.load(os.path.join(HERE, "values.npz"))


def _run(load=None, save=None, foreach=True):
    """make_nesterov_states.py's run, in Stadyn's NNabla layer (``foreach``: the multi-tensor
    path, or the per-tensor loop)."""
    q = nn.Variable.from_numpy_array(VALUES["q0"].copy(), need_grad=True)
    solver = NS.Nesterov(lr=0.1, momentum=0.9)
    solver.foreach = foreach
    solver.set_parameters({"q": q})
    if load:
        solver.load_states(load)
    y = F.sum(q * q * q)
    for _ in range(2):
        solver.zero_grad()
        y.forward()
        y.backward()
        solver.update()
    if save:
        solver.save_states(save)
    state = solver.get_states()["q"]
    return q.d.copy(), state.pstate["m"].d.copy(), state.t


@pytest.mark.parametrize("foreach", [True, False])
def test_nnablas_h5_states_resume_to_nnablas_numbers(foreach):
    q, m, t = _run(load=os.path.join(HERE, "nesterov.h5"), foreach=foreach)
    np.testing.assert_array_equal(q, VALUES["q_resumed"])
    np.testing.assert_array_equal(m, VALUES["m_resumed"])
    assert t == int(VALUES["t_resumed"])


def test_the_state_and_the_h5_file_hold_nnablas_v(tmp_path):
    q, m, t = _run(save=str(tmp_path / "states.h5"))
    np.testing.assert_array_equal(q, VALUES["q_saved"])
    np.testing.assert_array_equal(m, VALUES["m_saved"])
    with h5py.File(tmp_path / "states.h5", "r") as f, \
            h5py.File(os.path.join(HERE, "nesterov.h5"), "r") as g:
        np.testing.assert_array_equal(f["q/m"][()], g["q/m"][()])
        assert f["q/t"][()] == g["q/t"][()] == 2


def _fc_solver():
    """A Nesterov(0.01) over the parameters solver_states_v1's files name, W and b set."""
    w = sd.Variable.from_numpy_array(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2),
                                     need_grad=True)
    b = sd.Variable.from_numpy_array(np.array([0.5, -0.25], np.float32), need_grad=True)
    solver = S.Nesterov(0.01)
    solver.set_parameters({"n/fc/W": w, "n/fc/b": b})
    return solver, {"n/fc/W": w, "n/fc/b": b}


def _expected_step(w, g, v, lr=0.01, momentum=0.9):
    """NNabla's step (nesterov.cpp:52-56) in float32: v' = momentum v - lr g;
    w' = w - momentum v + (1 + momentum) v'."""
    f = np.float32
    v_new = (f(momentum) * v - f(lr) * g).astype(f)
    return (w + (-f(momentum) * v + f(1 + momentum) * v_new)).astype(f), v_new


def test_a_state_file_written_before_resumes_with_its_velocity():
    """A format-1 file (Stadyn's -v, the fixture of commit 2e45692) loads as v = -(its
    tensor): the next step is NNabla's step from v."""
    from safetensors.numpy import load_file
    path = os.path.join(FIXTURES, "solver_states_v1", "Nesterov.safetensors")
    written = load_file(path)
    solver, params = _fc_solver()
    before = {k: p.d.copy() for k, p in params.items()}
    solver.load_states(path)
    for k, p in params.items():
        p.g = np.full(p.shape, 0.5, np.float32)
    solver.update()
    for k, p in params.items():
        w, v = _expected_step(before[k], np.full(p.shape, 0.5, np.float32), -written[f"{k}/v"])
        np.testing.assert_allclose(p.d, w, rtol=0, atol=1e-7)
        np.testing.assert_allclose(solver.get_states()[k].pstate["m"].d, v, rtol=0, atol=1e-7)


def test_state_dicts_of_format_1_are_negated_and_format_2_round_trips(tmp_path):
    solver, params = _fc_solver()
    for p in params.values():
        p.g = np.ones(p.shape, np.float32)
    solver.update()
    state = solver.state_dict()
    assert state["state_format"] == 2
    m = {k: solver.get_states()[k].pstate["m"].d.copy() for k in params}
    again, _ = _fc_solver()
    again.load_state_dict(state)                          # (a Trainer checkpoint of now)
    older, _ = _fc_solver()
    old = {key: value for key, value in state.items() if key != "state_format"}
    old["tensors"] = {k: -v for k, v in state["tensors"].items()}    # (-v, as before mendD33)
    older.load_state_dict(old)
    for k in params:
        np.testing.assert_array_equal(again.get_states()[k].pstate["m"].d, m[k])
        np.testing.assert_array_equal(older.get_states()[k].pstate["m"].d, m[k])
    solver.save_states(tmp_path / "now.safetensors")      # (Stadyn's file of now: as it is)
    fresh, _ = _fc_solver()
    fresh.load_states(tmp_path / "now.safetensors")
    for k in params:
        np.testing.assert_array_equal(fresh.get_states()[k].pstate["m"].d, m[k])


def test_a_newer_state_format_is_refused():
    solver, _ = _fc_solver()
    state = solver.state_dict()
    state["state_format"] = 3
    with pytest.raises(sd.StadynError, match="format 3 is not one this Stadyn reads"):
        solver.load_state_dict(state)

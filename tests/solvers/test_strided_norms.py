"""Lars and Lamb on parameters laid out column-major on CPU (a transposed weight, off the
float32 blocks' contiguous views) against NNabla 1.39 itself: NNabla sums ``||w||``,
``||g||`` (and Lamb's ``||r||``) one float after another in the values' logical order, and
so does Stadyn's torch path on CPU (``_float32_kernels.sequential_norms``).  Reference:
``tests/fixtures/nnabla_strided_norms/make_refs.py`` (its docstring says how to run it)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.solvers as S

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "fixtures", "nnabla_strided_norms")


def _inputs():
    """The fixture script's inputs (its ``inputs()``, repeated here: the script imports
    NNabla)."""
    rs = np.random.RandomState(0)
    w = rs.randn(40, 60).astype(np.float32)
    b = rs.randn(7).astype(np.float32)
    grads = [(rs.randn(40, 60).astype(np.float32), rs.randn(7).astype(np.float32))
             for _ in range(3)]
    return w, b, grads


def _run(name, foreach):
    w, b, grads = _inputs()
    params = {"W": sd.Variable.from_numpy_array(w, need_grad=True),
              "b": sd.Variable.from_numpy_array(b, need_grad=True)}
    params["W"].data = torch.from_numpy(w.T.copy()).t()       # column-major
    assert not params["W"].data.is_contiguous()
    solver = getattr(S, name)()
    solver.foreach = foreach
    solver.set_parameters(params)
    for gw, gb in grads:
        params["W"].g, params["b"].g = gw, gb
        solver.weight_decay(0.01)
        solver.update()
    out = {f"{name}/{k}": p.d for k, p in params.items()}
    for k, state in solver.get_states().items():
        for s, v in state.pstate.items():
            out[f"{name}/{k}/{s}"] = v.d
    return out


@pytest.mark.parametrize("foreach", [True, False], ids=["foreach", "per-tensor"])
@pytest.mark.parametrize("name", ["Lars", "Lamb"])
def test_column_major_parameters_give_nnabla_bits(name, foreach):
    """Before: torch's norms (another order of summation): Lars' ``W/v`` differed from NNabla
    1.39 in 2,343 of its 2,400 values (4e-7 relative to its largest), Lamb's ``W`` in 35."""
    refs = np.load(os.path.join(FIXTURE, "refs.npz"))
    got = _run(name, foreach)
    assert sorted(got) == sorted(k for k in refs.files if k.startswith(name + "/"))
    for key, value in got.items():
        np.testing.assert_array_equal(value, refs[key], err_msg=key)

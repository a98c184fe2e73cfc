"""NNabla 1.39's Lars stops part way on a bad parameter: ``Solver::update`` visits the
parameters in its ``unordered_map``'s order (``include/nbla/solver.hpp:113``) and
``Lars::update_impl`` raises at the first whose ``||g|| + weight_decay ||w||`` is NaN or
negative (``lars.cpp:66``), so the parameters visited before it are updated and count the step,
the rest are not, and a fused ``weight_decay`` is still there for the next update.  NNabla's own
numbers: ``tests/fixtures/nnabla_update_order/make_refs.py``."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.solvers as S
from stadyn.solvers._param_order import hash_bytes, nnabla_update_order

REFS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                    "nnabla_update_order", "refs.json")
with open(REFS) as _f:
    _DATA = json.load(_f)


def test_update_order_is_nnabla_get_parameters_order():
    """The simulated libstdc++ table gives NNabla's ``get_parameters()`` order (which iterates
    the same map) for every one of the 42 sets of 1 to 100 random names."""
    for names, want in _DATA["orders"]:
        assert nnabla_update_order(names) == want, names


def test_hash_bytes_by_hand():
    """``_Hash_bytes`` of 8 zero bytes, step by step from ``libsupc++/hash_bytes.cc``'s 64-bit
    branch (one whole word, no tail)."""
    mask, mul, seed = (1 << 64) - 1, 0xC6A4A7935BD1E995, 0xC70F6907

    def mix(v):
        return v ^ (v >> 47)

    h = seed ^ (8 * mul & mask)
    h = ((h ^ (mix(0) * mul & mask)) * mul) & mask
    h = mix(mix(h) * mul & mask)
    assert hash_bytes(bytes(8)) == h


def _run(case, layout):
    params = {}
    for i, name in enumerate(case["names"]):
        v = sd.Variable.from_numpy_array(np.full((3,), i + 1.0, np.float32), need_grad=True)
        if layout == "strided":                 # off the blocks: the torch path
            v.data = torch.full((6,), i + 1.0)[::2]
        params[name] = v
    solver = S.Lars(lr=0.1)
    solver.set_parameters(params)
    for name, p in params.items():
        g = np.full((3,), 0.5, np.float32)
        if name in case["nan"]:
            g[0] = np.nan
        p.g = g
    if case["decay"]:
        solver.weight_decay(case["decay"])
    with pytest.raises(RuntimeError, match="positive or zero"):
        solver.update()
    after_error = _snapshot(solver, params)
    for p in params.values():
        p.g = np.full((3,), 0.25, np.float32)
    solver.update()
    return after_error, _snapshot(solver, params)


def _snapshot(solver, params):
    states = solver.get_states()
    return {k: {"w": p.d.tolist(), "v": states[k].pstate["v"].d.tolist(), "t": states[k].t}
            for k, p in params.items()}


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("index", range(len(_DATA["lars"])))
def test_lars_error_leaves_what_nnabla_leaves(index, layout):
    """Before: Stadyn raised before updating anything (for ``p0, p1, p2`` with a NaN in
    ``p1``'s gradient NNabla 1.39 updates ``p2``: ``[2.9997, 2.9997, 2.9997]``, ``t = 1``;
    Stadyn left it at 3)."""
    case = _DATA["lars"][index]
    assert case["raised"] == "RuntimeError"
    after_error, after_next = _run(case, layout)
    assert after_error == case["after_error"]
    assert after_next == case["after_next"]

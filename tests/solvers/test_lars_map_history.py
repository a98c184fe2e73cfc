"""NNabla 1.39's parameter map after ``remove_parameters``, ``clear_parameters`` and
``set_parameters`` with and without ``reset``: an erased name leaves the others in place and
the table never shrinks, so its order is not a new map's.  Lars' partial update on a bad
parameter follows that order.  NNabla's own values:
``tests/fixtures/nnabla_map_history/make_refs.py`` (its docstring says how to run it)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.solvers as S
from stadyn.solvers._param_order import MapOrder

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "fixtures", "nnabla_map_history", "refs.json")) as _f:
    CASES = json.load(_f)
NAMES = [f"x{i}" for i in range(30)] + [f"y{i}" for i in range(30)]


def _build(solver, steps, layout):
    params = {}
    for step in steps:
        if step[0] == "set":
            new = {}
            for k in step[1]:
                value = NAMES.index(k) + 1.0
                v = sd.Variable.from_numpy_array(np.full((3,), value, np.float32),
                                                 need_grad=True)
                if layout == "strided":             # off the blocks: the torch path
                    v.data = torch.full((6,), value)[::2]
                new[k] = v
            solver.set_parameters(new, reset=step[2])
            if step[2]:
                params = {}
            params.update(new)
        elif step[0] == "remove":
            solver.remove_parameters(step[1])
            for k in step[1]:
                params.pop(k)
        else:
            solver.clear_parameters()
            params = {}
    return params


@pytest.mark.parametrize("index", range(len(CASES)))
def test_map_order_follows_nnabla_get_parameters(index):
    """:class:`MapOrder` through the case's steps gives NNabla's ``get_parameters()`` order."""
    order = MapOrder()
    names: list = []
    for step in CASES[index]["steps"]:
        if step[0] == "set":
            if step[2]:
                order.clear()
            for k in step[1]:
                order.insert(k)
        elif step[0] == "remove":
            for k in step[1]:
                order.erase(k)
        else:
            order.clear()
        names = order.order()             # asked part way too: the table carries on
    assert names == CASES[index]["order"]


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("index", range(len(CASES)))
def test_lars_error_after_a_history(index, layout):
    """Before: Stadyn took a new map's order of the names left, so after
    ``remove_parameters(["x3", "x7", "x14"])`` of ``x0 .. x19`` with a NaN in ``x0``'s
    gradient it left ``x15`` at 16 where NNabla 1.39 updates it to 15.9984 (``t = 1``)."""
    case = CASES[index]
    solver = S.Lars(lr=0.1)
    params = _build(solver, case["steps"], layout)
    for k, p in params.items():
        g = np.full((3,), 0.5, np.float32)
        if k == case["nan"]:
            g[0] = np.nan
        p.g = g
    assert case["raised"] == "RuntimeError"
    with pytest.raises(RuntimeError, match="positive or zero"):
        solver.update()
    states = solver.get_states()
    after = {k: [float(p.d[0]), int(states[k].t)] for k, p in params.items()}
    assert after == case["after"]

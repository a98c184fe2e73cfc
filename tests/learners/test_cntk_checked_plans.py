"""The exact CNTK learner path checks its parameters and states once per block plan
(``solvers/_cntk_cpu._kind`` through ``_float32_blocks.checked_plan``) and its gradients on
every call: a list found again at the same addresses is not checked again, one that changed
(a tensor at another address: non-contiguous, another dtype) is, and takes the torch path."""

from __future__ import annotations

import pytest
import torch

from stadyn.solvers import _cntk_cpu as K
from stadyn.solvers import _float32_blocks as B


@pytest.fixture
def counted(monkeypatch):
    calls = []
    inner = K._checked_kind

    def check(lists):
        calls.append(len(lists))
        return inner(lists)
    monkeypatch.setattr(K, "_checked_kind", check)
    B._PLANS.clear()
    yield calls
    B._PLANS.clear()


def _step(ws, gs, vs):
    return K.momentum_cntk(ws, gs, vs, lr=0.5, momentum=0.5, unit_gain=False)


def test_parameters_and_states_are_checked_once_per_plan(counted):
    ws, gs = ([torch.ones(n) for n in (4, 3)] for _ in range(2))
    vs = [torch.zeros(n) for n in (4, 3)]
    assert all(_step(ws, gs, vs) for _ in range(3))
    assert counted == [3]                        # one check for three updates
    # v = 0.5 (v + g): 0.5, 0.75, 0.875; w = 1 - 0.5 - 0.75 - 0.875 (by hand)
    assert ws[0].tolist() == [-1.125] * 4 and vs[1].tolist() == [0.875] * 3


def test_a_changed_list_is_checked_again_and_refused(counted):
    ws, gs, vs = ([torch.ones(n) for n in (4, 3)] for _ in range(3))
    assert _step(ws, gs, vs)
    strided = torch.zeros(6)[::2]                # a state at another address, not contiguous
    assert not _step(ws, gs, [vs[0], strided])   # a check never redone would take it
    assert counted == [3, 3]
    double = [ws[0], torch.ones(3, dtype=torch.float64)]
    assert not _step(double, gs, vs)             # a float64 parameter among float32 ones
    assert _step(ws, gs, vs) and counted == [3, 3, 3]    # (the first plan, kept)


def test_gradients_are_checked_on_every_call(counted):
    ws, gs, vs = ([torch.ones(n) for n in (4, 3)] for _ in range(3))
    assert _step(ws, gs, vs)
    # the same memory seen as another dtype: same addresses and lengths, so the plan's own
    # checks are kept, but the gradients' are made again
    assert not _step(ws, [gs[0].view(torch.int32), gs[1]], vs)
    assert counted == [3]


def test_a_parameter_seen_transposed_at_the_same_address_is_refused(counted):
    # w.t() and g.view(3, 2): the addresses and lengths of the kept plan, but the parameter is
    # no longer contiguous; a kept check took it and updated w's element 1 (w[0, 1]) for the
    # gradient of wt[0, 1] (w[1, 0]): the caller's torch path must take it instead
    w, g = torch.arange(6.0).reshape(2, 3), torch.zeros(2, 3)
    assert K.sgd_cntk([w], [g], lr=1.0)
    wt, gt = w.t(), g.view(3, 2)
    gt[0, 1] = 1.0
    assert not K.sgd_cntk([wt], [gt], lr=1.0)
    assert wt.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]      # (untouched)

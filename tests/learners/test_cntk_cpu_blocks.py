"""CNTK's CPU learner arithmetic (``solvers/_cntk_cpu.py``) over many tensors: a learner over
several parameters (one larger than a block, updated block by block) leaves each one exactly as
a learner over that parameter alone does (CNTK updates its parameters one by one:
``Learner.cpp:270-305``); AdaGrad's and RMSProp's means are per parameter.  The bit-for-bit
comparison with CNTK 2.7 itself is the compat cases
``learner_digits__*`` (``tests/compat/compat_cases/cntk_fidelity_40.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.learners as L
from stadyn.solvers import functional as Fn

# one larger than a block (65536 values) and small ones
SHAPES = [(300, 300), (7,), (3, 5), (10, 61), (1,)]

LEARNERS = {
    "sgd": lambda p: L.sgd(p, 0.05, l2_regularization_weight=0.01),
    "momentum_sgd": lambda p: L.momentum_sgd(p, 0.05, 0.9),
    "nesterov": lambda p: L.nesterov(p, 0.05, 0.9, unit_gain=False),
    "adam": lambda p: L.adam(p, 0.05, 0.9, l2_regularization_weight=0.01),
    "adamax": lambda p: L.adam(p, 0.05, 0.9, adamax=True),
    "fsadagrad": lambda p: L.fsadagrad(p, 0.05, 0.9),
    "adagrad": lambda p: L.adagrad(p, 0.05),
    "adadelta": lambda p: L.adadelta(p, 0.05),
    "rmsprop": lambda p: L.rmsprop(p, 0.05, 0.95, 1.2, 0.7, 10.0, 0.001),
    # without the mean (one coefficient for every tensor)
    "adagrad_no_average": lambda p: L.adagrad(p, 0.05, need_ave_multiplier=False),
    "rmsprop_no_average": lambda p: L.rmsprop(p, 0.05, 0.95, 1.2, 0.7, 10.0, 0.001,
                                              need_ave_multiplier=False),
}


def _run(make, indices, dtype):
    """The parameters ``indices`` of :data:`SHAPES` after 3 updates of one learner over them."""
    rs = np.random.RandomState(40)
    values = [rs.randn(*s).astype(dtype) for s in SHAPES]
    grads = [[rs.randn(*s).astype(dtype) for s in SHAPES] for _ in range(3)]
    ps = [sd.Variable.from_tensor(torch.from_numpy(values[i]), need_grad=True) for i in indices]
    learner = make(ps)
    for step, n in enumerate((4, 7, 3)):
        for p, i in zip(ps, indices):
            p.grad = torch.from_numpy(grads[step][i])
        learner.update(n)
    return [p.data.detach().numpy().copy() for p in ps]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_many_tensors_as_each_alone(name, dtype):
    together = _run(LEARNERS[name], list(range(len(SHAPES))), dtype)
    for i, value in enumerate(together):
        alone, = _run(LEARNERS[name], [i], dtype)
        assert value.tobytes() == alone.tobytes(), (name, SHAPES[i])


def test_sgd_is_an_unfused_axpy():
    """sgd_cntk over two tensors is ``w + float32(-lr) g`` rounded twice (NumPy), not one
    fused multiply-add."""
    rs = np.random.RandomState(0)
    ws = [rs.randn(5).astype(np.float32), rs.randn(3).astype(np.float32)]
    gs = [rs.randn(5).astype(np.float32), rs.randn(3).astype(np.float32)]
    ts = [torch.from_numpy(w.copy()) for w in ws]
    assert Fn.sgd_cntk(ts, [torch.from_numpy(g) for g in gs], lr=0.1)
    for t, w, g in zip(ts, ws, gs):
        assert t.numpy().tobytes() == (w + np.float32(-0.1) * g).tobytes()


def test_refuses_what_the_blocks_cannot_update():
    """A non-contiguous parameter, mixed dtypes or float16: ``False``, nothing touched (the
    learner then takes its torch path)."""
    w = torch.ones(4, 3).t()
    assert not Fn.sgd_cntk([w], [torch.ones(3, 4)], lr=0.1)
    assert bool((w == 1).all())
    assert not Fn.sgd_cntk([torch.ones(2), torch.ones(2, dtype=torch.float64)],
                           [torch.ones(2), torch.ones(2, dtype=torch.float64)], lr=0.1)
    assert not Fn.sgd_cntk([torch.ones(2, dtype=torch.float16)],
                           [torch.ones(2, dtype=torch.float16)], lr=0.1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_both_paths_as_cntk_rounds(nesterov, dtype):
    """momentum_cntk on a tensor of a block or more (NumPy blocks) and on small ones (torch's
    multi-tensor ops) is CNTK's ``v = m (v + (a / m) g)``, ``w -= v`` (Nesterov:
    ``w += (-m) v; w += (-a) g``), each operation rounded once in ``dtype`` (NumPy); and
    l2_cntk is ``g + r w``; for momenta 0.9, 0 and 1."""
    rs = np.random.RandomState(1)
    shapes = [(70000,), (5,), (3, 4)]
    for momentum in (0.9, 0.0, 1.0):
        ws = [rs.randn(*s).astype(dtype) for s in shapes]
        vs = [rs.randn(*s).astype(dtype) for s in shapes]
        gs = [rs.randn(*s).astype(dtype) for s in shapes]
        tw, tv = [torch.from_numpy(w.copy()) for w in ws], [torch.from_numpy(v.copy()) for v in vs]
        tg = [torch.from_numpy(g.copy()) for g in gs]
        assert Fn.l2_cntk(tg, tw, rate=0.01)
        assert Fn.momentum_cntk(tw, tg, tv, lr=0.05, momentum=momentum, unit_gain=True,
                                nesterov=nesterov)
        m, lr = dtype(momentum), dtype(0.05)
        alpha = (dtype(1) - m) * lr
        for w, v, g, a, b in zip(ws, vs, gs, tw, tv):
            g = g + dtype(0.01) * w
            if m == 1:
                v = v + alpha * g
            elif m == 0:
                v = alpha * g
            else:
                v = (v + (alpha / m) * g) * m
            w = w - v if not nesterov else (w + (-m) * v) + (-alpha) * g
            assert b.numpy().tobytes() == v.tobytes()
            assert a.numpy().tobytes() == w.tobytes()

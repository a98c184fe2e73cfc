"""sgd's, momentum_sgd's and nesterov's exact kernels take CNTK's L2 step themselves
(``g + ElemType(l2) w``, ``Learner.cpp:165``, then the rule, in one block): the numbers are
those of the separate L2 pass (``l2_cntk``) and the rule, bit for bit, and the gradients are
neither written nor copied (``Learner._gradients`` made a copy for L2 alone)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.learners as L
from stadyn.solvers import _float32_blocks as B
from stadyn.solvers import functional as Fn

SIZES = (3, 5, B.BLOCK + 7)            # a pack of two small tensors, one past a block


def _tensors(seed, dtype):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, generator=g, dtype=dtype) for n in SIZES]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("rule", ["sgd", "momentum", "nesterov"])
def test_the_l2_in_the_block_is_the_l2_pass_bit_for_bit(rule, dtype):
    rate = 0.3

    def step(ws, gs, vs, l2):
        if rule == "sgd":
            return Fn.sgd_cntk(ws, gs, lr=0.7, **l2)
        return Fn.momentum_cntk(ws, gs, vs, lr=0.7, momentum=0.9, unit_gain=True,
                                nesterov=rule == "nesterov", **l2)

    fused = [_tensors(1, dtype), _tensors(2, dtype), _tensors(3, dtype)]
    apart = [[t.clone() for t in ts] for ts in fused]
    given = [g.clone() for g in fused[1]]
    for _ in range(2):
        assert step(*fused, {"l2": rate})
        assert Fn.l2_cntk(apart[1], apart[0], rate=rate)
        assert step(*apart, {})
        apart[1] = [g.clone() for g in given]          # (the pass wrote its gradients)
    for a, b in zip(fused[0] + fused[2], apart[0] + apart[2]):
        assert torch.equal(a, b)
    assert all(torch.equal(g, h) for g, h in zip(fused[1], given))     # not written


@pytest.mark.parametrize("make", [lambda p: L.sgd(p, 0.1, l2_regularization_weight=0.01),
                                  lambda p: L.momentum_sgd(p, 0.1, 0.9,
                                                           l2_regularization_weight=0.01)])
def test_l2_alone_makes_no_gradient_copy(make):
    w = sd.Variable.from_numpy_array(np.array([1.0, -2.0, 3.0], np.float32), need_grad=True)
    learner = make([w])
    w.g = np.array([0.5, 0.25, -1.0], np.float32)
    before = w.g.copy()
    learner.update(1)
    assert all(b is None for b in learner._scratch)          # (a copy per parameter before)
    np.testing.assert_array_equal(w.g, before)
    # sgd by hand, float32: w - 0.1 (g + 0.01 w), the product and sums each rounded
    if learner.name == "sgd":
        f = np.float32
        expected = [f(x) + f(-0.1) * (f(gx) + f(0.01) * f(x))
                    for x, gx in zip([1.0, -2.0, 3.0], [0.5, 0.25, -1.0])]
        np.testing.assert_array_equal(w.d, np.array(expected, np.float32))


def test_the_torch_path_takes_the_l2_step_on_copies():
    # a non-contiguous parameter: no exact kernel, the rule's torch path, L2 on a copy
    w = sd.Variable.from_numpy_array(np.zeros(3, np.float32), need_grad=True)
    learner = L.sgd([w], 0.5, l2_regularization_weight=0.25)
    base = torch.tensor([4.0, 0.0, -8.0, 0.0, 2.0, 0.0])
    params, grads = [base[::2]], [torch.tensor([1.0, 2.0, 3.0])]
    learner.apply_step(params, grads, {}, learner.step_scalars(None, 1))
    # w - 0.5 (g + 0.25 w), exact in binary: [4, -8, 2] -> [3, -8, 0.25]
    assert params[0].tolist() == [3.0, -8.0, 0.25]
    assert grads[0].tolist() == [1.0, 2.0, 3.0]

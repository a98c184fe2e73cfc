"""A NumPy array kept from ``.g`` keeps its step's gradient through ``zero_grad`` and the next
backward, in both modes, while the gradient memory is still reused when nothing keeps it.

NNabla 1.39 gives a zeroed gradient new memory and leaves the old to the arrays holding it
(compat cases in tests/compat/compat_cases/nnabla_kept_arrays.py, against its outputs); Stadyn
reuses a large weight's gradient memory from step to step, so it must not reuse memory an array
still reads (graph/_grad_buffers.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.parametric_functions as PF
import stadyn.solvers as S
from stadyn.graph import numpy_reader, release_grads, viewed
from stadyn.graph._grad_buffers import _Buffer, unshared

_N = 512        # a 1 MB weight: a static plan's backward writes its gradient into a buffer


def _steps(mode: str, keep: bool, steps: int = 3):
    """``steps`` SGD steps of an affine layer; the gradients as copied at each step, and the
    arrays ``.g`` gave (``keep``) or None."""
    rng = np.random.RandomState(0)
    x = sd.Variable.from_numpy_array(rng.randn(4, _N).astype(np.float32))
    with sd.parameter_registry(sd.ParameterRegistry()):
        with sd.auto_forward(mode != "static"):
            loss = F.mean(PF.affine(x, _N) ** 2)
        params = sd.get_parameters()
        w = params["affine/W"]
        w.d = rng.randn(_N, _N).astype(np.float32) * 0.01
        solver = S.Sgd(lr=0.5)
        solver.set_parameters(params)
        copies, kept = [], []
        for _ in range(steps):
            if mode != "static":
                with sd.auto_forward():
                    loss = F.mean(PF.affine(x, _N) ** 2)
            if mode != "dynamic":
                loss.forward()
            solver.zero_grad()
            loss.backward()
            copies.append(w.g.copy())
            if keep:
                kept.append(w.g)
            solver.update()
        return copies, (kept if keep else None), w.d.copy()


@pytest.mark.parametrize("mode", ["static", "dynamic", "dynamic with forward()"])
def test_a_kept_g_keeps_its_steps_gradient(mode):
    copies, kept, value = _steps(mode, keep=True)
    assert not np.array_equal(copies[0], copies[-1])
    for array, copy in zip(kept, copies):
        np.testing.assert_array_equal(array, copy)
    # keeping the arrays changes no number of the training
    copies_alone, _, value_alone = _steps(mode, keep=False)
    for a, b in zip(copies, copies_alone):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(value, value_alone)


def test_a_released_buffer_is_reused_only_when_nothing_reads_it():
    box = _Buffer(torch.zeros(4))
    assert unshared(box)
    array = box.tensor.detach().numpy()          # what .g hands out
    assert not unshared(box)
    view = array[1:]
    del array
    assert not unshared(box)                     # a NumPy view of it reads the memory too
    del view
    assert unshared(box)
    held = box.tensor
    assert not unshared(box)                     # the tensor itself held
    del held
    assert unshared(box)


def test_viewed_tells_a_numpy_array_handed_out_and_alive():
    t = torch.zeros(3)
    assert not viewed(t)
    array = numpy_reader(t)
    part = array[:2]
    del array
    assert viewed(t)
    del part
    assert not viewed(t)
    kept = [numpy_reader(t) for _ in range(20)]     # many hand-outs: still told
    assert viewed(t)
    del kept
    assert not viewed(t)


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_leafs_kept_g_survives_the_release_of_a_view_sharing_its_gradient(dynamic):
    p = sd.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0]), need_grad=True)
    u = p.unlinked(need_grad=True)
    with sd.auto_forward(dynamic):
        loss = F.sum(u * u)
    if not dynamic:
        loss.forward()
    loss.backward()
    kept = p.g
    release_grads([u])
    with sd.auto_forward(dynamic):
        loss = F.sum(u * u * 2.0)
    if not dynamic:
        loss.forward()
    loss.backward()
    np.testing.assert_array_equal(kept, [2.0, 4.0, 6.0])       # d sum(u^2) / du
    np.testing.assert_array_equal(p.g, [4.0, 8.0, 12.0])       # d sum(2 u^2) / du

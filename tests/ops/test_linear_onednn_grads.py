"""The oneDNN affine product's backward (stadyn.ops._kernels.linear_onednn): it computes only the
gradients asked for, and an eager step writes the weight's gradient into the memory the solver's
``zero_grad`` gave back instead of allocating it afresh (a 8192x1024 weight: 32 MB and ~8,000
page faults a step), with the values of ``x.T @ dy`` (a float64 NumPy reference)."""

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.solvers as S
from stadyn.ops import _kernels as K

ONEDNN = K._linear_onednn is not None and torch.backends.mkldnn.is_available()
pytestmark = pytest.mark.skipif(not ONEDNN, reason="this torch build has no oneDNN")

# 16 x 1024 x 1024 multiply-adds: the smallest product sent to oneDNN
BATCH, IN, OUT = 16, 1024, 1024
TOL = 5e-6


def _data(seed=0):
    rng = np.random.RandomState(seed)
    return (rng.randn(BATCH, IN).astype(np.float32), rng.randn(IN, OUT).astype(np.float32),
            rng.randn(BATCH, OUT).astype(np.float32))


def _backward_ops(monkeypatch, x_grad: bool, w_grad: bool) -> list[str]:
    """The products the backward of ``x @ w`` runs: the input gradient's ``linear`` (oneDNN)
    and the weight gradient's ``torch.mm``."""
    x, w, dy = (torch.from_numpy(a) for a in _data())
    x.requires_grad_(x_grad)
    w.requires_grad_(w_grad)
    y = K.linear(x, w)
    names = []
    linear, mm = K.linear, torch.mm

    def counted(name, fn):
        def call(*args, **kwargs):
            names.append(name)
            return fn(*args, **kwargs)
        return call
    with monkeypatch.context() as m:
        m.setattr(K, "linear", counted("linear", linear))
        m.setattr(torch, "mm", counted("mm", mm))
        y.backward(dy)
    return names


def test_backward_computes_only_the_gradients_asked_for(monkeypatch):
    assert K._onednn_ok(torch.zeros(BATCH, IN), torch.zeros(IN, OUT))
    # the weight's gradient: one mm, no input gradient product
    assert _backward_ops(monkeypatch, x_grad=False, w_grad=True) == ["mm"]
    # the input's: one oneDNN product (dy W^T), no weight gradient
    assert _backward_ops(monkeypatch, x_grad=True, w_grad=False) == ["linear"]
    assert sorted(_backward_ops(monkeypatch, x_grad=True, w_grad=True)) == ["linear", "mm"]


def _affine_with_solver():
    """``x`` (no gradient), the weight (a solver's parameter) and a first eager step's dy."""
    xa, wa, dya = _data()
    x = sd.Variable.from_numpy_array(xa)
    w = sd.Variable.from_numpy_array(wa, need_grad=True)
    solver = S.Sgd(lr=0.0)
    solver.set_parameters({"w": w})
    _step(x, w, dya, solver)
    return x, w, dya, solver


def _step(x, w, dy, solver=None):
    with sd.auto_forward():
        y = F.affine(x, w)
    if solver is not None:
        solver.zero_grad()
    y.backward(dy)


def _rel_err(got, x, dy, times=1):
    ref = times * (x.d.astype(np.float64).T @ dy.astype(np.float64))
    return np.abs(np.asarray(got) - ref).max() / np.abs(ref).max()


def test_an_eager_step_writes_the_weight_gradient_into_the_released_memory():
    x, w, dya, solver = _affine_with_solver()
    first = w.grad.data_ptr()
    assert _rel_err(w.g, x, dya) < TOL
    # after zero_grad the next backward writes into the same memory (nothing reads it) ...
    dyb = _data(1)[2]
    _step(x, w, dyb, solver)
    assert w.grad.data_ptr() == first
    assert _rel_err(w.g, x, dyb) < TOL
    # ... but not while a NumPy array kept from .g reads it: that keeps its step's gradient,
    # as NNabla 1.39's does (compat case nnabla:kept_gradients_keep_their_values)
    kept = w.g
    _step(x, w, dya, solver)
    assert w.grad.data_ptr() != first
    assert _rel_err(kept, x, dyb) < TOL


def test_gradients_accumulate_and_differentiate_as_before():
    x, w, dya, solver = _affine_with_solver()
    _step(x, w, dya)                      # no zero_grad: the gradient adds up
    assert _rel_err(w.g, x, dya, times=2) < TOL
    # a gradient of the gradient is recorded as autograd's own product
    xt, wt, dyt = (torch.from_numpy(a) for a in _data())
    xt.requires_grad_(True)
    wt.requires_grad_(True)
    gw, = torch.autograd.grad(K.linear(xt, wt), wt, dyt, create_graph=True)
    assert gw.requires_grad and wt.grad is None
    torch.testing.assert_close(gw, torch.mm(xt.t(), dyt))

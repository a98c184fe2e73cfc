"""NNabla's solvers off the float32 blocks (CUDA, non-contiguous or compiled tensors: torch's
ops) keep NNabla 1.39's NaN and inf rules, as the blocks do (those equal NNabla bit for bit,
compat case ``fidelity40__nan_and_inf_gradients``): C++'s ``std::max`` keeps the old running
maximum where the new value is NaN (AMSGRAD's ``v_hat``, AMSBound's ``v_hat``, AdaBelief's
``s_max``, Adamax's ``u``), ``std::min(upper, std::max(x, lower))`` gives ``upper`` for a NaN
step (AdaBound), Lion's ``sign`` is ``(v > 0) - (v < 0)``, 0 for NaN, Lars' ``x >= 0`` check
raises, and SgdW made with ``lr=0`` decays by ``0/0``.  Here non-contiguous float32 CPU
parameters take the torch path; the same values laid out contiguously take the blocks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import stadyn.solvers as S
from stadyn.solvers._float32_blocks import adabound_blocks
from stadyn.solvers._functional_nnabla import adabound

NAN, INF = float("nan"), float("inf")


def _tensor(a: np.ndarray, contiguous: bool) -> torch.Tensor:
    return torch.from_numpy(a.copy()) if contiguous else torch.from_numpy(a.T.copy()).t()


def _run(solver, contiguous: bool, foreach: bool = True, steps: int = 3):
    """Three updates of a (4, 3) parameter with NaN, inf and -inf in the gradients."""
    solver.foreach = foreach
    rs = np.random.RandomState(0)
    w0 = rs.randn(4, 3).astype(np.float32)
    gs = [rs.randn(4, 3).astype(np.float32) for _ in range(steps)]
    gs[0][0, 0], gs[1][0, 1], gs[1][1, 1], gs[2][2, 2] = NAN, INF, -INF, NAN
    p = _tensor(w0, contiguous)
    states = {k: [_tensor(np.zeros_like(w0), contiguous)] for k in solver._state_names}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t, g in enumerate(gs):
            solver.apply_step([p], [_tensor(g, contiguous)], states, solver._scalars([t + 1]))
    return {"w": p.numpy().copy(), **{k: v[0].numpy().copy() for k, v in states.items()}}


_SOLVERS = {"Lion": lambda: S.Lion(lr=0.1), "Adamax": lambda: S.Adamax(alpha=0.1),
            "AMSGRAD": lambda: S.AMSGRAD(alpha=0.1), "AMSBound": lambda: S.AMSBound(alpha=0.1),
            "AdaBound": lambda: S.AdaBound(alpha=0.1),
            "AdaBelief": lambda: S.AdaBelief(alpha=0.1, amsgrad=True)}


@pytest.mark.parametrize("foreach", [True, False])
@pytest.mark.parametrize("name", sorted(_SOLVERS))
def test_torch_path_has_the_blocks_nan_and_inf(name, foreach):
    """Before: Lion's parameter and ``m``, the running maxima of Adamax, AMSGRAD, AMSBound and
    AdaBelief (and AdaBelief's parameter) took NaN or inf where NNabla's did not."""
    exact = _run(_SOLVERS[name](), contiguous=True)
    torch_path = _run(_SOLVERS[name](), contiguous=False, foreach=foreach)
    for key, want in exact.items():
        got = torch_path[key]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=key)
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want), err_msg=key)
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, err_msg=key)


@pytest.mark.parametrize("foreach", [True, False])
def test_lion_torch_path_by_hand(foreach):
    """NNabla's ``u = sign(lerp(g, m, b1))``, ``m = lerp(g, m, b2)`` (``lion.cpp:55-61``): an
    infinite gradient gives ``m = inf + b2 (0 - inf)``, NaN, and ``u = 0``: ``w`` unchanged
    (torch's ``sign`` made ``w`` NaN and ``b2 m + (1 - b2) g`` kept ``m`` infinite)."""
    w = torch.ones(3, 2).t()
    m = torch.zeros(3, 2).t()
    g = torch.tensor([[INF, NAN, 1.0], [-INF, -2.0, 0.0]])
    S.functional.lion([w], [g], [m], lr=0.5, beta1=0.9, beta2=0.99, foreach=foreach)
    assert w.tolist() == [[1.0, 1.0, 0.5], [1.0, 1.5, 1.0]]
    assert np.isnan(m[0, 0].item()) and np.isnan(m[0, 1].item()) and np.isnan(m[1, 0].item())
    np.testing.assert_allclose(m[1, 1].item(), -2.0 + 0.99 * 2.0, rtol=1e-5)   # -0.02


@pytest.mark.parametrize("foreach", [True, False])
def test_adabound_torch_path_clips_a_nan_step_to_upper(foreach):
    """``std::min(upper, std::max(x, lower))`` (``adabound.cpp:81``) is ``upper`` for a NaN
    ``x``: a NaN second moment with a finite first moment moves ``w`` by ``upper * m`` (torch's
    clamp kept the NaN, so ``w`` became NaN)."""
    def make(contiguous):
        return ([_tensor(np.ones((2, 3), np.float32), contiguous)],
                [_tensor(np.full((2, 3), 0.5, np.float32), contiguous)],
                [_tensor(np.zeros((2, 3), np.float32), contiguous)],
                [_tensor(np.full((2, 3), NAN, np.float32), contiguous)])
    kw = dict(step_size=0.1, lower=0.01, upper=2.0, beta1=0.9, beta2=0.999, eps=1e-8)
    got, want = make(False), make(True)
    adabound(*got, foreach=foreach, **kw)
    assert adabound_blocks(*want, **kw)
    np.testing.assert_allclose(got[0][0].numpy(), want[0][0].numpy(), rtol=1e-6)
    assert np.isfinite(got[0][0].numpy()).all()           # 1 - 2 * 0.05 = 0.9
    np.testing.assert_allclose(got[0][0].numpy(), 0.9, rtol=1e-6)


@pytest.mark.parametrize("foreach", [True, False])
def test_lars_torch_path_raises_as_nnabla(foreach):
    """NNabla 1.39 raises ``RuntimeError`` ('local learning rate should be positive or zero')
    for a NaN gradient (``lars.cpp:66``); the torch path went on and made ``w`` NaN."""
    solver = S.Lars(lr=0.1)
    solver.foreach = foreach
    w = torch.ones(3, 2).t()
    g = torch.tensor([[NAN, 1.0, 2.0], [1.0, 1.0, 1.0]])
    states = {"v": [torch.zeros(3, 2).t()]}
    with pytest.raises(RuntimeError, match="positive or zero"):
        solver.apply_step([w], [g], states, solver._scalars([1]))
    assert (w == 1).all() and not states["v"][0].any()


@pytest.mark.parametrize("foreach", [True, False])
def test_sgdw_made_with_lr_0_torch_path_is_nan(foreach):
    """``SgdW(lr=0, wd=1e-2)``: NNabla's decay rate ``(lr / init_lr) * wd`` is 0/0, NaN, so the
    parameter becomes NaN (compat case ``fidelity40__sgdw_made_with_lr_0``); the torch path took
    ``lr / init_lr`` as 1 and gave 0.99."""
    solver = S.SgdW(lr=0.0, wd=1e-2)
    solver.foreach = foreach
    w = torch.ones(3, 2).t()
    solver.apply_step([w], [torch.ones(2, 3)], {"m": [torch.zeros(3, 2).t()]},
                      solver._scalars([1]))
    assert np.isnan(w.numpy()).all()


def _transposed(a: np.ndarray) -> torch.Tensor:
    """``a`` (2-d) as a tensor laid out column-major: not contiguous."""
    return torch.from_numpy(a.T.copy()).t()


def _gradients(seed: int):
    rs = np.random.RandomState(seed)
    w = rs.randn(300, 70).astype(np.float32)
    g = (rs.randn(300, 70) * 10 ** rs.uniform(-3, 1, (300, 70))).astype(np.float32)
    return w, g


def test_weight_decay_blocks_take_a_non_contiguous_gradient():
    """NNabla's ``g = g + rate*w`` (``weight_decay.hpp``), the product rounded first, for a
    gradient laid out column-major: the float32 blocks through a contiguous copy, equal to
    NumPy's float32 ops (before, such a gradient left the blocks for torch's ops)."""
    from stadyn.solvers._float32_kernels import weight_decay_blocks

    w, g = _gradients(4)
    grad = _transposed(g)
    assert weight_decay_blocks([grad], [torch.from_numpy(w)], rate=3.0517578e-05)
    want = g + w * np.float32(3.0517578e-05)
    np.testing.assert_array_equal(grad.numpy(), want)
    assert not grad.is_contiguous()


def test_clip_grad_by_norm_blocks_take_a_non_contiguous_gradient():
    """``clip_grad_by_norm`` of a column-major gradient: NNabla's sequential float32 sum of
    ``g*g`` in the gradient's element order (``clip_grad.hpp:27-37``), ``(c*g) / norm`` (the
    torch fallback's pairwise norm put all 21000 values here a few units in the last place
    off)."""
    from stadyn.solvers._float32_kernels import clip_grad_by_norm_blocks

    _, g = _gradients(5)
    grad = _transposed(g)
    assert clip_grad_by_norm_blocks([grad], clip_norm=0.37)
    flat = g.reshape(-1)
    total = np.float32(0)
    for x in (flat * flat):                       # one float32 addition after another
        total = np.float32(total + x)
    want = (np.float32(0.37) * g) / np.sqrt(total)
    np.testing.assert_array_equal(grad.numpy(), want)


def test_lars_blocks_take_a_non_contiguous_gradient():
    """Lars with a column-major gradient: the blocks (NNabla's arithmetic, compat case
    ``fidelity40__lars_float32_steps``) equal the same gradient laid out contiguously, and the
    decayed gradient is written back (NNabla's ``weight_decay_cpu`` in place)."""
    from stadyn.solvers._float32_kernels import lars_blocks

    w, g = _gradients(6)
    kw = dict(lr=0.1, momentum=0.9, coefficient=1e-2, eps=1e-6, weight_decay=1e-3)
    got = [torch.from_numpy(w.copy())], [_transposed(g)], [torch.zeros(300, 70)]
    want = [torch.from_numpy(w.copy())], [torch.from_numpy(g.copy())], [torch.zeros(300, 70)]
    assert lars_blocks(*got, **kw) and lars_blocks(*want, **kw)
    for x, y in zip(got, want):
        np.testing.assert_array_equal(x[0].numpy(), y[0].numpy())

"""NNabla 1.39's Sgd, Adagrad, RMSprop, Adadelta, Adamax and Lion on torch's ops, with its
float32 rounding: the path its solvers take off the float32 blocks (CUDA, non-contiguous or
compiled tensors).  Each is the C++ of ``src/nbla/solver/generic/<name>.cpp`` one torch
operation per C++ operation (one rounding each, no multiply fused into an add, roots correctly
rounded by :func:`~stadyn.solvers._functional_nnabla.sqrt_f32`), the hyperparameters as the
C++ floats NNabla keeps: the twins of :mod:`stadyn.solvers._float32_kernels`' blocks, with
their arguments (``foreach=False``: one tensor at a time).  CNTK's learners keep their own
forms (:mod:`stadyn.solvers._functional`).

Example:
    >>> import torch
    >>> w, v = [torch.ones(2)], [torch.zeros(2)]
    >>> rmsprop_nnabla(w, [torch.ones(2)], v, lr=0.1, decay=0.9, eps=1e-8)
    >>> v[0].tolist()
    [0.10000002384185791, 0.10000002384185791]
"""

from __future__ import annotations

import numpy as np
import torch

from ._float32_blocks import adam_constants
from ._functional_nnabla import (_each, _first_moment_, _floats, _lion_direction, _operand,
                                 _products, sqrt_f32)
from ._scalars import Scalar, Tensors, float32, std_max_

__all__ = ["sgd_nnabla", "adagrad_nnabla", "rmsprop_nnabla", "adadelta_nnabla",
           "adamax_nnabla", "lion_nnabla"]


def _gain(decay: float) -> tuple[float, float]:
    """``(decay, 1 - decay)`` as C++ floats."""
    rho = np.float32(decay)
    return float(rho), float(np.float32(1) - rho)


def sgd_nnabla(params: Tensors, grads: Tensors, *, lr: Scalar, foreach: bool = True) -> None:
    """``w = w - lr*g``, the product rounded first (``sgd.cpp``)."""
    def body(ps, gs, rates):
        torch._foreach_sub_(ps, _products(gs, rates))

    _each(body, [params, grads], [_floats(lr, len(params))], foreach)


def adagrad_nnabla(params: Tensors, grads: Tensors, v: Tensors, *, lr: Scalar, eps: float,
                   foreach: bool = True) -> None:
    """``v += g*g``; ``w -= (lr*g) / (sqrt(v) + eps)`` (``adagrad.cpp``)."""
    e = float32(eps)

    def body(ps, gs, vs, rates):
        torch._foreach_add_(vs, torch._foreach_mul(gs, gs))
        denom = [sqrt_f32(vi).add_(e) for vi in vs]
        step = _products(gs, rates)
        torch._foreach_div_(step, denom)
        torch._foreach_sub_(ps, step)

    _each(body, [params, grads, v], [_floats(lr, len(params))], foreach)


def rmsprop_nnabla(params: Tensors, grads: Tensors, v: Tensors, *, lr: Scalar, decay: float,
                   eps: float, foreach: bool = True) -> None:
    """``v = v*decay + (g*g)*(1-decay)``; ``w -= (lr / (sqrt(v) + eps)) * g`` (``rmsprop.cpp:
    49-50``: the rate divided first)."""
    rho, gain = _gain(decay)
    e = float32(eps)

    def body(ps, gs, vs, rates):
        torch._foreach_mul_(vs, rho)
        sq = torch._foreach_mul(gs, gs)
        torch._foreach_mul_(sq, gain)
        torch._foreach_add_(vs, sq)
        for t, vi, a in zip(sq, vs, rates):
            sqrt_f32(vi, out=t).add_(e)
            torch.div(_operand(a, t), t, out=t)
        torch._foreach_mul_(sq, gs)
        torch._foreach_sub_(ps, sq)

    _each(body, [params, grads, v], [_floats(lr, len(params))], foreach)


def adadelta_nnabla(params: Tensors, grads: Tensors, e_grad: Tensors, e_delta: Tensors, *,
                    lr: Scalar, decay: float, eps: float, foreach: bool = True) -> None:
    """``eg = eg*decay + (g*g)*(1-decay)``; ``delta = sqrt((ed + eps) / (eg + eps)) * g``;
    ``ed = ed*decay + (delta*delta)*(1-decay)``; ``w -= lr*delta`` (``adadelta.cpp:47-52``)."""
    rho, gain = _gain(decay)
    e = float32(eps)

    def body(ps, gs, egs, eds, rates):
        torch._foreach_mul_(egs, rho)
        sq = torch._foreach_mul(gs, gs)
        torch._foreach_mul_(sq, gain)
        torch._foreach_add_(egs, sq)
        delta = torch._foreach_add(eds, e)
        torch._foreach_div_(delta, torch._foreach_add(egs, e))
        for t in delta:
            sqrt_f32(t, out=t)
        torch._foreach_mul_(delta, gs)
        torch._foreach_mul_(eds, rho)
        torch._foreach_copy_(sq, delta)
        torch._foreach_mul_(sq, delta)
        torch._foreach_mul_(sq, gain)
        torch._foreach_add_(eds, sq)
        torch._foreach_sub_(ps, _products(delta, rates))

    _each(body, [params, grads, e_grad, e_delta], [_floats(lr, len(params))], foreach)


def adamax_nnabla(params: Tensors, grads: Tensors, m: Tensors, u: Tensors, *,
                  step_size: Scalar, beta1: float, beta2: float, eps: float,
                  foreach: bool = True) -> None:
    """``m = b1*m + (1-b1)*g``; ``u = std::max(b2*u, |g|)`` (a NaN ``|g|`` keeps ``b2*u``);
    ``w = w - (alpha_t*m) / (u + eps)`` (``adamax.cpp:58-63``); ``step_size`` is NNabla's
    float ``alpha_t``."""
    b1, b2, e, gain1, _ = map(float, adam_constants(beta1, beta2, eps))

    def body(ps, gs, ms, us, steps):
        tmp = _first_moment_(ms, gs, b1, gain1)
        torch._foreach_mul_(us, b2)
        std_max_(us, torch._foreach_abs(gs))
        step = _products(ms, steps)
        torch._foreach_copy_(tmp, us)
        torch._foreach_add_(tmp, e)
        torch._foreach_div_(step, tmp)
        torch._foreach_sub_(ps, step)

    _each(body, [params, grads, m, u], [_floats(step_size, len(params))], foreach)


def lion_nnabla(params: Tensors, grads: Tensors, m: Tensors, *, lr: Scalar, beta1: float,
                beta2: float, weight_decay: Scalar = 0.0, foreach: bool = True) -> None:
    """``u = sign(g + b1*(m - g))`` (C++'s ``(v > 0) - (v < 0)``: 0 for NaN); ``m = g +
    b2*(m - g)``; ``w -= lr*(u + wd*w)``, each product rounded before its sum
    (``lion.cpp:47-55``)."""
    b1, b2 = float32(beta1), float32(beta2)
    n = len(params)

    def body(ps, gs, ms, rates, decays):
        update = _lion_direction(ms, gs, b1, b2)
        for p, u, a, d in zip(ps, update, rates, decays):
            p.sub_(u.add_(torch.mul(p, d)).mul_(a))

    _each(body, [params, grads, m], [_floats(lr, n), _floats(weight_decay, n)], foreach)

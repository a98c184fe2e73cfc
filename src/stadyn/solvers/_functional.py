"""Solver maths as pure functions over lists of tensors.

Every function updates ``params`` and its state lists in place and has two paths that a test
proves agree: ``foreach=True`` uses torch's multi-tensor ``_foreach_*`` kernels (one call per
step of the formula for all parameters); ``foreach=False`` loops over tensors one by one (the
reference).  Hyperparameters are keyword-only.  Per-parameter scalars (a step size that depends
on each parameter's step count) are given as lists.

These functions serve both :mod:`stadyn.solvers` (NNabla's solvers) and the CNTK learners of
:mod:`stadyn.learners`, which reach their semantics through the arguments (``gain`` for unit-gain
momentum, step sizes already scaled to the minibatch, ...).
"""

from __future__ import annotations

from typing import Sequence

import torch

Tensors = Sequence[torch.Tensor]
Scalars = Sequence[float]

__all__ = ["sgd", "momentum", "nesterov", "adam", "rmsprop", "adagrad", "adadelta", "lion",
           "add_weight_decay", "clip_by_norm", "clip_by_value"]


def _scalars(value: float | Scalars, n: int) -> list[float]:
    if isinstance(value, (int, float)):
        return [float(value)] * n
    return [float(v) for v in value]


def sgd(params: Tensors, grads: Tensors, *, lr: float | Scalars, foreach: bool = True) -> None:
    """``w -= lr * g``."""
    lrs = _scalars(lr, len(params))
    if foreach:
        torch._foreach_add_(params, torch._foreach_mul(grads, lrs), alpha=-1.0)
    else:
        for p, g, a in zip(params, grads, lrs):
            p.sub_(g * a)


def momentum(params: Tensors, grads: Tensors, velocities: Tensors, *, momentum: float | Scalars,
             gain: float | Scalars, foreach: bool = True) -> None:
    """``v = m * v + gain * g; w -= v``.

    NNabla's Momentum is ``gain = lr``; CNTK's unit-gain momentum SGD is ``gain = (1 - m) * lr``.
    """
    ms, gs = _scalars(momentum, len(params)), _scalars(gain, len(params))
    if foreach:
        torch._foreach_mul_(velocities, ms)
        torch._foreach_add_(velocities, torch._foreach_mul(grads, gs))
        torch._foreach_sub_(params, velocities)
    else:
        for p, g, v, m, c in zip(params, grads, velocities, ms, gs):
            v.mul_(m).add_(g * c)
            p.sub_(v)


def nesterov(params: Tensors, grads: Tensors, velocities: Tensors, *,
             momentum: float | Scalars, gain: float | Scalars, foreach: bool = True) -> None:
    """Nesterov momentum: ``v = m * v + gain * g; w -= m * v + gain * g``.

    This is NNabla's Nesterov (``gain = lr``, with its velocity negated) and CNTK's
    (``gain = (1 - m) * lr`` with unit gain).
    """
    ms, gs = _scalars(momentum, len(params)), _scalars(gain, len(params))
    if foreach:
        scaled = torch._foreach_mul(grads, gs)
        torch._foreach_mul_(velocities, ms)
        torch._foreach_add_(velocities, scaled)
        torch._foreach_sub_(params, torch._foreach_mul(velocities, ms))
        torch._foreach_sub_(params, scaled)
    else:
        for p, g, v, m, c in zip(params, grads, velocities, ms, gs):
            s = g * c
            v.mul_(m).add_(s)
            p.sub_(v * m).sub_(s)


def adam(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *, step_size: float | Scalars,
         beta1: float, beta2: float, eps: float, gain: float | None = None,
         v_max: Tensors | None = None, decoupled_decay: float | Scalars = 0.0,
         foreach: bool = True) -> None:
    """Adam with the bias correction folded into ``step_size`` (NNabla's form):

    ``m = b1 m + gain g`` (``gain = 1 - b1`` by default); ``v = b2 v + (1 - b2) g^2``;
    ``w -= step_size * m / (sqrt(v) + eps)``.  With ``v_max`` (AMSGrad) the running maximum of
    ``v`` replaces it.  ``decoupled_decay`` (AdamW) also subtracts ``decay * w_old``.
    """
    n = len(params)
    steps = _scalars(step_size, n)
    decays = _scalars(decoupled_decay, n)
    gain = 1.0 - beta1 if gain is None else gain
    if foreach:
        old = torch._foreach_mul(params, decays) if any(decays) else None
        torch._foreach_mul_(m, beta1)
        torch._foreach_add_(m, grads, alpha=gain)
        torch._foreach_mul_(v, beta2)
        torch._foreach_addcmul_(v, grads, grads, value=1.0 - beta2)
        second = v
        if v_max is not None:
            torch._foreach_maximum_(v_max, v)
            second = v_max
        denom = torch._foreach_sqrt(second)
        torch._foreach_add_(denom, eps)
        torch._foreach_addcdiv_(params, m, denom, [-s for s in steps])
        if old is not None:
            torch._foreach_sub_(params, old)
    else:
        for i, (p, g, mi, vi) in enumerate(zip(params, grads, m, v)):
            old = p * decays[i] if decays[i] else None
            mi.mul_(beta1).add_(g, alpha=gain)
            vi.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
            second = vi
            if v_max is not None:
                torch.maximum(v_max[i], vi, out=v_max[i])
                second = v_max[i]
            p.addcdiv_(mi, second.sqrt().add_(eps), value=-steps[i])
            if old is not None:
                p.sub_(old)


def rmsprop(params: Tensors, grads: Tensors, v: Tensors, *, lr: float | Scalars, decay: float,
            eps: float, foreach: bool = True) -> None:
    """``v = decay v + (1 - decay) g^2; w -= lr g / (sqrt(v) + eps)``."""
    lrs = _scalars(lr, len(params))
    if foreach:
        torch._foreach_mul_(v, decay)
        torch._foreach_addcmul_(v, grads, grads, value=1.0 - decay)
        denom = torch._foreach_sqrt(v)
        torch._foreach_add_(denom, eps)
        torch._foreach_addcdiv_(params, grads, denom, [-a for a in lrs])
    else:
        for p, g, vi, a in zip(params, grads, v, lrs):
            vi.mul_(decay).addcmul_(g, g, value=1.0 - decay)
            p.addcdiv_(g, vi.sqrt().add_(eps), value=-a)


def adagrad(params: Tensors, grads: Tensors, v: Tensors, *, lr: float | Scalars, eps: float,
            foreach: bool = True) -> None:
    """``v += g^2; w -= lr g / (sqrt(v) + eps)``."""
    lrs = _scalars(lr, len(params))
    if foreach:
        torch._foreach_addcmul_(v, grads, grads, value=1.0)
        denom = torch._foreach_sqrt(v)
        torch._foreach_add_(denom, eps)
        torch._foreach_addcdiv_(params, grads, denom, [-a for a in lrs])
    else:
        for p, g, vi, a in zip(params, grads, v, lrs):
            vi.addcmul_(g, g, value=1.0)
            p.addcdiv_(g, vi.sqrt().add_(eps), value=-a)


def adadelta(params: Tensors, grads: Tensors, eg: Tensors, ex: Tensors, *,
             lr: float | Scalars, decay: float, eps: float, foreach: bool = True) -> None:
    """AdaDelta: ``E[g^2] = d E[g^2] + (1-d) g^2``; ``dx = sqrt((E[dx^2]+eps)/(E[g^2]+eps)) g``;
    ``E[dx^2] = d E[dx^2] + (1-d) dx^2``; ``w -= lr dx``."""
    lrs = _scalars(lr, len(params))
    if foreach:
        torch._foreach_mul_(eg, decay)
        torch._foreach_addcmul_(eg, grads, grads, value=1.0 - decay)
        num = torch._foreach_add(ex, eps)
        den = torch._foreach_add(eg, eps)
        ratio = torch._foreach_div(num, den)
        torch._foreach_sqrt_(ratio)
        dx = torch._foreach_mul(ratio, grads)
        torch._foreach_mul_(ex, decay)
        torch._foreach_addcmul_(ex, dx, dx, value=1.0 - decay)
        torch._foreach_add_(params, torch._foreach_mul(dx, [-a for a in lrs]))
    else:
        for p, g, egi, exi, a in zip(params, grads, eg, ex, lrs):
            egi.mul_(decay).addcmul_(g, g, value=1.0 - decay)
            dx = ((exi + eps) / (egi + eps)).sqrt_() * g
            exi.mul_(decay).addcmul_(dx, dx, value=1.0 - decay)
            p.add_(dx * -a)


def lion(params: Tensors, grads: Tensors, m: Tensors, *, lr: float | Scalars, beta1: float,
         beta2: float, foreach: bool = True) -> None:
    """Lion: ``w -= lr sign(b1 m + (1 - b1) g); m = b2 m + (1 - b2) g``."""
    lrs = _scalars(lr, len(params))
    if foreach:
        update = torch._foreach_mul(m, beta1)
        torch._foreach_add_(update, grads, alpha=1.0 - beta1)
        torch._foreach_sign_(update)
        torch._foreach_add_(params, torch._foreach_mul(update, [-a for a in lrs]))
        torch._foreach_mul_(m, beta2)
        torch._foreach_add_(m, grads, alpha=1.0 - beta2)
    else:
        for p, g, mi, a in zip(params, grads, m, lrs):
            p.add_((mi * beta1 + g * (1.0 - beta1)).sign_() * -a)
            mi.mul_(beta2).add_(g, alpha=1.0 - beta2)


def add_weight_decay(grads: Tensors, params: Tensors, *, rate: float | Scalars,
                     foreach: bool = True) -> None:
    """``g += rate * w`` (L2 regularisation through the gradient)."""
    rates = _scalars(rate, len(params))
    if foreach:
        torch._foreach_add_(grads, torch._foreach_mul(params, rates))
    else:
        for g, p, r in zip(grads, params, rates):
            g.add_(p * r)


def clip_by_norm(grads: Tensors, *, max_norm: float | Scalars, foreach: bool = True) -> None:
    """Rescale each tensor whose L2 norm exceeds ``max_norm`` to that norm (per tensor)."""
    limits = _scalars(max_norm, len(grads))
    if foreach:
        norms = torch._foreach_norm(grads)
        factors = [torch.clamp(lim / torch.clamp(nrm, min=1e-30), max=1.0)
                   for nrm, lim in zip(norms, limits)]
        torch._foreach_mul_(grads, factors)
    else:
        for g, lim in zip(grads, limits):
            nrm = g.norm()
            g.mul_(torch.clamp(lim / torch.clamp(nrm, min=1e-30), max=1.0))


def clip_by_value(grads: Tensors, *, limit: float | Scalars, foreach: bool = True) -> None:
    """Clamp each element into ``[-limit, limit]``."""
    limits = _scalars(limit, len(grads))
    if foreach and len(set(limits)) == 1:
        torch._foreach_clamp_min_(grads, -limits[0])
        torch._foreach_clamp_max_(grads, limits[0])
    else:
        for g, lim in zip(grads, limits):
            g.clamp_(-lim, lim)

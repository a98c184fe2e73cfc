"""Solver maths as pure functions over lists of tensors.

Every function updates ``params`` and its state lists in place and has two paths that a test
proves agree: ``foreach=True`` uses torch's multi-tensor ``_foreach_*`` kernels (one call per
step of the formula for all parameters); ``foreach=False`` loops over tensors one by one (the
reference).  Hyperparameters are keyword-only.  A hyperparameter that can change from step to step
(a learning rate, a bias-corrected step size, a momentum from a schedule) may be a float, a list
of floats (one per parameter), or a 0-d tensor — the last is how a compiled training step feeds
values without recompiling.

These functions serve both :mod:`stadyn.solvers` (NNabla's solvers) and the CNTK learners, which
reach their semantics through the arguments (``gain`` for unit-gain momentum, step sizes already
scaled to the minibatch, ...).
"""

from __future__ import annotations

import torch

from ._scalars import Scalar, Tensors
from ._scalars import add_scaled_ as _add_scaled_
from ._scalars import add_scaled_one_ as _add_scaled_one_
from ._scalars import mul_ as _mul_
from ._scalars import neg as _neg
from ._scalars import nonzero as _nonzero
from ._scalars import one_minus as _one_minus
from ._scalars import per_tensor as _per_tensor
from ._scalars import root_denominator
from ._scalars import std_max_ as _std_max_
from ._scalars import scaled as _scaled

from ._functional_nnabla import (_lion_direction, adabelief, adabound, lamb, lars,
                                 rmsprop_graves, sgdw)
from ._cntk_cpu import (adadelta_cntk, adagrad_cntk, adam_cntk, fsadagrad_cntk,  # noqa: F401
                        l2_cntk, momentum_cntk, rmsprop_cntk, sgd_cntk)

__all__ = ["sgd", "momentum", "nesterov", "adam", "rmsprop", "adagrad", "adadelta", "lion",
           "adamax", "adabelief", "adabound", "lamb", "lars", "sgdw", "rmsprop_graves",
           "add_weight_decay", "clip_by_norm", "clip_by_value", "scale_gradients",
           "fused_adam_available"]


# ---------------------------------------------------------------------------------------------
# Update rules
# ---------------------------------------------------------------------------------------------
def sgd(params: Tensors, grads: Tensors, *, lr: Scalar, foreach: bool = True) -> None:
    """``w -= lr * g``."""
    if foreach:
        _add_scaled_(params, grads, _neg(lr))
    else:
        for p, g, a in zip(params, grads, _per_tensor(_neg(lr), len(params))):
            _add_scaled_one_(p, g, a)


def momentum(params: Tensors, grads: Tensors, velocities: Tensors, *, momentum: Scalar,
             gain: Scalar, foreach: bool = True) -> None:
    """``v = m * v + gain * g; w -= v``.

    NNabla's Momentum is ``gain = lr``; CNTK's unit-gain momentum SGD is ``gain = (1 - m) * lr``.
    """
    if foreach:
        _mul_(velocities, momentum)
        _add_scaled_(velocities, grads, gain)
        torch._foreach_sub_(params, velocities)
    else:
        n = len(params)
        for p, g, v, m, c in zip(params, grads, velocities, _per_tensor(momentum, n),
                                 _per_tensor(gain, n)):
            v.mul_(m)
            _add_scaled_one_(v, g, c)
            p.sub_(v)


def nesterov(params: Tensors, grads: Tensors, velocities: Tensors, *, momentum: Scalar,
             gain: Scalar, foreach: bool = True) -> None:
    """Nesterov momentum: ``v = m * v + gain * g; w -= m * v + gain * g``.

    This is NNabla's Nesterov (``gain = lr``, with its velocity negated) and CNTK's
    (``gain = (1 - m) * lr`` with unit gain).
    """
    if foreach:
        scaled = _scaled(grads, gain)
        _mul_(velocities, momentum)
        torch._foreach_add_(velocities, scaled)
        torch._foreach_sub_(params, _scaled(velocities, momentum))
        torch._foreach_sub_(params, scaled)
    else:
        n = len(params)
        for p, g, v, m, c in zip(params, grads, velocities, _per_tensor(momentum, n),
                                 _per_tensor(gain, n)):
            s = g * c
            v.mul_(m).add_(s)
            p.sub_(v * m).sub_(s)


def adam(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *, step_size: Scalar,
         beta1: Scalar, beta2: Scalar, eps: float, gain: Scalar | None = None,
         v_max: Tensors | None = None, decoupled_decay: Scalar = 0.0,
         foreach: bool = True) -> None:
    """Adam with the bias correction folded into ``step_size`` (NNabla's form):

    ``m = b1 m + gain g`` (``gain = 1 - b1`` by default); ``v = b2 v + (1 - b2) g^2``;
    ``w -= step_size * m / (sqrt(v) + eps)``.  With ``v_max`` (AMSGrad) the running maximum of
    ``v`` replaces it.  ``decoupled_decay`` (AdamW) also subtracts ``decay * w_old``.
    """
    gain = 1.0 - beta1 if gain is None else gain
    decay = _nonzero(decoupled_decay)
    if foreach:
        old = _scaled(params, decoupled_decay) if decay else None
        _mul_(m, beta1)
        _add_scaled_(m, grads, gain)
        _mul_(v, beta2)
        if isinstance(beta2, (int, float)):
            torch._foreach_addcmul_(v, grads, grads, value=1.0 - beta2)
        else:
            _add_scaled_(v, torch._foreach_mul(grads, grads), _one_minus(beta2))
        denom = root_denominator(v, v_max, eps)
        if isinstance(step_size, torch.Tensor):
            update = torch._foreach_div(m, denom)
            torch._foreach_mul_(update, step_size)
            torch._foreach_sub_(params, update)
        else:
            torch._foreach_addcdiv_(params, m, denom, _per_tensor(_neg(step_size), len(params)))
        if old is not None:
            torch._foreach_sub_(params, old)
        return
    n = len(params)
    steps, decays = _per_tensor(step_size, n), _per_tensor(decoupled_decay, n)
    gains, b1s, b2s = _per_tensor(gain, n), _per_tensor(beta1, n), _per_tensor(beta2, n)
    for i, (p, g, mi, vi) in enumerate(zip(params, grads, m, v)):
        old = p * decays[i] if decay else None
        mi.mul_(b1s[i])
        _add_scaled_one_(mi, g, gains[i])
        vi.mul_(b2s[i])
        if isinstance(b2s[i], float):
            vi.addcmul_(g, g, value=1.0 - b2s[i])
        else:
            vi.add_(g * g * (1.0 - b2s[i]))
        second = vi
        if v_max is not None:
            torch.maximum(v_max[i], vi, out=v_max[i])
            second = v_max[i]
        denom = second.sqrt().add_(eps)
        if isinstance(steps[i], float):
            p.addcdiv_(mi, denom, value=-steps[i])
        else:
            p.sub_(mi / denom * steps[i])
        if old is not None:
            p.sub_(old)


def fused_adam_available(params: Tensors) -> bool:
    """True when torch's fused Adam kernel can update ``params`` (one device, float32)."""
    if not hasattr(torch, "_fused_adam_") or not params:
        return False
    device = params[0].device
    return all(p.dtype == torch.float32 and p.device == device for p in params) and \
        device.type in ("cpu", "cuda")


def fused_adam(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *, step_size: Scalar,
               beta1: float, beta2: float, eps: float, v_max: Tensors | None = None,
               decoupled_decay: float = 0.0) -> None:
    """NNabla's Adam (:func:`adam`) through torch's fused kernel: one pass over memory.

    torch's kernel divides by its own bias corrections ``1 - b^t``; given a huge step count they
    are 1, so ``lr`` is exactly NNabla's bias-corrected ``step_size`` (a float, or a 0-d tensor
    in a compiled step).  ``decoupled_decay`` is AdamW's ``eta_t * wd`` (a float).

    torch's CPU kernel pairs the tensors' elements by their place in memory, so a gradient laid
    out otherwise than its parameter (a convolution's weight gets a transposed one through a
    second backward, as a WGAN-GP's gradient penalty takes it) is first copied into the
    parameter's layout; with it as it was, half such a weight's elements took another's step.
    """
    grads = [g if g.stride() == p.stride() else torch.empty_like(p).copy_(g)
             for p, g in zip(params, grads)]
    steps = [torch.full((), 1e9, device=params[0].device)] * len(params)
    kwargs = dict(lr=step_size, beta1=beta1, beta2=beta2, eps=eps, amsgrad=v_max is not None,
                  maximize=False)
    if decoupled_decay:
        # torch's AdamW scales the weights by (1 - lr * weight_decay) before the step.
        torch._fused_adamw_(params, grads, m, v, list(v_max or []), steps,
                            weight_decay=float(decoupled_decay) / float(step_size), **kwargs)
    else:
        torch._fused_adam_(params, grads, m, v, list(v_max or []), steps, weight_decay=0.0,
                           **kwargs)
    # torch's fused kernels write the parameters without bumping their version counters (torch
    # 2.13: ``p._version`` stays 0), which tell what a write changed (the ``.h5`` re-save of an
    # NNabla parameter kept in float64, compat/nnabla/_kept_dtypes.py): one call for the list.
    torch.autograd.graph.increment_version(params)


def rmsprop(params: Tensors, grads: Tensors, v: Tensors, *, lr: Scalar, decay: float,
            eps: float, foreach: bool = True) -> None:
    """``v = decay v + (1 - decay) g^2; w -= lr g / (sqrt(v) + eps)``."""
    if foreach:
        torch._foreach_mul_(v, decay)
        torch._foreach_addcmul_(v, grads, grads, value=1.0 - decay)
        denom = torch._foreach_sqrt(v)
        torch._foreach_add_(denom, eps)
        _add_scaled_(params, torch._foreach_div(grads, denom), _neg(lr))
    else:
        for p, g, vi, a in zip(params, grads, v, _per_tensor(lr, len(params))):
            vi.mul_(decay).addcmul_(g, g, value=1.0 - decay)
            _add_scaled_one_(p, g / vi.sqrt().add_(eps), -a)


def adagrad(params: Tensors, grads: Tensors, v: Tensors, *, lr: Scalar, eps: float,
            foreach: bool = True) -> None:
    """``v += g^2; w -= lr g / (sqrt(v) + eps)``."""
    if foreach:
        torch._foreach_addcmul_(v, grads, grads, value=1.0)
        denom = torch._foreach_sqrt(v)
        torch._foreach_add_(denom, eps)
        _add_scaled_(params, torch._foreach_div(grads, denom), _neg(lr))
    else:
        for p, g, vi, a in zip(params, grads, v, _per_tensor(lr, len(params))):
            vi.addcmul_(g, g, value=1.0)
            _add_scaled_one_(p, g / vi.sqrt().add_(eps), -a)


def adadelta(params: Tensors, grads: Tensors, eg: Tensors, ex: Tensors, *, lr: Scalar,
             decay: float, eps: float, foreach: bool = True) -> None:
    """AdaDelta: ``E[g^2] = d E[g^2] + (1-d) g^2``; ``dx = sqrt((E[dx^2]+eps)/(E[g^2]+eps)) g``;
    ``E[dx^2] = d E[dx^2] + (1-d) dx^2``; ``w -= lr dx``.  ``1-d`` is computed in the
    parameters' precision, as CNTK's and NNabla's kernels do (in float32 ``1 - 0.999`` is
    0.00099998713: CNTK's Manual_How_to_use_learners shows the difference)."""
    if not params:
        return
    keep = float(1 - torch.tensor(decay, dtype=params[0].dtype))
    if foreach:
        torch._foreach_mul_(eg, decay)
        torch._foreach_addcmul_(eg, grads, grads, value=keep)
        ratio = torch._foreach_div(torch._foreach_add(ex, eps), torch._foreach_add(eg, eps))
        torch._foreach_sqrt_(ratio)
        dx = torch._foreach_mul(ratio, grads)
        torch._foreach_mul_(ex, decay)
        torch._foreach_addcmul_(ex, dx, dx, value=keep)
        _add_scaled_(params, dx, _neg(lr))
    else:
        for p, g, egi, exi, a in zip(params, grads, eg, ex, _per_tensor(lr, len(params))):
            egi.mul_(decay).addcmul_(g, g, value=keep)
            dx = ((exi + eps) / (egi + eps)).sqrt_() * g
            exi.mul_(decay).addcmul_(dx, dx, value=keep)
            _add_scaled_one_(p, dx, -a)


def lion(params: Tensors, grads: Tensors, m: Tensors, *, lr: Scalar, beta1: float, beta2: float,
         weight_decay: Scalar = 0.0, foreach: bool = True) -> None:
    """Lion in NNabla 1.39's form (``src/nbla/solver/generic/lion.cpp:55-61``): ``u = sign(g +
    b1 (m - g))`` with C++'s sign, 0 for NaN; ``m = g + b2 (m - g)``; ``w -= lr (u + weight_decay
    w)``.  An infinite gradient makes ``m`` NaN (``inf - inf``) and leaves ``w`` as it is, as
    NNabla's (``torch.sign`` would make ``w`` NaN).

    Example:
        >>> w, m = [torch.ones(2)], [torch.zeros(2)]
        >>> lion(w, [torch.tensor([1.0, float("nan")])], m, lr=0.5, beta1=0.9, beta2=0.99)
        >>> w[0].tolist()
        [0.5, 1.0]
    """
    decay = _nonzero(weight_decay)
    if foreach:
        update = _lion_direction(m, grads, beta1, beta2)
        if decay:
            _add_scaled_(update, params, weight_decay)
        _add_scaled_(params, update, _neg(lr))
    else:
        n = len(params)
        for p, g, mi, a, d in zip(params, grads, m, _per_tensor(lr, n),
                                  _per_tensor(weight_decay, n)):
            diff = mi - g
            update = (diff * beta1).add_(g).sign_().nan_to_num_(nan=0.0)
            mi.copy_(diff.mul_(beta2).add_(g))
            if decay:
                _add_scaled_one_(update, p, d)
            _add_scaled_one_(p, update, -a)


# ---------------------------------------------------------------------------------------------
# Gradient transforms
# ---------------------------------------------------------------------------------------------
def add_weight_decay(grads: Tensors, params: Tensors, *, rate: Scalar,
                     foreach: bool = True) -> None:
    """``g += rate * w`` (L2 regularisation through the gradient)."""
    if foreach:
        _add_scaled_(grads, params, rate)
    else:
        for g, p, r in zip(grads, params, _per_tensor(rate, len(params))):
            g.add_(p * r)


def scale_gradients(grads: Tensors, *, factor: Scalar, foreach: bool = True) -> None:
    """``g *= factor`` (CNTK's mean gradient: the minibatch's summed gradient over its size)."""
    if foreach:
        _mul_(grads, factor)
    else:
        for g, f in zip(grads, _per_tensor(factor, len(grads))):
            g.mul_(f)


def clip_by_norm(grads: Tensors, *, max_norm: Scalar, foreach: bool = True,
                 squared: bool = False) -> None:
    """Rescale each tensor whose L2 norm exceeds ``max_norm`` to ``max_norm * g / norm`` (per
    tensor).  CNTK's learners compare ``norm > max_norm`` (a negative limit rescales every
    gradient); NNabla's solvers (``squared=True``) compare the sum of squares with
    ``max_norm ** 2`` (``clip_grad.hpp:34``), so a negative limit leaves a gradient shorter
    than ``|max_norm|`` as it is."""
    limits = _per_tensor(max_norm, len(grads))

    def factor(nrm, lim):
        ratio = lim / torch.clamp(nrm, min=1e-30)
        if squared:
            return torch.where(nrm * nrm > lim * lim, ratio, torch.ones_like(ratio))
        return torch.clamp(ratio, max=1.0)

    if foreach:
        norms = torch._foreach_norm(grads)
        torch._foreach_mul_(grads, [factor(nrm, lim) for nrm, lim in zip(norms, limits)])
    else:
        for g, lim in zip(grads, limits):
            g.mul_(factor(g.norm(), lim))


def clip_by_value(grads: Tensors, *, limit: Scalar, foreach: bool = True) -> None:
    """Clamp each element into ``[-limit, limit]``."""
    limits = _per_tensor(limit, len(grads))
    if foreach and all(isinstance(v, float) for v in limits) and len(set(limits)) == 1:
        torch._foreach_clamp_min_(grads, -limits[0])
        torch._foreach_clamp_max_(grads, limits[0])
    else:
        for g, lim in zip(grads, limits):
            torch.clamp(g, -lim, lim, out=g)


# ---------------------------------------------------------------------------------------------
# CNTK's learner maths (stadyn.learners).  Kept out of ``__all__`` for now: the solver harness
# requires a foreach/loop entry for every name there; tests/learners checks these.
# ---------------------------------------------------------------------------------------------
def _minimum(tensors: Tensors, s: Scalar) -> list[torch.Tensor]:
    """``[min(t, s) for t in tensors]`` as one multi-tensor op."""
    if isinstance(s, (int, float)):
        return torch._foreach_clamp_max(tensors, float(s))
    if isinstance(s, torch.Tensor):
        return torch._foreach_minimum(tensors, s)
    return torch._foreach_clamp_max(tensors, [float(v) for v in s])


def soft_threshold(params: Tensors, *, threshold: Scalar, foreach: bool = True) -> None:
    """L1 proximal step: ``w = sign(w) max(|w| - threshold, 0)`` (CNTK's L1 regularisation).

    Computed as ``w -= sign(w) min(|w|, threshold)``, so weights inside the threshold become
    exactly zero.
    """
    if foreach:
        shrink = _minimum(torch._foreach_abs(params), threshold)
        torch._foreach_mul_(shrink, torch._foreach_sign(params))
        torch._foreach_sub_(params, shrink)
    else:
        for p, th in zip(params, _per_tensor(threshold, len(params))):
            shrink = torch.minimum(p.abs(), th) if isinstance(th, torch.Tensor) \
                else p.abs().clamp_max(th)
            p.sub_(shrink.mul_(p.sign()))


def add_gaussian_noise(params: Tensors, *, std: Scalar, generator: torch.Generator | None = None,
                       foreach: bool = True) -> None:
    """``w += std * N(0, 1)`` (CNTK's Gaussian noise injection after the update).  Both paths
    draw the noise tensor by tensor in the same order, so they agree for the same generator."""
    noise = [torch.randn(p.shape, dtype=p.dtype, device=p.device, generator=generator)
             for p in params]
    if foreach:
        _add_scaled_(params, noise, std)
    else:
        for p, z, s in zip(params, noise, _per_tensor(std, len(params))):
            _add_scaled_one_(p, z, s)


def adamax(params: Tensors, grads: Tensors, m: Tensors, u: Tensors, *, step_size: Scalar,
           beta1: Scalar, beta2: Scalar, eps: float, gain: Scalar | None = None,
           std_max: bool = False, foreach: bool = True) -> None:
    """AdaMax: ``m = b1 m + gain g`` (``gain = 1 - b1`` by default); ``u = max(b2 u, |g|)``;
    ``w -= step_size * m / (u + eps)``.  With ``std_max`` (NNabla's) the maximum is C++'s
    ``std::max(b2 u, |g|)``: a NaN gradient keeps ``b2 u`` (``torch.maximum`` takes the NaN).

    Example:
        >>> w, m, u = [torch.ones(2)], [torch.zeros(2)], [torch.ones(2)]
        >>> adamax(w, [torch.tensor([1.0, float("nan")])], m, u, step_size=1.0, beta1=0.5,
        ...        beta2=0.5, eps=0.0, std_max=True)
        >>> u[0].tolist()
        [1.0, 0.5]
    """
    gain = _one_minus(beta1) if gain is None else gain
    if foreach:
        _mul_(m, beta1)
        _add_scaled_(m, grads, gain)
        _mul_(u, beta2)
        if std_max:
            _std_max_(u, torch._foreach_abs(grads))
        else:
            torch._foreach_maximum_(u, torch._foreach_abs(grads))
        update = torch._foreach_div(m, torch._foreach_add(u, eps))
        _add_scaled_(params, update, _neg(step_size))
        return
    n = len(params)
    for p, g, mi, ui, s, b1, b2, c in zip(params, grads, m, u, _per_tensor(step_size, n),
                                          _per_tensor(beta1, n), _per_tensor(beta2, n),
                                          _per_tensor(gain, n)):
        mi.mul_(b1)
        _add_scaled_one_(mi, g, c)
        ui.mul_(b2)
        if std_max:
            _std_max_([ui], [g.abs()])
        else:
            torch.maximum(ui, g.abs(), out=ui)
        _add_scaled_one_(p, mi / (ui + eps), -s)


def _add_square_(v: Tensors, grads: Tensors, weight: Scalar, foreach: bool) -> None:
    """``v += weight * g^2``."""
    if foreach:
        if isinstance(weight, (int, float)):
            torch._foreach_addcmul_(v, grads, grads, value=float(weight))
        else:
            _add_scaled_(v, torch._foreach_mul(grads, grads), weight)
    else:
        for vi, g, w in zip(v, grads, _per_tensor(weight, len(v))):
            if isinstance(w, float):
                vi.addcmul_(g, g, value=w)
            else:
                vi.add_(g * g * w)


def _momentum_step(m: Tensors, x: Tensors, momentum: Scalar, gain: Scalar,
                   foreach: bool) -> list[torch.Tensor]:
    """``m = momentum m + gain x`` where ``momentum > 0`` (left alone elsewhere); returns the
    step: the new ``m``, or ``x`` itself where the momentum is zero (CNTK's FSAdaGrad)."""
    n = len(m)
    if isinstance(momentum, (int, float)) and momentum <= 0:
        return list(x)
    if foreach:
        new = _scaled(m, momentum)
        _add_scaled_(new, x, gain)
    else:
        new = []
        for mi, xi, mo, c in zip(m, x, _per_tensor(momentum, n), _per_tensor(gain, n)):
            t = mi * mo
            _add_scaled_one_(t, xi, c)
            new.append(t)
    if isinstance(momentum, torch.Tensor):
        for mi, t in zip(m, new):
            mi.copy_(torch.where(momentum > 0, t, mi))
    elif foreach:
        torch._foreach_copy_(m, new)
    else:
        for mi, t in zip(m, new):
            mi.copy_(t)
    return new


def fsadagrad(params: Tensors, grads: Tensors, v: Tensors, m: Tensors, *, lr: Scalar,
              momentum: Scalar, gain: Scalar, var_momentum: Scalar, ada_mul: Scalar,
              max_ratio: float = 10.0, foreach: bool = True) -> None:
    """CNTK's FSAdaGrad (per element):

    ``v = vm v + (1 - vm) g^2``; ``r = min(ada_mul / sqrt(v), max_ratio)`` (``r = 1`` where
    ``v == 0``); ``m = momentum m + gain r g`` (only where ``momentum > 0``; otherwise the step
    is ``gain r g``); ``w -= lr m``.  The caller keeps CNTK's smoothed sample count
    ``c = vm c + (1 - vm) M`` and passes ``ada_mul = sqrt(c)`` (target denominator 1).
    """
    if foreach:
        _mul_(v, var_momentum)
    else:
        for vi, s in zip(v, _per_tensor(var_momentum, len(v))):
            vi.mul_(s)
    _add_square_(v, grads, _one_minus(var_momentum), foreach)
    n = len(params)
    ratios = []
    for vi, a in zip(v, _per_tensor(ada_mul, n)):
        r = vi.sqrt().reciprocal_().mul_(a).clamp_max_(max_ratio)
        ratios.append(torch.where(vi != 0, r, torch.ones_like(r)))
    scaled = torch._foreach_mul(grads, ratios) if foreach else \
        [g * r for g, r in zip(grads, ratios)]
    step = _momentum_step(m, scaled, momentum, gain, foreach)
    if foreach:
        _add_scaled_(params, step, _neg(lr))
    else:
        for p, s, a in zip(params, step, _per_tensor(_neg(lr), n)):
            _add_scaled_one_(p, s, a)


def _normalised_step_(params: Tensors, grads: Tensors, ratios: list[torch.Tensor], lr: Scalar,
                      average_multiplier: bool, foreach: bool) -> None:
    """``w -= lr / mean(r) * (g r)`` (per tensor ``mean``; ``1`` without ``average_multiplier``).
    A zero ``lr / mean(r)`` (an infinite mean) leaves the tensor as it is, as CNTK's axpy
    (BLAS: ``alpha == 0`` returns at once) does, where ``0 (g r)`` would be NaN."""
    n = len(params)
    lrs = _per_tensor(lr, n)
    coefs = [-(a / r.mean()) if average_multiplier else -a for a, r in zip(lrs, ratios)]
    if foreach:
        step = torch._foreach_mul(grads, ratios)
        if average_multiplier:
            torch._foreach_mul_(step, coefs)
            step = [torch.where(c == 0, 0.0, s) for s, c in zip(step, coefs)]
            torch._foreach_add_(params, step)
        else:
            _add_scaled_(params, step, _neg(lr))
    else:
        for p, g, r, c in zip(params, grads, ratios, coefs):
            if average_multiplier:
                p.add_(torch.where(c == 0, 0.0, (g * r) * c))
            else:
                _add_scaled_one_(p, g * r, c)


def adagrad_normalized(params: Tensors, grads: Tensors, v: Tensors, *, lr: Scalar,
                       floor: float = 1e-16, average_multiplier: bool = True,
                       foreach: bool = True) -> None:
    """CNTK's AdaGrad: ``v += g^2``; ``r = 1 / sqrt(v + floor)``;
    ``w -= lr / mean(r) * r g`` — the mean over each tensor when ``average_multiplier``
    (CNTK's ``need_ave_multiplier``), else 1."""
    _add_square_(v, grads, 1.0, foreach)
    if foreach:
        ratios = torch._foreach_sqrt(torch._foreach_add(v, floor))
        torch._foreach_reciprocal_(ratios)
    else:
        ratios = [(vi + floor).sqrt_().reciprocal_() for vi in v]
    _normalised_step_(params, grads, ratios, lr, average_multiplier, foreach)


def rmsprop_adaptive(params: Tensors, grads: Tensors, v: Tensors, signs: Tensors,
                     steps: Tensors, *, lr: Scalar, gamma: float, inc: float, dec: float,
                     max_step: float, min_step: float, first: Scalar = 0.0, floor: float = 1e-6,
                     average_multiplier: bool = True, foreach: bool = True) -> None:
    """CNTK's RMSProp with per-element step sizes (an Rprop-like rule):

    ``v = gamma v + (1 - gamma) g^2`` (``v`` starts at ``g^2`` on the update where ``first``
    is 1; ``first`` may be a 0-d tensor);
    ``step = min(step inc, max_step)`` where ``g`` kept its sign, else
    ``max(step dec, min_step)`` (``steps`` start at 0.02, ``signs`` at 0);
    ``r = step / sqrt(v + floor)``; ``w -= lr / mean(r) * r g`` (mean per tensor when
    ``average_multiplier``).
    """
    if isinstance(first, torch.Tensor):
        for vi, g in zip(v, grads):
            vi.mul_(1.0 - first).add_(g * g * first)
    elif first:
        for vi, g in zip(v, grads):
            vi.copy_(g * g)
    if foreach:
        torch._foreach_mul_(v, gamma)
    else:
        for vi in v:
            vi.mul_(gamma)
    _add_square_(v, grads, 1.0 - gamma, foreach)
    ratios = []
    for vi, si, st, g in zip(v, signs, steps, grads):
        s = g.sign()
        grown = (st * inc).clamp_max_(max_step)
        shrunk = (st * dec).clamp_min_(min_step)
        st.copy_(torch.where(si * s > 0, grown, shrunk))
        si.copy_(s)
        ratios.append(st / (vi + floor).sqrt_())
    _normalised_step_(params, grads, ratios, lr, average_multiplier, foreach)

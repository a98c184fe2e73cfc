"""The maths of NNabla's further solvers (AdaBelief, AdaBound/AMSBound, LAMB, LARS, SgdW,
RMSpropGraves; Adamax shares CNTK's ``adamax``) as pure functions over lists of tensors, in the
form of :mod:`stadyn.solvers._functional` (re-exported there): each updates ``params`` and its state
lists in place, ``foreach=True`` with torch's multi-tensor kernels, ``foreach=False`` one tensor
at a time (the reference the tests hold the first to).  Hyperparameters that may change between
steps (step sizes, bias corrections, bounds, decays) are floats, per-tensor lists or 0-d tensors.

Example:
    >>> import torch
    >>> w, g, n, a, d = [torch.ones(2)], [torch.ones(2)], [torch.zeros(2)], [torch.zeros(2)], \\
    ...     [torch.zeros(2)]
    >>> rmsprop_graves(w, g, n, a, d, lr=0.1, decay=0.5, momentum=0.0, eps=0.0)
    >>> w[0]
    tensor([0.8000, 0.8000])
"""

from __future__ import annotations

import numpy as np
import torch

from ._float32_blocks import adam_blocks, adam_constants
from ._float32_kernels import lars_error
from ._scalars import (Scalar, Tensors, add_scaled_, add_scaled_one_, float32, mul_, neg,
                       nonzero, per_tensor, scaled, std_clip_, std_max_)

__all__ = ["adabelief", "adabound", "lamb", "lars", "sgdw", "rmsprop_graves", "nesterov_nnabla",
           "adam_nnabla", "momentum_nnabla"]


def _lerp_(dst: Tensors, src: Tensors, beta: float) -> None:
    """``dst = beta * dst + (1 - beta) * src``."""
    torch._foreach_mul_(dst, beta)
    torch._foreach_add_(dst, src, alpha=1.0 - beta)


def adabelief(params: Tensors, grads: Tensors, m: Tensors, var: Tensors, *, step_size: Scalar,
              sgd_step: Scalar, bias2: Scalar, beta1: float, beta2: float, eps: float,
              s_max: Tensors | None = None, decay_factor: Scalar = 1.0,
              foreach: bool = True) -> None:
    """AdaBelief (NNabla's): ``w *= decay_factor`` (decoupled weight decay); ``m = b1 m + (1 -
    b1) g``; ``s = b2 s + (1 - b2) (g - m)^2``, then ``s += eps`` (with ``s_max``, AMSGrad's
    variant: ``s_max = max(s_max, s) + eps`` is used instead); ``w -= step_size m / (sqrt(s /
    bias2) + eps) + sgd_step m`` (RAdam's rectified step or its plain-momentum fallback through
    the two step sizes)."""
    n = len(params)
    if foreach:
        if isinstance(decay_factor, torch.Tensor) or per_tensor(decay_factor, n) != [1.0] * n:
            mul_(params, decay_factor)
        _lerp_(m, grads, beta1)
        residual = torch._foreach_sub(grads, m)
        torch._foreach_mul_(var, beta2)
        torch._foreach_addcmul_(var, residual, residual, value=1.0 - beta2)
        if s_max is not None:
            std_max_(s_max, var)                    # C++'s std::max: a NaN s keeps s_max
            torch._foreach_add_(s_max, eps)
            second = s_max
        else:
            torch._foreach_add_(var, eps)
            second = var
        denom = scaled(second, _inverse(bias2))
        torch._foreach_sqrt_(denom)
        torch._foreach_add_(denom, eps)
        add_scaled_(params, torch._foreach_div(m, denom), neg(step_size))
        if nonzero(sgd_step):
            add_scaled_(params, m, neg(sgd_step))
        return
    for i, (p, g, mi, vi) in enumerate(zip(params, grads, m, var)):
        factor = per_tensor(decay_factor, n)[i]
        if isinstance(factor, torch.Tensor) or factor != 1.0:
            p.mul_(factor)
        mi.mul_(beta1).add_(g, alpha=1.0 - beta1)
        residual = g - mi
        vi.mul_(beta2).addcmul_(residual, residual, value=1.0 - beta2)
        if s_max is not None:
            std_max_([s_max[i]], [vi])
            second = s_max[i].add_(eps)
        else:
            second = vi.add_(eps)
        denom = (second * per_tensor(_inverse(bias2), n)[i]).sqrt_().add_(eps)
        add_scaled_one_(p, mi / denom, -per_tensor(step_size, n)[i])
        sgd = per_tensor(sgd_step, n)[i]
        if isinstance(sgd, torch.Tensor) or sgd:
            add_scaled_one_(p, mi, -sgd)


def _inverse(s: Scalar) -> Scalar:
    if isinstance(s, (int, float, torch.Tensor)):
        return 1.0 / s
    return [1.0 / float(v) for v in s]


def adabound(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *, step_size: Scalar,
             lower: Scalar, upper: Scalar, beta1: float, beta2: float, eps: float,
             v_max: Tensors | None = None, foreach: bool = True) -> None:
    """AdaBound (with ``v_max``, AMSBound): Adam's moments; ``eta = clip(step_size / (sqrt(v) +
    eps), lower, upper)`` element-wise (``v``'s running maximum with ``v_max``);
    ``w -= eta m``."""
    n = len(params)
    if foreach:
        _lerp_(m, grads, beta1)
        torch._foreach_mul_(v, beta2)
        torch._foreach_addcmul_(v, grads, grads, value=1.0 - beta2)
        if v_max is not None:
            std_max_(v_max, v)
        eta = torch._foreach_sqrt(v if v_max is None else v_max)
        torch._foreach_add_(eta, eps)
        torch._foreach_reciprocal_(eta)
        mul_(eta, step_size)
        for e, lo, hi in zip(eta, per_tensor(lower, n), per_tensor(upper, n)):
            std_clip_(e, lo, hi)                    # NNabla's std::min/max: NaN gives upper
        torch._foreach_sub_(params, torch._foreach_mul(eta, m))
        return
    steps, lows, highs = per_tensor(step_size, n), per_tensor(lower, n), per_tensor(upper, n)
    for i, (p, g, mi, vi) in enumerate(zip(params, grads, m, v)):
        mi.mul_(beta1).add_(g, alpha=1.0 - beta1)
        vi.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
        second = vi
        if v_max is not None:
            std_max_([v_max[i]], [vi])
            second = v_max[i]
        eta = std_clip_(1.0 / (second.sqrt() + eps) * steps[i], lows[i], highs[i])
        p.sub_(eta * mi)


def lamb(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *, lr: Scalar,
         bias1: Scalar, bias2: Scalar, beta1: float, beta2: float, eps: float, gamma_l: float,
         gamma_u: float, weight_decay: Scalar = 0.0, foreach: bool = True) -> None:
    """LAMB: Adam's moments; ``r = (m / bias1) / (sqrt(v / bias2) + eps) + weight_decay w``;
    ``w -= lr clip(||w||, gamma_l, gamma_u) / ||r|| r`` with one norm per tensor; the ratio is 1
    where ``||r|| <= eps`` (NNabla 1.39's ``local_lr``, ``src/nbla/solver/generic/lamb.cpp``: a
    zero gradient and no decay leave ``w`` as it is, not NaN)."""
    n = len(params)
    if foreach:
        _lerp_(m, grads, beta1)
        torch._foreach_mul_(v, beta2)
        torch._foreach_addcmul_(v, grads, grads, value=1.0 - beta2)
        denom = scaled(v, _inverse(bias2))
        torch._foreach_sqrt_(denom)
        torch._foreach_add_(denom, eps)
        r = torch._foreach_div(scaled(m, _inverse(bias1)), denom)
        if nonzero(weight_decay):
            add_scaled_(r, params, weight_decay)
        w_norms = torch._foreach_norm(params)
        r_norms = torch._foreach_norm(r)
        ratios = [_trust_ratio(wn, rn, gamma_l, gamma_u, eps)
                  for wn, rn in zip(w_norms, r_norms)]
        torch._foreach_mul_(r, ratios)
        add_scaled_(params, r, neg(lr))
        return
    for p, g, mi, vi, a, b1c, b2c, wd in zip(params, grads, m, v, per_tensor(lr, n),
                                             per_tensor(bias1, n), per_tensor(bias2, n),
                                             per_tensor(weight_decay, n)):
        mi.mul_(beta1).add_(g, alpha=1.0 - beta1)
        vi.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
        r = (mi * (1.0 / b1c)) / ((vi * (1.0 / b2c)).sqrt_().add_(eps))
        if isinstance(wd, torch.Tensor) or wd:
            add_scaled_one_(r, p, wd)
        r.mul_(_trust_ratio(p.norm(), r.norm(), gamma_l, gamma_u, eps))
        add_scaled_one_(p, r, -a)


def _trust_ratio(w_norm: torch.Tensor, r_norm: torch.Tensor, gamma_l: float, gamma_u: float,
                 eps: float) -> torch.Tensor:
    """LAMB's ``clip(||w||, gamma_l, gamma_u) / ||r||``, 1 where ``||r|| <= eps``."""
    ratio = torch.clamp(w_norm, gamma_l, gamma_u) / r_norm
    return torch.where(r_norm > eps, ratio, torch.ones_like(ratio))


def lars(params: Tensors, grads: Tensors, v: Tensors, *, lr: Scalar, momentum: float,
         coefficient: float, eps: float, weight_decay: Scalar = 0.0,
         foreach: bool = True) -> None:
    """LARS: ``l = coefficient ||w|| / x`` per tensor with ``x = ||g|| + weight_decay ||w||``,
    ``x + eps`` only where ``x < eps``, and ``l = 1`` where ``||w|| < eps`` (NNabla 1.39's
    ``src/nbla/solver/generic/lars.cpp:53-60``); ``g += weight_decay w`` (in place, as its
    ``weight_decay_cpu``: the decayed gradient stays); ``v = momentum v + lr l g; w -= v``.
    ``RuntimeError`` where ``x`` is negative or NaN (NNabla's check, ``lars.cpp:66``), before
    any tensor is updated (one host sync per call for the check).

    Example:
        >>> w, v = [torch.full((4,), 1e-4)], [torch.zeros(4)]
        >>> lars(w, [torch.ones(4)], v, lr=1.0, momentum=0.0, coefficient=1.0, eps=1e-3)
        >>> v[0].tolist()                       # ||w|| = 2e-4 < eps: the local rate is lr
        [1.0, 1.0, 1.0, 1.0]
    """
    n = len(params)
    if foreach:
        w_norms = torch._foreach_norm(params)
        g_norms = torch._foreach_norm(grads)
        decays = per_tensor(weight_decay, n)
        local = [_lars_local(wn, gn, d, coefficient, eps)
                 for wn, gn, d in zip(w_norms, g_norms, decays)]
        _check_lars(w_norms, g_norms, decays)
        if nonzero(weight_decay):     # NNabla's rounding: the product, then the sum
            torch._foreach_add_(grads, scaled(params, weight_decay))
        mul_(v, momentum)
        torch._foreach_add_(v, scaled(torch._foreach_mul(grads, local), lr))
        torch._foreach_sub_(params, v)
        return
    decays = per_tensor(weight_decay, n)
    w_norms, g_norms = [p.norm() for p in params], [g.norm() for g in grads]
    _check_lars(w_norms, g_norms, decays)
    for p, g, vi, a, d, wn, gn in zip(params, grads, v, per_tensor(lr, n), decays, w_norms,
                                      g_norms):
        local = _lars_local(wn, gn, d, coefficient, eps)
        if isinstance(d, torch.Tensor) or d:
            g.add_(p * d)
        vi.mul_(momentum).add_(g * local * a)
        p.sub_(vi)


def _check_lars(w_norms: Tensors, g_norms: Tensors, decays: list) -> None:
    """NNabla's ``x >= 0`` check of every tensor's ``||g|| + weight_decay ||w||``, one sync."""
    if not w_norms:
        return
    xs = torch.stack([(gn + wn * d).float() for wn, gn, d in zip(w_norms, g_norms, decays)])
    bad = ~(xs >= 0)
    if bool(bad.any()):
        raise lars_error(float(xs[bad][0]))


def _lars_local(w_norm: torch.Tensor, g_norm: torch.Tensor, decay, coefficient: float,
                eps: float) -> torch.Tensor:
    """LARS' local rate (over ``lr``) of one tensor, NNabla's rule: ``eps`` joins ``x`` only
    where ``x < eps``; 1 where ``||w|| < eps``."""
    x = g_norm + w_norm * decay
    x = torch.where(x < eps, x + eps, x)
    return torch.where(w_norm < eps, torch.ones_like(x), coefficient * w_norm / x)


def sgdw(params: Tensors, grads: Tensors, m: Tensors, *, lr: Scalar, momentum: float,
         decoupled_decay: Scalar, foreach: bool = True) -> None:
    """SgdW: ``m = momentum m + lr g; w -= m + decoupled_decay w_old`` (NNabla:
    ``decoupled_decay = lr / lr_initial * wd``)."""
    n = len(params)
    if foreach:
        old = scaled(params, decoupled_decay) if nonzero(decoupled_decay) else None
        mul_(m, momentum)
        add_scaled_(m, grads, lr)
        torch._foreach_sub_(params, m)
        if old is not None:
            torch._foreach_sub_(params, old)
        return
    for p, g, mi, a, d in zip(params, grads, m, per_tensor(lr, n),
                              per_tensor(decoupled_decay, n)):
        old = p * d if isinstance(d, torch.Tensor) or d else None
        mi.mul_(momentum)
        add_scaled_one_(mi, g, a)
        p.sub_(mi)
        if old is not None:
            p.sub_(old)


def rmsprop_graves(params: Tensors, grads: Tensors, n: Tensors, g_avg: Tensors, d: Tensors, *,
                   lr: Scalar, decay: float, momentum: float, eps: float,
                   foreach: bool = True) -> None:
    """RMSprop as Graves (2013): ``n = decay n + (1 - decay) e^2; g = decay g + (1 - decay) e;
    d = momentum d - lr e / sqrt(n - g^2 + eps); w += d``."""
    if foreach:
        torch._foreach_mul_(n, decay)
        torch._foreach_addcmul_(n, grads, grads, value=1.0 - decay)
        _lerp_(g_avg, grads, decay)
        denom = torch._foreach_sub(n, torch._foreach_mul(g_avg, g_avg))
        torch._foreach_add_(denom, eps)
        torch._foreach_sqrt_(denom)
        mul_(d, momentum)
        add_scaled_(d, torch._foreach_div(grads, denom), neg(lr))
        torch._foreach_add_(params, d)
        return
    for p, e, ni, gi, di, a in zip(params, grads, n, g_avg, d, per_tensor(lr, len(params))):
        ni.mul_(decay).addcmul_(e, e, value=1.0 - decay)
        gi.mul_(decay).add_(e, alpha=1.0 - decay)
        di.mul_(momentum)
        add_scaled_one_(di, e / (ni - gi * gi + eps).sqrt_(), -a)
        p.add_(di)


def nesterov_nnabla(params: Tensors, grads: Tensors, velocities: Tensors, *, lr: Scalar,
                    momentum: float, foreach: bool = True) -> None:
    """NNabla 1.39's Nesterov with its float32 rounding (``src/nbla/solver/generic/
    nesterov.cpp:52-56``): ``v = momentum v - lr g; w += -momentum v_old + (1 + momentum) v``,
    each product rounded before its sum; ``velocities`` is NNabla's state ``m`` (its sign).

    Example:
        >>> import torch
        >>> w, v = [torch.ones(2)], [torch.zeros(2)]
        >>> nesterov_nnabla(w, [torch.ones(2)], v, lr=0.1, momentum=0.9)
        >>> w[0].tolist(), v[0].tolist()
        ([0.8100000023841858, 0.8100000023841858], [-0.10000000149011612, -0.10000000149011612])
    """
    one_plus = float(torch.tensor(1.0) + torch.tensor(momentum, dtype=torch.float32))
    if foreach:
        step = scaled(velocities, -momentum)              # -momentum v_old
        mul_(velocities, momentum)
        torch._foreach_sub_(velocities, scaled(grads, lr))
        torch._foreach_add_(step, scaled(velocities, one_plus))
        torch._foreach_add_(params, step)
        return
    for p, g, v, a in zip(params, grads, velocities, per_tensor(lr, len(params))):
        step = v * -momentum
        v.mul_(momentum).sub_(g * a)
        p.add_(step.add_(v * one_plus))


def sqrt_f32(t: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``sqrt(t)`` correctly rounded, as C++'s ``std::sqrt(float)`` (into ``out`` when given):
    torch 2.13's CPU float32 ``sqrt`` is one unit in the last place off for about one value in
    six (``sqrt(float32(2/7))``: 0.53452253, not 0.53452247).  NumPy's root on CPU; elsewhere
    the float64 root rounded to float32 (exact: 53 >= 2*24 + 2 bits).

    Example:
        >>> sqrt_f32(torch.tensor([2 / 7])).tolist()
        [0.5345224738121033]
    """
    if type(t) is torch.Tensor and t.device.type == "cpu" and t.dtype == torch.float32 \
            and not t.requires_grad and not torch.compiler.is_compiling():   # (not traced)
        if out is None:
            return torch.from_numpy(np.sqrt(t.numpy()))
        np.sqrt(t.numpy(), out=out.numpy())
        return out
    root = t.double().sqrt().to(t.dtype)
    return root if out is None else out.copy_(root)


def adam_nnabla(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *, step_size: Scalar,
                beta1: float, beta2: float, eps: float, v_max: Tensors | None = None,
                decay: Scalar = 0.0, foreach: bool = True) -> None:
    """NNabla 1.39's Adam, AdamW and AMSGRAD in its float32 arithmetic, one rounding per C++
    operation (``src/nbla/solver/generic/adam.cpp:68-73``, ``adamw.cpp``, ``amsgrad.cpp``):
    ``m = b1*m + (1-b1)*g``; ``v = b2*v + ((1-b2)*g)*g``; (AMSGRAD: ``v_max = max(v_max, v)``
    replaces ``v``); ``w = w - (step_size*m) / (sqrt(v) + eps) - decay*w_old``.  ``beta1``,
    ``beta2`` and ``eps`` are rounded to float32 and ``1 - b1`` is taken in float32 (for
    ``beta1=0.95``: 0.050000012, not 0.05); no multiply is fused into an add, roots are
    :func:`sqrt_f32`.  ``step_size`` and ``decay`` should already be float32 values (NNabla's
    ``alpha_t`` and ``eta_t * wd``).  Two scratch arrays per parameter.

    Example:
        >>> w, m, v = [torch.ones(2)], [torch.zeros(2)], [torch.zeros(2)]
        >>> adam_nnabla(w, [torch.ones(2)], m, v, step_size=0.1, beta1=0.95, beta2=0.999,
        ...             eps=1e-8)
        >>> m[0].tolist()
        [0.050000011920928955, 0.050000011920928955]
    """
    b1, b2, e, gain1, gain2 = map(float, adam_constants(beta1, beta2, eps))
    second = v if v_max is None else v_max
    if foreach:
        if adam_blocks(params, grads, m, v, step_size=step_size, beta1=b1, beta2=b2, eps=e,
                       v_max=v_max, decay=decay):
            return                      # on CPU: NumPy's float32 ufuncs, block by block
        old = scaled(params, decay) if nonzero(decay) else None
        torch._foreach_mul_(m, b1)
        tmp = torch._foreach_mul(grads, gain1)
        torch._foreach_add_(m, tmp)
        torch._foreach_mul_(v, b2)
        torch._foreach_copy_(tmp, grads)
        torch._foreach_mul_(tmp, gain2)
        torch._foreach_mul_(tmp, grads)
        torch._foreach_add_(v, tmp)
        if v_max is not None:
            std_max_(v_max, v)                      # C++'s std::max: a NaN v keeps v_hat
        for s, t in zip(second, tmp):
            sqrt_f32(s, out=t)
        torch._foreach_add_(tmp, e)
        update = scaled(m, step_size)
        torch._foreach_div_(update, tmp)
        torch._foreach_sub_(params, update)
        if old is not None:
            torch._foreach_sub_(params, old)
        return
    n = len(params)
    steps, decays = per_tensor(step_size, n), per_tensor(decay, n)
    for i, (p, g, mi, vi) in enumerate(zip(params, grads, m, v)):
        old = p * decays[i] if nonzero(decays[i]) else None
        tmp = torch.mul(g, gain1)
        mi.mul_(b1).add_(tmp)
        vi.mul_(b2).add_(torch.mul(g, gain2, out=tmp).mul_(g))
        if v_max is not None:
            std_max_([v_max[i]], [vi])
        sqrt_f32(second[i], out=tmp).add_(e)
        p.sub_(torch.mul(mi, steps[i]).div_(tmp))
        if old is not None:
            p.sub_(old)


def momentum_nnabla(params: Tensors, grads: Tensors, velocities: Tensors, *, lr: Scalar,
                    momentum: float, foreach: bool = True) -> None:
    """NNabla 1.39's Momentum with its float32 rounding (``src/nbla/solver/generic/
    momentum.cpp``: ``v = momentum*v + lr*g; w = w - v``): both products rounded before their
    sum, where one multiply-add (torch's ``add_(alpha=)``) rounded once.

    Example:
        >>> w, v = [torch.ones(2)], [torch.ones(2)]
        >>> momentum_nnabla(w, [torch.ones(2)], v, lr=0.1, momentum=0.9)
        >>> v[0].tolist()
        [1.0, 1.0]
    """
    m = float32(momentum)
    if foreach:
        torch._foreach_mul_(velocities, m)
        torch._foreach_add_(velocities, scaled(grads, lr))
        torch._foreach_sub_(params, velocities)
        return
    for p, g, v, s in zip(params, grads, velocities, per_tensor(lr, len(params))):
        v.mul_(m).add_(g * s)
        p.sub_(v)

"""The maths of NNabla's further solvers (AdaBelief, AdaBound/AMSBound, LAMB, LARS, SgdW,
RMSpropGraves; the others' in :mod:`stadyn.solvers._functional_nnabla_plain`) as pure functions
over lists of tensors, in the form of :mod:`stadyn.solvers._functional` (re-exported there):
each updates ``params`` and its state lists in place, ``foreach=True`` with torch's
multi-tensor kernels, ``foreach=False`` one tensor at a time, both with NNabla 1.39's float32
rounding (its C++ operations in its order, one rounding each, its float constants: the torch
twins of the float32 blocks, taking their arguments).  Hyperparameters that may change between
steps (step sizes, bias corrections, bounds, decays) are floats, per-tensor lists or 0-d
tensors.

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
from ._float32_kernels import lars_error, sequential_norms
from ._scalars import (Scalar, Tensors, float32, mul_, nonzero, per_tensor, scaled, std_clip_,
                       std_max_)

__all__ = ["weight_decay_nnabla", "clip_grad_by_norm_nnabla", "nnabla_moments", "adabelief",
           "adabound", "lamb", "lars", "sgdw", "rmsprop_graves", "nesterov_nnabla",
           "adam_nnabla", "momentum_nnabla"]


def _operand(s, like: torch.Tensor) -> torch.Tensor:
    """Scalar ``s`` (float or 0-d tensor) as a 0-d tensor of ``like``'s dtype on its device:
    a divisor torch divides by (CUDA turns a division by a CPU scalar into a product with its
    reciprocal, two roundings); a float is filled in on the device (``torch.full``: no copy
    from the host)."""
    if isinstance(s, torch.Tensor):
        return s.to(dtype=like.dtype, device=like.device)
    return torch.full((), s, dtype=like.dtype, device=like.device)


def _floats(s: Scalar, n: int) -> list:
    """``s`` per tensor, each float rounded to float32 (NNabla's C++ float); tensors as they
    are."""
    return [v if isinstance(v, torch.Tensor) else float32(v) for v in per_tensor(s, n)]


def weight_decay_nnabla(grads: Tensors, params: Tensors, *, rate: float) -> None:
    """NNabla's ``weight_decay_cpu`` (``include/nbla/solver/weight_decay.hpp``) on torch's
    ops: ``g = g + rate*w`` in float, the product rounded before the sum (torch's
    ``add_(alpha=)`` rounds the multiply-add once).

    Example:
        >>> g = [torch.ones(2)]
        >>> weight_decay_nnabla(g, [torch.full((2,), 2.0)], rate=0.5)
        >>> g[0].tolist()
        [2.0, 2.0]
    """
    torch._foreach_add_(grads, torch._foreach_mul(params, float32(rate)))


def clip_grad_by_norm_nnabla(grads: Tensors, *, clip_norm: float) -> None:
    """NNabla's ``clip_grad_by_norm_cpu`` (``include/nbla/solver/clip_grad.hpp:27-37``) on
    torch's ops, per gradient: ``sum`` of ``g*g`` in float (torch's order of additions, where
    NNabla adds one after another: the path's few units in the last place); where ``sum > 0``
    and ``sum > c*c`` (``c*c`` in float), ``g = (c*g) / sqrt(sum)``.

    Example:
        >>> g = [torch.tensor([3.0, 4.0])]
        >>> clip_grad_by_norm_nnabla(g, clip_norm=1.0)
        >>> g[0].tolist()
        [0.6000000238418579, 0.800000011920929]
    """
    c = float32(clip_norm)
    limit = float(np.float32(c) * np.float32(c))
    for g in grads:
        total = torch.sum(g * g)
        norm = sqrt_f32(total.reshape(1)).reshape(())
        clipped = torch.mul(g, c).div_(norm)
        g.copy_(torch.where((total > 0) & (total > limit), clipped, g))


def _products(ts: Tensors, scalars: list) -> list[torch.Tensor]:
    """``[t * s for t, s in zip(ts, scalars)]``, each product rounded once: one multi-tensor
    op where every ``s`` is a float."""
    if all(isinstance(x, float) for x in scalars):
        return torch._foreach_mul(ts, scalars)
    return [torch.mul(t, x) for t, x in zip(ts, scalars)]


def _first_moment_(m: Tensors, grads: Tensors, b1: float, gain1: float) -> list[torch.Tensor]:
    """``m = b1*m + gain1*g`` in place, each product rounded before the sum (NNabla's Adam
    family and Adamax); returns the ``gain1*g`` tensors, for the caller's scratch.

    Example:
        >>> m = [torch.ones(1)]
        >>> _ = _first_moment_(m, [torch.ones(1)], 0.5, 0.25)
        >>> m[0].item()
        0.75
    """
    torch._foreach_mul_(m, b1)
    tmp = torch._foreach_mul(grads, gain1)
    torch._foreach_add_(m, tmp)
    return tmp


def _lion_direction(m: Tensors, grads: Tensors, beta1, beta2) -> list[torch.Tensor]:
    """Lion's direction ``u = sign(g + beta1*(m - g))`` (C++'s sign: 0 for NaN), then ``m = g +
    beta2*(m - g)`` in place, each operation rounded (``lion.cpp:55-61``); returns ``u``.  The
    betas are used as given (a caller rounds them to float32 or not).

    Example:
        >>> m = [torch.tensor([0.0, 4.0])]
        >>> _lion_direction(m, [torch.tensor([1.0, float("nan")])], 0.5, 0.5)[0].tolist()
        [1.0, 0.0]
    """
    diff = torch._foreach_sub(m, grads)
    update = torch._foreach_mul(diff, beta1)
    torch._foreach_add_(update, grads)
    torch._foreach_sign_(update)
    for u in update:
        u.nan_to_num_(nan=0.0)
    torch._foreach_mul_(diff, beta2)
    torch._foreach_add_(diff, grads)
    torch._foreach_copy_(m, diff)
    return update


def nnabla_moments(grads: Tensors, m: Tensors, v: Tensors, v_max: Tensors | None,
                   constants) -> list[torch.Tensor]:
    """Adam's moments in place as NNabla 1.39's C++ rounds them, one rounding per operation
    (``adam.cpp:68-69``, ``adabound.cpp``, ``amsbound.cpp``, ``lamb.cpp``): ``m = b1*m +
    gain1*g``; ``v = b2*v + (gain2*g)*g``; with ``v_max`` ``v_max = std::max(v_max, v)``.
    ``constants`` are :func:`~stadyn.solvers._float32_blocks.adam_constants`' ``(b1, b2,
    eps, gain1, gain2)`` (the float32 gains: ``1 - 0.999`` is 0.00099998713).  Returns one
    scratch tensor per gradient.

    Example:
        >>> m, v = [torch.zeros(1)], [torch.zeros(1)]
        >>> _ = nnabla_moments([torch.ones(1)], m, v, None, adam_constants(0.9, 0.999, 1e-8))
        >>> v[0].item()
        0.0009999871253967285
    """
    b1, b2, _, gain1, gain2 = map(float, constants)
    tmp = _first_moment_(m, grads, b1, gain1)
    torch._foreach_mul_(v, b2)
    torch._foreach_copy_(tmp, grads)
    torch._foreach_mul_(tmp, gain2)
    torch._foreach_mul_(tmp, grads)
    torch._foreach_add_(v, tmp)
    if v_max is not None:
        std_max_(v_max, v)                      # C++'s std::max: a NaN v keeps v_max
    return tmp


def _each(fn, lists: list, scalars: list, foreach: bool) -> None:
    """``fn(*lists, *scalars)`` once over the whole lists (``foreach``), else once per tensor
    over one-element lists (the same operations, one tensor at a time)."""
    if foreach:
        fn(*lists, *scalars)
        return
    for i in range(len(lists[0])):
        fn(*[None if ts is None else ts[i:i + 1] for ts in lists],
           *[sc[i:i + 1] for sc in scalars])


def adabelief(params: Tensors, grads: Tensors, m: Tensors, s: Tensors, *, step_size: Scalar,
              sgd: Scalar, correction2: Scalar, beta1: float, beta2: float, eps: float,
              s_max: Tensors | None = None, decay: Scalar = 0.0, foreach: bool = True) -> None:
    """NNabla 1.39's AdaBelief update on torch's ops, with its rounding
    (``src/nbla/solver/generic/adabelief.cpp:97-119``; the arguments of
    :func:`~stadyn.solvers._float32_blocks.adabelief_blocks`): ``m = b1*m + (1-b1)*g`` in
    float; ``s = b2*s + (1-b2)*pow(g-m, 2)``, the product and the sum in double, rounded once;
    ``w = w - w*decay``; ``s += eps`` (AMSGrad: ``s_max = max(s_max, s) + eps``); ``w = w -
    alpha_t*m`` where ``sgd`` (per tensor), else ``w = w - (alpha_t*m) / (sqrt(s)/correction2 +
    eps)``.  ``step_size`` (``alpha_t``), ``correction2`` and ``decay`` are float32 values."""
    _, b2, e, gain1, gain2 = adam_constants(beta1, beta2, eps)
    b1, b2, e, gain1, wide_gain = float32(beta1), float(b2), float(e), float(gain1), \
        float(gain2)
    n = len(params)

    def body(ps, gs, ms, ss, maxes, steps, plains, corrs, decays):
        torch._foreach_mul_(ms, b1)
        tmp = torch._foreach_mul(gs, gain1)
        torch._foreach_add_(ms, tmp)
        torch._foreach_copy_(tmp, gs)                     # pow(g - m, 2), in double
        torch._foreach_sub_(tmp, ms)
        for si, r in zip(ss, tmp):
            wide = r.double().square_().mul_(wide_gain)
            si.copy_(wide.add_(si.mul_(b2)))              # b2*s: float; the sum: double
        for p, t, d in zip(ps, tmp, decays):
            if isinstance(d, torch.Tensor) or d:
                p.sub_(torch.mul(p, d, out=t))            # w = w - w*decay
        if maxes is None:
            torch._foreach_add_(ss, e)
            second = ss
        else:
            std_max_(maxes, ss)
            torch._foreach_add_(maxes, e)
            second = maxes
        for p, mi, sec, t, a, plain, c in zip(ps, ms, second, tmp, steps, plains, corrs):
            step = torch.mul(mi, a)
            if isinstance(plain, torch.Tensor) or not plain:
                sqrt_f32(sec, out=t)                      # sqrt(s)/correction2 + eps
                torch.div(t, _operand(c, t), out=t).add_(e)
                adaptive = torch.div(step, t)
                step = adaptive if not isinstance(plain, torch.Tensor) else \
                    torch.where(plain != 0, step, adaptive)
            p.sub_(step)

    _each(body, [params, grads, m, s, s_max],
          [_floats(step_size, n), per_tensor(sgd, n), _floats(correction2, n),
           _floats(decay, n)], foreach)


def adabound(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *, step_size: Scalar,
             lower: Scalar, upper: Scalar, beta1: float, beta2: float, eps: float,
             v_max: Tensors | None = None, foreach: bool = True) -> None:
    """NNabla 1.39's AdaBound (with ``v_max``, AMSBound) on torch's ops, all in float as its
    C++ (``adabound.cpp:66-75``, ``amsbound.cpp:73-84``; the arguments of
    :func:`~stadyn.solvers._float32_blocks.adabound_blocks`): :func:`nnabla_moments`;
    ``eta = std::min(upper, std::max(alpha_t / (sqrt(v) + eps), lower))`` (a NaN quotient
    gives ``upper``; ``v``'s running maximum with ``v_max``); ``w = w - eta*m``.
    ``step_size`` (``alpha_t``) and the bounds are float32 values."""
    constants = adam_constants(beta1, beta2, eps)
    e = float(constants[2])
    n = len(params)

    def body(ps, gs, ms, vs, maxes, steps, lows, highs):
        tmp = nnabla_moments(gs, ms, vs, maxes, constants)
        for sec, t, a, lo, hi in zip(vs if maxes is None else maxes, tmp, steps, lows, highs):
            sqrt_f32(sec, out=t).add_(e)
            torch.div(_operand(a, t), t, out=t)           # alpha_t / denom: one rounding
            std_clip_(t, lo, hi)
        torch._foreach_mul_(tmp, ms)
        torch._foreach_sub_(ps, tmp)

    _each(body, [params, grads, m, v, v_max],
          [_floats(step_size, n), _floats(lower, n), _floats(upper, n)], foreach)


def lamb(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *, eta: Scalar,
         correction1: Scalar, correction2: Scalar, beta1: float, beta2: float, eps: float,
         gamma_l: float, gamma_u: float, weight_decay: Scalar = 0.0,
         foreach: bool = True) -> None:
    """NNabla 1.39's LAMB on torch's ops (``src/nbla/solver/generic/lamb.cpp:57-89``; the
    arguments of :func:`~stadyn.solvers._float32_kernels.lamb_blocks`): :func:`nnabla_moments`;
    ``r = (m/c1) / (sqrt(v/c2) + eps) + wd*w`` in float; ``local_lr = clip(||w||, gamma_l,
    gamma_u) / ||r||``, 1 where ``||r|| <= eps`` (a zero gradient and no decay leave ``w`` as
    it is, not NaN); ``w = float(w - (eta*local_lr)*r)`` in double.  The norms are
    :func:`~stadyn.solvers._float32_kernels.sequential_norms`: NNabla's on CPU, torch's
    elsewhere (the path's few units in the last place there).
    ``correction1`` and ``correction2`` are NNabla's float bias corrections (1 without
    ``bias_correction``)."""
    constants = adam_constants(beta1, beta2, eps)
    e = float(constants[2])
    low, high = float32(gamma_l), float32(gamma_u)
    n = len(params)

    def body(ps, gs, ms, vs, rates, c1s, c2s, decays):
        tmp = nnabla_moments(gs, ms, vs, None, constants)
        r = []
        for p, mi, vi, t, c1, c2, d in zip(ps, ms, vs, tmp, c1s, c2s, decays):
            sqrt_f32(torch.div(vi, _operand(c2, t), out=t), out=t).add_(e)
            ri = torch.div(mi, _operand(c1, t)).div_(t)
            if isinstance(d, torch.Tensor) or d:
                ri.add_(torch.mul(p, d, out=t))           # r = r + wd*w
            r.append(ri)
        for p, ri, a, wn, rn in zip(ps, r, rates, sequential_norms(ps), sequential_norms(r)):
            ratio = torch.where(rn > e, torch.clamp(wn, low, high) / rn, torch.ones_like(rn))
            wide = ri.double().mul_(ratio.double() * a)   # (eta*local_lr)*r in double
            p.copy_(torch.sub(p, wide))          # (6x an in-place sub_ that promotes)

    _each(body, [params, grads, m, v],
          [_floats(eta, n), _floats(correction1, n), _floats(correction2, n),
           _floats(weight_decay, n)], foreach)


def lars(params: Tensors, grads: Tensors, v: Tensors, *, lr: Scalar, momentum: float,
         coefficient: float, eps: float, weight_decay: Scalar = 0.0,
         foreach: bool = True) -> None:
    """NNabla 1.39's LARS on torch's ops, with its float rounding (``src/nbla/solver/generic/
    lars.cpp:45-68``; the arguments of :func:`~stadyn.solvers._float32_kernels.lars_blocks`):
    ``x = ||g|| + wd*||w||`` per tensor (``x + eps`` only where ``x < eps``); the local rate
    ``lr_l = ((lr*coefficient)*||w||) / x``, ``lr`` where ``||w|| < eps``; ``g = g + wd*w`` (in
    place, as its ``weight_decay_cpu``: the decayed gradient stays); ``v = momentum*v +
    lr_l*g; w = w - v``.  The norms are :func:`~stadyn.solvers._float32_kernels.
    sequential_norms`: NNabla's on CPU, torch's elsewhere (the path's few units in the last
    place there).  ``RuntimeError`` where ``x`` is negative or NaN
    (NNabla's check, ``lars.cpp:66``), before any tensor is updated (one host sync per call
    for the check).

    Example:
        >>> w, v = [torch.full((4,), 1e-4)], [torch.zeros(4)]
        >>> lars(w, [torch.ones(4)], v, lr=1.0, momentum=0.0, coefficient=1.0, eps=1e-3)
        >>> v[0].tolist()                       # ||w|| = 2e-4 < eps: the local rate is lr
        [1.0, 1.0, 1.0, 1.0]
    """
    n = len(params)
    mom, coef, e = float32(momentum), np.float32(coefficient), float32(eps)
    rates, decays = _floats(lr, n), _floats(weight_decay, n)
    w_norms, g_norms = sequential_norms(params), sequential_norms(grads)
    xs = [gn + wn * d for wn, gn, d in zip(w_norms, g_norms, decays)]
    _check_lars(xs)

    def body(ps, gs, vs, rs, ds, wns, xts):
        local = []
        for wn, x, a in zip(wns, xts, rs):
            scale = _operand(a, wn) * coef if isinstance(a, torch.Tensor) else \
                float(np.float32(a) * coef)                 # (lr*coefficient) in float
            x = torch.where(x < e, x + e, x)
            local.append(torch.where(wn < e, _operand(a, wn), scale * wn / x))
        for p, g, d, t in zip(ps, gs, ds, _products(ps, ds)):
            if isinstance(d, torch.Tensor) or d:
                g.add_(t)                                    # g = g + wd*w
        torch._foreach_mul_(vs, mom)
        torch._foreach_add_(vs, [torch.mul(g, r) for g, r in zip(gs, local)])
        torch._foreach_sub_(ps, vs)

    _each(body, [params, grads, v], [rates, decays, w_norms, xs], foreach)


def _check_lars(xs: Tensors) -> None:
    """NNabla's ``x >= 0`` check of every tensor's ``||g|| + weight_decay ||w||``, one sync."""
    if not xs:
        return
    stacked = torch.stack([x.float() for x in xs])
    bad = ~(stacked >= 0)
    if bool(bad.any()):
        positions = torch.nonzero(bad).flatten().tolist()
        raise lars_error({i: float(stacked[i]) for i in positions})


def sgdw(params: Tensors, grads: Tensors, m: Tensors, *, lr: Scalar, momentum: float,
         decay: Scalar, foreach: bool = True) -> None:
    """NNabla 1.39's SgdW on torch's ops (``sgdw.cpp``; the arguments of
    :func:`~stadyn.solvers._float32_kernels.sgdw_blocks`): ``m = momentum*m + lr*g``; ``w = (w
    - m) - decay*w_old``, each product rounded before its sum; ``decay`` is NNabla's float
    ``(lr / init_lr) * wd``."""
    mom = float32(momentum)
    n = len(params)

    def body(ps, gs, ms, rates, decays):
        old = _products(ps, decays)
        torch._foreach_mul_(ms, mom)
        torch._foreach_add_(ms, _products(gs, rates))
        torch._foreach_sub_(ps, ms)
        torch._foreach_sub_(ps, old)

    _each(body, [params, grads, m], [_floats(lr, n), _floats(decay, n)], foreach)


def rmsprop_graves(params: Tensors, grads: Tensors, n: Tensors, g_avg: Tensors, d: Tensors, *,
                   lr: Scalar, decay: float, momentum: float, eps: float,
                   foreach: bool = True) -> None:
    """NNabla 1.39's RMSprop as Graves (2013) on torch's ops, all in float
    (``rmsprop_graves.cpp:64-70``; the arguments of
    :func:`~stadyn.solvers._float32_blocks.rmsprop_graves_blocks`): ``n = decay*n +
    ((1-decay)*e)*e; g = decay*g + (1-decay)*e; d = momentum*d - (lr*e) / sqrt((n - g*g) +
    eps); w += d``."""
    rho, mom, e = float32(decay), float32(momentum), float32(eps)
    gain = float(np.float32(1) - np.float32(rho))

    def body(ps, es, ns, avgs, ds, rates):
        a = torch._foreach_mul(es, gain)
        torch._foreach_mul_(ns, rho)
        torch._foreach_add_(ns, torch._foreach_mul(a, es))
        torch._foreach_mul_(avgs, rho)
        torch._foreach_add_(avgs, a)
        torch._foreach_copy_(a, avgs)                         # sqrt((n - g*g) + eps)
        torch._foreach_mul_(a, avgs)
        denom = torch._foreach_sub(ns, a)
        torch._foreach_add_(denom, e)
        for t in denom:
            sqrt_f32(t, out=t)
        step = _products(es, rates)
        torch._foreach_div_(step, denom)
        torch._foreach_mul_(ds, mom)
        torch._foreach_sub_(ds, step)
        torch._foreach_add_(ps, ds)

    _each(body, [params, grads, n, g_avg, d], [_floats(lr, len(params))], foreach)


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
    constants = adam_constants(beta1, beta2, eps)
    b1, b2, e = map(float, constants[:3])
    second = v if v_max is None else v_max
    if foreach:
        if adam_blocks(params, grads, m, v, step_size=step_size, beta1=b1, beta2=b2, eps=e,
                       v_max=v_max, decay=decay):
            return                      # on CPU: NumPy's float32 ufuncs, block by block
        old = scaled(params, decay) if nonzero(decay) else None
        tmp = nnabla_moments(grads, m, v, v_max, constants)
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
        tmp, = nnabla_moments([g], [mi], [vi], None if v_max is None else [v_max[i]],
                              constants)
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

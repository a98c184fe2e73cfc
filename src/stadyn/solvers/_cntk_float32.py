"""CNTK 2.7's float32 learner arithmetic on CPU, bit for bit, in the block loop of
:mod:`._float32_blocks` (NumPy float32 ufuncs over views of the tensors' memory, each C++
operation rounded once, in CNTK's order).

CNTK's CPU learners are C++ float loops and BLAS calls (``Source/Math/CPUMatrixImpl.h``:
``Adam`` 1318, ``FSAdagrad`` 1265, ``Adagrad`` 1200, ``RmsProp`` 1360, ``AdaDelta`` 1458;
``Source/Math/Matrix.cpp``: ``SGDUpdate`` 1626, ``MomentumSGDUpdate`` 1655,
``NesterovAcceleratedMomentumSGDUpdate`` 1703, the 4-argument ``ScaleAndAdd`` 5343, which
computes ``c = beta (c + (alpha / beta) a)``).  Their ``axpy`` rounds the product and the sum
apart (no fused multiply-add), where torch's ``add_(alpha=)`` fuses them; torch's CPU float32
``sqrt`` is one unit off for about a fifth of the values; CNTK's scalars are doubles rounded to
float at the kernel's call.  The callers (:mod:`stadyn.learners`) pass those scalars as CNTK
holds them (Python floats: already float32 values where the kernel takes a float).

Every function returns ``False`` and touches nothing where the tensors do not allow the block
loop (:func:`._float32_blocks.can_use_blocks`: not plain contiguous float32 CPU tensors, or a
trace being compiled); the caller then takes its torch path.

Example:
    >>> import torch
    >>> w = [torch.ones(2)]
    >>> sgd_cntk(w, [torch.tensor([1.0, -1.0])], lr=0.1)
    True
    >>> w[0].tolist()
    [0.8999999761581421, 1.100000023841858]
"""

from __future__ import annotations

import numpy as np
import torch

from ._float32_blocks import BLOCK, can_use_blocks, for_blocks
from ._scalars import Scalar, Tensors, per_tensor

__all__ = ["sgd_cntk", "momentum_cntk", "adam_cntk", "fsadagrad_cntk", "adagrad_cntk",
           "rmsprop_cntk", "adadelta_cntk", "l2_cntk"]

_f = np.float32


def _usable(params: Tensors, grads: Tensors, *states: Tensors) -> bool:
    return can_use_blocks(params, *states) and \
        all(type(g) is torch.Tensor and g.device.type == "cpu" and g.dtype == torch.float32
            and g.numel() == p.numel() for g, p in zip(grads, params))


def _floats(s: Scalar, n: int) -> list:
    return [_f(v.item() if isinstance(v, torch.Tensor) else v) for v in per_tensor(s, n)]


def _doubles(s: Scalar, n: int) -> list:
    return [float(v.item() if isinstance(v, torch.Tensor) else v) for v in per_tensor(s, n)]


def l2_cntk(grads: Tensors, params: Tensors, *, rate: Scalar) -> bool:
    """CNTK's L2 step, ``g = g + float(rate) * w`` (``Learner.cpp:165``, an unfused axpy)."""
    if not _usable(params, grads) or not can_use_blocks(grads):
        return False

    def kernel(arrays, tmp, _wide, r):
        pc, _, gc = arrays
        np.multiply(pc, r, out=tmp[0])
        np.add(gc, tmp[0], out=gc)

    for_blocks(kernel, [params, grads, grads], [_floats(rate, len(params))], scratch=1)
    return True


def sgd_cntk(params: Tensors, grads: Tensors, *, lr: Scalar) -> bool:
    """``w = w + float(-lr) * g`` (``SGDUpdate``: ``ScaleAndAdd``, an axpy)."""
    if not _usable(params, grads):
        return False

    def kernel(arrays, tmp, _wide, step):
        pc, gc = arrays
        np.multiply(gc, step, out=tmp[0])
        np.add(pc, tmp[0], out=pc)

    for_blocks(kernel, [params, grads], [[-s for s in _floats(lr, len(params))]], scratch=1)
    return True


def momentum_cntk(params: Tensors, grads: Tensors, velocities: Tensors, *, lr: Scalar,
                  momentum: Scalar, unit_gain: bool, nesterov: bool = False) -> bool:
    """CNTK's momentum SGD (and with ``nesterov`` its Nesterov update) in float:
    ``m = float(momentum)``, ``u = 1 - m`` in float (1 without unit gain), ``a = u * float(lr)``;
    ``v = m (v + (a / m) g)`` (``v = v + a g`` for ``m = 1``, ``v = a g`` for ``m = 0``); then
    ``w = w - v``, or for Nesterov ``w = w + (-m) v; w = w + (-a) g``."""
    if not _usable(params, grads, velocities):
        return False
    n = len(params)
    ms = _floats(momentum, n)
    gains = [_f(1) - m if unit_gain else _f(1) for m in ms]
    alphas = [u * r for u, r in zip(gains, _floats(lr, n))]

    def kernel(arrays, tmp, _wide, m, alpha):
        pc, gc, vc = arrays
        a, = tmp
        if m == 1:
            np.multiply(gc, alpha, out=a)
            np.add(vc, a, out=vc)
        elif m == 0:
            np.multiply(gc, alpha, out=vc)
        else:
            np.multiply(gc, alpha / m, out=a)
            np.add(vc, a, out=vc)
            np.multiply(vc, m, out=vc)
        if not nesterov:
            np.subtract(pc, vc, out=pc)
            return
        np.multiply(vc, -m, out=a)
        np.add(pc, a, out=pc)
        np.multiply(gc, -alpha, out=a)
        np.add(pc, a, out=pc)

    for_blocks(kernel, [params, grads, velocities], [ms, alphas], scratch=1)
    return True


def adam_cntk(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *, lr: Scalar,
              correction: Scalar, beta1: Scalar, beta2: Scalar, eps: float, unit_gain: bool,
              adamax: bool = False) -> bool:
    """CNTK's ``CPUMatrix::Adam``, all in float but one double division:
    ``v = b2 v + ((1 - b2) g) g`` (adamax: ``v = max(b2 v, |g|)``, no root);
    ``r = float(correction) * float(1.0 / (sqrt(v) + eps))``; ``m = b1 m + u g``;
    ``w = w - ((m r) float(lr))``."""
    if not _usable(params, grads, m, v):
        return False
    n = len(params)
    b1s, b2s = _floats(beta1, n), _floats(beta2, n)
    gains = [_f(1) - b if unit_gain else _f(1) for b in b1s]
    e = _f(eps)

    def kernel(arrays, tmp, wide, rate, corr, b1, b2, gain):
        pc, gc, mc, vc = arrays
        a, b = tmp
        w1, = wide
        np.multiply(vc, b2, out=vc)
        if adamax:
            np.abs(gc, out=a)
            np.maximum(vc, a, out=vc)
            np.add(vc, e, out=a)
        else:
            np.multiply(gc, _f(1) - b2, out=a)
            np.multiply(a, gc, out=a)
            np.add(vc, a, out=vc)
            np.sqrt(vc, out=a)
            np.add(a, e, out=a)
        np.divide(1.0, a, out=w1, dtype=np.float64)       # (ElemType)(1.0 / (ada + eps))
        np.copyto(a, w1, casting="unsafe")
        np.multiply(a, corr, out=a)
        np.multiply(mc, b1, out=mc)                        # m = b1 m + u g
        np.multiply(gc, gain, out=b)
        np.add(mc, b, out=mc)
        np.multiply(mc, a, out=a)                          # w -= (m r) lr
        np.multiply(a, rate, out=a)
        np.subtract(pc, a, out=pc)

    for_blocks(kernel, [params, grads, m, v],
               [_floats(lr, n), _floats(correction, n), b1s, b2s, gains], scratch=2, wide=1)
    return True


def fsadagrad_cntk(params: Tensors, grads: Tensors, v: Tensors, m: Tensors, *, lr: Scalar,
                   momentum: Scalar, var_momentum: Scalar, ada_mul: Scalar,
                   unit_gain: bool) -> bool:
    """CNTK's ``CPUMatrix::FSAdagrad`` in float: ``v = vm v + ((1 - vm) g) g``; where
    ``v != 0``, ``g = g min(ada_mul (1 / sqrt(v)), 10)``; where ``momentum > 0``,
    ``m = momentum m + u g`` and ``g = m``; ``w = w - g float(lr)``."""
    if not _usable(params, grads, v, m):
        return False
    n = len(params)
    moms = _floats(momentum, n)
    gains = [_f(1) - b if unit_gain else _f(1) for b in moms]

    def kernel(arrays, tmp, _wide, rate, mom, gain, vm, mul):
        pc, gc, vc, mc = arrays
        a, b = tmp
        np.multiply(vc, vm, out=vc)
        np.multiply(gc, _f(1) - vm, out=a)
        np.multiply(a, gc, out=a)
        np.add(vc, a, out=vc)
        np.sqrt(vc, out=a)
        np.divide(_f(1), a, out=a)
        np.multiply(a, mul, out=a)
        np.minimum(a, _f(10), out=a)
        np.multiply(gc, a, out=a)
        np.copyto(a, gc, where=vc == 0)
        if mom > 0:
            np.multiply(mc, mom, out=mc)
            np.multiply(a, gain, out=b)
            np.add(mc, b, out=mc)
            np.multiply(mc, rate, out=a)
        else:
            np.multiply(a, rate, out=a)
        np.subtract(pc, a, out=pc)

    for_blocks(kernel, [params, grads, v, m],
               [_floats(lr, n), moms, gains, _floats(var_momentum, n), _floats(ada_mul, n)],
               scratch=2)
    return True


def _running_sum(total: np.float32, values: np.ndarray, fours: bool) -> np.float32:
    """``total`` plus ``values`` added one by one in float, as CNTK's loops add (with
    ``fours``, Adagrad's: each group of four summed left to right, then added)."""
    k = values.size & ~3 if fours else 0
    if k:
        q = values[:k].reshape(-1, 4)
        groups = ((q[:, 0] + q[:, 1]) + q[:, 2]) + q[:, 3]
        total = np.add.accumulate(np.concatenate(([total], groups)))[-1]
    rest = values[k:]
    if rest.size:
        total = np.add.accumulate(np.concatenate(([total], rest)))[-1]
    return _f(total)


def adagrad_cntk(params: Tensors, grads: Tensors, v: Tensors, *, lr: Scalar,
                 average_multiplier: bool) -> bool:
    """CNTK's ``CPUMatrix::Adagrad`` and its axpy (``Learner.cpp:615-616``):
    ``v = v + g g``; ``a = sqrt(v + 1e-16f)``; ``g = g / a``; the mean of ``1 / a`` summed in
    float four at a time (``need_ave_multiplier``, else 1); ``w = w + float(-lr / mean) g``."""
    if not _usable(params, grads, v):
        return False
    floor = _f(1e-16)
    n = len(params)
    lrs = _doubles(lr, n)
    sums = [_f(0)] * n

    def root(arrays, tmp, update):
        _, gc, vc = arrays
        a, = tmp
        if update:
            np.multiply(gc, gc, out=a)
            np.add(vc, a, out=vc)
        np.add(vc, floor, out=a)
        return np.sqrt(a, out=a)

    def pass1(arrays, tmp, _wide, k):
        a = root(arrays, tmp, True)
        if average_multiplier:
            sums[k] = _running_sum(sums[k], np.divide(_f(1), a, out=a), True)

    for_blocks(pass1, [params, grads, v], [list(range(n))], scratch=1)
    coefs = [_f(-lrs[k] / float(sums[k] / _f(p.numel()) if average_multiplier else _f(1)))
             for k, p in enumerate(params)]

    def pass2(arrays, tmp, _wide, coef):
        pc, gc = arrays[:2]
        a = root(arrays, tmp, False)
        np.divide(gc, a, out=a)                 # CNTK divides g by the root
        np.multiply(a, coef, out=a)
        np.add(pc, a, out=pc)

    for_blocks(pass2, [params, grads, v], [coefs], scratch=1)
    return True


def rmsprop_cntk(params: Tensors, grads: Tensors, v: Tensors, signs: Tensors, steps: Tensors,
                 *, lr: Scalar, gamma: float, inc: float, dec: float, max_step: float,
                 min_step: float, first: Scalar, average_multiplier: bool) -> bool:
    """CNTK's ``CPUMatrix::RmsProp`` and its axpy (``Learner.cpp:970-979``), in float: on the
    first update ``v = g g`` (steps 0.02, signs 0); ``v = gamma v + (1 - gamma) (g g)``;
    ``step = min(step inc, max)`` where ``g`` kept its sign, else ``max(step dec, min)``;
    ``a = step / sqrt(v + 1e-6f)``; the mean of ``a`` summed in float one by one
    (``need_ave_multiplier``, else 1); ``w = w + float(-lr / mean) (g a)``."""
    if not _usable(params, grads, v, signs, steps):
        return False
    if isinstance(first, torch.Tensor):
        first = float(first.item())
    gam, up, down = _f(gamma), _f(inc), _f(dec)
    hi, lo, floor = _f(max_step), _f(min_step), _f(1e-6)
    keep = _f(1) - gam
    n = len(params)
    lrs = _doubles(lr, n)
    sums = [_f(0)] * n

    def ratio(arrays, tmp, update):
        _, gc, vc, sc, stc = arrays
        a, b = tmp
        if update:
            if first:
                np.multiply(gc, gc, out=vc)
                sc.fill(0)
                stc.fill(_f(0.02))
            np.multiply(vc, gam, out=vc)
            np.multiply(gc, gc, out=a)
            np.multiply(a, keep, out=a)
            np.add(vc, a, out=vc)
            np.sign(gc, out=a)
            np.multiply(sc, a, out=b)
            np.copyto(sc, a)
            grown = b > 0
            np.multiply(stc, up, out=a)
            np.minimum(a, hi, out=a)
            np.multiply(stc, down, out=stc)
            np.maximum(stc, lo, out=stc)
            np.copyto(stc, a, where=grown)
        np.add(vc, floor, out=a)
        np.sqrt(a, out=a)
        return np.divide(stc, a, out=a)

    def pass1(arrays, tmp, _wide, k):
        r = ratio(arrays, tmp, True)
        if average_multiplier:
            sums[k] = _running_sum(sums[k], r, False)

    for_blocks(pass1, [params, grads, v, signs, steps], [list(range(n))], scratch=2)
    coefs = [_f(-lrs[k] / float(sums[k] / _f(p.numel()) if average_multiplier else _f(1)))
             for k, p in enumerate(params)]

    def pass2(arrays, tmp, _wide, coef):
        pc, gc = arrays[:2]
        a = ratio(arrays, tmp, False)
        np.multiply(gc, a, out=a)
        np.multiply(a, coef, out=a)
        np.add(pc, a, out=pc)

    for_blocks(pass2, [params, grads, v, signs, steps], [coefs], scratch=2)
    return True


def adadelta_cntk(params: Tensors, grads: Tensors, eg: Tensors, ex: Tensors, *, lr: Scalar,
                  rho: float, eps: float) -> bool:
    """CNTK's ``CPUMatrix::AdaDelta`` in float: ``s = rho s + ((1 - rho) g) g``;
    ``d = (-sqrt(x + eps) / sqrt(s + eps)) g``; ``x = rho x + ((1 - rho) d) d``;
    ``w = w + float(lr) d``."""
    if not _usable(params, grads, eg, ex):
        return False
    r, e = _f(rho), _f(eps)
    keep = _f(1) - r

    def kernel(arrays, tmp, _wide, rate):
        pc, gc, sc, xc = arrays
        a, b = tmp
        np.multiply(sc, r, out=sc)
        np.multiply(gc, keep, out=a)
        np.multiply(a, gc, out=a)
        np.add(sc, a, out=sc)
        np.add(xc, e, out=a)
        np.sqrt(a, out=a)
        np.negative(a, out=a)
        np.add(sc, e, out=b)
        np.sqrt(b, out=b)
        np.divide(a, b, out=a)
        np.multiply(a, gc, out=a)
        np.multiply(xc, r, out=xc)
        np.multiply(a, keep, out=b)
        np.multiply(b, a, out=b)
        np.add(xc, b, out=xc)
        np.multiply(a, rate, out=a)
        np.add(pc, a, out=pc)

    for_blocks(kernel, [params, grads, eg, ex], [_floats(lr, len(params))], scratch=2)
    return True


assert BLOCK % 4 == 0        # Adagrad's groups of four never straddle two blocks

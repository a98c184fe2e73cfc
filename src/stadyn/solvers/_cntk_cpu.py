"""CNTK 2.7's CPU learner arithmetic, bit for bit, for float32 and float64 parameters, in the
block loop of :mod:`._float32_blocks` (NumPy ufuncs over views of the tensors' memory in the
parameters' precision, each C++ operation rounded once, in CNTK's order).

CNTK's CPU learners are C++ loops over ``ElemType`` and BLAS calls (``Source/Math/
CPUMatrixImpl.h``: ``Adam`` 1318, ``FSAdagrad`` 1265, ``Adagrad`` 1200, ``RmsProp`` 1360,
``AdaDelta`` 1458; ``Source/Math/Matrix.cpp``: ``SGDUpdate`` 1626, ``MomentumSGDUpdate`` 1655,
``NesterovAcceleratedMomentumSGDUpdate`` 1703, the 4-argument ``ScaleAndAdd`` 5343, which
computes ``c = beta (c + (alpha / beta) a)``).  Their ``axpy`` rounds the product and the sum
apart (no fused multiply-add), where torch's ``add_(alpha=)`` fuses them; torch's CPU float32
``sqrt`` is one unit off for about a fifth of the values; CNTK's scalars are doubles rounded to
``ElemType`` at the kernel's call, and its float literals (``1e-16f``, ``1e-6f``) stay floats
in the double kernels.  The callers (:mod:`stadyn.learners`) pass the scalars as CNTK holds
them (Python floats, already float32 values where a float kernel takes one from elsewhere).

Every function returns ``False`` and touches nothing where the tensors do not allow the block
loop (not plain contiguous CPU tensors of one floating dtype, float32 or float64, or a trace
being compiled); the caller then takes its torch path.

Example:
    >>> import torch
    >>> w = [torch.ones(2)]
    >>> sgd_cntk(w, [torch.tensor([1.0, -1.0])], lr=0.1)
    True
    >>> w[0].tolist()
    [0.8999999761581421, 1.100000023841858]
"""

from __future__ import annotations

import operator

import numpy as np
import torch

from ._float32_blocks import BLOCK, checked_plan, for_blocks
from ._float32_kernels import decayed_square
from ._scalars import Scalar, Tensors, per_tensor

__all__ = ["sgd_cntk", "momentum_cntk", "adam_cntk", "fsadagrad_cntk", "adagrad_cntk",
           "rmsprop_cntk", "adadelta_cntk", "l2_cntk"]

_f = np.float32
_DTYPES = {torch.float32: np.float32, torch.float64: np.float64}


def _kind(params: Tensors, grads: Tensors, *states: Tensors):
    """``(kind, plan)``: the NumPy type of CNTK's ``ElemType`` for these tensors
    (``np.float32`` or ``np.float64``; ``None`` where the block loop cannot run on them) and
    the block plan of ``[params, grads, *states]`` to hand :func:`_run`.  The gradients, a
    caller's afresh on each step, and the parameters' layout (a user's tensors, whose
    ``t_()`` or ``.data =`` a view of the same memory keeps address and length) are checked on
    every call; the parameters and states otherwise once
    per plan (:func:`~._float32_blocks.checked_plan`: for 200 tensors the checks cost more
    than a small update's arithmetic)."""
    if torch.compiler.is_compiling() or not params:
        return None, None
    dtype = params[0].dtype
    if dtype not in _DTYPES or len(grads) != len(params) \
            or not set(map(type, grads)) <= _PLAIN or not all(map(_on_cpu, grads)) \
            or set(map(_dtype_of, grads)) != {dtype} or not all(map(_contiguous, params)):
        return None, None       # (a parameter's layout can change in place: w.t_(), .data =)
    return checked_plan([params, grads, *states], _checked_kind)


_PLAIN = {torch.Tensor}
_on_cpu, _dtype_of = operator.attrgetter("is_cpu"), operator.attrgetter("dtype")
_contiguous = torch.Tensor.is_contiguous


def _checked_kind(lists: list):
    """:func:`_kind`'s checks of the parameters and states (``lists`` but ``lists[1]``, the
    gradients) and of the gradients' lengths: the ``ElemType``, or ``None``."""
    params, grads = lists[0], lists[1]
    dtype = params[0].dtype
    if not all(type(t) is torch.Tensor and t.is_cpu and t.dtype == dtype
               and t.is_contiguous() for j, ts in enumerate(lists) if j != 1 for t in ts):
        return None
    if not all(g.numel() == p.numel() for g, p in zip(grads, params)):
        return None
    return _DTYPES[dtype]


def _run(kernel, lists: list, scalars: list, scratch: int, kind,
         writes: tuple[int, ...] | None = None, spans: bool = False, plan=None) -> None:
    """:func:`for_blocks` with ``scratch`` temporaries of ``kind`` handed to
    ``kernel(arrays, tmp, wide, *scalars_i)`` as ``tmp``; ``writes``: the lists an
    element-wise kernel writes, ``spans``: the tensors' spans handed to it, ``plan``:
    :func:`_kind`'s (:func:`for_blocks`)."""
    if kind is np.float32:
        for_blocks(kernel, lists, scalars, scratch=scratch, writes=writes, spans=spans,
                   plan=plan)
        return

    def wide_kernel(arrays, _tmp, wide, *args):
        kernel(arrays, wide, [], *args)

    for_blocks(wide_kernel, lists, scalars, scratch=0, wide=scratch, writes=writes, spans=spans,
               plan=plan)


def _values(s: Scalar, n: int, kind) -> list:
    """The per-tensor values of ``s`` rounded to ``kind`` (CNTK's ``ElemType(value)``)."""
    if isinstance(s, torch.Tensor):                 # one value for all: rounded once
        return [kind(s.item())] * n
    if isinstance(s, (int, float)):
        return [kind(float(s))] * n
    return [kind(v.item() if isinstance(v, torch.Tensor) else v) for v in per_tensor(s, n)]


def _doubles(s: Scalar, n: int) -> list:
    return [float(v.item() if isinstance(v, torch.Tensor) else v) for v in per_tensor(s, n)]


def l2_cntk(grads: Tensors, params: Tensors, *, rate: Scalar) -> bool:
    """CNTK's L2 step, ``g = g + ElemType(rate) w`` (``Learner.cpp:165``, an unfused axpy)."""
    kind, plan = _kind(params, grads, grads)
    if kind is None:
        return False

    def kernel(arrays, tmp, _wide, r):
        pc, _, gc = arrays
        np.multiply(pc, r, out=tmp[0])
        np.add(gc, tmp[0], out=gc)

    _run(kernel, [params, grads, grads], [_values(rate, len(params), kind)], 1, kind,
         writes=(2,), plan=plan)
    return True


def _with_l2(l2: Scalar | None, n: int, kind) -> list:
    """The per-tensor ``ElemType(rate)`` of an L2 step folded into a rule's kernel, or
    ``None`` each (no L2)."""
    return [None] * n if l2 is None else _values(l2, n, kind)


def _l2_gradient(pc, gc, r, a):
    """CNTK's L2 step ``g + ElemType(rate) w`` (``Learner.cpp:165``, an unfused axpy, as
    :func:`l2_cntk` rounds it) into scratch ``a``, the gradient left as it is; ``gc`` itself
    without L2 (``r`` None)."""
    if r is None:
        return gc
    np.multiply(pc, r, out=a)
    return np.add(gc, a, out=a)


def sgd_cntk(params: Tensors, grads: Tensors, *, lr: Scalar, l2: Scalar | None = None) -> bool:
    """``w = w + ElemType(-lr) g`` (``SGDUpdate``: ``ScaleAndAdd``, an axpy); with ``l2``
    the gradient is first ``g + ElemType(l2) w`` (:func:`l2_cntk`'s step, in the same block:
    the gradients are not written)."""
    kind, plan = _kind(params, grads)
    if kind is None:
        return False

    def kernel(arrays, tmp, _wide, step, r):
        pc, gc = arrays
        g = _l2_gradient(pc, gc, r, tmp[0])
        np.multiply(g, step, out=tmp[0])
        np.add(pc, tmp[0], out=pc)

    n = len(params)
    _run(kernel, [params, grads], [[-s for s in _values(lr, n, kind)], _with_l2(l2, n, kind)],
         1, kind, writes=(0,), plan=plan)
    return True


def momentum_cntk(params: Tensors, grads: Tensors, velocities: Tensors, *, lr: Scalar,
                  momentum: Scalar, unit_gain: bool, nesterov: bool = False,
                  l2: Scalar | None = None) -> bool:
    """CNTK's momentum SGD (and with ``nesterov`` its Nesterov update) in ``ElemType``:
    ``m = ElemType(momentum)``, ``u = 1 - m`` (1 without unit gain), ``a = u ElemType(lr)``;
    ``v = m (v + (a / m) g)`` (``v = v + a g`` for ``m = 1``, ``v = a g`` for ``m = 0``); then
    ``w = w - v``, or for Nesterov ``w = w + (-m) v; w = w + (-a) g``.  With ``l2`` the
    gradient is first ``g + ElemType(l2) w`` (:func:`l2_cntk`'s step, in the same block: the
    gradients are not written)."""
    kind, plan = _kind(params, grads, velocities)
    if kind is None:
        return False
    n = len(params)
    ms = _values(momentum, n, kind)
    gains = [kind(1) - m if unit_gain else kind(1) for m in ms]
    alphas = [u * r for u, r in zip(gains, _values(lr, n, kind))]

    def kernel(arrays, tmp, _wide, m, alpha, r):
        pc, gc, vc = arrays
        a, b = tmp
        gc = _l2_gradient(pc, gc, r, b)
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

    _run(kernel, [params, grads, velocities], [ms, alphas, _with_l2(l2, n, kind)], 2, kind,
         writes=(0, 2), plan=plan)
    return True


def adam_cntk(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *, lr: Scalar,
              correction: Scalar, beta1: Scalar, beta2: Scalar, eps: float, unit_gain: bool,
              adamax: bool = False) -> bool:
    """CNTK's ``CPUMatrix::Adam`` in ``ElemType`` but for one double division:
    ``v = b2 v + ((1 - b2) g) g`` (adamax: ``v = max(b2 v, |g|)``, no root);
    ``r = ElemType(correction) ElemType(1.0 / (sqrt(v) + eps))``; ``m = b1 m + u g``;
    ``w = w - ((m r) ElemType(lr))``."""
    kind, plan = _kind(params, grads, m, v)
    if kind is None:
        return False
    n = len(params)
    b1s, b2s = _values(beta1, n, kind), _values(beta2, n, kind)
    gains = [kind(1) - b if unit_gain else kind(1) for b in b1s]
    e = kind(eps)

    def kernel(arrays, tmp, _wide, rate, corr, b1, b2, gain):
        pc, gc, mc, vc = arrays
        a, b = tmp
        if adamax:
            np.multiply(vc, b2, out=vc)
            np.abs(gc, out=a)
            np.maximum(vc, a, out=vc)
            np.add(vc, e, out=a)
        else:
            decayed_square(vc, gc, b2, kind(1) - b2, a)
            np.sqrt(vc, out=a)
            np.add(a, e, out=a)
        # (ElemType)(1.0 / (ada + eps)): the double quotient rounded to float is the float
        # quotient, 53 >= 2*24 + 2 bits (double rounding of a division is then innocuous,
        # Figueroa 1995), checked for all 2**32 floats (tests/solvers/
        # exhaustive_reciprocal.py); the double one cost ~12x per block
        np.divide(1.0, a, out=a)
        np.multiply(a, corr, out=a)
        np.multiply(mc, b1, out=mc)                        # m = b1 m + u g
        np.multiply(gc, gain, out=b)
        np.add(mc, b, out=mc)
        np.multiply(mc, a, out=a)                          # w -= (m r) lr
        np.multiply(a, rate, out=a)
        np.subtract(pc, a, out=pc)

    _run(kernel, [params, grads, m, v],
         [_values(lr, n, kind), _values(correction, n, kind), b1s, b2s, gains], 2, kind,
         writes=(0, 2, 3), plan=plan)
    return True


def fsadagrad_cntk(params: Tensors, grads: Tensors, v: Tensors, m: Tensors, *, lr: Scalar,
                   momentum: Scalar, var_momentum: Scalar, ada_mul: Scalar,
                   unit_gain: bool) -> bool:
    """CNTK's ``CPUMatrix::FSAdagrad`` in ``ElemType``: ``v = vm v + ((1 - vm) g) g``; where
    ``v != 0``, ``g = g min(ada_mul (1 / sqrt(v)), 10)``; where ``momentum > 0``,
    ``m = momentum m + u g`` and ``g = m``; ``w = w - g ElemType(lr)``."""
    kind, plan = _kind(params, grads, v, m)
    if kind is None:
        return False
    n = len(params)
    moms = _values(momentum, n, kind)
    gains = [kind(1) - b if unit_gain else kind(1) for b in moms]

    def kernel(arrays, tmp, _wide, rate, mom, gain, vm, mul):
        pc, gc, vc, mc = arrays
        a, b = tmp
        decayed_square(vc, gc, vm, kind(1) - vm, a)
        np.sqrt(vc, out=a)
        np.divide(kind(1), a, out=a)
        np.multiply(a, mul, out=a)
        np.minimum(a, kind(10), out=a)
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

    _run(kernel, [params, grads, v, m],
         [_values(lr, n, kind), moms, gains, _values(var_momentum, n, kind),
          _values(ada_mul, n, kind)], 2, kind, writes=(0, 2, 3), plan=plan)
    return True


def _running_sum(total, values: np.ndarray, fours: bool):
    """``total`` plus ``values`` added one by one in their precision, as CNTK's loops add
    (with ``fours``, Adagrad's: each group of four summed left to right, then added)."""
    k = values.size & ~3 if fours else 0
    if k:
        q = values[:k].reshape(-1, 4)
        groups = ((q[:, 0] + q[:, 1]) + q[:, 2]) + q[:, 3]
        total = np.add.accumulate(np.concatenate(([total], groups)))[-1]
    rest = values[k:]
    if rest.size:
        total = np.add.accumulate(np.concatenate(([total], rest)))[-1]
    return total


def _average_coefficients(params, lrs, sums, average, kind) -> list:
    """CNTK's ``ElemType(-lr / aveMultiplier)``, ``aveMultiplier`` the sum over the element
    count in ``ElemType`` (1 without ``need_ave_multiplier``), the division in double.  A zero
    coefficient (a mean grown to inf: RMSProp's steps with ``max=inf`` overflow) leaves the
    tensor as it is: CNTK's ``ScaleAndAdd`` is MKL's ``saxpy``, which returns at once for
    ``alpha == 0`` (``Source/Math/CPUMatrixImpl.h:5390``), where ``w + 0 (g a)`` would be NaN
    for an infinite ratio."""
    return [kind(-lrs[k] / float(sums[k] / kind(p.numel()) if average and p.numel() else
                                 kind(1))) for k, p in enumerate(params)]


def adagrad_cntk(params: Tensors, grads: Tensors, v: Tensors, *, lr: Scalar,
                 average_multiplier: bool) -> bool:
    """CNTK's ``CPUMatrix::Adagrad`` and its axpy (``Learner.cpp:615-616``):
    ``v = v + g g``; ``a = sqrt(v + 1e-16f)``; ``g = g / a``; the mean of ``1 / a`` summed in
    ``ElemType`` four at a time (``need_ave_multiplier``, else 1);
    ``w = w + ElemType(-lr / mean) g``."""
    kind, plan = _kind(params, grads, v)
    if kind is None:
        return False
    floor = kind(_f(1e-16))                     # a float literal, in the double kernel too
    n = len(params)
    lrs = _doubles(lr, n)
    sums = [kind(0)] * n

    def root(arrays, tmp, update):
        _, gc, vc = arrays
        a = tmp[0]
        if update:
            np.multiply(gc, gc, out=a)
            np.add(vc, a, out=vc)
        np.add(vc, floor, out=a)
        return np.sqrt(a, out=a)

    def pass1(arrays, tmp, _wide, spans):
        a = root(arrays, tmp, True)
        if average_multiplier:                  # each tensor's own sum, over its span
            np.divide(kind(1), a, out=a)
            for k, start, stop in spans:
                sums[k] = _running_sum(sums[k], a[start:stop], True)

    _run(pass1, [params, grads, v], [], 1, kind, writes=(2,), spans=True, plan=plan)
    coefs = _average_coefficients(params, lrs, sums, average_multiplier, kind)

    def pass2(arrays, tmp, _wide, coef):
        if coef == 0:                           # BLAS's axpy: alpha 0 touches nothing
            return
        pc, gc = arrays[:2]
        a = root(arrays, tmp, False)
        np.divide(gc, a, out=a)                 # CNTK divides g by the root
        np.multiply(a, coef, out=a)
        np.add(pc, a, out=pc)

    _run(pass2, [params, grads, v], [coefs], 1, kind, writes=(0,), plan=plan)
    return True


def rmsprop_cntk(params: Tensors, grads: Tensors, v: Tensors, signs: Tensors, steps: Tensors,
                 *, lr: Scalar, gamma: float, inc: float, dec: float, max_step: float,
                 min_step: float, first: Scalar, average_multiplier: bool) -> bool:
    """CNTK's ``CPUMatrix::RmsProp`` and its axpy (``Learner.cpp:970-979``), in ``ElemType``:
    on the first update ``v = g g`` (steps 0.02, signs 0); ``v = gamma v + (1 - gamma) (g g)``;
    ``step = min(step inc, max)`` where ``g`` kept its sign, else ``max(step dec, min)``;
    ``a = step / sqrt(v + 1e-6f)``; the mean of ``a`` summed one by one
    (``need_ave_multiplier``, else 1); ``w = w + ElemType(-lr / mean) (g a)``."""
    kind, plan = _kind(params, grads, v, signs, steps)
    if kind is None:
        return False
    if isinstance(first, torch.Tensor):
        first = float(first.item())
    gam, up, down, hi, lo = (kind(x) for x in (gamma, inc, dec, max_step, min_step))
    floor = kind(_f(1e-6))                      # a float literal, in the double kernel too
    keep = kind(1) - gam
    n = len(params)
    lrs = _doubles(lr, n)
    sums = [kind(0)] * n

    def ratio(arrays, tmp, update):
        _, gc, vc, sc, stc = arrays
        a, b = tmp
        if update:
            if first:
                np.multiply(gc, gc, out=vc)
                sc.fill(0)
                stc.fill(kind(0.02))
            decayed_square(vc, gc, gam, keep, a, square_first=True)
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

    def pass1(arrays, tmp, _wide, spans):
        r = ratio(arrays, tmp, True)
        if average_multiplier:                  # each tensor's own sum, over its span
            for k, start, stop in spans:
                sums[k] = _running_sum(sums[k], r[start:stop], False)

    _run(pass1, [params, grads, v, signs, steps], [], 2, kind, writes=(2, 3, 4), spans=True,
         plan=plan)
    coefs = _average_coefficients(params, lrs, sums, average_multiplier, kind)

    def pass2(arrays, tmp, _wide, coef):
        if coef == 0:                           # BLAS's axpy: alpha 0 touches nothing
            return
        pc, gc = arrays[:2]
        a = ratio(arrays, tmp, False)
        np.multiply(gc, a, out=a)
        np.multiply(a, coef, out=a)
        np.add(pc, a, out=pc)

    _run(pass2, [params, grads, v, signs, steps], [coefs], 2, kind, writes=(0,), plan=plan)
    return True


def adadelta_cntk(params: Tensors, grads: Tensors, eg: Tensors, ex: Tensors, *, lr: Scalar,
                  rho: float, eps: float) -> bool:
    """CNTK's ``CPUMatrix::AdaDelta`` in ``ElemType``: ``s = rho s + ((1 - rho) g) g``;
    ``d = (-sqrt(x + eps) / sqrt(s + eps)) g``; ``x = rho x + ((1 - rho) d) d``;
    ``w = w + ElemType(lr) d``."""
    kind, plan = _kind(params, grads, eg, ex)
    if kind is None:
        return False
    r, e = kind(rho), kind(eps)
    keep = kind(1) - r

    def kernel(arrays, tmp, _wide, rate):
        pc, gc, sc, xc = arrays
        a, b = tmp
        decayed_square(sc, gc, r, keep, a)
        np.add(xc, e, out=a)
        np.sqrt(a, out=a)
        np.negative(a, out=a)
        np.add(sc, e, out=b)
        np.sqrt(b, out=b)
        np.divide(a, b, out=a)
        np.multiply(a, gc, out=a)
        decayed_square(xc, a, r, keep, b)
        np.multiply(a, rate, out=a)
        np.add(pc, a, out=pc)

    _run(kernel, [params, grads, eg, ex], [_values(lr, len(params), kind)], 2, kind,
         writes=(0, 2, 3), plan=plan)
    return True


assert BLOCK % 4 == 0        # Adagrad's groups of four never straddle two blocks

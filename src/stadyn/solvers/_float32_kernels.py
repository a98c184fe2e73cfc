"""NNabla 1.39's other solvers' float32 arithmetic bit for bit on CPU, through the block loop of
:mod:`stadyn.solvers._float32_blocks` (:func:`~stadyn.solvers._float32_blocks.for_blocks`): the
gradient's weight decay and ``clip_grad_by_norm``, Sgd, SgdW, Adagrad, RMSprop, Adadelta,
Adamax, Lion, Lamb and Lars, each C++ operation of ``src/nbla/solver/generic/<name>.cpp`` one
NumPy float32 ufunc (one rounding), in the C++ order.  The norms (Lamb's, Lars', the clip's)
are ``std::accumulate`` or a ``for`` loop over float: a sequential float32 sum (NumPy's
``add.accumulate``, carried from block to block), not a pairwise one.

Each function returns ``False`` (touching nothing) where the tensors do not allow the blocks
(:func:`~stadyn.solvers._float32_blocks.can_use_blocks`); the caller then takes its torch path.
Scalars that NNabla holds as C++ floats (learning rates, decays, bias-corrected step sizes) are
rounded to float32 here.

Example:
    >>> import torch
    >>> w, v = [torch.ones(2)], [torch.zeros(2)]
    >>> rmsprop_blocks(w, [torch.ones(2)], v, lr=0.1, decay=0.9, eps=1e-8)
    True
    >>> v[0].tolist()
    [0.10000002384185791, 0.10000002384185791]
"""

from __future__ import annotations

import numpy as np
import torch

from ._float32_blocks import (_adam_moments, _float, _mask, _read, _usable, adam_constants,
                              for_blocks, running_max)
from ._scalars import Scalar, Tensors, per_tensor

__all__ = ["decayed_square", "weight_decay_blocks", "sgd_blocks", "sgdw_blocks", "adagrad_blocks",
           "rmsprop_blocks", "adadelta_blocks", "adamax_blocks", "lion_blocks", "lamb_blocks",
           "lars_blocks", "lars_error", "clip_grad_by_norm_blocks", "sequential_norms"]


def _floats(s: Scalar, n: int) -> list[np.float32]:
    if isinstance(s, (torch.Tensor, int, float)):      # one value for all: rounded once
        return [_float(per_tensor(s, 1)[0])] * n
    return [_float(x) for x in per_tensor(s, n)]


def _plain(grads: Tensors) -> bool:
    """Whether every gradient is a plain float32 CPU tensor outside a compiled trace (laid out
    in memory as it may be)."""
    return not torch.compiler.is_compiling() and all(
        type(g) is torch.Tensor and g.is_cpu and g.dtype == torch.float32
        for g in grads)


def _written_back(grads: Tensors) -> tuple[list[torch.Tensor], list[tuple]]:
    """``grads`` for the blocks to write in place: a contiguous copy of each that is not
    contiguous, with the ``(gradient, copy)`` pairs to copy back afterwards."""
    out, back = [], []
    for g in grads:
        if g.is_contiguous():
            out.append(g)
        else:
            c = g.contiguous()
            out.append(c)
            back.append((g, c))
    return out, back


def _copy_back(back: list[tuple]) -> None:
    for g, c in back:
        g.copy_(c)


def sequential_norms(tensors: Tensors) -> list[torch.Tensor]:
    """Each tensor's 2-norm as NNabla 1.39's Lamb and Lars take it on CPU: the squares summed
    one float32 addition after another in the values' logical order (``std::accumulate``),
    rooted in float; 0-d float32 tensors.  Plain float32 CPU tensors laid out as they may be
    (outside a compiled trace); others (CUDA, a compiled step) get ``torch._foreach_norm``,
    summed in torch's order.

    Example:
        >>> [n.item() for n in sequential_norms([torch.tensor([[3.0, 0.0], [4.0, 0.0]]).t()])]
        [5.0]
    """
    if not _plain(tensors):
        return list(torch._foreach_norm(list(tensors)))
    out = []
    with np.errstate(all="ignore"):
        for t in tensors:
            squares = np.square(_read(t))
            total = np.add.accumulate(squares)[-1] if squares.size else np.float32(0)
            out.append(torch.tensor(float(np.sqrt(np.float32(total))), dtype=torch.float32))
    return out


def decayed_square(acc: np.ndarray, x: np.ndarray, rho, gain, tmp: np.ndarray, *,
                   square_first: bool = False) -> np.ndarray:
    """``acc = acc*rho + (gain*x)*x`` in place, each operation rounded once in ``acc``'s dtype
    (Adam's and CNTK's second moments: ``(1-b2)*g`` first); with ``square_first`` ``acc*rho +
    (x*x)*gain`` (NNabla's RMSprop and Adadelta, CNTK's RMSProp).  ``tmp``: scratch of
    ``x``'s length; the running average every block kernel of a squared value takes.

    Example:
        >>> acc = np.ones(2, np.float32)
        >>> decayed_square(acc, np.full(2, 3, np.float32), np.float32(0.5), np.float32(0.5),
        ...                np.empty(2, np.float32)).tolist()
        [5.0, 5.0]
    """
    np.multiply(acc, rho, out=acc)
    if square_first:
        np.multiply(x, x, out=tmp)
        np.multiply(tmp, gain, out=tmp)
    else:
        np.multiply(x, gain, out=tmp)
        np.multiply(tmp, x, out=tmp)
    return np.add(acc, tmp, out=acc)


def weight_decay_blocks(grads: Tensors, params: Tensors, *, rate: float) -> bool:
    """NNabla's ``weight_decay_cpu`` (``include/nbla/solver/weight_decay.hpp``): ``g = g +
    rate*w`` in float, the product rounded before the sum (torch's ``add_(alpha=)`` rounds the
    multiply-add once).  A gradient that is not contiguous is written through a contiguous copy.

    Example:
        >>> import torch
        >>> g = [torch.ones(2)]
        >>> weight_decay_blocks(g, [torch.full((2,), 2.0)], rate=0.5), g[0].tolist()
        (True, [2.0, 2.0])
    """
    if not (_usable(params, grads) and _plain(grads)):
        return False
    r = np.float32(rate)
    grads, back = _written_back(grads)

    def kernel(arrays, tmp, _wide):
        pc, gc = arrays
        a, = tmp
        np.multiply(pc, r, out=a)
        np.add(gc, a, out=gc)

    for_blocks(kernel, [params, grads], [], scratch=1, writes=(1,))
    _copy_back(back)
    return True


def sgd_blocks(params: Tensors, grads: Tensors, *, lr: Scalar) -> bool:
    """NNabla's Sgd (``sgd.cpp``): ``w = w - lr*g``, the product rounded first.

    Example:
        >>> import torch
        >>> w = [torch.ones(2)]
        >>> sgd_blocks(w, [torch.ones(2)], lr=0.5), w[0].tolist()
        (True, [0.5, 0.5])
    """
    if not _usable(params, grads):
        return False

    def kernel(arrays, tmp, _wide, rate):
        pc, gc = arrays
        a, = tmp
        np.multiply(gc, rate, out=a)
        np.subtract(pc, a, out=pc)

    for_blocks(kernel, [params, grads], [_floats(lr, len(params))], scratch=1, writes=(0,))
    return True


def sgdw_blocks(params: Tensors, grads: Tensors, m: Tensors, *, lr: Scalar, momentum: float,
                decay: Scalar) -> bool:
    """NNabla's SgdW (``sgdw.cpp``): ``m = momentum*m + lr*g``; ``w = (w - m) - decay*w`` with
    ``decay`` NNabla's float ``(lr / init_lr) * wd``.

    Example:
        >>> import torch
        >>> w, m = [torch.ones(2)], [torch.zeros(2)]
        >>> sgdw_blocks(w, [torch.ones(2)], m, lr=0.5, momentum=0.9, decay=0.25), w[0].tolist()
        (True, [0.25, 0.25])
    """
    if not _usable(params, grads, m):
        return False
    mom = np.float32(momentum)
    n = len(params)

    def kernel(arrays, tmp, _wide, rate, d):
        pc, gc, mc = arrays
        a, = tmp
        np.multiply(mc, mom, out=mc)
        np.multiply(gc, rate, out=a)
        np.add(mc, a, out=mc)
        np.multiply(pc, d, out=a)
        np.subtract(pc, mc, out=pc)
        np.subtract(pc, a, out=pc)

    for_blocks(kernel, [params, grads, m], [_floats(lr, n), _floats(decay, n)], scratch=1,
               writes=(0, 2))
    return True


def adagrad_blocks(params: Tensors, grads: Tensors, v: Tensors, *, lr: Scalar,
                   eps: float) -> bool:
    """NNabla's Adagrad (``adagrad.cpp``): ``v += g*g``; ``w -= (lr*g) / (sqrt(v) + eps)``.

    Example:
        >>> import torch
        >>> w, v = [torch.ones(2)], [torch.zeros(2)]
        >>> adagrad_blocks(w, [torch.ones(2)], v, lr=0.5, eps=0.0), w[0].tolist()
        (True, [0.5, 0.5])
    """
    if not _usable(params, grads, v):
        return False
    e = np.float32(eps)

    def kernel(arrays, tmp, _wide, rate):
        pc, gc, vc = arrays
        a, b = tmp
        np.multiply(gc, gc, out=a)
        np.add(vc, a, out=vc)
        np.sqrt(vc, out=a)
        np.add(a, e, out=a)
        np.multiply(gc, rate, out=b)
        np.divide(b, a, out=b)
        np.subtract(pc, b, out=pc)

    for_blocks(kernel, [params, grads, v], [_floats(lr, len(params))], scratch=2,
               writes=(0, 2))
    return True


def rmsprop_blocks(params: Tensors, grads: Tensors, v: Tensors, *, lr: Scalar, decay: float,
                   eps: float) -> bool:
    """NNabla's RMSprop (``rmsprop.cpp:49-50``): ``v = v*decay + (g*g)*(1-decay)``; ``w -=
    (lr / (sqrt(v) + eps)) * g`` (the step size divided first, then times the gradient)."""
    if not _usable(params, grads, v):
        return False
    rho, e = np.float32(decay), np.float32(eps)
    gain = np.float32(1) - rho

    def kernel(arrays, tmp, _wide, rate):
        pc, gc, vc = arrays
        a, = tmp
        decayed_square(vc, gc, rho, gain, a, square_first=True)
        np.sqrt(vc, out=a)
        np.add(a, e, out=a)
        np.divide(rate, a, out=a)
        np.multiply(a, gc, out=a)
        np.subtract(pc, a, out=pc)

    for_blocks(kernel, [params, grads, v], [_floats(lr, len(params))], scratch=1,
               writes=(0, 2))
    return True


def adadelta_blocks(params: Tensors, grads: Tensors, e_grad: Tensors, e_delta: Tensors, *,
                    lr: Scalar, decay: float, eps: float) -> bool:
    """NNabla's Adadelta (``adadelta.cpp:47-52``): ``eg = eg*decay + (g*g)*(1-decay)``;
    ``delta = sqrt((ed + eps) / (eg + eps)) * g``; ``ed = ed*decay + (delta*delta)*(1-decay)``;
    ``w -= lr*delta``.

    Example:
        >>> import torch
        >>> w, eg, ed = [torch.ones(2)], [torch.zeros(2)], [torch.zeros(2)]
        >>> adadelta_blocks(w, [torch.ones(2)], eg, ed, lr=1.0, decay=0.0, eps=0.0)
        True
    """
    if not _usable(params, grads, e_grad, e_delta):
        return False
    rho, e = np.float32(decay), np.float32(eps)
    gain = np.float32(1) - rho

    def kernel(arrays, tmp, _wide, rate):
        pc, gc, egc, edc = arrays
        a, b = tmp
        decayed_square(egc, gc, rho, gain, a, square_first=True)
        np.add(edc, e, out=a)                        # delta = sqrt((ed+eps)/(eg+eps)) * g
        np.add(egc, e, out=b)
        np.divide(a, b, out=a)
        np.sqrt(a, out=a)
        np.multiply(a, gc, out=a)
        decayed_square(edc, a, rho, gain, b, square_first=True)
        np.multiply(a, rate, out=a)                  # w -= lr*delta
        np.subtract(pc, a, out=pc)

    for_blocks(kernel, [params, grads, e_grad, e_delta], [_floats(lr, len(params))],
               scratch=2, writes=(0, 2, 3))
    return True


def adamax_blocks(params: Tensors, grads: Tensors, m: Tensors, u: Tensors, *,
                  step_size: Scalar, beta1: float, beta2: float, eps: float) -> bool:
    """NNabla's Adamax (``adamax.cpp:58-63``): ``m = b1*m + (1-b1)*g``; ``u = std::max(b2*u,
    |g|)`` (:func:`~stadyn.solvers._float32_blocks.running_max`: a NaN ``|g|`` keeps ``b2*u``);
    ``w = w - (alpha_t*m) / (u + eps)``; ``step_size`` is NNabla's float ``alpha_t``.

    Example:
        >>> import torch
        >>> w, m, u = [torch.ones(2)], [torch.zeros(2)], [torch.zeros(2)]
        >>> adamax_blocks(w, [torch.ones(2)], m, u, step_size=1.0, beta1=0.5, beta2=0.5, eps=0.0)
        True
        >>> w[0].tolist()
        [0.5, 0.5]
    """
    if not _usable(params, grads, m, u):
        return False
    b1, b2, e, gain1, _ = adam_constants(beta1, beta2, eps)

    def kernel(arrays, tmp, _wide, step):
        pc, gc, mc, uc = arrays
        a, b = tmp
        np.multiply(mc, b1, out=mc)
        np.multiply(gc, gain1, out=a)
        np.add(mc, a, out=mc)
        np.multiply(uc, b2, out=uc)
        np.abs(gc, out=a)
        running_max(uc, a, _mask(b))                 # std::max(b2*u, |g|)
        np.multiply(mc, step, out=b)
        np.add(uc, e, out=a)
        np.divide(b, a, out=b)
        np.subtract(pc, b, out=pc)

    for_blocks(kernel, [params, grads, m, u], [_floats(step_size, len(params))], scratch=2,
               writes=(0, 2, 3))
    return True


def lion_blocks(params: Tensors, grads: Tensors, m: Tensors, *, lr: Scalar, beta1: float,
                beta2: float, weight_decay: Scalar = 0.0) -> bool:
    """NNabla's Lion (``lion.cpp:47-55``): ``u = sign(g + b1*(m - g))`` (``(v > 0) - (v < 0)``:
    0 for NaN, so a NaN or infinite gradient leaves ``w`` as it is); ``m = g + b2*(m - g)``;
    ``w -= lr*(u + wd*w)``, each product rounded before its sum.

    Example:
        >>> import torch
        >>> w, m = [torch.ones(2)], [torch.zeros(2)]
        >>> lion_blocks(w, [torch.ones(2)], m, lr=0.5, beta1=0.9, beta2=0.99), w[0].tolist()
        (True, [0.5, 0.5])
    """
    if not _usable(params, grads, m):
        return False
    b1, b2 = np.float32(beta1), np.float32(beta2)
    n = len(params)

    def kernel(arrays, tmp, _wide, rate, wd):
        pc, gc, mc = arrays
        a, b = tmp
        np.subtract(mc, gc, out=a)                   # m - g
        np.multiply(a, b1, out=b)                    # v = g + b1*(m - g)
        np.add(gc, b, out=b)
        np.multiply(a, b2, out=a)                    # m = g + b2*(m - g)
        np.add(gc, a, out=mc)
        flags = a.view(np.bool_)                     # u = (v > 0) - (v < 0): 0 for NaN
        above, below = flags[:b.size], flags[b.size:2 * b.size]
        np.greater(b, 0, out=above)                  # (NumPy's sign in place: ~15x slower)
        np.less(b, 0, out=below)
        np.subtract(above, below, out=b, dtype=np.float32)
        np.multiply(pc, wd, out=a)                   # w -= lr*(u + wd*w)
        np.add(b, a, out=b)
        np.multiply(b, rate, out=b)
        np.subtract(pc, b, out=pc)

    for_blocks(kernel, [params, grads, m], [_floats(lr, n), _floats(weight_decay, n)],
               scratch=2, writes=(0, 2))
    return True


def _sequential_sum_sq(x: np.ndarray, out: np.ndarray, acc: np.ndarray, k: int) -> None:
    """``acc[k] += x[0]*x[0] + x[1]*x[1] + ...`` one float32 addition after another, as
    ``std::accumulate`` over float (``out``: scratch of ``x``'s length)."""
    np.multiply(x, x, out=out)
    out[0] += acc[k]
    np.add.accumulate(out, out=out)
    acc[k] = out[-1]


def lamb_blocks(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *, eta: Scalar,
                correction1: Scalar, correction2: Scalar, beta1: float, beta2: float,
                eps: float, gamma_l: float, gamma_u: float, weight_decay: Scalar = 0.0,
                r: Tensors | None = None) -> bool:
    """NNabla's Lamb (``lamb.cpp:57-89``): Adam's moments; ``r = (m/c1) / (sqrt(v/c2) + eps) +
    wd*w``; ``||r||`` and ``||w||`` sequential float32 sums, rooted in float; ``local_lr =
    clip(||w||, gamma_l, gamma_u) / ||r||`` (a double holding the float quotient; 1 where
    ``||r|| <= eps``); ``w = float(w - (eta*local_lr)*r)`` in double.  ``correction1``,
    ``correction2`` are NNabla's float bias corrections (1 without ``bias_correction``).
    ``r``: float32 scratch tensors shaped as ``params`` (NNabla's ``r_arr``) that the caller
    keeps from one update to the next, so both passes find their plans again
    (:func:`~stadyn.solvers._float32_blocks.for_blocks`: runs of small tensors as one array);
    made afresh when not given.

    Example:
        >>> import torch
        >>> w, m, v = [torch.ones(2)], [torch.zeros(2)], [torch.zeros(2)]
        >>> lamb_blocks(w, [torch.ones(2)], m, v, eta=0.1, correction1=1.0, correction2=1.0,
        ...             beta1=0.9, beta2=0.999, eps=1e-6, gamma_l=0.0, gamma_u=10.0)
        True
    """
    if not _usable(params, grads, m, v):
        return False
    n = len(params)
    if r is None or len(r) != n or not _usable(params, grads, r) or \
            any(t.numel() != p.numel() for t, p in zip(r, params)):
        r = [torch.empty_like(p) for p in params]              # NNabla's r_arr
    b1, b2, e, gain1, gain2 = adam_constants(beta1, beta2, eps)
    low, high = np.float32(gamma_l), np.float32(gamma_u)
    sums = [np.zeros(2, np.float32) for _ in params]           # ||r||^2, ||w||^2

    def moments(arrays, tmp, _wide, c1, c2, wd, spans):
        pc, gc, mc, vc, rc = arrays
        a, = tmp
        _adam_moments(gc, mc, vc, None, a, b1, gain1, b2, gain2)
        np.divide(vc, c2, out=a)                     # r = (m/c1) / (sqrt(v/c2) + eps)
        np.sqrt(a, out=a)
        np.add(a, e, out=a)
        np.divide(mc, c1, out=rc)
        np.divide(rc, a, out=rc)
        np.multiply(pc, wd, out=a)                   # r = r + wd*w
        np.add(rc, a, out=rc)
        for i, start, stop in spans:                 # each tensor's norms, its own sums
            _sequential_sum_sq(rc[start:stop], a[start:stop], sums[i], 0)
            _sequential_sum_sq(pc[start:stop], a[start:stop], sums[i], 1)

    for_blocks(moments, [params, grads, m, v, r],
               [_floats(correction1, n), _floats(correction2, n), _floats(weight_decay, n)],
               scratch=1, writes=(2, 3, 4), spans=True)
    factors = []
    with np.errstate(all="ignore"):
        for rate, (r_sq, w_sq) in zip(_floats(eta, n), sums):
            r_norm, w_norm = np.sqrt(r_sq), np.sqrt(w_sq)
            if w_norm < low:
                w_norm = low
            if w_norm > high:
                w_norm = high
            local = np.float64(w_norm / r_norm) if r_norm > e else np.float64(1.0)
            factors.append(np.float64(rate) * local)

    def update(arrays, _tmp, wide, spans):
        pc, rc = arrays
        w1, = wide
        for i, start, stop in spans:                 # w -= (eta*local_lr)*r, in double
            np.multiply(rc[start:stop], factors[i], out=w1[start:stop])
        np.subtract(pc, w1, out=w1)
        np.copyto(pc, w1, casting="unsafe")

    for_blocks(update, [params, r], [], scratch=0, wide=1, writes=(0,), spans=True)
    return True


def lars_blocks(params: Tensors, grads: Tensors, v: Tensors, *, lr: Scalar, momentum: float,
                coefficient: float, eps: float, weight_decay: Scalar = 0.0) -> bool:
    """NNabla's Lars (``lars.cpp:45-68``): ``||g||``, ``||w||`` sequential float32 sums rooted
    in float; ``x = ||g|| + wd*||w||`` (``+ eps`` only where ``x < eps``); ``lr_l = lr`` where
    ``||w|| < eps``, else ``((lr*coefficient)*||w||) / x``; ``g = g + wd*w`` (in place, the
    decayed gradient stays); ``v = momentum*v + lr_l*g``; ``w = w - v``.  A gradient that is
    not contiguous is written through a contiguous copy.  ``RuntimeError`` where ``x`` is
    negative or NaN (NNabla's ``NBLA_CHECK``, ``lars.cpp:66``), before any parameter is
    updated.

    Example:
        >>> import torch
        >>> w, v = [torch.ones(2)], [torch.zeros(2)]
        >>> lars_blocks(w, [torch.ones(2)], v, lr=1.0, momentum=0.9, coefficient=1.0, eps=0.0)
        True
        >>> w[0].tolist()
        [0.0, 0.0]
    """
    if not (_usable(params, grads, v) and _plain(grads)):
        return False
    mom, coef, e = np.float32(momentum), np.float32(coefficient), np.float32(eps)
    n = len(params)
    decays = _floats(weight_decay, n)
    sums = [np.zeros(2, np.float32) for _ in params]           # ||g||^2, ||w||^2

    def norms(arrays, tmp, _wide, acc):
        pc, gc = arrays
        a, = tmp
        _sequential_sum_sq(gc, a, acc, 0)
        _sequential_sum_sq(pc, a, acc, 1)

    for_blocks(norms, [params, grads], [sums], scratch=1)
    rates, bad = [], {}
    with np.errstate(all="ignore"):
        for i, (rate, wd, (g_sq, w_sq)) in enumerate(zip(_floats(lr, n), decays, sums)):
            g_norm, w_norm = np.sqrt(g_sq), np.sqrt(w_sq)
            x = g_norm + wd * w_norm
            if not x >= 0:
                bad[i] = float(x)
                continue
            if x < e:
                x = x + e
            rates.append(rate if w_norm < e else rate * coef * w_norm / x)
    if bad:
        raise lars_error(bad)

    def update(arrays, tmp, _wide, rate, wd):
        pc, gc, vc = arrays
        a, = tmp
        np.multiply(pc, wd, out=a)                   # g = g + wd*w
        np.add(gc, a, out=gc)
        np.multiply(vc, mom, out=vc)                 # v = momentum*v + lr*g
        np.multiply(gc, rate, out=a)
        np.add(vc, a, out=vc)
        np.subtract(pc, vc, out=pc)                  # w = w - v

    grads, back = _written_back(grads)
    for_blocks(update, [params, grads, v], [rates, decays], scratch=1, writes=(0, 1, 2))
    _copy_back(back)
    return True


def lars_error(bad: dict[int, float]) -> RuntimeError:
    """The error of NNabla's Lars check ``x >= 0`` (``lars.cpp:66``), whichever path met it:
    ``bad`` maps the position of each tensor whose denominator ``x`` is negative or NaN to
    ``x``; the error keeps it as ``bad_parameters`` (the solver then updates the parameters
    NNabla visits before the first bad one, :meth:`stadyn.solvers.Lars.step`).

    Example:
        >>> error = lars_error({1: float("nan")})
        >>> error.args[0][:30], error.bad_parameters
        ("Lars: the local learning rate'", {1: nan})
    """
    error = RuntimeError("Lars: the local learning rate's denominator ||g|| + "
                         f"weight_decay*||w|| is {next(iter(bad.values()))} (NNabla's 'local "
                         "learning rate should be positive or zero.')")
    error.bad_parameters = dict(bad)
    return error


def clip_grad_by_norm_blocks(grads: Tensors, *, clip_norm: float) -> bool:
    """NNabla's ``clip_grad_by_norm_cpu`` (``include/nbla/solver/clip_grad.hpp:27-37``), per
    gradient: ``sum`` of ``g*g`` one float addition after another; where ``sum > 0`` and ``sum
    > c*c`` (``c*c`` in float), ``g = (c*g) / sqrt(sum)``.  ``False`` (nothing touched) where
    the gradients are not plain float32 CPU tensors (one not contiguous is written through a
    contiguous copy).

    Example:
        >>> import torch
        >>> g = [torch.tensor([3.0, 4.0])]
        >>> clip_grad_by_norm_blocks(g, clip_norm=1.0), g[0].tolist()
        (True, [0.6000000238418579, 0.800000011920929])
    """
    if not _plain(grads):
        return False
    c = np.float32(clip_norm)
    grads, back = _written_back(grads)
    sums = [np.zeros(1, np.float32) for _ in grads]

    def square_sums(arrays, tmp, _wide, acc):
        a, = tmp
        _sequential_sum_sq(arrays[0], a, acc, 0)

    for_blocks(square_sums, [grads], [sums], scratch=1)
    with np.errstate(all="ignore"):
        limit = c * c
        norms = [np.sqrt(s[0]) if s[0] > 0 and s[0] > limit else None for s in sums]
    clipped = [g for g, norm in zip(grads, norms) if norm is not None]

    def scale(arrays, _tmp, _wide, norm):
        gc, = arrays
        np.multiply(gc, c, out=gc)
        np.divide(gc, norm, out=gc)

    if clipped:
        # (each its own norm: no packs; the clipped subset changes, so no plan either)
        for_blocks(scale, [clipped], [[x for x in norms if x is not None]], scratch=0)
        _copy_back(back)
    return True

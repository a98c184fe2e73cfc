"""NNabla 1.39's batch normalisation of float16 values on its CPU (``F.batch_normalization``
with ``rule="nnabla"`` in a ``cpu:half`` context), bit for bit.

NNabla's ``BatchNormalization<Half>`` computes every step in its ``Half``, each ``Half op
Half`` being ``Half(float(a) op float(b))`` and ``Half op int`` ``Half(float(a) op n)``
(src/nbla/half.cpp:85-106); a ``float`` operand makes the result a ``float``.  Per channel,
over its ``n`` values in the order batch, then the other axes
(src/nbla/function/generic/batch_normalization.cpp:190-211):

* ``m`` and ``v`` are folds from zero, ``m += x`` and ``v += x * x`` (product and partial sum
  rounded); ``m /= n`` divides by ``n`` made a ``Half``; ``v = v / n - m * m``;
* ``y = (x - m) * gamma / sqrt(v + eps) + beta``, every operation rounded, ``eps`` a ``Half``
  and the square root taken in float and rounded;
* the running statistics are read as ``Half`` (the variables' arrays become float16) and moved
  in float, ``d * rm + (1 - d) * m`` and ``d * rv + (1 - d) * v * n / (n - 1)`` with the float
  ``decay_rate``, then rounded to ``Half``;
* the backward (:233-318) folds ``dvar += dy * gamma * (x - m)``, ``dmean += dy * gamma`` and
  ``tmp += x - m`` and takes ``dx`` by its formula, all in ``Half``; ``db`` and ``dgamma`` are
  folds too.

Without batch statistics (:216-229) ``y`` uses the running ones, and the backward is made of
NNabla functions in ``Half`` (:378-473): ``r = (rv + eps) ** -0.5`` (``PowScalar``),
``dx = dy * (gamma * r)``, ``db = sum(dy)``, ``dgamma = sum(dy * ((x - rm) * r))``, the sums
folds as ``Sum``'s (``ops/_half_sum.py``).

NumPy computes float16 arithmetic as NNabla's ``Half`` does (in float, rounded once) and its
``add.accumulate`` is the fold; the kernels here are operators made by ``kernel_op``, so a
static plan records each as one call.
"""

from __future__ import annotations

import numpy as np
import torch

from ._kernel_op import kernel_op

__all__ = ["half_batch_norm"]

_H, _F = np.float16, np.float32

# NNabla's Half overflows to inf and divides by zero without a word; NumPy would warn
_QUIET = dict(over="ignore", under="ignore", invalid="ignore", divide="ignore")


def _rows(t: torch.Tensor) -> np.ndarray:
    """``t`` ``(N, C, ...)`` as a float16 matrix of one row per channel, in NNabla's order."""
    return t.detach().transpose(0, 1).reshape(t.shape[1], -1).contiguous().numpy()


def _unrows(a: np.ndarray, like: torch.Tensor) -> torch.Tensor:
    moved = [like.shape[1], like.shape[0], *like.shape[2:]]
    return torch.from_numpy(np.ascontiguousarray(a)).reshape(moved).transpose(0, 1).contiguous()


def _channel(t: torch.Tensor | None) -> np.ndarray | None:
    return None if t is None else t.detach().reshape(-1).to(torch.float16).numpy()


def _fold(a: np.ndarray) -> np.ndarray:
    """Each row's sum, rounded to float16 after every addition (a fold from zero)."""
    if a.shape[1] == 0:
        return np.zeros(a.shape[0], _H)
    return np.add.accumulate(a, axis=1)[:, -1]


def _div(a: np.ndarray, n: int) -> np.ndarray:
    """``Half / int``: in float, rounded."""
    return (a.astype(_F) / _F(n)).astype(_H)


def _sqrt(a: np.ndarray) -> np.ndarray:
    return np.sqrt(a.astype(_F)).astype(_H)


def _eps(eps: float):
    return _H(_F(eps))                      # NNabla's eps is a float, made a Half


def _statistics(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = rows.shape[1]
    m = _fold(rows) / _H(n)                 # m /= n: the int made a Half
    v = _div(_fold(rows * rows), n) - m * m
    return m, v


def _normalize(rows, m, v, weight, bias, eps):
    y = (rows - m[:, None])
    if weight is not None:
        y = y * weight[:, None]
    y = y / _sqrt(v + _eps(eps))[:, None]
    if bias is not None:
        y = y + bias[:, None]
    return y


def _train_impl(x, weight, bias, eps):
    with np.errstate(**_QUIET):
        rows = _rows(x)
        m, v = _statistics(rows)
        y = _normalize(rows, m, v, _channel(weight), _channel(bias), eps)
        return _unrows(y, x), torch.from_numpy(m), torch.from_numpy(v)


def _train_fake(x, weight, bias, eps):
    stat = x.new_empty((x.shape[1],))
    return torch.empty_like(x), stat, torch.empty_like(stat)


def _train_setup(ctx, inputs, output):
    x, weight, bias, eps = inputs
    _, m, v = output
    # the batch statistics are outputs of their own (``output_stat``): their gradients
    # enter NNabla's formula (dvar + dv, dmean + dm)
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(x, weight, m, v)
    ctx.eps, ctx.bias = eps, None if bias is None else (bias.shape, bias.dtype)


def _empty(like: torch.Tensor) -> torch.Tensor:
    return like.new_empty((0,))


def _train_grad_impl(gy, x, weight, m, v, gm, gv, eps, need):
    """NNabla's batch-statistics backward: ``(dx, dgamma, dbeta)`` in float16 (``dgamma`` and
    ``dbeta`` of shape ``(C,)``), an empty tensor for one not asked for (``need``); ``gm``
    and ``gv`` the gradients of the batch mean and variance, or None."""
    with np.errstate(**_QUIET):
        rows, dy = _rows(x), _rows(gy.to(torch.float16))
        m, v, n = m.numpy(), v.numpy(), rows.shape[1]
        g = _channel(weight)
        sq = _sqrt(v + _eps(eps))
        centred = rows - m[:, None]
        gx, gw, gb = _empty(x), _empty(x), _empty(x)
        if need[0]:
            dxh = dy if g is None else dy * g[:, None]
            dvar = _fold(dxh * centred) * _H(-0.5)
            dvar = dvar * np.power((v + _eps(eps)).astype(_F), _F(-1.5)).astype(_H)
            if gv is not None:
                dvar = dvar + _channel(gv)
            dmean = _fold(dxh) * (_F(-1) / sq.astype(_F)).astype(_H)
            dmean = dmean + _div(dvar * _H(-2) * _fold(centred), n)
            if gm is not None:
                dmean = dmean + _channel(gm)
            grad = (dxh / sq[:, None] + _div((dvar * _H(2))[:, None] * centred, n)
                    + _div(dmean, n)[:, None])
            gx = _unrows(grad, x)
        if need[1]:
            gw = torch.from_numpy(_fold(dy * centred / sq[:, None]))
        if need[2]:
            gb = torch.from_numpy(_fold(dy))
        return gx, gw, gb


def _train_grad_fake(gy, x, weight, m, v, gm, gv, eps, need):
    return _grad_fake(gy, x, weight, m, v, eps, need)


def _grad_fake(gy, x, weight, m, v, eps, need):
    channels = x.shape[1]
    half = dict(dtype=torch.float16)
    return (torch.empty_like(x, **half) if need[0] else _empty(x),
            x.new_empty((channels,), **half) if need[1] else _empty(x),
            x.new_empty((channels,), **half) if need[2] else _empty(x))


_train_grad = kernel_op("stadyn_kernels::batch_norm_nnabla_half_train_grad",
                        "(Tensor gy, Tensor x, Tensor? weight, Tensor m, Tensor v, Tensor? gm, "
                        "Tensor? gv, float eps, bool[] need) -> (Tensor, Tensor, Tensor)",
                        _train_grad_impl, _train_grad_fake)


def _grads(ctx, x, weight, got, need):
    """The gradients an operator returned, each in its input's shape and dtype; None where
    not asked for."""
    gx, gw, gb = got
    gx = gx.to(x.dtype) if need[0] else None
    gw = gw.reshape(weight.shape).to(weight.dtype) if need[1] else None
    gb = gb.reshape(ctx.bias[0]).to(ctx.bias[1]) if need[2] else None
    return gx, gw, gb


def _need(ctx, weight) -> list[bool]:
    need = ctx.needs_input_grad
    return [bool(need[0]), weight is not None and bool(need[1]),
            ctx.bias is not None and bool(need[2])]


def _train_backward(ctx, gy, gm, gv):
    x, weight, m, v = ctx.saved_tensors
    if gy is None:
        gy = torch.zeros_like(x)
    need = _need(ctx, weight)
    got = _train_grad(gy, x, weight, m, v, gm, gv, float(ctx.eps), need)
    return (*_grads(ctx, x, weight, got, need), None)


_train = kernel_op("stadyn_kernels::batch_norm_nnabla_half_train",
                   "(Tensor x, Tensor? weight, Tensor? bias, float eps) "
                   "-> (Tensor, Tensor, Tensor)",
                   _train_impl, _train_fake, _train_backward, _train_setup)


def _eval_impl(x, weight, bias, mean, var, eps):
    with np.errstate(**_QUIET):
        y = _normalize(_rows(x), _channel(mean), _channel(var), _channel(weight), _channel(bias),
                       eps)
        return _unrows(y, x)


def _eval_fake(x, weight, bias, mean, var, eps):
    return torch.empty_like(x)


def _eval_setup(ctx, inputs, output):
    x, weight, bias, mean, var, eps = inputs
    ctx.save_for_backward(x, weight)
    # the running statistics as they are at the backward (NNabla's reads them then), as
    # _batch_norm_kernel's float kernel keeps them
    ctx.running = (mean, var)
    ctx.eps, ctx.bias = eps, None if bias is None else (bias.shape, bias.dtype)


def _eval_grad_impl(gy, x, weight, mean, var, eps, need):
    """NNabla's backward without batch statistics (functions in ``Half``), as
    :func:`_train_grad_impl` returns its gradients."""
    with np.errstate(**_QUIET):
        mean, var = _channel(mean), _channel(var)
        dy = _rows(gy.to(torch.float16))
        r = np.power((var + _eps(eps)).astype(_F), _F(-0.5)).astype(_H)
        g = _channel(weight)
        gx, gw, gb = _empty(x), _empty(x), _empty(x)
        if need[0]:
            gx = _unrows(dy * (r if g is None else g * r)[:, None], x)
        if need[1]:
            gw = torch.from_numpy(_fold(dy * ((_rows(x) - mean[:, None]) * r[:, None])))
        if need[2]:
            gb = torch.from_numpy(_fold(dy))
        return gx, gw, gb


_eval_grad = kernel_op("stadyn_kernels::batch_norm_nnabla_half_eval_grad",
                       "(Tensor gy, Tensor x, Tensor? weight, Tensor mean, Tensor var, "
                       "float eps, bool[] need) -> (Tensor, Tensor, Tensor)",
                       _eval_grad_impl, _grad_fake)


def _eval_backward(ctx, gy):
    x, weight = ctx.saved_tensors
    mean, var = ctx.running
    need = _need(ctx, weight)
    got = _eval_grad(gy, x, weight, mean, var, float(ctx.eps), need)
    return (*_grads(ctx, x, weight, got, need), None, None, None)


_eval = kernel_op("stadyn_kernels::batch_norm_nnabla_half_eval",
                  "(Tensor x, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, "
                  "float eps) -> Tensor",
                  _eval_impl, _eval_fake, _eval_backward, _eval_setup)


def _update_impl(mean, variance, m, v, decay, n):
    with np.errstate(**_QUIET):
        d = _F(decay)
        keep, take = d, _F(1) - d
        m, v = m.numpy(), v.numpy()
        if mean is not None:
            new = keep * _channel(mean).astype(_F) + take * m.astype(_F)
            mean.copy_(torch.from_numpy(new.astype(_H)).reshape(mean.shape))
        if variance is not None:
            new = keep * _channel(variance).astype(_F) + take * v.astype(_F) * _F(n) / _F(n - 1)
            variance.copy_(torch.from_numpy(new.astype(_H)).reshape(variance.shape))


def _update_fake(mean, variance, m, v, decay, n):
    return None


_update = kernel_op("stadyn_kernels::batch_norm_nnabla_half_update_running",
                    "(Tensor(a!)? mean, Tensor(b!)? variance, Tensor m, Tensor v, "
                    "float decay, int n) -> ()",
                    _update_impl, _update_fake)


def half_batch_norm(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                    mean: torch.Tensor | None, var: torch.Tensor | None, train: bool,
                    eps: float, decay_rate: float
                    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Batch normalisation of float16 ``x`` ``(N, C, ...)`` over every axis but 1 as NNabla
    1.39's CPU kernel computes it in ``Half`` (see the module docstring).  ``weight``,
    ``bias``, ``mean`` and ``var`` hold one value per channel (any shape and float dtype;
    weight and bias may be None); with ``train`` the batch's statistics normalise and
    ``mean``/``var`` (either may be None) move in place toward them by ``decay_rate``, their
    new values rounded to float16 (NNabla's become float16 arrays; here they keep their
    dtype); without it ``mean`` and ``var`` normalise.  Differentiable once in ``x``,
    ``weight`` and ``bias``.  Returns ``y`` and, with ``train``, the batch mean and biased
    variance ``(C,)`` in float16, NNabla's (differentiable: ``output_stat``), else None.

    Example:
        >>> import torch
        >>> x = torch.tensor([[1.0], [2.0], [4.0]], dtype=torch.float16)
        >>> rm, rv = torch.zeros(1), torch.ones(1)
        >>> half_batch_norm(x, None, None, rm, rv, True, 1e-5, 0.9)[0].tolist()   # NNabla's
        [[-1.0712890625], [-0.268310546875], [1.337890625]]
        >>> rm.tolist(), rv.tolist()
        ([0.2333984375], [1.1328125])
    """
    if not train:
        return _eval(x, weight, bias, mean, var, float(eps)), None, None
    y, m, v = _train(x, weight, bias, float(eps))
    if mean is not None or var is not None:
        with torch.no_grad():
            _update(mean, var, m.detach(), v.detach(), float(np.float32(decay_rate)),
                    x.numel() // x.shape[1])
    return y, m, v

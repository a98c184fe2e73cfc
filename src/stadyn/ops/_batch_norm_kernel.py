"""Batch normalisation in NNabla 1.39's order of operations, a kernel of the op catalog's
batch normalisation ops (:mod:`._kernels`).

ATen's fused CPU kernel normalises as ``x * scale + shift`` (``scale = gamma / std``,
``shift = beta - mean * scale``), so an element equal to the batch mean comes out as ``beta``
plus a rounding error (+-1e-8) whose sign a following ``binary_tanh`` turns into +-1.
NNabla 1.39's CPU kernel computes ``(x - mean) * gamma / std + beta``, exactly ``beta``
there.  :func:`batch_norm_nnabla` computes the forward in that order (composite ATen ops
were ~3x slower than the fused kernel forward and backward together, their autograd
backward being most of it) and takes the gradient from ATen's fused
``native_batch_norm_backward``, so it costs about what ATen's kernel does.
"""

from __future__ import annotations

import numpy as np
import torch

from ._kernel_op import kernel_op

__all__ = ["batch_norm_nnabla", "batch_norm_update_running"]


def _channel_shape(x: torch.Tensor) -> list[int]:
    return [1, x.shape[1]] + [1] * (x.dim() - 2)


def _normalize(x, centred, weight, bias, var, eps):
    """``(x - m) * gamma / sqrt(v + eps) + beta`` on ``centred = x - m`` (in place), NNabla's
    order.  The square root of one value per channel is taken in float64 and rounded: ATen's
    float32 CPU ``sqrt`` (the vector library's) is an ulp off for about one value in seven."""
    shape = _channel_shape(x)
    if weight is not None:
        centred.mul_(weight.reshape(shape))
    centred.div_(torch.sqrt((var + eps).double()).to(var.dtype).reshape(shape))
    if bias is not None:
        centred.add_(bias.reshape(shape))
    return centred.to(x.dtype)


def _opmath(x: torch.Tensor) -> torch.Tensor:
    # half-precision data is normalised in float32, as ATen's mixed-type kernel does
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _aten_params(x, *params):
    """``params`` (weight, statistics; None allowed) as ATen's ``native_batch_norm_backward``
    takes them beside ``x``: all of x's dtype, or all float32 beside half-precision x (its
    mixed-type kernel); one of them in another dtype (float32 statistics beside half
    parameters) is refused there, so all are then cast to the opmath dtype, float32."""
    given = [p for p in params if p is not None]
    if all(p.dtype == x.dtype for p in given):
        return params
    work = _opmath(x).dtype
    return tuple(None if p is None else p.to(work) for p in params)


def _parameter_grads(ctx, gw, gb, weight):
    """The per-channel gradients ``(C,)`` of the weight and the bias in the shape and dtype of
    the parameter each is for (ATen's mixed-type kernel gives float32 ones for half
    parameters); None stays None."""
    if gw is not None:
        gw = gw.to(weight.dtype).reshape(weight.shape)
    if gb is not None:
        gb = gb.to(ctx.bias_dtype).reshape(ctx.bias_shape)
    return gw, gb


def _bn_train_impl(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
              eps: float, one_pass: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    work = _opmath(x)
    reduce = [0, *range(2, x.dim())]
    n = x.numel() // x.shape[1]
    mean = work.sum(dim=reduce, keepdim=True) / n
    centred = work - mean
    if one_pass:
        # NNabla 1.39's CPU kernel: v = sum(x * x) / n - m * m in the data's type, which
        # cancels where the values are large against their spread
        var = (work * work).sum(dim=reduce, keepdim=True) / n - mean * mean
    else:
        var = (centred * centred).sum(dim=reduce, keepdim=True) / n
    return _normalize(x, centred, weight, bias, var, eps), mean, var


def _bn_train_fake(x, weight, bias, eps, one_pass):
    stat = torch.empty(_channel_shape(x), dtype=_opmath(x).dtype, device=x.device)
    return torch.empty_like(x), stat, torch.empty_like(stat)


def _bn_train_setup(ctx, inputs, output):
    x, weight, bias, eps, one_pass = inputs
    _, mean, var = output
    ctx.mark_non_differentiable(mean, var)
    # no zeros made for the statistics' gradients (two nodes of a plan's trace): the
    # backward reads only gy
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(x, weight, mean, var)
    ctx.eps, ctx.has_bias, ctx.one_pass = eps, bias is not None, one_pass
    ctx.bias_shape = None if bias is None else bias.shape
    ctx.bias_dtype = None if bias is None else bias.dtype


def _bn_one_pass_grads(gy, x, weight, eps, need):
    """NNabla 1.39's gradient of its batch statistics (``BatchNormalization::
    backward_impl_batch``), term by term on the one-pass variance: ``dvar = sum(dxh * (x - m))
    * -0.5 * (v + eps)^-1.5``, ``dmean = -sum(dxh) / sqrt(v + eps) - 2 * dvar * sum(x - m) / n``,
    ``dx = dxh / sqrt(v + eps) + 2 * dvar * (x - m) / n + dmean / n`` with ``dxh = dy * gamma``.
    The composite of :data:`_bn_one_pass_grad` (below), which runs it as one operator."""
    work, g = _opmath(x), gy.to(_opmath(x).dtype)
    shape, reduce = _channel_shape(x), [0, *range(2, x.dim())]
    n = x.numel() // x.shape[1]
    # the statistics again from x, by the forward's operations (the same values): a second
    # derivative (MAML's) then sees how they depend on x, which the saved ones hide
    mean = work.sum(dim=reduce, keepdim=True) / n
    var = (work * work).sum(dim=reduce, keepdim=True) / n - mean * mean
    centred = work - mean
    std = torch.sqrt((var + eps).double()).to(var.dtype)  # as _normalize rounds it
    gx = gw = gb = None
    if need[0]:
        dxh = g if weight is None else g * weight.reshape(shape)
        dvar = (dxh * centred).sum(dim=reduce, keepdim=True) * -0.5 * torch.pow(var + eps, -1.5)
        dmean = (dxh.sum(dim=reduce, keepdim=True) * (-1.0 / std)
                 + dvar * -2.0 * centred.sum(dim=reduce, keepdim=True) / n)
        gx = (dxh / std + dvar * 2.0 * centred / n + dmean / n).to(x.dtype)
    if weight is not None and need[1]:
        gw = (g * centred / std).sum(dim=reduce).to(weight.dtype)
    if need[2]:
        gb = g.sum(dim=reduce)
    return gx, gw, gb


# The one-pass gradient as one operator.  A static plan's trace (make_fx on fake tensors,
# about 1 ms an ATen call, docs/performance.md) then records one node where the composite
# above made about 40 (and its autograd's bookkeeping): half of a PF ResNet's build.  Its
# kernel runs the composite, so its values are the composite's, bit for bit; a gradient not
# asked for (``need``) comes back as an empty tensor (an operator returns no None).

def _grad_or_empty(g, like):
    return g if g is not None else like.new_empty((0,))


def _bn_one_pass_grad_impl(gy, x, weight, eps, need):
    gx, gw, gb = _bn_one_pass_grads(gy, x, weight, eps, need)
    # in the fake's layout, gy's (the composite's, but for a copy).  gx is dense, so strides
    # equal to gy's mean gy is dense and empty_like(gy) would have them: no tensor to compare
    if gx is not None and gx.stride() != gy.stride():
        out = torch.empty_like(gy, dtype=x.dtype)
        if out.stride() != gx.stride():
            gx = out.copy_(gx)
    return _grad_or_empty(gx, x), _grad_or_empty(gw, x), _grad_or_empty(gb, x)


def _bn_one_pass_grad_fake(gy, x, weight, eps, need):
    channels, stat = x.shape[1], _opmath(x).dtype
    gx = torch.empty_like(gy, dtype=x.dtype) if need[0] else x.new_empty((0,))
    gw = (x.new_empty((channels,), dtype=weight.dtype) if weight is not None and need[1]
          else x.new_empty((0,)))
    gb = x.new_empty((channels,), dtype=stat) if need[2] else x.new_empty((0,))
    return gx, gw, gb


def _bn_one_pass_grad_setup(ctx, inputs, output):
    gy, x, weight, eps, need = inputs
    ctx.save_for_backward(gy, x, weight)
    ctx.eps, ctx.need = eps, list(need)


def _bn_one_pass_grad_backward(ctx, ggx, ggw, ggb):
    """A second derivative: the composite again, under autograd, differentiated (MAML's)."""
    gy, x, weight = ctx.saved_tensors
    wrt = [k for k, t in enumerate((gy, x, weight)) if t is not None and ctx.needs_input_grad[k]]
    with torch.enable_grad():
        # partial derivatives: each input through an alias of its own (a view), as gy itself
        # depends on x where the forward's output fed the loss; the alias keeps the history a
        # third derivative follows
        ins = [t if t is None else t.view_as(t) if t.requires_grad
               else t.detach().requires_grad_() for t in (gy, x, weight)]
        outs = _bn_one_pass_grads(*ins[:3], ctx.eps, ctx.need)
        pairs = [(o, g) for o, g in zip(outs, (ggx, ggw, ggb))
                 if o is not None and g is not None and o.requires_grad]
        got = torch.autograd.grad([o for o, _ in pairs], [ins[k] for k in wrt],
                                  [g for _, g in pairs], allow_unused=True,
                                  create_graph=torch.is_grad_enabled()) \
            if pairs and wrt else [None] * len(wrt)
    grads = [None, None, None]
    for k, g in zip(wrt, got):
        grads[k] = g
    return grads[0], grads[1], grads[2], None, None


_bn_one_pass_grad = kernel_op(
    "stadyn_kernels::batch_norm_nnabla_one_pass_grad",
    "(Tensor gy, Tensor x, Tensor? weight, float eps, bool[] need) -> (Tensor, Tensor, Tensor)",
    _bn_one_pass_grad_impl, _bn_one_pass_grad_fake, _bn_one_pass_grad_backward,
    _bn_one_pass_grad_setup)


def _bn_one_pass_backward(gy, x, weight, eps, need):
    """NNabla's one-pass gradient (:func:`_bn_one_pass_grads`) through its one operator;
    None for a gradient not asked for.  A backward that builds a graph (``create_graph``: a
    second derivative, MAML's) runs the composite itself, as before the operator."""
    if torch.is_grad_enabled():
        return _bn_one_pass_grads(gy, x, weight, eps, need)
    need = [bool(k) for k in need]
    gx, gw, gb = _bn_one_pass_grad(gy, x, weight, float(eps), need)
    return (gx if need[0] else None, gw if weight is not None and need[1] else None,
            gb if need[2] else None)


def _bn_train_backward(ctx, gy, _gmean, _gvar):
    x, weight, mean, var = ctx.saved_tensors
    if gy is None:      # (a double backward's): the zeros autograd made before, as it makes them
        gy = torch.zeros(x.shape, dtype=x.dtype, device=x.device)
    need = ctx.needs_input_grad
    if ctx.one_pass:
        gx, gw, gb = _bn_one_pass_backward(gy, x, weight, ctx.eps,
                                           [need[0], need[1], ctx.has_bias and need[2]])
        return (gx, *_parameter_grads(ctx, gw, gb, weight), None, None)
    invstd = torch.rsqrt(var + ctx.eps).reshape(-1)
    w, mean = _aten_params(x, None if weight is None else weight.reshape(-1), mean.reshape(-1))
    gx, gw, gb = torch.ops.aten.native_batch_norm_backward(
        gy, x, w, None, None, mean, invstd.to(mean.dtype), True, ctx.eps,
        [need[0], weight is not None and need[1], ctx.has_bias and need[2]])
    return (gx, *_parameter_grads(ctx, gw, gb, weight), None, None)


def _update_running_impl(mean, variance, m, v, keep, take, n):
    if mean is not None:
        mean.mul_(keep).add_((m * take).reshape(mean.shape))
    if variance is not None:
        variance.mul_(keep).add_((v * take * float(n) / float(n - 1)).reshape(variance.shape))


def _update_running_fake(mean, variance, m, v, keep, take, n):
    return None


# The running statistics' update as one operator: a plan's trace records one node where the
# ATen calls above made ten, with the same values (its kernel is those calls).
_update_running = kernel_op(
    "stadyn_kernels::batch_norm_nnabla_update_running",
    "(Tensor(a!)? mean, Tensor(b!)? variance, Tensor m, Tensor v, float keep, float take, "
    "int n) -> ()",
    _update_running_impl, _update_running_fake)


def batch_norm_update_running(mean: torch.Tensor | None, variance: torch.Tensor | None,
                              m: torch.Tensor, v: torch.Tensor, n: int,
                              decay_rate: float) -> None:
    """Move the running statistics ``mean`` and ``variance`` (either may be None) in place
    toward a batch's mean ``m`` and biased variance ``v`` of ``n`` values per channel, as
    NNabla 1.39's kernel moves them, its factors rounded to float32:
    ``rm = d * rm + (1 - d) * m``, ``rv = d * rv + (1 - d) * v * n / (n - 1)``.  One operator
    (``stadyn_kernels::batch_norm_nnabla_update_running``), run without gradients.

    Example:
        >>> import torch
        >>> rm, rv = torch.zeros(1), torch.ones(1)
        >>> batch_norm_update_running(rm, rv, torch.tensor([2.0]), torch.tensor([1.0]), 2, 0.5)
        >>> rm.tolist(), rv.tolist()
        ([1.0], [1.5])
    """
    d = np.float32(decay_rate)
    with torch.no_grad():
        _update_running(mean, variance, m, v, float(d), float(np.float32(1.0) - d), int(n))


def _bn_eval_impl(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
             mean: torch.Tensor, var: torch.Tensor, eps: float) -> torch.Tensor:
    shape = _channel_shape(x)
    return _normalize(x, _opmath(x) - mean.reshape(shape), weight, bias, var, eps)


def _bn_eval_fake(x, weight, bias, mean, var, eps):
    return torch.empty_like(x)


def _bn_eval_setup(ctx, inputs, output):
    x, weight, bias, mean, var, eps = inputs
    ctx.save_for_backward(x, weight)
    # the running statistics themselves, not saved (which would refuse a backward after they
    # were written): NNabla 1.39's backward reads them as they are then (``bn/mean.d`` written
    # between a dynamic forward and the backward: the new values' gradients)
    ctx.running = (mean, var)
    ctx.eps, ctx.has_bias = eps, bias is not None
    ctx.bias_shape = None if bias is None else bias.shape
    ctx.bias_dtype = None if bias is None else bias.dtype


def _bn_eval_backward(ctx, gy):
    x, weight = ctx.saved_tensors
    mean, var = ctx.running
    need = ctx.needs_input_grad
    w, mean, var = _aten_params(x, None if weight is None else weight.reshape(-1),
                                mean.reshape(-1), var.reshape(-1))
    gx, gw, gb = torch.ops.aten.native_batch_norm_backward(
        gy, x, w, mean, var, None, None, False, ctx.eps,
        [need[0], weight is not None and need[1], ctx.has_bias and need[2]])
    return (gx, *_parameter_grads(ctx, gw, gb, weight), None, None, None)


_bn_train = kernel_op("stadyn_kernels::batch_norm_nnabla_train",
                      "(Tensor x, Tensor? weight, Tensor? bias, float eps, bool one_pass) "
                      "-> (Tensor, Tensor, Tensor)",
                      _bn_train_impl, _bn_train_fake, _bn_train_backward, _bn_train_setup)
_bn_eval = kernel_op("stadyn_kernels::batch_norm_nnabla_eval",
                     "(Tensor x, Tensor? weight, Tensor? bias, Tensor mean, Tensor var, "
                     "float eps) -> Tensor",
                     _bn_eval_impl, _bn_eval_fake, _bn_eval_backward, _bn_eval_setup)


def batch_norm_nnabla(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                      mean: torch.Tensor | None, var: torch.Tensor | None, train: bool,
                      eps: float, one_pass: bool = False
                      ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Batch normalisation of ``x`` ``(N, C, ...)`` over every axis but 1 in NNabla 1.39's order
    of operations (see the module docstring): ``(x - m) * weight / sqrt(v + eps) + bias``.
    With ``train`` ``m`` is ``sum(x) / n`` and ``v`` the mean squared deviation from it, both
    returned (shape ``(1, C, 1, ...)``, not differentiable: the gradient through them is in
    ``x``'s); without it ``m`` and ``v`` are ``mean`` and ``var`` and the two returned are None.
    ``one_pass`` computes ``v`` as NNabla 1.39's CPU kernel does, ``sum(x * x) / n - m * m``
    (which cancels where the values are large against their spread: 0 for ``[3, 3.001]``),
    and the gradient by NNabla's formula on it.
    ``weight``, ``bias``, ``mean`` and ``var`` hold one value per channel (any shape); weight
    and bias may be None.  Half-precision data is normalised in float32 and returned in its own
    type.  Differentiable to any order in ``x``, ``weight`` and ``bias``.

    Example:
        >>> import torch
        >>> x = torch.tensor([[1.0], [2.0], [3.0]])
        >>> y, m, v = batch_norm_nnabla(x, None, torch.full((1,), 0.5), None, None, True, 1e-5)
        >>> float(y[1, 0]), float(m), float(v)
        (0.5, 2.0, 0.6666666865348816)
    """
    if train:
        return _bn_train(x, weight, bias, float(eps), bool(one_pass))
    return _bn_eval(x, weight, bias, mean, var, float(eps)), None, None

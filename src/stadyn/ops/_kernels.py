"""Kernel choices for ops, where the default ATen kernel is measurably slower or rounds
otherwise than the framework the op follows.

The choice is made inside an op's implementation, so a dynamic graph, a static plan (the trace
records the chosen kernel) and a compiled step all run the same kernel and give the same numbers.

Affine products on the CPU
    ATen computes an fp32 ``x @ W + b`` on the CPU with MKL's ``sgemm``.  For the wide, short
    products of a classifier head (batch 16, 8192 x 1024) oneDNN's matmul is about twice as
    fast on AMD Zen 4 (where MKL takes a slower code path) and ~1.3x on larger batches; for small
    products its per-call cost loses.  :func:`linear` therefore sends fp32 CPU products of at
    least :data:`ONEDNN_MIN_MACS` multiply-adds to oneDNN (forward and the input gradient; the
    weight gradient stays an ``mm``, which the static plan writes into a kept buffer, and an
    eager backward into the weight's gradient buffer, :func:`stadyn.graph.eager_grad_out`).

Hyperbolic tangent on the CPU
    ATen's fp32 ``tanh`` calls MKL's vector math library, which on AMD CPUs runs a generic path:
    ~2.3 ns per element on 2 threads, against ~0.4 ns on one thread for NumPy's own AVX-512
    ``tanh`` (both within 2 ulp of the exact value).  :func:`tanh` runs contiguous fp32 CPU
    tensors of at least :data:`NUMPY_TANH_MIN_ELEMENTS` elements through NumPy; its gradient is
    ATen's ``tanh_backward``.  (bf16 tensors stay with ATen: converting them to fp32 and back
    around NumPy's loop measured slower inside a training step.)

Average pooling over small tiles
    ATen's ``avg_pool2d`` on NCHW tensors with small planes (16 x 512 x 8 x 8, 2x2 windows) takes
    ~0.5-0.9 ms forward and as much backward on this CPU.  When the windows tile the plane (window
    = stride, no padding) and the plane is small, each output is a fixed weighted sum of the
    plane, so :func:`average_pool_tiles` computes the pooling as one matrix product with a
    constant ``(plane, pooled plane)`` matrix of ``1 / window`` entries (and its gradient as the
    transposed product): ~4x faster, exact to rounding (the weights are powers of two for 2x2).

Batch normalisation in NNabla's order
    ATen's fused CPU kernel normalises as ``x * scale + shift`` (``scale = gamma / std``,
    ``shift = beta - mean * scale``), so an element equal to the batch mean comes out as ``beta``
    plus a rounding error (+-1e-8) whose sign a following ``binary_tanh`` turns into +-1.
    NNabla 1.39's CPU kernel computes ``(x - mean) * gamma / std + beta``, exactly ``beta``
    there.  :func:`batch_norm_nnabla` computes the forward in that order (composite ATen ops
    were ~3x slower than the fused kernel forward and backward together, their autograd
    backward being most of it) and takes the gradient from ATen's fused
    ``native_batch_norm_backward``, so it costs about what ATen's kernel does.

Half-precision convolutions on CPUs without oneDNN's half kernels
    ATen runs a bf16 or fp16 CPU convolution in oneDNN only where the CPU has the instructions
    for it (AVX-512 BW/VL/DQ or AVX-NE-CONVERT for bf16); elsewhere (an AVX2-only AMD EPYC) it
    falls back to an unvectorised im2col convolution, ~15x slower than fp32 (one epoch of the
    NNabla tutorial's CNN on 320 digits: 170 s in bf16, 22 s in fp32).  There
    :func:`convolution` convolves the same half values in fp32 and rounds the result to the half
    type once: the numbers of a half kernel that accumulates in fp32 (the product of two bf16
    or fp16 numbers is exact in fp32), to the order of the sums.

The figures are in ``docs/performance.md``.
"""

from __future__ import annotations

import functools
import math
import sys
from typing import Callable

import numpy as np
import torch

from ..graph import eager_grad_out

__all__ = ["linear", "convolution", "tanh", "average_pool_tiles", "batch_norm_nnabla", "kernel_op",
           "ONEDNN_MIN_MACS", "NUMPY_TANH_MIN_ELEMENTS", "POOL_TILES_MAX_ENTRIES"]

# Kept alive for as long as the process: a Library's registrations go when it is collected.
_LIBRARIES: list = []


def _outside_dynamo(fn: Callable) -> Callable:
    """``fn``, never traced into by TorchDynamo, as ``torch.library.custom_op`` wraps a kernel;
    but ``torch._dynamo`` is not imported for it (custom_op's wrapper imports it on the first
    call: 1.3-1.5 s of a program's start, docs/performance.md "Start-up").  Until something
    else has imported ``torch._dynamo`` no frame can be traced, so ``fn`` runs as it is."""
    disabled: list = []

    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        if not disabled:
            if "torch._dynamo" not in sys.modules:
                return fn(*args, **kwargs)
            disabled.append(torch.compiler.disable(fn))
        return disabled[0](*args, **kwargs)
    return kernel


def kernel_op(qualname: str, schema: str, impl: Callable, fake: Callable,
              backward: Callable | None = None, setup_context: Callable | None = None):
    """Define the torch operator ``qualname`` (``"stadyn_kernels::name"``) with ``schema``:
    ``impl`` its kernel on every device, ``fake`` its shape rule, ``backward`` and
    ``setup_context`` its autograd formula (as :func:`torch.library.register_autograd` takes
    them); returns the operator.  What ``torch.library.custom_op`` makes, but a first call does
    not import ``torch._dynamo`` (see :func:`_outside_dynamo`).

    Example:
        >>> import torch
        >>> tanh_numpy = torch.ops.stadyn_kernels.tanh_numpy.default   # made by kernel_op
        >>> tanh_numpy(torch.zeros(2))
        tensor([0., 0.])
    """
    namespace, name = qualname.split("::")
    lib = torch.library.Library(namespace, "FRAGMENT")
    _LIBRARIES.append(lib)
    lib.define(name + schema)
    lib.impl(name, _outside_dynamo(impl), "CompositeExplicitAutograd")
    torch.library.register_fake(qualname, fake, lib=lib)
    if backward is not None:
        torch.library.register_autograd(qualname, backward, setup_context=setup_context, lib=lib)
    return getattr(getattr(torch.ops, namespace), name).default


#: The smallest product (batch x inputs x outputs multiply-adds) sent to oneDNN.
ONEDNN_MIN_MACS = 1 << 24

_linear_pointwise = getattr(getattr(torch.ops, "mkldnn", None), "_linear_pointwise", None)


def _onednn_ok(x: torch.Tensor, w: torch.Tensor) -> bool:
    # the size test first: it is what turns small (overhead-bound) products away
    return (x.dim() == 2 and x.shape[0] * x.shape[1] * w.shape[1] >= ONEDNN_MIN_MACS
            and x.dtype == torch.float32 and w.dtype == torch.float32
            and x.device.type == "cpu" and _linear_onednn is not None
            and torch.backends.mkldnn.enabled)


def _linear_onednn_impl(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None
                        ) -> torch.Tensor:
    # a gradient can arrive as a broadcast view (the gradient of a sum); oneDNN reads memory
    return _linear_pointwise(x.contiguous(), w.t(), b, "none", [], "")


def _linear_onednn_fake(x, w, b):
    return x.new_empty((x.shape[0], w.shape[1]))


def _linear_onednn_setup(ctx, inputs, output):
    x, w, b = inputs
    ctx.save_for_backward(x, w)
    ctx.has_bias = b is not None


def _linear_onednn_backward(ctx, g):
    x, w = ctx.saved_tensors
    gx = linear(g, w.t()) if ctx.needs_input_grad[0] else None
    gw = None
    if ctx.needs_input_grad[1]:
        # eagerly, into the weight's gradient buffer, which becomes its .grad: a fresh 32 MB
        # gradient of an 8192x1024 weight at every step costs ~8,000 page faults (~20 ms)
        out = eager_grad_out(w)
        gw = torch.mm(x.t(), g) if out is None else torch.mm(x.t(), g, out=out).detach()
    gb = g.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
    return gx, gw, gb


# An op of its own (not an autograd.Function around the private oneDNN op): traces record it as
# one opaque call, which inductor runs as is — its lowering of ``mkldnn._linear_pointwise``
# expects a constant, pre-packed weight.
_linear_onednn = None
if _linear_pointwise is not None and torch.backends.mkldnn.is_available():
    _linear_onednn = kernel_op("stadyn_kernels::linear_onednn",
                               "(Tensor x, Tensor w, Tensor? b) -> Tensor", _linear_onednn_impl,
                               _linear_onednn_fake, _linear_onednn_backward,
                               _linear_onednn_setup)


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ w + b`` for a matrix ``x`` of shape ``(batch, inputs)`` and ``w`` of shape
    ``(inputs, outputs)``, with the fastest kernel for its size and device (see the module
    docstring).  Differentiable to any order.

    Example:
        >>> import torch
        >>> linear(torch.ones(2, 3), torch.ones(3, 4), torch.zeros(4)).shape
        torch.Size([2, 4])
    """
    if _onednn_ok(x, w):
        return _linear_onednn(x, w, b)
    # What ``torch.nn.functional.linear(x, w.t(), b)`` runs for a matrix (addmm, or mm without
    # a bias, of ``w.t().t()``: ``w``'s own strides), without the two transposes, which a
    # trace records at every step of an unrolled recurrence.
    return torch.mm(x, w) if b is None else torch.addmm(b, x, w)


# ---------------------------------------------------------------------------------------------
# half-precision convolutions
# ---------------------------------------------------------------------------------------------
#: oneDNN's probe for each half type: whether this CPU has its kernels.
_HALF_PROBES = {torch.bfloat16: "_is_mkldnn_bf16_supported",
                torch.float16: "_is_mkldnn_fp16_supported"}


@functools.cache
def _cpu_lacks_half_kernels(dtype: torch.dtype) -> bool:
    """Whether ATen's CPU convolutions in the half type ``dtype`` fall back to its slow
    unvectorised kernel on this CPU (oneDNN is built in but its probe says the CPU lacks the
    instructions)."""
    probe = getattr(getattr(torch.ops, "mkldnn", None), _HALF_PROBES[dtype], None)
    return probe is not None and torch.backends.mkldnn.is_available() and not probe()


def convolution(conv: Callable, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None,
                *args) -> torch.Tensor:
    """``conv(x, w, b, *args)`` for a ``torch.nn.functional`` convolution ``conv``; a bf16 or
    fp16 CPU convolution on a CPU without oneDNN's kernels for that type is computed in fp32
    from the same values and rounded once (see the module docstring).  Differentiable to any
    order (the casts' gradients are casts).

    Example:
        >>> import torch, torch.nn.functional as TF
        >>> x = torch.ones(1, 2, 4, 4, dtype=torch.bfloat16)
        >>> w = torch.ones(3, 2, 3, 3, dtype=torch.bfloat16)
        >>> y = convolution(TF.conv2d, x, w, None, 1, 1)
        >>> y.dtype, y.shape, float(y[0, 0, 1, 1]), float(y[0, 0, 0, 0])
        (torch.bfloat16, torch.Size([1, 3, 4, 4]), 18.0, 8.0)
    """
    if x.device.type == "cpu" and x.dtype in _HALF_PROBES and _cpu_lacks_half_kernels(x.dtype):
        y = conv(x.float(), w.float(), None if b is None else b.float(), *args)
        return y.to(x.dtype)
    return conv(x, w, b, *args)


# ---------------------------------------------------------------------------------------------
# tanh
# ---------------------------------------------------------------------------------------------
#: The smallest tensor whose tanh NumPy computes (below it, the call overhead dominates).
NUMPY_TANH_MIN_ELEMENTS = 1 << 14


def _tanh_numpy_impl(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    np.tanh(x.detach().numpy(), out=y.numpy())
    return y


def _tanh_numpy_fake(x):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _tanh_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _tanh_backward(ctx, g):
    y, = ctx.saved_tensors
    return torch.ops.aten.tanh_backward(g, y)


_tanh_numpy = kernel_op("stadyn_kernels::tanh_numpy", "(Tensor x) -> Tensor", _tanh_numpy_impl,
                        _tanh_numpy_fake, _tanh_backward, _tanh_setup)


def tanh(x: torch.Tensor) -> torch.Tensor:
    """``tanh(x)`` with the fastest kernel for its size and device (see the module docstring).
    Differentiable to any order.

    Example:
        >>> import torch
        >>> float(tanh(torch.zeros(1)))
        0.0
    """
    if (x.device.type == "cpu" and x.dtype == torch.float32 and x.is_contiguous()
            and x.numel() >= NUMPY_TANH_MIN_ELEMENTS):
        return _tanh_numpy(x)
    return torch.tanh(x)


# ---------------------------------------------------------------------------------------------
# average pooling over tiles
# ---------------------------------------------------------------------------------------------
#: The largest pooling matrix (plane size x pooled plane size) average_pool_tiles builds; beyond
#: it the product's work (which grows with the square of the plane) loses to ATen's kernel.
POOL_TILES_MAX_ENTRIES = 4096


@functools.lru_cache(maxsize=64)
def _pool_matrix(sizes: tuple[int, ...], kernel: tuple[int, ...]) -> np.ndarray:
    out = tuple(s // k for s, k in zip(sizes, kernel))
    pooled = np.arange(math.prod(out)).reshape(out)
    for axis, k in enumerate(kernel):           # each input position's window
        pooled = np.repeat(pooled, k, axis=axis)
    matrix = np.zeros((math.prod(sizes), math.prod(out)), dtype=np.float64)
    matrix[np.arange(matrix.shape[0]), pooled.reshape(-1)] = 1.0 / math.prod(kernel)
    return matrix


def average_pool_tiles(x: torch.Tensor, kernel: tuple[int, ...]) -> torch.Tensor | None:
    """The mean over each ``kernel`` tile of the last ``len(kernel)`` axes of ``x``, as one
    matrix product, or None when that is not the faster way (the tiles must cover the plane
    exactly; see the module docstring).

    Example:
        >>> import torch
        >>> average_pool_tiles(torch.arange(16.0).reshape(1, 1, 4, 4), (2, 2))
        tensor([[[[ 2.5000,  4.5000],
                  [10.5000, 12.5000]]]])
    """
    n = len(kernel)
    sizes = tuple(x.shape[-n:])
    if not (x.is_floating_point() and x.dim() > n and all(s % k == 0 for s, k in zip(sizes, kernel))
            and math.prod(sizes) ** 2 // math.prod(kernel) <= POOL_TILES_MAX_ENTRIES):
        return None
    # The tensor is made per call (a few µs): one cached from a traced call would be a fake one.
    matrix = torch.as_tensor(_pool_matrix(sizes, tuple(kernel)), dtype=x.dtype, device=x.device)
    y = torch.mm(x.reshape(-1, math.prod(sizes)), matrix)
    return y.reshape(tuple(x.shape[:-n]) + tuple(s // k for s, k in zip(sizes, kernel)))


# ---------------------------------------------------------------------------------------------
# batch normalisation in NNabla's order
# ---------------------------------------------------------------------------------------------
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


def _shaped(g, like):
    """A per-channel gradient ``(C,)`` in the shape of the input it is for."""
    return None if g is None else g.reshape(like if isinstance(like, torch.Size) else like.shape)


def _opmath(x: torch.Tensor) -> torch.Tensor:
    # half-precision data is normalised in float32, as ATen's mixed-type kernel does
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


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
    ctx.save_for_backward(x, weight, mean, var)
    ctx.eps, ctx.has_bias, ctx.one_pass = eps, bias is not None, one_pass
    ctx.bias_shape = None if bias is None else bias.shape


def _bn_one_pass_backward(gy, x, weight, eps, need):
    """NNabla 1.39's gradient of its batch statistics (``BatchNormalization::
    backward_impl_batch``), term by term on the one-pass variance: ``dvar = sum(dxh * (x - m))
    * -0.5 * (v + eps)^-1.5``, ``dmean = -sum(dxh) / sqrt(v + eps) - 2 * dvar * sum(x - m) / n``,
    ``dx = dxh / sqrt(v + eps) + 2 * dvar * (x - m) / n + dmean / n`` with ``dxh = dy * gamma``."""
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


def _bn_train_backward(ctx, gy, _gmean, _gvar):
    x, weight, mean, var = ctx.saved_tensors
    need = ctx.needs_input_grad
    if ctx.one_pass:
        gx, gw, gb = _bn_one_pass_backward(gy, x, weight, ctx.eps,
                                           [need[0], need[1], ctx.has_bias and need[2]])
        return gx, _shaped(gw, weight), _shaped(gb, ctx.bias_shape), None, None
    invstd = torch.rsqrt(var + ctx.eps).reshape(-1)
    gx, gw, gb = torch.ops.aten.native_batch_norm_backward(
        gy, x, None if weight is None else weight.reshape(-1), None, None, mean.reshape(-1),
        invstd, True, ctx.eps, [need[0], weight is not None and need[1],
                                ctx.has_bias and need[2]])
    return gx, _shaped(gw, weight), _shaped(gb, ctx.bias_shape), None, None


def _bn_eval_impl(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
             mean: torch.Tensor, var: torch.Tensor, eps: float) -> torch.Tensor:
    shape = _channel_shape(x)
    return _normalize(x, _opmath(x) - mean.reshape(shape), weight, bias, var, eps)


def _bn_eval_fake(x, weight, bias, mean, var, eps):
    return torch.empty_like(x)


def _bn_eval_setup(ctx, inputs, output):
    x, weight, bias, mean, var, eps = inputs
    ctx.save_for_backward(x, weight, mean, var)
    ctx.eps, ctx.has_bias = eps, bias is not None
    ctx.bias_shape = None if bias is None else bias.shape


def _bn_eval_backward(ctx, gy):
    x, weight, mean, var = ctx.saved_tensors
    need = ctx.needs_input_grad
    gx, gw, gb = torch.ops.aten.native_batch_norm_backward(
        gy, x, None if weight is None else weight.reshape(-1), mean.reshape(-1),
        var.reshape(-1), None, None, False, ctx.eps,
        [need[0], weight is not None and need[1], ctx.has_bias and need[2]])
    return gx, _shaped(gw, weight), _shaped(gb, ctx.bias_shape), None, None, None


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

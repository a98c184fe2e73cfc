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

Half-precision products and convolutions on CPUs without oneDNN's half kernels
    ATen runs a bf16 or fp16 CPU convolution or matrix product in oneDNN only where the CPU has
    the instructions for it (AVX-512 BW/VL/DQ or AVX-NE-CONVERT for bf16); elsewhere (an
    AVX2-only AMD EPYC) it falls back to generic kernels: an unvectorised im2col convolution,
    ~15-60x slower than fp32 (one epoch of the NNabla tutorial's CNN on 320 digits: 170 s in
    bf16, 22 s in fp32), and a bf16 ``addmm`` of 16x8192 by 8192x1024 ~70x slower than fp32
    on one thread (``benchmarks/bf16_cpu_products.py``).  There :func:`convolution`,
    :func:`linear`, :func:`matrix_product` and :func:`matmul` compute on the same half values
    in fp32 and round the result to the half type once: the numbers of a half kernel that
    accumulates in fp32 (the product of two bf16 or fp16 numbers is exact in fp32), to the
    order of the sums.  A 2-d product is the operator ``stadyn_kernels::half_mm`` (with a bias,
    ``addmm``'s one rounding), which upcasts its operands a block of rows or columns at a time
    (a few MB of fp32, never a fresh copy of a 32 MB weight: that alone cost 30 ms in page
    faults; a large row-major right operand by blocks of rows, whose products it adds up in
    fp32) and has an ``out=`` form, so a static plan writes a large weight gradient into a
    buffer it keeps as it does with ATen's ``mm.out`` (:func:`stadyn.graph.register_product`).
    The choice follows the CPU (:func:`half_in_fp32`); the environment variable
    ``STADYN_CPU_HALF_KERNELS`` overrides it: ``fp32`` always computes this way, ``native``
    always runs ATen's half kernels, ``auto`` (the default) decides by oneDNN's probe.

The figures are in ``docs/performance.md``.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from typing import Callable

import numpy as np
import torch

from ..graph import eager_grad_out, register_product

__all__ = ["linear", "convolution", "matrix_product", "matmul", "half_in_fp32", "tanh",
           "average_pool_tiles", "batch_norm_nnabla", "kernel_op", "ONEDNN_MIN_MACS",
           "NUMPY_TANH_MIN_ELEMENTS", "POOL_TILES_MAX_ENTRIES", "HALF_KERNELS_ENV",
           "HALF_BLOCK_BYTES"]

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
              backward: Callable | None = None, setup_context: Callable | None = None,
              tags: tuple = ()):
    """Define the torch operator ``qualname`` (``"stadyn_kernels::name"``) with ``schema``:
    ``impl`` its kernel on every device, ``fake`` its shape rule, ``backward`` and
    ``setup_context`` its autograd formula (as :func:`torch.library.register_autograd` takes
    them), ``tags`` torch's operator tags (``torch.Tag.nondeterministic_seeded`` for an op
    that draws); returns the operator.  What ``torch.library.custom_op`` makes, but a first
    call does not import ``torch._dynamo`` (see :func:`_outside_dynamo`).

    Example:
        >>> import torch
        >>> tanh_numpy = torch.ops.stadyn_kernels.tanh_numpy.default   # made by kernel_op
        >>> tanh_numpy(torch.zeros(2))
        tensor([0., 0.])
    """
    namespace, name = qualname.split("::")
    lib = torch.library.Library(namespace, "FRAGMENT")
    _LIBRARIES.append(lib)
    lib.define(name + schema, tags=tuple(tags))
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
    if _half_product(x, w) and (b is None or (b.dim() == 1 and b.dtype == x.dtype)):
        return _half_mm(x, w, b)
    # What ``torch.nn.functional.linear(x, w.t(), b)`` runs for a matrix (addmm, or mm without
    # a bias, of ``w.t().t()``: ``w``'s own strides), without the two transposes, which a
    # trace records at every step of an unrolled recurrence.
    return torch.mm(x, w) if b is None else torch.addmm(b, x, w)


# ---------------------------------------------------------------------------------------------
# half-precision products and convolutions
# ---------------------------------------------------------------------------------------------
#: oneDNN's probe for each half type: whether this CPU has its kernels.
_HALF_PROBES = {torch.bfloat16: "_is_mkldnn_bf16_supported",
                torch.float16: "_is_mkldnn_fp16_supported"}
#: The environment variable that overrides the choice: ``auto``, ``fp32`` or ``native``.
HALF_KERNELS_ENV = "STADYN_CPU_HALF_KERNELS"
_HALF_CHOICES = ("auto", "fp32", "native")


@functools.cache
def _cpu_lacks_half_kernels(dtype: torch.dtype) -> bool:
    """Whether ATen's CPU convolutions and products in the half type ``dtype`` fall back to its
    slow generic kernels on this CPU (oneDNN is built in but its probe says the CPU lacks the
    instructions)."""
    probe = getattr(getattr(torch.ops, "mkldnn", None), _HALF_PROBES[dtype], None)
    return probe is not None and torch.backends.mkldnn.is_available() and not probe()


def half_in_fp32(dtype: torch.dtype) -> bool:
    """Whether a CPU product or convolution of ``dtype`` (bf16 or fp16) runs in fp32 on the
    upcast values, rounded once (see the module docstring): where this CPU lacks oneDNN's
    kernels for the type, unless ``STADYN_CPU_HALF_KERNELS`` says ``fp32`` (always) or
    ``native`` (never).  Read when a product runs or is traced: a static plan keeps the
    choice it was built with.

    Example (``True`` on an AVX2-only CPU, ``False`` on one with AVX-512 BF16, unless the
    variable says otherwise):
        >>> import torch
        >>> half_in_fp32(torch.bfloat16) in (True, False)
        True
    """
    choice = os.environ.get(HALF_KERNELS_ENV, "auto") or "auto"
    if choice == "auto":
        return _cpu_lacks_half_kernels(dtype)
    if choice not in _HALF_CHOICES:
        raise ValueError(f"{HALF_KERNELS_ENV}={choice!r}: expected one of "
                         f"{', '.join(_HALF_CHOICES)}")
    return choice == "fp32"


def _half_cpu(t: torch.Tensor) -> bool:
    return t.device.type == "cpu" and t.dtype in _HALF_PROBES and half_in_fp32(t.dtype)


def _half_product(a: torch.Tensor, b: torch.Tensor) -> bool:
    """A 2-d product of two CPU matrices of one half type, which runs in fp32 here."""
    return a.dim() == 2 and b.dim() == 2 and a.dtype == b.dtype and _half_cpu(a) \
        and b.device.type == "cpu"


#: The fp32 working memory a half product upcasts at a time (one block of the larger operand
#: and of the result): small enough to be reused memory, large enough for sgemm's speed.
HALF_BLOCK_BYTES = 1 << 22
_MIN_BLOCK = 16


def _half_mm_into(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None,
                  out: torch.Tensor) -> torch.Tensor:
    """``out = round(bias + a @ b)`` (``bias``: None or one value per column) with the products
    summed in fp32 and rounded once, upcasting blocks of memory the larger of ``a`` and ``b``
    holds contiguously: rows of a row-major ``b`` (each block's products added into an fp32
    sum: converting a strided block cost 4x the product), columns of a column-major ``b``
    (its transpose's rows), or rows of ``a``."""
    m, k = a.shape
    n = b.shape[1]
    bias32 = None if bias is None else bias.float()
    if k * n < m * k:
        step = max(_MIN_BLOCK, HALF_BLOCK_BYTES // (4 * (k + n)))
        b32 = b.float()
        for i in range(0, m, step):
            a32 = a[i:i + step].float()
            out[i:i + step].copy_(torch.mm(a32, b32) if bias32 is None
                                  else torch.addmm(bias32, a32, b32))
    elif b.stride(1) == 1 and n > 1:
        step = max(_MIN_BLOCK, HALF_BLOCK_BYTES // (4 * n))
        if step >= k:
            a32, b32 = a.float(), b.float()
            out.copy_(torch.mm(a32, b32) if bias32 is None else torch.addmm(bias32, a32, b32))
            return out
        a32 = a.float()
        total = torch.zeros((m, n)) if bias32 is None else bias32.expand(m, n).clone()
        for i in range(0, k, step):
            total.addmm_(a32[:, i:i + step], b[i:i + step].float())
        out.copy_(total)
    else:
        step = max(_MIN_BLOCK, HALF_BLOCK_BYTES // (4 * (k + m)))
        a32 = a.float()
        for j in range(0, n, step):
            b32 = b[:, j:j + step].float()
            out[:, j:j + step].copy_(torch.mm(a32, b32) if bias32 is None
                                     else torch.addmm(bias32[j:j + step], a32, b32))
    return out


def _half_mm_impl(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None
                  ) -> torch.Tensor:
    return _half_mm_into(a, b, bias, a.new_empty((a.shape[0], b.shape[1])))


def _half_mm_fake(a, b, bias=None):
    return a.new_empty((a.shape[0], b.shape[1]))


def _half_mm_out_impl(a, b, bias=None, *, out):
    return _half_mm_into(a, b, bias, out)


def _half_mm_out_fake(a, b, bias=None, *, out):
    return out


def _half_mm_setup(ctx, inputs, output):
    a, b, bias = inputs
    ctx.save_for_backward(a, b)
    ctx.has_bias = bias is not None


def _half_mm_backward(ctx, g):
    a, b = ctx.saved_tensors
    need = ctx.needs_input_grad
    ga = _half_mm(g, b.t()) if need[0] else None
    gb = _half_mm(a.t(), g) if need[1] else None
    # addmm's: the gradient summed over the rows, in the half type
    gbias = g.sum(0) if ctx.has_bias and need[2] else None
    return ga, gb, gbias


_half_mm = kernel_op("stadyn_kernels::half_mm", "(Tensor a, Tensor b, Tensor? bias=None) -> Tensor",
                     _half_mm_impl, _half_mm_fake, _half_mm_backward, _half_mm_setup)


def _define_out_form(qualname: str, schema: str, impl: Callable, fake: Callable):
    """The ``out=`` overload ``qualname`` (``"ns::name.out"``) of an operator ``kernel_op``
    made: no autograd formula (a plan's programs run it without gradients)."""
    namespace, name = qualname.split("::")
    lib = torch.library.Library(namespace, "FRAGMENT")
    _LIBRARIES.append(lib)
    lib.define(name + schema)
    lib.impl(name, _outside_dynamo(impl), "CompositeExplicitAutograd")
    torch.library.register_fake(qualname, fake, lib=lib)
    op, overload = name.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), op), overload)


_half_mm_out = _define_out_form(
    "stadyn_kernels::half_mm.out",
    "(Tensor a, Tensor b, Tensor? bias=None, *, Tensor(a!) out) -> Tensor(a!)",
    _half_mm_out_impl, _half_mm_out_fake)
register_product(_half_mm, _half_mm_out)


def matrix_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` for two matrices: ``torch.mm``, or for bf16/fp16 CPU matrices where
    :func:`half_in_fp32` says so, fp32 sums of the half values rounded once.  Differentiable to
    any order.

    Example:
        >>> import torch
        >>> a = torch.full((2, 3), 1.5, dtype=torch.bfloat16)
        >>> matrix_product(a, torch.ones(3, 4, dtype=torch.bfloat16))[0, 0]
        tensor(4.5000, dtype=torch.bfloat16)
    """
    return _half_mm(a, b, None) if _half_product(a, b) else torch.mm(a, b)


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``torch.matmul(a, b)`` (batched, broadcast), computed in fp32 from the same values and
    rounded once for bf16/fp16 CPU tensors where :func:`half_in_fp32` says so (ATen's generic
    bf16 ``bmm`` was ~30x slower than fp32 on an AVX2 CPU).  Differentiable to any order.

    Example:
        >>> import torch
        >>> a = torch.ones(2, 3, 4, dtype=torch.bfloat16)
        >>> y = matmul(a, torch.ones(2, 4, 5, dtype=torch.bfloat16))
        >>> y.dtype, y.shape, float(y[0, 0, 0])
        (torch.bfloat16, torch.Size([2, 3, 5]), 4.0)
    """
    if a.dtype == b.dtype and a.dim() >= 2 and b.dim() >= 2 and _half_cpu(a) \
            and b.device.type == "cpu":
        if a.dim() == 2 and b.dim() == 2:
            return _half_mm(a, b, None)
        return torch.matmul(a.float(), b.float()).to(a.dtype)
    return torch.matmul(a, b)


def convolution(conv: Callable, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None,
                *args) -> torch.Tensor:
    """``conv(x, w, b, *args)`` for a ``torch.nn.functional`` convolution ``conv``; a bf16 or
    fp16 CPU convolution where :func:`half_in_fp32` says so (a CPU without oneDNN's kernels for
    that type) is computed in fp32 from the same values and rounded once (see the module
    docstring).  Differentiable to any order (the casts' gradients are casts).

    Example:
        >>> import torch, torch.nn.functional as TF
        >>> x = torch.ones(1, 2, 4, 4, dtype=torch.bfloat16)
        >>> w = torch.ones(3, 2, 3, 3, dtype=torch.bfloat16)
        >>> y = convolution(TF.conv2d, x, w, None, 1, 1)
        >>> y.dtype, y.shape, float(y[0, 0, 1, 1]), float(y[0, 0, 0, 0])
        (torch.bfloat16, torch.Size([1, 3, 4, 4]), 18.0, 8.0)
    """
    if _half_cpu(x):
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
    y = matrix_product(x.reshape(-1, math.prod(sizes)), matrix)
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

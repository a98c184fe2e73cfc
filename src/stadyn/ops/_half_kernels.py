"""Half-precision (bf16, fp16) products and convolutions on CPUs without oneDNN's half
kernels, for the op kernels (:mod:`._kernels`).

ATen runs a bf16 or fp16 CPU convolution or matrix product in oneDNN only where the CPU has
the instructions for it (AVX-512 BW/VL/DQ or AVX-NE-CONVERT for bf16); elsewhere (an
AVX2-only AMD EPYC) it falls back to generic kernels: an unvectorised im2col convolution,
~15-60x slower than fp32 (one epoch of the NNabla tutorial's CNN on 320 digits: 170 s in
bf16, 22 s in fp32), and a bf16 ``addmm`` of 16x8192 by 8192x1024 ~70x slower than fp32
on one thread (``benchmarks/bf16_cpu_products.py``).  There :func:`convolution`,
:func:`._kernels.linear`, :func:`matrix_product` and :func:`matmul` compute on the same half values
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
import os
from typing import Callable

import torch

from ..graph import register_product
from ._kernel_op import _save_product_operands, define_out_form, kernel_op

__all__ = ["convolution", "matrix_product", "matmul", "half_in_fp32", "half_product", "half_mm",
           "HALF_KERNELS_ENV", "HALF_BLOCK_BYTES"]

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


def half_product(a: torch.Tensor, b: torch.Tensor) -> bool:
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


def _half_mm_backward(ctx, g):
    a, b = ctx.saved_tensors
    need = ctx.needs_input_grad
    ga = half_mm(g, b.t()) if need[0] else None
    gb = half_mm(a.t(), g) if need[1] else None
    # addmm's: the gradient summed over the rows, in the half type
    gbias = g.sum(0) if ctx.has_bias and need[2] else None
    return ga, gb, gbias


half_mm = kernel_op("stadyn_kernels::half_mm", "(Tensor a, Tensor b, Tensor? bias=None) -> Tensor",
                     _half_mm_impl, _half_mm_fake, _half_mm_backward, _save_product_operands)


_half_mm_out = define_out_form(
    "stadyn_kernels::half_mm.out",
    "(Tensor a, Tensor b, Tensor? bias=None, *, Tensor(a!) out) -> Tensor(a!)",
    _half_mm_out_impl, _half_mm_out_fake)
register_product(half_mm, _half_mm_out)


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
    return half_mm(a, b, None) if half_product(a, b) else torch.mm(a, b)


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
            return half_mm(a, b, None)
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

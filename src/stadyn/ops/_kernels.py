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
    :func:`batch_norm_nnabla` and the running statistics' update
    :func:`batch_norm_update_running` (:mod:`._batch_norm_kernel`).

Half-precision products and convolutions on CPUs without oneDNN's half kernels
    :func:`convolution`, :func:`linear`, :func:`matrix_product` and :func:`matmul` compute a
    bf16 or fp16 CPU product in fp32 from the same values, rounded once, where ATen's half
    kernels would fall back to slow generic ones (:mod:`._half_kernels`).

Op modules call these kernels from here; :func:`kernel_op` (:mod:`._kernel_op`) makes an
operator of a kernel.  The figures are in ``docs/performance.md``.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from ..graph import eager_grad_out
from ._batch_norm_kernel import batch_norm_nnabla, batch_norm_update_running
from ._half_kernels import convolution, half_in_fp32, half_mm, half_product, matmul, matrix_product
from ._kernel_op import _save_product_operands, kernel_op

__all__ = ["linear", "convolution", "matrix_product", "matmul", "half_in_fp32", "tanh",
           "average_pool_tiles", "batch_norm_nnabla", "batch_norm_update_running", "kernel_op",
           "ONEDNN_MIN_MACS", "NUMPY_TANH_MIN_ELEMENTS", "POOL_TILES_MAX_ENTRIES"]


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
                               _save_product_operands)


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
    if half_product(x, w) and (b is None or (b.dim() == 1 and b.dtype == x.dtype)):
        return half_mm(x, w, b)
    # What ``torch.nn.functional.linear(x, w.t(), b)`` runs for a matrix (addmm, or mm without
    # a bias, of ``w.t().t()``: ``w``'s own strides), without the two transposes, which a
    # trace records at every step of an unrolled recurrence.
    return torch.mm(x, w) if b is None else torch.addmm(b, x, w)


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

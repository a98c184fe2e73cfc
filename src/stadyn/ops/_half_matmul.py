"""NNabla 1.39's matrix product of float16 values on its CPU (``F.affine`` with
``rule="nnabla"`` in a ``cpu:half`` context).

NNabla's ``Affine`` is ``my = mx * mw`` with Eigen over its ``Half`` (affine.cpp:87-90), the
bias added row by row (``my.rowwise() += b``, :91-95); the backward is ``mdy * mw^T`` for
``dx``, ``mx^T * mdy`` for ``dW`` and ``mdy.colwise().sum()`` for ``db`` (:107-131).  Eigen
does not vectorise ``Half``, so each coefficient of a product is a fold over the inner axis
from zero: ``acc = acc + a[i, k] * b[k, j]``, ``Half * Half`` and ``Half + Half`` each
computed in float and rounded to float16 (src/nbla/half.cpp): the product is rounded, then
every partial sum; an inner axis longer than 2728 values is folded in Eigen's blocks
(:func:`depth_block`), each block's fold added to the result and rounded.  This was
established by matching NNabla 1.39's outputs bit for bit (forward, ``dx``, ``dW``; shapes up
to 64x784 by 784x100, inner sizes 2000, 4096 and 8192); the column sums of ``db`` are
NNabla's float16 fold (``ops/_half_sum.py``).

The fold is the operator ``stadyn_kernels::half_fold_affine`` (made by ``kernel_op``, so a
static plan records it as one call): a loop over the inner axis, each step one float16
multiplication of a column by a row and one float16 addition over the whole output (torch
computes a half operation in float and rounds once: the same numbers).
"""

from __future__ import annotations

from typing import Optional

import torch

from ._half_sum import fold_sum
from ._kernel_op import kernel_op

__all__ = ["fold_matmul", "fold_matmul_op", "fold_affine", "depth_block", "MAX_DEPTH"]


def fold_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` of two float16 matrices (or stacks of them, broadcast as ``torch.matmul``'s)
    as NNabla's CPU ``Half`` product: for each output value, ``a[i, k] * b[k, j]`` rounded to
    float16 and added to the partial sum in order of ``k`` from zero, rounding after each
    addition.  Not differentiable (see :func:`fold_affine`).

    Example:
        >>> import torch
        >>> a = torch.tensor([[2048.0, 1.0, 1.0]], dtype=torch.float16)
        >>> fold_matmul(a, torch.ones(3, 1, dtype=torch.float16)).tolist()   # 2048 + 1 is 2048
        [[2048.0]]
    """
    inner = a.shape[-1]
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    total = a.new_zeros(batch + (a.shape[-2], b.shape[-1]))
    if inner == 0 or total.numel() == 0:
        return total
    cols = a.movedim(-1, 0).contiguous()        # cols[k]: a[..., :, k]
    rows = b.movedim(-2, 0).contiguous()        # rows[k]: b[..., k, :]
    step = torch.empty_like(total)
    depth = depth_block(inner)
    for start in range(0, inner, depth):
        acc = total if start == 0 else torch.zeros_like(total)
        for k in range(start, min(inner, start + depth)):
            torch.mul(cols[k].unsqueeze(-1), rows[k].unsqueeze(-2), out=step)
            acc.add_(step)
        if start:
            total.add_(acc)                     # each block's fold added, rounded once
    return total


def _matmul_fake(a, b):
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return a.new_empty(batch + (a.shape[-2], b.shape[-1]))


#: :func:`fold_matmul` as one operator (``stadyn_kernels::half_fold_matmul``): a static plan's
#: trace records one call, not the fold's step per inner-axis value (a convolution's ``dW``
#: folds over every output position: 576 steps for a 28 x 28 image by a 5 x 5 kernel)
fold_matmul_op = kernel_op("stadyn_kernels::half_fold_matmul", "(Tensor a, Tensor b) -> Tensor",
                           fold_matmul, _matmul_fake)


#: Eigen's most inner-axis values in one block of a ``Half`` product on NNabla's CPU: its
#: ``computeProductBlockingSizes`` for an L1 data cache of 32 KiB and the scalar kernel's
#: 2 x 4 register block: ``((32768 - 2*4*2) / (2*2 + 4*2)) & ~7``.
MAX_DEPTH = 2728


def depth_block(inner: int) -> int:
    """The length of the blocks of the inner axis that NNabla's CPU ``Half`` product folds
    one at a time (each block from zero, then added to the running result): the whole axis
    up to :data:`MAX_DEPTH`, else Eigen's balanced block of that size rounded to its peeling
    of 8 (established on NNabla 1.39's outputs for inner sizes 4096 and 8192: 2056).

    Example:
        >>> depth_block(784), depth_block(4096), depth_block(8192)
        (784, 2056, 2056)
    """
    if inner <= MAX_DEPTH:
        return inner
    if inner % MAX_DEPTH == 0:
        return MAX_DEPTH
    return MAX_DEPTH - 8 * ((MAX_DEPTH - 1 - inner % MAX_DEPTH) // (8 * (inner // MAX_DEPTH + 1)))


def _affine_impl(x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
    y = fold_matmul(x, w)
    if bias is not None:
        y.add_(bias)                        # Half + Half per value, rounded once
    return y


def _affine_fake(x, w, bias):
    return x.new_empty((x.shape[0], w.shape[1]))


def _affine_setup(ctx, inputs, output) -> None:
    x, w, bias = inputs
    ctx.save_for_backward(x, w)
    ctx.has_bias = bias is not None


def _affine_backward(ctx, g):
    x, w = ctx.saved_tensors
    need = ctx.needs_input_grad
    g = g.contiguous()
    gx = _half_fold_affine(g, w.t(), None) if need[0] else None
    gw = _half_fold_affine(x.t(), g, None) if need[1] else None
    gb = fold_sum(g, [0], False) if ctx.has_bias and need[2] else None
    return gx, gw, gb


_half_fold_affine = kernel_op("stadyn_kernels::half_fold_affine",
                              "(Tensor x, Tensor w, Tensor? bias) -> Tensor",
                              _affine_impl, _affine_fake, _affine_backward, _affine_setup)


def fold_affine(x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor] = None
                ) -> torch.Tensor:
    """``x @ w + bias`` of float16 matrices (``bias`` a vector) as NNabla 1.39's CPU
    ``Affine`` in half precision (:func:`fold_matmul`, then the bias added and rounded once);
    differentiable: ``dx`` and ``dW`` are the same folds, ``db`` the float16 fold of the
    gradient's columns.

    Example:
        >>> import torch
        >>> x = torch.tensor([[2048.0, 1.0, 1.0]], dtype=torch.float16)
        >>> w = torch.ones(3, 2, dtype=torch.float16)
        >>> fold_affine(x, w, torch.tensor([1.0, 2.0], dtype=torch.float16)).tolist()
        [[2048.0, 2050.0]]
    """
    return _half_fold_affine(x, w, bias)

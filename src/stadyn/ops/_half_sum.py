"""NNabla 1.39's sum and mean of float16 values on its CPU (``F.sum``/``F.mean`` with
``rule="nnabla"`` in a ``cpu:half`` context).

NNabla's ``Sum`` moves the reduced axes last, in the order given, and sums each row with
Eigen's ``rowwise().sum()`` (src/nbla/function/generic/sum.cpp:118-124); its ``Half`` is no
type Eigen vectorises, so Eigen's reduction is a fold from the row's first value, and each
``Half + Half`` is ``Half(float(a) + float(b))`` (src/nbla/half.cpp:104-106): the sum is
rounded to float16 after every addition.  ``Mean`` divides that sum by the reduction size
made a ``Half`` (mean.cpp:29: an ``int`` divisor converts to ``Half``, so 5001 is 5000), and
its backward divides the gradient by the same ``Half``; ``ReduceMean`` (``F.reduce_mean``)
folds the same way but divides by the exact count; ``Sum``'s backward broadcasts the
gradient.

The fold is the operator ``stadyn_kernels::half_fold_sum`` (made by ``kernel_op``, so a
static plan records it as one call): on the CPU, NumPy's ``add.accumulate`` over float16
(NumPy adds float16 in float and rounds each partial sum: the same fold), one pass over the
values; elsewhere a loop over the reduced axis, each step one addition of the half type over
all the kept elements (torch adds half tensors in float and rounds once).
"""

from __future__ import annotations

import numpy as np
import torch

from ._kernels import kernel_op

__all__ = ["fold_sum", "fold_mean"]


def _fold_impl(x: torch.Tensor) -> torch.Tensor:
    rows, n = x.shape
    if n == 0:
        return x.new_zeros((rows,))
    if x.device.type == "cpu" and x.dtype == torch.float16:
        partial = np.add.accumulate(x.detach().contiguous().numpy(), axis=1)
        return torch.from_numpy(np.ascontiguousarray(partial[:, -1]))
    acc = x[:, 0].clone()
    for j in range(1, n):
        acc = acc + x[:, j]
    return acc


def _fold_fake(x):
    return x.new_empty((x.shape[0],))


def _fold_setup(ctx, inputs, output) -> None:
    ctx.n = inputs[0].shape[1]


def _fold_backward(ctx, g):
    return g.unsqueeze(1).expand(g.shape[0], ctx.n).contiguous()


_half_fold_sum = kernel_op("stadyn_kernels::half_fold_sum", "(Tensor x) -> Tensor",
                           _fold_impl, _fold_fake, _fold_backward, _fold_setup)


def _rows(x: torch.Tensor, axes: list) -> tuple[torch.Tensor, list]:
    """``x`` with its kept axes first and ``axes`` last (sorted), as a matrix of one
    row per kept element; and the kept axes' sizes."""
    keep = [a for a in range(x.ndim) if a not in axes]
    kept = [x.shape[a] for a in keep]
    n = 1
    for a in axes:
        n *= x.shape[a]
    width = 1
    for s in kept:
        width *= s
    return x.permute(*keep, *axes).reshape(width, n), kept


def _shaped(y: torch.Tensor, x: torch.Tensor, axes: list, kept: list, keepdims: bool):
    if keepdims:
        return y.reshape([1 if a in axes else x.shape[a] for a in range(x.ndim)])
    return y.reshape(kept)


def fold_sum(x: torch.Tensor, axes: list, keepdims: bool) -> torch.Tensor:
    """The sum of ``x`` over ``axes`` (normalised; NNabla sorts them) as NNabla's
    CPU ``Sum`` in half precision: a fold rounded to ``x``'s type after each addition.

    Example:
        >>> import torch
        >>> x = torch.tensor([[2048.0, 1.0, 1.0]], dtype=torch.float16)
        >>> fold_sum(x, [1], False).tolist()     # 2048 + 1 rounds to 2048, twice
        [2048.0]
    """
    axes = sorted(axes)                      # Sum sorts them (sum.hpp:54)
    rows, kept = _rows(x, axes)
    return _shaped(_half_fold_sum(rows), x, axes, kept, keepdims)


def fold_mean(x: torch.Tensor, axes: list, keepdims: bool, count_in_type: bool = True
              ) -> torch.Tensor:
    """:func:`fold_sum` divided by the reduction size, as NNabla's CPU ``Mean`` in half
    precision, which makes the size a value of ``x``'s type (``count_in_type``), or as its
    ``ReduceMean``, which divides by the exact count (``Half / long``: reduce_mean.cpp:41);
    the backward divides by the same value.

    Example:
        >>> import torch
        >>> x = torch.ones(1, 5001, dtype=torch.float16)
        >>> fold_mean(x, [1], False).tolist()    # 2048 / 5000 (5001 as float16)
        [0.40966796875]
        >>> fold_mean(x, [1], False, count_in_type=False).tolist()    # 2048 / 5001
        [0.409423828125]
    """
    n = 1
    for a in axes:
        n *= x.shape[a]
    size = float(torch.tensor(float(n), dtype=x.dtype)) if count_in_type else float(n)
    return fold_sum(x, axes, keepdims) / size

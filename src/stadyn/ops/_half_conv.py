"""NNabla 1.39's 2-d convolution of float16 values on its CPU (``F.convolution`` with
``rule="nnabla"`` in a ``cpu:half`` context).

NNabla's CPU ``Convolution`` works one sample at a time (convolution.cpp:178-196): it unfolds
the sample into a column matrix (rows ``(channel, ky, kx)``, columns the output positions),
multiplies each group's kernel matrix by it with Eigen over its ``Half`` (the fold of
``ops/_half_matmul.py``: every product and partial sum rounded to float16) and adds the bias
to each channel, rounded once.  Its backward (:244-279), per sample again: ``dx`` is the fold
``W^T dy`` into a column matrix, which ``col2im`` adds into the zeroed image row by row of the
column matrix (im2col-internal.hpp:61-88: a pixel takes its contributions in the order of
``(ky, kx)``, each addition rounded); ``dW += dy col^T`` and ``db += dy.rowwise().sum()``,
each sample's fold added to the running sum and rounded.  Matched bit for bit against NNabla
1.39 (groups, stride, dilation, padding, bias) before this kernel was written.

Here the samples and groups are batched in one fold (they are independent), and the
operator ``stadyn_kernels::half_fold_conv2d`` (``kernel_op``) carries the backward, whose
folds are each one operator too (``fold_matmul_op``: a static plan's trace records one call,
not ``dW``'s fold one step per output position).
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as TF

from ._half_matmul import fold_matmul, fold_matmul_op
from ._half_sum import fold_sum
from ._kernel_op import kernel_op

__all__ = ["fold_conv2d"]


def _columns(x, w, stride, pad, dilation, group):
    """The unfolded samples as ``(N, group, rows of a group, positions)`` and the kernel as
    ``(group, out channels of a group, rows of a group)``."""
    n = x.shape[0]
    col = TF.unfold(x, tuple(w.shape[2:]), dilation=dilation, padding=pad, stride=stride)
    return (col.reshape(n, group, -1, col.shape[-1]),
            w.reshape(group, w.shape[0] // group, -1))


def _out_size(x, w, stride, pad, dilation):
    return [(x.shape[2 + i] + 2 * pad[i] - dilation[i] * (w.shape[2 + i] - 1) - 1)
            // stride[i] + 1 for i in range(2)]


def _conv_impl(x, w, bias, stride, pad, dilation, group):
    col, wg = _columns(x, w, stride, pad, dilation, group)
    y = fold_matmul(wg.unsqueeze(0), col)               # (N, G, Co/G, positions)
    y = y.reshape(x.shape[0], w.shape[0], *_out_size(x, w, stride, pad, dilation))
    if bias is not None:
        y.add_(bias.reshape(-1, 1, 1))
    return y


def _conv_fake(x, w, bias, stride, pad, dilation, group):
    return x.new_empty((x.shape[0], w.shape[0], *_out_size(x, w, stride, pad, dilation)))


def _conv_setup(ctx, inputs, output) -> None:
    x, w, bias, stride, pad, dilation, group = inputs
    ctx.save_for_backward(x, w)
    ctx.geometry = (stride, pad, dilation, group)
    ctx.has_bias = bias is not None


def _image_grad(x, w, gg, stride, pad, dilation, group):
    """``col2im`` of the column gradient: each pixel adds its contributions in the order of
    the kernel offsets, rounding each addition."""
    wg = w.reshape(group, w.shape[0] // group, -1)
    # (N, G, rows, positions)
    cols = fold_matmul_op(wg.transpose(1, 2).unsqueeze(0).contiguous(), gg)
    n, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    ho, wo = _out_size(x, w, stride, pad, dilation)
    cols = cols.reshape(n, c, kh, kw, ho, wo)
    hp, wp = h + 2 * pad[0], wd + 2 * pad[1]
    # Each kernel offset adds to distinct pixels of the padded image (flat indices ``at``),
    # in place on the image itself (one ``index_add_`` an offset).
    img = x.new_zeros((n, c, hp * wp))
    oy = torch.arange(ho) * stride[0]
    ox = torch.arange(wo) * stride[1]
    for ky in range(kh):
        for kx in range(kw):
            at = ((oy + ky * dilation[0]).unsqueeze(1) * wp
                  + (ox + kx * dilation[1]).unsqueeze(0)).reshape(-1).to(x.device)
            img.index_add_(2, at, cols[:, :, ky, kx].reshape(n, c, -1))
    return img.reshape(n, c, hp, wp)[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + wd].contiguous()


def _conv_backward(ctx, g):
    x, w = ctx.saved_tensors
    stride, pad, dilation, group = ctx.geometry
    need = ctx.needs_input_grad
    n = x.shape[0]
    gg = g.contiguous().reshape(n, group, w.shape[0] // group, -1)
    gx = _image_grad(x, w, gg, stride, pad, dilation, group) if need[0] else None
    gw = None
    if need[1]:
        col, _ = _columns(x, w, stride, pad, dilation, group)
        per_sample = fold_matmul_op(gg, col.transpose(-1, -2).contiguous())     # (N, G, Co/G, rows)
        gw = fold_sum(per_sample.reshape(n, -1), [0], False).reshape(w.shape)
    gb = None
    if ctx.has_bias and need[2]:
        per_sample = fold_sum(g.reshape(n, w.shape[0], -1), [2], False)
        gb = fold_sum(per_sample, [0], False)
    return gx, gw, gb, None, None, None, None


_half_fold_conv2d = kernel_op(
    "stadyn_kernels::half_fold_conv2d",
    "(Tensor x, Tensor w, Tensor? bias, int[] stride, int[] pad, int[] dilation, int group)"
    " -> Tensor", _conv_impl, _conv_fake, _conv_backward, _conv_setup)


def fold_conv2d(x: torch.Tensor, w: torch.Tensor, bias: Optional[torch.Tensor], stride,
                pad, dilation, group: int) -> torch.Tensor:
    """The 2-d convolution of float16 ``x`` ``(N, C, H, W)`` by ``w`` ``(Co, C / group, kh,
    kw)`` as NNabla 1.39's CPU ``Convolution`` in half precision: each output value a fold
    over ``(channel, ky, kx)`` of float16 products and partial sums, the bias added and
    rounded once; differentiable (``dx``, ``dW``, ``db`` as NNabla's backward rounds them).

    Example:
        >>> import torch
        >>> x = torch.tensor([[[[2048.0, 1.0, 1.0]]]], dtype=torch.float16)
        >>> w = torch.ones(1, 1, 1, 3, dtype=torch.float16)
        >>> fold_conv2d(x, w, None, [1, 1], [0, 0], [1, 1], 1).tolist()   # 2048 + 1 is 2048
        [[[[2048.0]]]]
    """
    return _half_fold_conv2d(x, w, bias, list(stride), list(pad), list(dilation), group)

"""NNabla's further convolutions: ``depthwise_deconvolution`` (the transpose of a depthwise
convolution), ``deformable_convolution`` (sampling positions moved by learned offsets,
optionally masked), ``fused_convolution`` (pad, convolution, batch normalisation, residual
and activation in one op), ``max_pooling_backward`` (max pooling's gradient as an op) and
``adaptive_separable_convolution`` (per-pixel separable kernels), as NNabla 1.39 computes them.

Example:
    >>> import stadyn as sd, stadyn.functions as F
    >>> F.depthwise_deconvolution(sd.Variable((2, 4, 5, 5)), sd.Variable((4, 3, 3)),
    ...                           divisor=2).shape
    (2, 2, 7, 7)
"""

from __future__ import annotations

import torch
import torch.nn.functional as TF

from . import _kernels as kernels
from ._nn import batch_normalization, convolution, max_pooling
from ._registry import op
from ._shape import pad as pad_op
from ._util import batch_flatten, ntuple

_C = "nn"
_DECONV = {1: TF.conv_transpose1d, 2: TF.conv_transpose2d, 3: TF.conv_transpose3d}


@op(3, category=_C, precision="half")
def depthwise_deconvolution(x, weight, bias=None, base_axis=1, pad=None, stride=None,
                            dilation=None, divisor=1):
    """Depthwise deconvolution (NNabla's): the transpose of a depthwise convolution.  Each
    input channel is deconvolved with its own kernel of ``weight`` ``(C, *kernel)``, and every
    ``divisor`` consecutive input channels are summed into one output channel (``C // divisor``
    of them; ``bias`` ``(C // divisor,)``).  Output size ``(i - 1) * s - 2 p + d (k - 1) + 1``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.depthwise_deconvolution(sd.Variable((2, 3, 8)), sd.Variable((3, 3)),
        ...                           stride=(2,)).shape
        (2, 3, 17)
    """
    n = weight.ndim - 1
    if n not in _DECONV:
        raise ValueError(f"depthwise_deconvolution: weight {tuple(weight.shape)} must be "
                         "(C, *kernel) with 1 to 3 kernel axes")
    x, batch = batch_flatten(x, base_axis)
    channels, divisor = x.shape[1], int(divisor)
    if weight.shape[0] != channels or divisor < 1 or channels % divisor:
        raise ValueError(f"depthwise_deconvolution: weight {tuple(weight.shape)} must have the "
                         f"input's {channels} channels first, and divisor={divisor} divide them")
    y = kernels.convolution(_DECONV[n], x, weight.unsqueeze(1), bias, ntuple(stride, n, 1),
                            ntuple(pad, n, 0), 0, channels // divisor, ntuple(dilation, n, 1))
    return y.reshape(tuple(batch) + tuple(y.shape[1:]))


def _deformable_checks(x, weight, offset, mask, pad, dg, group):
    if x.ndim != 4 or weight.ndim != 4:
        raise ValueError(f"deformable_convolution: x {tuple(x.shape)} must be (N, C, H, W) and "
                         f"weight {tuple(weight.shape)} (O, C // group, kh, kw): 2-D only")
    n, c, h, w = x.shape
    kh, kw = weight.shape[2:]
    if c % group or c % dg or weight.shape[1] * group != c or weight.shape[0] % group:
        raise ValueError(f"deformable_convolution: weight {tuple(weight.shape)} does not fit "
                         f"{c} input channels in {group} group(s) and {dg} deformable group(s)")
    if tuple(offset.shape) != (n, dg * 2 * kh * kw, h, w):
        raise ValueError(f"deformable_convolution: offset {tuple(offset.shape)} must be (N, "
                         f"deformable_group * 2 * kh * kw, H, W) = {(n, dg * 2 * kh * kw, h, w)}")
    if mask is not None and tuple(mask.shape) != (n, dg * kh * kw, h, w):
        raise ValueError(f"deformable_convolution: mask {tuple(mask.shape)} must be (N, "
                         f"deformable_group * kh * kw, H, W) = {(n, dg * kh * kw, h, w)}")
    if pad[0] >= (kh + 1) // 2 and pad[1] >= (kw + 1) // 2:
        raise ValueError("deformable_convolution: the centre of the kernel's offset is in the "
                         "padding area; make the offset bigger or the pad smaller (NNabla's "
                         "rule)")


@op(5, category=_C)
def deformable_convolution(x, weight, offset, mask=None, bias=None, base_axis=1, pad=None,
                           stride=None, dilation=None, group=1, deformable_group=1,
                           channel_last=False):
    """2-D deformable convolution (v2 with ``mask``), NNabla's: kernel tap ``(i, j)`` of output
    pixel ``(y, x)`` reads ``x`` bilinearly at ``(y * sh + i * dh - ph + dy, x * sw + j * dw - pw
    + dx)`` (zero outside the image), its offsets ``(dy, dx)`` and ``mask`` factor read from
    ``offset`` ``(N, deformable_group * 2 * kh * kw, H, W)`` and ``mask`` ``(N, deformable_group
    * kh * kw, H, W)`` at ``(y * sh, x * sw)`` -- the input's grid, as NNabla indexes them.
    ``weight`` ``(O, C // group, kh, kw)``, ``bias`` ``(O,)``.  Gradients for ``x``, ``weight``,
    ``offset``, ``mask`` and ``bias``.  ``channel_last`` and ``base_axis`` other than 1 are
    refused.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.arange(16.0).reshape(1, 1, 4, 4))
        >>> w = sd.Variable.from_numpy_array(np.ones((1, 1, 1, 1)))
        >>> off = np.zeros((1, 2, 4, 4), np.float32); off[:, 1] = 1.0     # one pixel right
        >>> with sd.auto_forward():
        ...     y = F.deformable_convolution(x, w, sd.Variable.from_numpy_array(off))
        >>> y.d[0, 0, 0].tolist()
        [1.0, 2.0, 3.0, 0.0]
    """
    if channel_last or int(base_axis) != 1:
        raise ValueError("deformable_convolution: channel_last=True and base_axis != 1 are not "
                         "supported")
    pad, stride, dilation = ntuple(pad, 2, 0), ntuple(stride, 2, 1), ntuple(dilation, 2, 1)
    dg, group = int(deformable_group), int(group)
    _deformable_checks(x, weight, offset, mask, pad, dg, group)
    n, c, h, w = x.shape
    kh, kw = weight.shape[2:]
    k = kh * kw
    ho = (h + 2 * pad[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (w + 2 * pad[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    rows = torch.arange(ho, device=x.device) * stride[0]
    cols = torch.arange(wo, device=x.device) * stride[1]
    off = offset[:, :, rows][:, :, :, cols].reshape(n, dg, k, 2, ho, wo)
    taps_h = (torch.arange(kh, device=x.device) * dilation[0]).repeat_interleave(kw)
    taps_w = (torch.arange(kw, device=x.device) * dilation[1]).repeat(kh)
    pos_h = (rows[None, :, None] + taps_h[:, None, None] - pad[0]).to(x.dtype) + off[:, :, :, 0]
    pos_w = (cols[None, None, :] + taps_w[:, None, None] - pad[1]).to(x.dtype) + off[:, :, :, 1]
    inside = (pos_h > -1) & (pos_w > -1) & (pos_h < h) & (pos_w < w)
    h0, w0 = pos_h.detach().floor(), pos_w.detach().floor()
    lh, lw = pos_h - h0, pos_w - w0
    image = x.reshape(n, dg, c // dg, h * w)
    value = 0
    for dy, dx, weight_ in ((0, 0, (1 - lh) * (1 - lw)), (0, 1, (1 - lh) * lw),
                            (1, 0, lh * (1 - lw)), (1, 1, lh * lw)):
        yy, xx = h0 + dy, w0 + dx
        ok = inside & (yy >= 0) & (yy <= h - 1) & (xx >= 0) & (xx <= w - 1)
        index = (yy.clamp(0, h - 1) * w + xx.clamp(0, w - 1)).long()
        index = index.reshape(n, dg, 1, k * ho * wo).expand(n, dg, c // dg, k * ho * wo)
        picked = image.gather(3, index).reshape(n, dg, c // dg, k, ho, wo)
        value = value + picked * (weight_ * ok)[:, :, None]
    if mask is not None:
        value = value * mask[:, :, rows][:, :, :, cols].reshape(n, dg, 1, k, ho, wo)
    columns = value.reshape(n, group, (c // group) * k, ho * wo)
    kernels = weight.reshape(group, weight.shape[0] // group, (c // group) * k)
    y = torch.einsum("gok,ngkp->ngop", kernels, columns).reshape(n, weight.shape[0], ho, wo)
    return y if bias is None else y + bias.reshape(1, -1, 1, 1)


_ACTIVATIONS = ("identity", "relu", "sigmoid", "tanh", "leaky_relu", "elu", "relu6")


def _activate(y, nonlinearity, args):
    args = list(args or [])
    if nonlinearity in ("identity", "", None):
        return y
    if nonlinearity in ("leaky_relu", "elu") and len(args) != 1:
        raise ValueError(f"fused_convolution: {nonlinearity} takes one nonlinearity_args value "
                         "(alpha)")
    if nonlinearity == "relu":
        return torch.relu(y)
    if nonlinearity == "sigmoid":
        return torch.sigmoid(y)
    if nonlinearity == "tanh":
        return torch.tanh(y)
    if nonlinearity == "leaky_relu":
        return TF.leaky_relu(y, float(args[0]))
    if nonlinearity == "elu":
        return TF.elu(y, float(args[0]))
    if nonlinearity == "relu6":
        return y.clamp(0.0, 6.0)
    raise ValueError(f"fused_convolution: nonlinearity {nonlinearity!r} is not one of "
                     f"{', '.join(_ACTIVATIONS)}")


@op(8, category=_C, precision="half")
def fused_convolution(x, weight, bias=None, beta=None, gamma=None, mean=None, variance=None,
                      z=None, base_axis=1, pad=None, stride=None, dilation=None, group=1,
                      channel_last=False, decay_rate=0.9, eps=1e-05, batch_stat=True,
                      nonlinearity="relu", nonlinearity_args=(), pad_mode="constant",
                      constant_value=0):
    """NNabla's ``fused_convolution``: pad, convolution, batch normalisation, ``+ z`` and an
    activation in one op, each but the convolution optional: ``pad`` is ``pad`` of the
    convolution when it has one value per spatial axis (and ``pad_mode`` is a zero
    ``"constant"``), else ``pad_width`` of :func:`pad` with ``pad_mode`` and
    ``constant_value``; batch normalisation runs when ``beta``, ``gamma``, ``mean`` and
    ``variance`` are given (on the channel axis; ``batch_stat`` updates ``mean``/``variance``
    in place as :func:`batch_normalization` does); ``nonlinearity``: ``"identity"``,
    ``"relu"``, ``"sigmoid"``, ``"tanh"``, ``"leaky_relu"``/``"elu"`` (``nonlinearity_args``:
    ``[alpha]``) or ``"relu6"``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.fused_convolution(sd.Variable((2, 3, 8, 8)), sd.Variable((4, 3, 3, 3)),
        ...                     pad=(1, 1)).shape
        (2, 4, 8, 8)
    """
    n = weight.ndim - 2
    pad = tuple(int(p) for p in (pad or (0,) * n))
    if len(pad) not in (n, 2 * n):
        raise ValueError(f"fused_convolution: pad {pad} must have {n} or {2 * n} values")
    direct = len(pad) == n and pad_mode == "constant" and float(constant_value) == 0.0
    h = x
    if not direct:
        width = tuple(p for p in pad for _ in range(2)) if len(pad) == n else pad
        if channel_last:
            h = h.movedim(-1, base_axis)
        h = pad_op.spec.impl(h, width, pad_mode, float(constant_value))
        if channel_last:
            h = h.movedim(base_axis, -1)
    h = convolution.spec.impl(h, weight, bias, base_axis, pad if direct else None, stride,
                              dilation, group, channel_last)
    stats = (beta, gamma, mean, variance)
    if any(s is not None for s in stats):
        if any(s is None for s in stats):
            raise ValueError("fused_convolution: give beta, gamma, mean and variance together "
                             "(batch normalisation), or none of them")
        axis = h.ndim - 1 if channel_last else int(base_axis)
        h = batch_normalization.spec.impl(h, beta, gamma, mean, variance, (axis,), decay_rate,
                                          eps, batch_stat)
    if z is not None:
        h = h + z
    return _activate(h, nonlinearity, nonlinearity_args)


def _pool_backward_shape(dy, x, kernel, stride=None, ignore_border=True, pad=None,
                         channel_last=False):
    return torch.empty(x.shape, dtype=dy.dtype, device="meta").requires_grad_(dy.requires_grad)


@op(2, category=_C, shape=_pool_backward_shape)
def max_pooling_backward(dy, x, kernel, stride=None, ignore_border=True, pad=None,
                         channel_last=False):
    """The gradient of :func:`max_pooling` (same arguments) w.r.t. ``x`` for the output
    gradient ``dy``: each window's ``dy`` added at its maximum (NNabla's internal
    ``max_pooling_backward``, there for higher-order gradients).  Backward: ``dy`` gets the
    gradient at the maxima (a max pooling of the positions); ``x`` gets none, as in NNabla.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([[[[1.0, 3.0], [2.0, 0.0]]]]))
        >>> dy = sd.Variable.from_numpy_array(np.array([[[[5.0]]]]))
        >>> with sd.auto_forward():
        ...     dx = F.max_pooling_backward(dy, x, (2, 2))
        >>> dx.d.tolist()
        [[[[0.0, 5.0], [0.0, 0.0]]]]
    """
    with torch.enable_grad():
        xt = x.detach().to(dy.dtype).requires_grad_(True)
        y = max_pooling.spec.impl(xt, kernel, stride, ignore_border, pad, channel_last)
        if tuple(y.shape) != tuple(dy.shape):
            raise ValueError(f"max_pooling_backward: dy {tuple(dy.shape)} must be max_pooling's "
                             f"output shape {tuple(y.shape)} for x {tuple(x.shape)}")
        (dx,) = torch.autograd.grad(y, xt, dy, create_graph=dy.requires_grad)
    return dx


@op(3, category=_C, precision="half")
def adaptive_separable_convolution(x, vertical_kernel, horizontal_kernel):
    """2-d convolution of ``x`` (``(B, C, H, W)``) with a separable kernel of its own at every
    output pixel and sample, shared by the channels (NNabla's ``adaptive_separable_convolution``;
    Niklaus et al., video frame interpolation): ``y[b, c, h, w] = sum_{j, i} Kv[b, j, h, w] *
    Kh[b, i, h, w] * x[b, c, h + j, w + i]``, of shape ``(B, C, H - Kv + 1, W - Kh + 1)`` for
    ``vertical_kernel`` ``(B, Kv, >=H_out, >=W_out)`` and ``horizontal_kernel`` ``(B, Kh,
    >=H_out, >=W_out)`` (NNabla documents ``(B, K, H, W)``; only the first ``H_out x W_out``
    pixels are read, and get gradients).  No padding: pad ``x`` first.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.arange(16.0).reshape(1, 1, 4, 4))
        >>> kv = sd.Variable.from_numpy_array(np.full((1, 2, 3, 3), 0.5))
        >>> kh = sd.Variable.from_numpy_array(np.full((1, 2, 3, 3), 0.5))
        >>> with sd.auto_forward():
        ...     y = F.adaptive_separable_convolution(x, kv, kh)
        >>> y.shape, float(y.d[0, 0, 0, 0])
        ((1, 1, 3, 3), 2.5)
    """
    if x.ndim != 4 or vertical_kernel.ndim != 4 or horizontal_kernel.ndim != 4:
        raise ValueError("adaptive_separable_convolution: x and both kernels must be 4-d "
                         "(B, C, H, W) and (B, K, H, W)")
    kv, kh = vertical_kernel.shape[1], horizontal_kernel.shape[1]
    ho, wo = x.shape[2] - kv + 1, x.shape[3] - kh + 1
    for name, k in (("vertical_kernel", vertical_kernel), ("horizontal_kernel", horizontal_kernel)):
        if k.shape[0] != x.shape[0] or k.shape[2] < ho or k.shape[3] < wo or ho < 1 or wo < 1:
            raise ValueError(f"adaptive_separable_convolution: {name} {tuple(k.shape)} must be "
                             f"(B={x.shape[0]}, K, >={ho}, >={wo}) for x {tuple(x.shape)} with "
                             f"kernel sizes {kv} x {kh}")
    vertical = vertical_kernel[:, :, :ho, :wo].unsqueeze(1)       # (B, 1, Kv, Ho, Wo)
    horizontal = horizontal_kernel[:, :, :ho, :wo].unsqueeze(1)   # (B, 1, Kh, Ho, Wo)
    rows = x.unfold(3, kh, 1).movedim(-1, 2)                       # (B, C, Kh, H, Wo)
    y = None
    for j in range(kv):
        term = (rows[:, :, :, j:j + ho] * horizontal).sum(2) * vertical[:, :, j]
        y = term if y is None else y + term
    return y

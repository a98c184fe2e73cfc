"""Neural-network layers as ops: affine, convolutions, pooling, normalisation, dropout, embed."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as TF

from ..graph import is_training
from . import _kernels as kernels
from ._cntk_draws import CNTKStream, _in, cntk_draw
from ._half_batch_norm import half_batch_norm
from ._half_conv import fold_conv2d
from ._half_matmul import fold_affine
from ._picks import cntk_max_pool
from ._random import _generator, _nnabla_cpu, nnabla_draw
from ._registry import op
from ._sequence_axis import from_base_axis
from ._util import batch_flatten, ntuple, pool_geometry

_C = "neural"

_CONV = {1: TF.conv1d, 2: TF.conv2d, 3: TF.conv3d}
_DECONV = {1: TF.conv_transpose1d, 2: TF.conv_transpose2d, 3: TF.conv_transpose3d}
_MAXPOOL = {1: TF.max_pool1d, 2: TF.max_pool2d, 3: TF.max_pool3d}
_AVGPOOL = {1: TF.avg_pool1d, 2: TF.avg_pool2d, 3: TF.avg_pool3d}


def _fold_rule(rule: str, x: torch.Tensor, w: torch.Tensor) -> bool:
    """Whether a product takes NNabla 1.39's float16 fold (``ops/_half_matmul.py``): the rule
    ``"nnabla"`` and float16 operands on the CPU (its CPU kernel); refuses an unknown rule."""
    if rule not in ("torch", "nnabla"):
        raise ValueError(f"rule={rule!r}: one of 'torch', 'nnabla'")
    return (rule == "nnabla" and x.dtype == torch.float16 and w.dtype == torch.float16
            and x.device.type == "cpu")


@op(3, category=_C, precision="half", sequence=from_base_axis())
def affine(x, weight, bias=None, base_axis=1, rule="torch"):
    """``y = x W + b`` over the axes from ``base_axis`` on (NNabla's affine).
    ``rule="nnabla"``: of float16 CPU operands, NNabla 1.39's CPU kernel, each product and
    partial sum rounded to float16 (``ops/_half_matmul.py``; what ``cpu:half`` computes).

    ``x`` is read as a matrix of shape ``(prod(x.shape[:base_axis]), prod(x.shape[base_axis:]))``;
    ``weight`` has shape ``(that second size, *out_shape)``; the output shape is
    ``x.shape[:base_axis] + out_shape``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.affine(sd.Variable((16, 512, 4, 4)), sd.Variable((8192, 1024)), sd.Variable((1024,))).shape
        (16, 1024)
    """
    batch = tuple(x.shape[:base_axis])
    out_shape = tuple(weight.shape[1:])
    # Operands already of the product's shapes are not reshaped: a reshape to the same shape
    # is one more node to trace at every step of an unrolled recurrence.
    w = weight if weight.ndim == 2 else weight.reshape(weight.shape[0], -1)
    b = bias if bias is None or bias.ndim == 1 else bias.reshape(-1)
    flat = x.ndim == 2 and base_axis == 1
    x2 = x if flat else x.reshape(math.prod(batch), -1)
    if _fold_rule(rule, x2, w):
        y = fold_affine(x2, w, b if b is None or b.dtype == x2.dtype else b.to(x2.dtype))
    else:
        y = kernels.linear(x2, w, b)
    return y if flat and weight.ndim == 2 else y.reshape(batch + out_shape)


def _to_channel_first(x, channel_last, n):
    if not channel_last:
        return x
    return x.movedim(-1, x.ndim - n - 1)


def _from_channel_first(y, channel_last, n):
    if not channel_last:
        return y
    return y.movedim(y.ndim - n - 1, -1)


@op(3, category=_C, precision="half", sequence=from_base_axis())
def convolution(x, weight, bias=None, base_axis=1, pad=None, stride=None, dilation=None, group=1,
                channel_last=False, rule="torch"):
    """N-d convolution (cross-correlation) with ``weight`` of shape
    ``(out_channels, in_channels // group, *kernel)``; ``pad``, ``stride`` and ``dilation`` are per
    spatial axis (defaults 0, 1, 1).  Axes before ``base_axis`` are batch axes.
    ``rule="nnabla"``: a 2-d convolution of float16 CPU operands (channels first) as NNabla
    1.39's CPU kernel, each product and partial sum rounded to float16
    (``ops/_half_conv.py``; what ``cpu:half`` computes).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.convolution(sd.Variable((16, 1, 8, 8)), sd.Variable((64, 1, 3, 3)), pad=(1, 1)).shape
        (16, 64, 8, 8)
    """
    n = weight.ndim - 2
    if channel_last:
        weight = weight.movedim(-1, 1)
    x = _to_channel_first(x, channel_last, n)
    x, batch = batch_flatten(x, base_axis)
    if _fold_rule(rule, x, weight) and n == 2 and not channel_last:
        y = fold_conv2d(x, weight, bias if bias is None else bias.to(x.dtype),
                        ntuple(stride, n, 1), ntuple(pad, n, 0), ntuple(dilation, n, 1), group)
    else:
        y = kernels.convolution(_CONV[n], x, weight, bias, ntuple(stride, n, 1),
                                ntuple(pad, n, 0), ntuple(dilation, n, 1), group)
    y = y.reshape(tuple(batch) + tuple(y.shape[1:]))
    return _from_channel_first(y, channel_last, n)


@op(3, category=_C, precision="half", sequence=from_base_axis())
def depthwise_convolution(x, weight, bias=None, base_axis=1, pad=None, stride=None,
                          dilation=None, multiplier=1):
    """Depthwise convolution: each input channel ``c`` convolved with its own ``multiplier``
    kernels, giving output channels ``c * multiplier ... c * multiplier + multiplier - 1``;
    ``weight`` has NNabla's shape ``(in_channels * multiplier, *kernel)``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.depthwise_convolution(sd.Variable((2, 3, 8, 8)), sd.Variable((6, 3, 3)),
        ...                         multiplier=2).shape
        (2, 6, 6, 6)
    """
    n = weight.ndim - 1
    x, batch = batch_flatten(x, base_axis)
    y = kernels.convolution(_CONV[n], x, weight.unsqueeze(1), bias, ntuple(stride, n, 1),
                            ntuple(pad, n, 0), ntuple(dilation, n, 1), x.shape[1])
    return y.reshape(tuple(batch) + tuple(y.shape[1:]))


@op(3, category=_C, precision="half", sequence=from_base_axis())
def deconvolution(x, weight, bias=None, base_axis=1, pad=None, stride=None, dilation=None,
                  group=1, channel_last=False, output_padding=None):
    """Transposed convolution with ``weight`` of shape ``(in_channels, out_channels // group,
    *kernel)``; output size ``(i - 1) * s - 2 p + d (k - 1) + 1 + output_padding``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.deconvolution(sd.Variable((2, 8, 4, 4)), sd.Variable((8, 3, 2, 2)), stride=(2, 2)).shape
        (2, 3, 8, 8)
    """
    n = weight.ndim - 2
    if channel_last:
        weight = weight.movedim(-1, 1)
    x = _to_channel_first(x, channel_last, n)
    x, batch = batch_flatten(x, base_axis)
    y = kernels.convolution(_DECONV[n], x, weight, bias, ntuple(stride, n, 1), ntuple(pad, n, 0),
                            ntuple(output_padding, n, 0), group, ntuple(dilation, n, 1))
    y = y.reshape(tuple(batch) + tuple(y.shape[1:]))
    return _from_channel_first(y, channel_last, n)


def _explicit_pad(x, n, pad, extra, value):
    widths = []
    for p, e in reversed(list(zip(pad, extra))):
        widths += [p, p + e]
    return TF.pad(x, widths, value=value)


@op(1, category=_C)
def max_pooling(x, kernel, stride=None, ignore_border=True, pad=None, channel_last=False,
                rule="torch"):
    """Max over windows of the last ``len(kernel)`` axes (``stride`` defaults to ``kernel``).

    With ``ignore_border`` the output size is ``(W + 2P - K) // S + 1``; without it (NNabla's
    rule) ``(W + P - 1) // S + 1``, and the last windows may hang over the border.  Padding never
    wins the max.  A NaN in a window is its max (as in NNabla 1.39) unless ``rule="cntk"``:
    then, as CNTK 2.7, NaN is passed by and a window of NaN only gives -inf, with no gradient.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.max_pooling(sd.Variable((1, 1, 7, 7)), (2, 2)).shape, F.max_pooling(sd.Variable((1, 1, 7, 7)), (2, 2), ignore_border=False).shape
        ((1, 1, 3, 3), (1, 1, 4, 4))
    """
    n0 = len(kernel)
    x = _to_channel_first(x, channel_last, n0)
    n, kernel, stride, pad, sizes, out, extra = pool_geometry(x, kernel, stride, ignore_border,
                                                             pad)
    lead = tuple(x.shape[:-n])
    x3 = x.reshape((-1, 1) + sizes) if x.ndim != n + 2 else x
    if rule not in ("torch", "cntk"):
        raise ValueError(f"max_pooling: rule={rule!r}: 'torch' or 'cntk'")
    pool = _MAXPOOL[n] if rule == "torch" else cntk_max_pool
    if any(extra) or any(2 * p > k for p, k in zip(pad, kernel)):
        x3 = _explicit_pad(x3, n, pad, extra, float("-inf"))
        y = pool(x3, kernel, stride, (0,) * n)
    else:
        y = pool(x3, kernel, stride, pad)
    y = y.reshape(lead + tuple(y.shape[-n:]))
    return _from_channel_first(y, channel_last, n0)


@op(1, category=_C)
def average_pooling(x, kernel, stride=None, ignore_border=True, pad=None, channel_last=False,
                    including_pad=True):
    """Mean over windows of the last ``len(kernel)`` axes (sizes as :func:`max_pooling`).

    ``including_pad`` divides by the window clipped to the padded input; otherwise by the part
    inside the input.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.average_pooling(sd.Variable((16, 512, 8, 8)), (2, 2)).shape
        (16, 512, 4, 4)
    """
    n0 = len(kernel)
    x = _to_channel_first(x, channel_last, n0)
    n, kernel, stride, pad, sizes, out, extra = pool_geometry(x, kernel, stride, ignore_border,
                                                             pad)
    lead = tuple(x.shape[:-n])
    if stride == kernel and not any(pad) and not any(extra):
        y = kernels.average_pool_tiles(x, kernel)
        if y is not None:
            return _from_channel_first(y, channel_last, n0)
    x3 = x.reshape((-1, 1) + sizes) if x.ndim != n + 2 else x
    if not any(extra) and all(2 * p <= k for p, k in zip(pad, kernel)):
        y = _AVGPOOL[n](x3, kernel, stride, pad, False, including_pad)
    else:
        sums = _AVGPOOL[n](_explicit_pad(x3, n, pad, extra, 0.0), kernel, stride, 0, False, True)
        sums = sums * math.prod(kernel)
        counts = np.ones((1,) * 2, dtype=np.float64)
        for axis in range(n):
            c = window_counts(sizes[axis], out[axis], kernel[axis], stride[axis], pad[axis],
                              including_pad)
            counts = np.multiply.outer(counts, c)
        counts = counts.reshape((1, 1) + out)
        y = sums / torch.as_tensor(counts, dtype=sums.dtype, device=sums.device)
    y = y.reshape(lead + tuple(y.shape[-n:]))
    return _from_channel_first(y, channel_last, n0)


def window_counts(size, out, k, s, p, including_pad):
    """How many elements each of ``out`` pooling windows along one axis averages (NNabla's
    divisor): the window clipped to the padded input, or with ``including_pad=False`` to the
    input itself.

    Example:
        >>> window_counts(5, 3, 3, 2, 1, including_pad=False)
        array([2., 3., 2.])
    """
    starts = np.arange(out) * s - p
    ends = np.minimum(starts + k, size + p)
    if not including_pad:
        return (np.minimum(ends, size) - np.maximum(starts, 0)).astype(np.float64)
    return (ends - starts).astype(np.float64)


@op(1, category=_C)
def global_average_pooling(x):
    """Mean over all spatial axes (from axis 2 on), keeping them with size 1; an ``(N, C)`` input
    has no spatial axes and comes back unchanged.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.global_average_pooling(sd.Variable((2, 8, 5, 5))).shape
        (2, 8, 1, 1)
    """
    spatial = tuple(range(2, x.ndim))
    if not spatial:  # torch reads an empty ``dim`` as "every axis"
        return x.view_as(x)
    return torch.mean(x, dim=spatial, keepdim=True)


def _check_bn_statistics(x, tensors, axes) -> None:
    """One value per normalised channel in beta, gamma, mean and variance.  Checked by the shape
    rule, which runs no kernel; a running kernel has ATen's own check."""
    channels = math.prod(x.shape[int(a) % x.ndim] for a in axes)
    for name, t in zip(("beta", "gamma", "mean", "variance"), tensors):
        if t is not None and t.numel() != channels:
            raise ValueError(f"{name} has {t.numel()} elements for {channels} normalised "
                             f"channel(s) on axes {tuple(int(a) % x.ndim for a in axes)}")


def _bn_shape(x, beta, gamma, mean, variance, axes=(1,), decay_rate=0.9, eps=1e-05,
              batch_stat=True, output_stat=False, time_constant=None, rule="torch"):
    # A shape rule (not the kernel on meta tensors): torch refuses one value per channel while
    # training, but a static graph may be built on a placeholder batch of 1.
    _check_bn_statistics(x, (beta, gamma, mean, variance), axes)
    y = torch.empty_like(x)
    if not output_stat:
        return y
    stat = [x.shape[i] if i in [int(a) % x.ndim for a in axes] else 1 for i in range(x.ndim)]
    return y, x.new_empty(stat), x.new_empty(stat)


@op(5, category=_C, shape=_bn_shape, precision="mixed")
def batch_normalization(x, beta, gamma, mean, variance, axes=(1,), decay_rate=0.9, eps=1e-05,
                        batch_stat=True, output_stat=False, time_constant=None, rule="torch"):
    """Batch normalisation over every axis but ``axes`` (NNabla's argument order).

    ``beta``, ``gamma``, ``mean`` and ``variance`` have size 1 on the reduced axes (``(1, C, 1,
    1)`` for images).  With ``batch_stat`` the batch's statistics normalise and the running ones
    are updated in place: ``r = decay_rate * r + (1 - decay_rate) * batch`` with the unbiased batch
    variance; without it the running statistics are used.  ``output_stat`` also returns the batch
    mean and (biased) variance.

    The batch variance is the mean squared deviation from the batch mean (two passes, as
    ``torch.var``), unless ``rule="nnabla"``: NNabla 1.39's CPU kernel's one pass,
    ``mean(x * x) - mean(x) ** 2``, which cancels where the values are large against their
    spread (``[3.0, 3.001]`` normalises to +-0.15810 with ``eps=1e-5``, not +-0.15616), with
    NNabla's gradient formula on it; ``stadyn.compat.nnabla`` passes it.  Of float16 CPU data
    (NNabla's ``cpu:half``) that rule is NNabla's ``Half`` kernel, every step rounded to
    float16 and the running statistics' new values too (``ops/_half_batch_norm.py``).  Under that rule
    batch statistics over several ``axes`` leave the running ones as they are, as NNabla's
    (its adapter updates copies of them).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> s = (1, 3, 1, 1)
        >>> F.batch_normalization(sd.Variable((4, 3, 5, 5)), sd.Variable(s), sd.Variable(s), sd.Variable(s), sd.Variable(s)).shape
        (4, 3, 5, 5)
    """
    if rule not in ("torch", "nnabla"):
        raise ValueError(f"batch_normalization: rule={rule!r}: 'torch' or 'nnabla'")
    one_pass = rule == "nnabla"
    axes = [int(a) % x.ndim for a in axes]
    if batch_stat is None:
        batch_stat = is_training()
    if one_pass and batch_stat and len(axes) > 1:
        # NNabla 1.39 normalises over several axes through BatchNormalizationInOutAdapter, which
        # hands its kernel transposed copies of the running statistics: it updates those, never
        # the user's (python/src/nnabla/normalization_functions.py, batch_normalization)
        mean = variance = None
    if time_constant is not None:
        decay_rate = math.exp(-x.shape[0] / time_constant) if time_constant > 0 else 0.0
    reduce = [a for a in range(x.ndim) if a not in axes]
    if batch_stat and math.prod(x.shape[a] for a in reduce) == 1:
        return _bn_single_sample(x, beta, gamma, mean, variance, decay_rate, eps, output_stat)
    if axes != [1]:
        reduce = [a for a in range(x.ndim) if a not in axes]
        perm = reduce + axes
        moved = x.permute(*perm)
        flat = moved.reshape(math.prod(moved.shape[:len(reduce)]), -1)
        y = _bn_core(flat, beta, gamma, mean, variance, decay_rate, eps, batch_stat, one_pass)
        y = y.reshape(moved.shape).permute(*np.argsort(perm).tolist())
    else:
        if output_stat and batch_stat and one_pass and _half_cpu(x):
            # NNabla's Half kernel's own statistics, their gradients in its backward
            y, m, v = half_batch_norm(x, gamma, beta, mean, variance, True, eps, decay_rate)
            shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
            return y, m.reshape(shape), v.reshape(shape)
        y = _bn_core(x, beta, gamma, mean, variance, decay_rate, eps, batch_stat, one_pass)
    if not output_stat:
        return y
    batch_mean = torch.mean(x, dim=reduce, keepdim=True)
    if one_pass:
        return y, batch_mean, torch.mean(x * x, dim=reduce, keepdim=True) - batch_mean * batch_mean
    return y, batch_mean, torch.var(x, dim=reduce, keepdim=True, unbiased=False)


def _bn_single_sample(x, beta, gamma, mean, variance, decay_rate, eps, output_stat):
    """Batch statistics of one value per channel (every axis a channel axis, or the others of
    size 1), which torch's kernel refuses: the mean is ``x``, the variance 0, so the output is
    ``0 * gamma + beta`` (NNabla 1.39's, whose ``tensor_normalization`` over every axis gives
    zeros), and no gradient reaches ``x``.  The running mean moves toward ``x``; the running
    variance toward the unbiased variance of one value, NaN (as NNabla's)."""
    centred = x - x
    y = centred * (1.0 / math.sqrt(eps))
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    if mean is not None or variance is not None:
        with torch.no_grad():
            if mean is not None:
                mean.mul_(decay_rate).add_((1.0 - decay_rate) * x.detach().reshape(mean.shape))
            if variance is not None:
                variance.mul_(decay_rate).add_(float("nan"))
    if not output_stat:
        return y
    return y, x * 1.0, centred * centred


def _half_cpu(x) -> bool:
    """Whether ``x`` is float16 on the CPU (what NNabla's ``cpu:half`` kernels compute)."""
    return x.dtype == torch.float16 and x.device.type == "cpu"


def _bn_core(x, beta, gamma, mean, variance, decay_rate, eps, batch_stat, one_pass=False):
    """Batch normalisation of ``x`` ``(N, C, ...)`` over every axis but 1 in NNabla 1.39's
    order of operations, ``(x - m) * gamma / sqrt(v + eps) + beta`` (``kernels.batch_norm_nnabla``:
    an element equal to the mean gives exactly ``beta``, as in NNabla, where ATen's fused kernel
    leaves a rounding error whose sign a ``binary_tanh`` shows), the running statistics moved
    as NNabla moves them; ``one_pass``: the batch variance as NNabla computes it, and of
    float16 CPU data (a ``cpu:half`` context) NNabla's ``Half`` kernel, every step rounded
    (``ops/_half_batch_norm.py``), the running statistics' new values rounded to float16.
    """
    if one_pass and _half_cpu(x):
        return half_batch_norm(x, gamma, beta, mean, variance, bool(batch_stat), eps,
                               decay_rate)[0]
    y, m, v = kernels.batch_norm_nnabla(x, gamma, beta, mean, variance, bool(batch_stat), eps,
                                        one_pass)
    if batch_stat and (mean is not None or variance is not None):
        _bn_update_running(mean, variance, m, v, x.numel() // x.shape[1], decay_rate)
    return y


def _bn_update_running(mean, variance, m, v, n, decay_rate):
    """NNabla's moving statistics (``kernels.batch_norm_update_running``: one operator):
    ``rm = d * rm + (1 - d) * m``, ``rv = d * rv + (1 - d) * v * n / (n - 1)``."""
    kernels.batch_norm_update_running(mean, variance, m, v, n, decay_rate)


def _dropout_shape(x, p=0.5, seed=-1, output_mask=False, train_only=False, rule="torch"):
    """Shape rule: the output (and mask) without drawing, which would advance the stream."""
    y = torch.empty_like(x)
    return (y, torch.empty_like(x)) if output_mask else y


@op(1, category=_C, shape=_dropout_shape)
def dropout(x, p=0.5, seed=-1, output_mask=False, train_only=False, rule="torch"):
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    NNabla's dropout always applies; with ``train_only`` (CNTK's Dropout layer) it is the
    identity outside the training phase (:func:`stadyn.training`).  ``seed=-1`` draws the mask
    from torch's generator (:func:`stadyn.seed`); a seed of its own draws it from a generator
    seeded with it, as the random ops do (NNabla's rule: the same masks in every process; a
    static graph draws the stream's next mask on each ``forward()``), and a
    :class:`stadyn.ops.RandomStream` from that stream; a :class:`stadyn.ops.CNTKStream`
    (compat.cntk's dropout) draws CNTK 2.7's own mask and scales by ``1 / (1 - p)`` rounded to
    the input's type, as CNTK's node does.  With
    ``rule="nnabla"`` (compat.nnabla's ``F.dropout``) a CPU mask is NNabla 1.39's: its
    ``bernoulli_distribution`` over ``std::mt19937`` (:func:`stadyn.ops._random.nnabla_draw`),
    ``p`` and the scale taken in float as NNabla's kernel takes them.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.dropout(sd.Variable((4, 10)), 0.5).shape
        (4, 10)
    """
    nnabla = _nnabla_cpu(rule, x.device) and not train_only   # (NNabla draws at p = 0 too)
    if (p <= 0.0 and not nnabla) or (train_only and not is_training()):
        y = x.view_as(x)  # not ``x`` itself: the output gets its own autograd node
        return (y, torch.ones_like(x)) if output_mask else y
    if nnabla:
        # NNabla keeps ``p`` in a float: keep probability ``1 - p`` and scale ``1 / (1 - p)``
        # rounded as its kernel rounds them
        p32 = float(np.float32(p))
        keep = float(np.float32(1.0) - np.float32(p32))
        scale = float(np.float32(1.0 / (1.0 - p32)))
        mask = nnabla_draw("bernoulli", keep, 0.0, tuple(x.shape), seed).to(x.dtype)
        y = x * mask * scale
        return (y, mask) if output_mask else y
    if isinstance(seed, CNTKStream):    # CNTK 2.7's mask: x times 0 or float(1 / (1 - p))
        mask = cntk_draw("dropout", p, 0.0, tuple(x.shape), x.dtype, seed, x.device)
        scale = 1.0 / (1.0 - float(p))
        y = x * (mask * _in(x.dtype, scale))
        return (y, mask) if output_mask else y
    generator = _generator(seed, x.device)
    if generator is None and not output_mask:
        return TF.dropout(x, p, True)
    mask = (torch.rand(x.shape, generator=generator, device=x.device) >= p).to(x.dtype)
    y = x * mask / (1.0 - p)
    return (y, mask) if output_mask else y


@op(2, category=_C)
def embed(x0, w):
    """Rows of ``w`` selected by the integer ids ``x0``: output ``x0.shape + w.shape[1:]``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.embed(sd.Variable((4, 7)), sd.Variable((100, 16))).shape
        (4, 7, 16)
    """
    return TF.embedding(x0.long(), w.reshape(w.shape[0], -1)).reshape(
        tuple(x0.shape) + tuple(w.shape[1:]))


def _fused_bn_shape(x, beta, gamma, mean, variance, z=None, axes=(1,), decay_rate=0.9,
                    eps=1e-05, batch_stat=True, nonlinearity="relu", output_stat=False,
                    rule="torch"):
    return _bn_shape(x, beta, gamma, mean, variance, axes, decay_rate, eps, batch_stat,
                     output_stat)


@op(6, category=_C, shape=_fused_bn_shape, precision="mixed")
def fused_batch_normalization(x, beta, gamma, mean, variance, z=None, axes=(1,), decay_rate=0.9,
                              eps=1e-05, batch_stat=True, nonlinearity="relu",
                              output_stat=False, rule="torch"):
    """``relu(batch_normalization(x) + z)`` (NNabla's fused form; ``z`` may be None): the
    normalisation, its running statistics, ``output_stat`` and ``rule`` as
    :func:`batch_normalization`.  With ``rule="nnabla"`` and float16 CPU data (NNabla's
    ``cpu:half``) ``z`` is added in float16 (NNabla's ``Add2<Half>``), the sum rounded.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> s = (1, 3, 1, 1)
        >>> F.fused_batch_normalization(sd.Variable((4, 3, 5, 5)), sd.Variable(s), sd.Variable(s), sd.Variable(s), sd.Variable(s)).shape
        (4, 3, 5, 5)
    """
    if nonlinearity != "relu":
        raise ValueError(f"fused_batch_normalization: nonlinearity must be 'relu', got "
                         f"{nonlinearity!r}")
    out = batch_normalization.spec.impl(x, beta, gamma, mean, variance, axes, decay_rate, eps,
                                        batch_stat, output_stat, rule=rule)
    y = out[0] if output_stat else out
    if z is not None:
        if rule == "nnabla" and _half_cpu(y):
            # NNabla's Add2 and ReLU in the function's type: ``z`` read as float16 and the
            # sum rounded (fused_batch_normalization.cpp, forward_impl)
            z = z.to(y.dtype)
        y = y + z
    y = torch.relu(y)
    return (y,) + tuple(out[1:]) if output_stat else y

"""Data augmentation of images' values: ``random_erase`` and ``image_augmentation`` (NNabla
1.39's names, arguments, defaults and meanings), seeded and drawn as the other augmentation
ops (:mod:`stadyn.ops._augment`: torch's values, or with ``rule="nnabla"`` on the CPU NNabla
1.39's, random_erase as :func:`stadyn._libstdcxx_random.erased_boxes`, image_augmentation as
:func:`stadyn._libstdcxx_random.augmentation_draws`); what a draw *means* is NNabla's:

* ``random_erase``: each sample, ``n`` times, with probability ``prob`` (a uniform draw
  ``<= prob``) fills a box with uniform values from ``replacements``: the box's area is a
  fraction of ``H * W`` drawn from ``area_ratios``, its height/width ratio is drawn from
  ``aspect_ratios``, ``He = floor(sqrt(area * ratio))``, ``We = floor(sqrt(area / ratio))``,
  its corner is drawn from ``[0, H - He] x [0, W - We]``, and it covers rows ``y0..y0 + He``
  and columns ``x0..x0 + We`` *inclusive* (NNabla's CPU kernel: one more row and column than
  ``He x We``).  ``share=False`` draws a box per channel.  The gradient is zero where erased
  (``ste_fine_grained=True``) or passes everywhere.
* ``image_augmentation``: per image, a scale from ``[min_scale, max_scale]`` (log-uniform), an
  aspect ratio from ``[1/aspect_ratio, aspect_ratio]`` (log-uniform, on the width; the height
  gets its inverse), a rotation from ``[-angle, angle]`` radians, a crop of ``shape`` placed
  uniformly in the scaled image padded by ``pad`` on each side (edge pixels repeat: the source
  coordinates are clamped), left-right and up-down flips with probability 1/2 each when
  enabled, a radial ``distortion`` ``exp(U[-d, d]) - 1``, then per channel
  ``(v + brightness - contrast_center) * contrast + contrast_center`` with ``brightness`` from
  ``[-brightness, brightness]`` and ``contrast`` from ``[1/contrast, contrast]`` (log-uniform;
  one value per image unless ``*_each``), and Gaussian noise of a standard deviation drawn from
  ``[0, noise]``.  Sampling is bilinear.  Each uniform draw takes one of NNabla's 1001 steps
  (``k / 1000``).  NNabla defines no gradient for it: none flows back.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import _libstdcxx_random as _std
from ._augment import _C, _float, _refined, _samples, _source, _steps
from ._random import _generator, _nnabla_cpu
from ._kernels import kernel_op
from ._registry import op

# ---------------------------------------------------------------------------------------------
# random_erase
# ---------------------------------------------------------------------------------------------
def _erase_impl(y: torch.Tensor, prob: float, ratios: list[float], n: int, share: bool,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    f = [float(np.float32(v)) for v in ratios]
    with _std.WordSource(generator) as take:
        values, erased = _std.erased_boxes(take, tuple(y.shape), prob, f[0:2], f[2:4], f[4:6],
                                           n, share)
    return torch.from_numpy(values), torch.from_numpy(erased)


def _erase_fake(y, prob, ratios, n, share, generator=None):
    return (torch.empty(y.shape, dtype=torch.float32), torch.empty(y.shape, dtype=torch.bool))


_nnabla_erase = kernel_op("stadyn_kernels::nnabla_erase",
                          "(Tensor y, float prob, float[] ratios, int n, bool share, "
                          "Generator? generator=None) -> (Tensor, Tensor)",
                          _erase_impl, _erase_fake, tags=(torch.Tag.nondeterministic_seeded,))


def _pair(values, what: str) -> tuple[float, float]:
    values = tuple(float(v) for v in values)
    if len(values) != 2:
        raise ValueError(f"random_erase: {what} must be (low, high), got {values}")
    return values


@op(1, category=_C)
def random_erase(x, prob=0.5, area_ratios=(0.02, 0.4), aspect_ratios=(0.3, 3.3333),
                 replacements=(0.0, 255.0), n=None, share=True, inplace=False, base_axis=1,
                 seed=-1, channel_last=False, ste_fine_grained=True, rule="torch"):
    """Random erasing (Zhong et al.): boxes of each image replaced by uniform random values.
    With ``rule="nnabla"`` (compat.nnabla) on the CPU the boxes and values are NNabla 1.39's
    (:func:`stadyn._libstdcxx_random.erased_boxes`; NNabla's CPU kernel refuses
    ``channel_last``, which draws torch's).

    The input is ``(samples..., C, H, W)`` (``(samples..., H, W, C)`` with ``channel_last``);
    ``inplace`` is accepted and ignored, as in NNabla.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.zeros((2, 1, 8, 8), np.float32))
        >>> with sd.auto_forward():
        ...     y = F.random_erase(x, prob=1.0, replacements=(1.0, 2.0))
        >>> bool(((y.d == 0) | ((y.d >= 1) & (y.d < 2))).all()), bool((y.d > 0).any())
        (True, True)
    """
    if not 0.0 <= prob <= 1.0:
        raise ValueError(f"random_erase: prob must be in [0, 1], got {prob}")
    n = 1 if n is None else int(n)
    if n <= 0:
        raise ValueError(f"random_erase: n must be positive, got {n}")
    (a0, a1), (r0, r1) = _pair(area_ratios, "area_ratios"), _pair(aspect_ratios, "aspect_ratios")
    v0, v1 = _pair(replacements, "replacements")
    base_axis = _refined(base_axis, x)
    samples = _samples(x, base_axis, "random_erase")
    if x.dim() - base_axis != 3:
        raise ValueError(f"random_erase: an input of shape {tuple(x.shape)} with base_axis="
                         f"{base_axis} is not a batch of (C, H, W) images")
    y = x.reshape((samples,) + tuple(x.shape[base_axis:]))
    if channel_last:
        y = y.permute(0, 3, 1, 2)
    _, channels, height, width = y.shape
    if _nnabla_cpu(rule, x.device) and not channel_last:
        values, inside = _nnabla_erase(y.detach(), float(prob), [a0, a1, r0, r1, v0, v1], n,
                                       bool(share), _generator(seed, torch.device("cpu")))
        values = values.to(_float(x))
        if not ste_fine_grained:
            values = values + (y - y.detach())
        return torch.where(inside, values, y).reshape(x.shape)
    generator, device, dtype = _source(seed, x), x.device, _float(x)
    boxes = (n, samples, 1 if share else channels)

    def uniform(low, high, shape=boxes):
        return torch.rand(shape, generator=generator, device=device) * (high - low) + low

    area = uniform(a0, a1) * (height * width)
    ratio = uniform(r0, r1)
    box_h = torch.sqrt(area * ratio).floor().clamp(max=height)
    box_w = torch.sqrt(area / ratio).floor().clamp(max=width)
    erase = uniform(0.0, 1.0) <= prob
    top = torch.minimum((uniform(0.0, 1.0) * (height - box_h + 1)).floor(), height - box_h)
    left = torch.minimum((uniform(0.0, 1.0) * (width - box_w + 1)).floor(), width - box_w)
    rows = torch.arange(height, device=device).reshape(1, 1, 1, height, 1)
    cols = torch.arange(width, device=device).reshape(1, 1, 1, 1, width)

    def box(t):
        return t.reshape(boxes + (1, 1))

    inside = (box(erase) & (rows >= box(top)) & (rows <= box(top + box_h))
              & (cols >= box(left)) & (cols <= box(left + box_w))).any(0)
    values = uniform(v0, v1, y.shape).to(dtype)
    if not ste_fine_grained:       # the gradient passes the erased pixels too: ``y - y`` is 0
        values = values + (y - y.detach())
    erased = torch.where(inside, values, y)
    if channel_last:
        erased = erased.permute(0, 2, 3, 1)
    return erased.reshape(x.shape)


# ---------------------------------------------------------------------------------------------
# image_augmentation
# ---------------------------------------------------------------------------------------------
def _augmentation_shape(x, shape=None, *args, **kwargs):
    if x.dim() < 2:
        raise ValueError(f"image_augmentation: an input of shape {tuple(x.shape)} has no "
                         f"(height, width)")
    shape = tuple(x.shape) if shape is None else tuple(int(s) for s in shape)
    if len(shape) < 2 or len(shape) > x.dim():
        raise ValueError(f"image_augmentation: shape {shape} must name at least (height, width) "
                         f"and at most the input's {x.dim()} axes")
    lead = tuple(x.shape[x.dim() - len(shape):-2])
    if shape[:-2] != lead:
        raise ValueError(f"image_augmentation: shape {shape} changes axes other than (height, "
                         f"width) of an input of shape {tuple(x.shape)}")
    return tuple(x.shape[:x.dim() - len(shape)]) + shape


def _augment_impl(x: torch.Tensor, images: int, channels: int, pixels: int,
                  brightness_each: bool, contrast_each: bool, noise: float,
                  generator: torch.Generator | None = None):
    with _std.WordSource(generator) as take:
        steps, flips, each, normals = _std.augmentation_draws(
            take, images, channels, pixels, brightness_each, contrast_each, noise)
    return (torch.from_numpy(steps), torch.from_numpy(flips),
            torch.from_numpy(each), torch.from_numpy(normals))


def _augment_fake(x, images, channels, pixels, brightness_each, contrast_each, noise,
                  generator=None):
    return (torch.empty((images, 9)), torch.empty((images, 2), dtype=torch.bool),
            torch.empty((images, channels, 2)),
            torch.empty((images, channels, pixels if noise > 0 else 0), dtype=torch.float64))


_nnabla_augment = kernel_op("stadyn_kernels::nnabla_augment",
                            "(Tensor x, int images, int channels, int pixels, "
                            "bool brightness_each, bool contrast_each, float noise, "
                            "Generator? generator=None) -> (Tensor, Tensor, Tensor, Tensor)",
                            _augment_impl, _augment_fake,
                            tags=(torch.Tag.nondeterministic_seeded,))


@op(1, category=_C, shape=lambda x, shape=None, *a, **k: torch.empty(
    _augmentation_shape(x, shape), device="meta", dtype=x.dtype))
def image_augmentation(x, shape=None, pad=(0, 0), min_scale=1.0, max_scale=1.0, angle=0.0,
                       aspect_ratio=1.0, distortion=0.0, flip_lr=False, flip_ud=False,
                       brightness=0.0, brightness_each=False, contrast=1.0, contrast_center=0.0,
                       contrast_each=False, noise=0.0, seed=-1, rule="torch"):
    """NNabla's random image transform: scale, aspect, rotation, crop, flips, distortion,
    brightness, contrast and noise, each drawn per image (see the module docstring).  With
    ``rule="nnabla"`` (compat.nnabla) on the CPU the draws are NNabla 1.39's
    (:func:`stadyn._libstdcxx_random.augmentation_draws`, its kernel run on one thread).

    With the defaults it is the identity; ``shape`` (the last axes: ``(H, W)`` or
    ``(C, H, W)``) crops, ``pad`` moves the crop up to ``pad`` pixels past each edge.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.arange(24.0).reshape(1, 1, 4, 6))
        >>> with sd.auto_forward():
        ...     y = F.image_augmentation(x, flip_lr=True, seed=3)
        >>> bool((y.d == x.d).all() or (y.d == x.d[..., ::-1]).all())
        True
    """
    out_shape = _augmentation_shape(x, shape)
    pad_h, pad_w = (int(p) for p in pad)
    h_in, w_in = x.shape[-2], x.shape[-1]
    h_out, w_out = out_shape[-2], out_shape[-1]
    channels = x.shape[-3] if x.dim() >= 3 else 1
    images = x.numel() // (h_in * w_in * channels)
    device, dtype = x.device, _float(x)
    nnabla = _nnabla_cpu(rule, x.device)
    if nnabla:
        u, bits, each, normals = _nnabla_augment(
            x.detach(), images, channels, h_out * w_out, bool(brightness_each),
            bool(contrast_each), float(noise), _generator(seed, torch.device("cpu")))
        u, each = u.to(dtype), each.to(dtype)
    else:
        generator = _source(seed, x)
        u = _steps((images, 9), generator, device).to(dtype)
        bits = torch.randint(0, 2, (images, 2), generator=generator, device=device).bool()
    log_ar, log_c = math.log(aspect_ratio), math.log(contrast)

    def column(k):
        return u[:, k:k + 1, None]                          # (images, 1, 1)

    scale = min_scale * torch.exp(column(0) * math.log(max_scale / min_scale))
    scale_x = torch.exp(-log_ar * 0.5 + column(1) * log_ar)
    inv_x, inv_y = 1.0 / (scale * scale_x), scale_x / scale   # 1 / (scale * (1 / scale_x))
    theta = -angle + column(2) * angle * 2
    cx, cy = (w_out - 1) * 0.5, (h_out - 1) * 0.5
    centre_x = column(3) * ((w_in + 2 * pad_w) * scale * scale_x - w_out) + cx
    centre_y = column(4) * ((h_in + 2 * pad_h) * scale / scale_x - h_out) + cy
    lr = (bits[:, 0:1, None] & bool(flip_lr))
    ud = (bits[:, 1:2, None] & bool(flip_ud))
    cos, sin = torch.cos(theta), torch.sin(theta)
    x_ax = torch.where(lr, -cos, cos) * inv_x
    y_ax = torch.where(lr, sin, -sin) * inv_y
    x_ay = torch.where(ud, -sin, sin) * inv_x
    y_ay = torch.where(ud, -cos, cos) * inv_y
    x0 = centre_x * inv_x - (x_ax * cx + y_ax * cy) - pad_w
    y0 = centre_y * inv_y - (x_ay * cx + y_ay * cy) - pad_h
    ix = torch.arange(w_out, device=device, dtype=dtype).reshape(1, 1, w_out)
    iy = torch.arange(h_out, device=device, dtype=dtype).reshape(1, h_out, 1)
    if distortion != 0.0:
        amount = torch.exp(column(7) * 2.0 * distortion - distortion) - 1.0
        half_w, half_h = w_out * 0.5, h_out * 0.5
        dx, dy = (ix - half_w) / half_w, (iy - half_h) / half_h
        bend = (1.0 + amount * (dx * dx + dy * dy)) / (1.0 + amount)
        px = torch.where(amount != 0, dx * bend * half_w + half_w, ix)
        py = torch.where(amount != 0, dy * bend * half_h + half_h, iy)
    else:
        px, py = ix, iy
    sx = (x0 + px * x_ax + py * y_ax).clamp(0, w_in - 1)    # (images, h_out, w_out)
    sy = (y0 + px * x_ay + py * y_ay).clamp(0, h_in - 1)
    left, top = sx.floor(), sy.floor()
    fx, fy = sx - left, sy - top
    left, top = left.long(), top.long()
    right, bottom = (left + 1).clamp(max=w_in - 1), (top + 1).clamp(max=h_in - 1)
    flat = x.reshape(images, channels, h_in * w_in).to(dtype)

    def at(row, col):
        index = (row * w_in + col).reshape(images, 1, h_out * w_out)
        return torch.gather(flat, 2, index.expand(images, channels, h_out * w_out))

    def gain(g):
        return g.reshape(images, 1, h_out * w_out)

    value = (at(top, left) * gain((1 - fx) * (1 - fy)) + at(top, right) * gain(fx * (1 - fy))
             + at(bottom, left) * gain((1 - fx) * fy) + at(bottom, right) * gain(fx * fy))
    if not nnabla:
        each = _steps((images, channels, 2), generator, device).to(dtype) if (
            brightness_each or contrast_each) else None
    shift = (each[:, :, 0:1] if brightness_each else column(5)) * brightness * 2.0 - brightness
    gain_c = torch.exp((each[:, :, 1:2] if contrast_each else column(6)) * log_c * 2.0) / contrast
    value = (value + shift - contrast_center) * gain_c + contrast_center
    if noise > 0.0:
        sigma = column(8) * noise
        if not nnabla:
            value = value + torch.randn(value.shape, generator=generator, device=device,
                                        dtype=dtype) * sigma
        else:       # NNabla adds the double draw times the float deviation, in double
            value = (value.double() + normals * sigma.double()).to(dtype)
    return value.reshape(out_shape).to(x.dtype).detach()

"""Data augmentation: ``image_augmentation``, ``random_flip``, ``random_shift``, ``random_crop``,
``random_erase`` (NNabla 1.39's names, arguments, defaults and meanings).

Each draws from Stadyn's seeded generator in both modes, with NNabla's seeding rule (as
:mod:`stadyn.ops._random`'s sources): with ``seed=-1`` from torch's generator (:func:`stadyn.seed`
seeds it); with a seed of its own from a generator seeded with it when the op first runs, so
each dynamic call draws the same values and a static graph the next values on every
``forward()``.  The values drawn are torch's, except that ``random_flip``, ``random_crop``,
``random_shift``, ``random_erase`` and ``image_augmentation`` with ``rule="nnabla"``
(compat.nnabla's functions) on the CPU draw NNabla 1.39's (its ``std::mt19937``: the first
three one number per sample and axis, the samples in its order, ``_nnabla_rows``;
random_erase as :func:`stadyn._libstdcxx_random.erased_boxes`, image_augmentation as
:func:`stadyn._libstdcxx_random.augmentation_draws`); what a draw *means* is NNabla's:

* ``random_flip``: each sample (the axes before ``base_axis``) reverses each of ``axes`` with
  probability 1/2; the gradient is flipped back.  An axis before ``base_axis`` (NNabla 1.39
  takes one) reverses the order of the samples along it, as the draw of the row that reaches
  it in NNabla's walk over the samples says (``_nnabla_walk``); the gradient is then the
  output gradient mapped as the forward maps ``x`` (NNabla's backward), not the adjoint.
* ``random_shift``: each sample moves each axis ``d`` by an integer drawn uniformly from
  ``[-shifts[d], shifts[d]]`` (``shifts`` lines up with the trailing axes); what comes in at
  the ends is the nearest edge value (``"nearest"``), the mirror image including the edge
  (``"reflect"``: ``2 1 0 | 0 1 2``), or ``constant_value`` (``"constant"``).  The gradient
  goes back to the source positions (summed where an edge was repeated).
* ``random_crop``: each sample takes a window of ``shape`` (the trailing axes) at an offset
  drawn uniformly from every offset that fits.
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
from ._random import _generator, _nnabla_cpu, nnabla_draw
from ._kernels import kernel_op
from ._registry import op
from ._sample_moves import move_samples
from ._util import norm_axes

_C = "random"


def _float(x: torch.Tensor) -> torch.dtype:
    return x.dtype if x.is_floating_point() else torch.float32


def _refined(base_axis: int, x: torch.Tensor) -> int:
    """A negative ``base_axis`` counted from the end, as NNabla 1.39's ``refine_axis`` does
    (``include/nbla/utils/axis_utils.hpp``; ``-1`` of a 3-d input is 2)."""
    return base_axis + x.dim() if -x.dim() <= base_axis < 0 else base_axis


def _samples(x: torch.Tensor, base_axis: int, name: str) -> int:
    if not 0 <= base_axis < max(x.dim(), 1):
        raise ValueError(f"{name}: base_axis {base_axis} out of range for an input of shape "
                         f"{tuple(x.shape)}")
    return math.prod(x.shape[:base_axis])


def _source(seed: int, x: torch.Tensor) -> torch.Generator | None:
    """The generator to draw from (``None``: torch's); none while shapes are inferred on
    ``meta`` tensors, which draw nothing."""
    return None if x.device.type == "meta" else _generator(seed, x.device)


def _steps(shape, generator, device) -> torch.Tensor:
    """Uniform draws on NNabla's grid ``{0, 0.001, ..., 1}`` (its ``rgen() % 1001 * 0.001``)."""
    return torch.randint(0, 1001, shape, generator=generator, device=device).float() * 0.001


def _trailing(values, ndim: int, name: str, what: str) -> list[tuple[int, int]]:
    """``(axis, value)`` for ``values`` lined up with the last axes of an ``ndim``-d input."""
    values = [int(v) for v in values]
    if len(values) > ndim:
        raise ValueError(f"{name}: {what} {tuple(values)} has more entries than the input has "
                         f"axes ({ndim})")
    return [(ndim - len(values) + k, v) for k, v in enumerate(values)]


def _take(y: torch.Tensor, axis: int, index: torch.Tensor) -> torch.Tensor:
    """``y`` (``(B, ...)``) gathered along ``axis`` with a per-sample ``index`` ``(B, n)``."""
    view = [index.shape[0]] + [1] * (y.dim() - 1)
    view[axis] = index.shape[1]
    shape = list(y.shape)
    shape[axis] = index.shape[1]
    return torch.gather(y, axis, index.reshape(view).expand(shape))


# ---------------------------------------------------------------------------------------------
# random_flip, random_shift, random_crop
# ---------------------------------------------------------------------------------------------
@op(1, category=_C)
def random_flip(x, axes=None, base_axis=1, seed=-1, rule="torch"):
    """Reverse each of ``axes`` (default: the last) of each sample with probability 1/2.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.random_flip(sd.Variable.from_numpy_array(np.arange(6.0).reshape(2, 3)))
        >>> sorted(y.d[0].tolist()) == [0.0, 1.0, 2.0], y.shape
        (True, (2, 3))
    """
    base_axis = _refined(base_axis, x)
    samples = _samples(x, base_axis, "random_flip")
    axes = norm_axes(x.dim() - 1 if axes is None else axes, x.dim())
    nnabla = _nnabla_cpu(rule, x.device)
    if nnabla:
        words = nnabla_draw("words", 0, 0, (samples, x.dim()), seed)
        bits = torch.zeros((samples, x.dim()), dtype=torch.bool)
        bits[:, list(axes)] = (words % 2 == 1)[:, list(axes)]
    else:
        drawn = torch.randint(0, 2, (samples, len(axes)), generator=_source(seed, x),
                              device=x.device).bool()
        bits = torch.zeros((samples, x.dim()), dtype=torch.bool, device=x.device)
        bits[:, list(axes)] = drawn
    source = None
    if nnabla or any(a < base_axis for a in axes):
        # NNabla's walk over the samples: each one's row of draws, and (an axis before
        # base_axis flipped) the sample it reads
        rows, entries, places = (torch.tensor(t, dtype=torch.long, device=x.device)
                                 for t in _nnabla_walk(x.shape, base_axis, samples))
        bits = bits.to(x.device)
        if any(a < base_axis for a in axes):
            sizes = torch.tensor(x.shape[:base_axis], dtype=torch.long, device=x.device)
            strides = torch.tensor([math.prod(x.shape[d + 1:base_axis])
                                    for d in range(base_axis)], dtype=torch.long,
                                   device=x.device)
            backwards = bits[entries, torch.arange(base_axis, device=x.device)]
            read = torch.where(backwards, sizes - 1 - places, places)
            source = (read * strides).sum(1)
        bits = bits[rows]
    flips = tuple(a for a in axes if a >= base_axis)
    if source is None:  # flips within each sample: their own adjoint
        return _flipped(x, source, bits, flips, base_axis)
    # NNabla's backward maps dy as its forward maps x (random_flip.cpp's backward_impl calls
    # flip_recursive on the output gradient), not by the adjoint: y is made without autograd
    # in _SameMapBack's forward, which gives its gradient
    return _SameMapBack.apply(x, source, bits, flips, base_axis)


def _flipped(x: torch.Tensor, source: torch.Tensor | None, bits: torch.Tensor,
             flips: tuple[int, ...], base_axis: int) -> torch.Tensor:
    """``x`` with sample ``i`` read from sample ``source[i]`` (None: itself), then each axis of
    ``flips`` (at or after ``base_axis``) reversed where ``bits[i, axis]`` says so."""
    samples = bits.shape[0]
    y = x.reshape((samples,) + tuple(x.shape[base_axis:]))
    if source is not None:
        y = y.index_select(0, source)
    for a in flips:
        axis = a - base_axis + 1
        flip = bits[:, a].reshape((samples,) + (1,) * (y.dim() - 1))
        y = torch.where(flip, y.flip(axis), y)
    return y.reshape(x.shape)


class _SameMapBack(torch.autograd.Function):
    """``x`` mapped by :func:`_flipped`, whose gradient is the output gradient mapped the same
    way, as NNabla 1.39's ``RandomFlip::backward_impl`` computes it (not the adjoint, which
    differs once an axis before ``base_axis`` is flipped).  The forward runs without autograd
    and its output is a new tensor (no input of the Function), so it is returned as made."""

    @staticmethod
    def forward(ctx, x, source, bits, flips, base_axis):
        ctx.save_for_backward(source, bits)
        ctx.flips, ctx.base_axis = flips, base_axis
        return _flipped(x, source, bits, flips, base_axis)

    @staticmethod
    def backward(ctx, dy):
        source, bits = ctx.saved_tensors
        return _flipped(dy, source, bits, ctx.flips, ctx.base_axis), None, None, None, None


def _nnabla_walk(shape, base_axis: int, samples: int):
    """NNabla 1.39's walk over the samples (the axes before ``base_axis``) in random_flip.cpp's
    ``flip_recursive``: for each output sample in order, the row of draws its own axes take,
    the row whose draw decides whether each sample axis is read backwards (the one current
    when the walk enters that axis) and its index along each sample axis.  The row steps once
    per index of every sample axis, its inner loops' steps included, modulo ``samples``.

    Example:
        >>> _nnabla_walk((2, 3), 1, 2)
        ([0, 1], [[0], [0]], [[0], [1]])
    """
    rows: list[int] = []
    entries: list[list[int]] = []
    places: list[list[int]] = []
    at = [0]

    def visit(dim: int, entered: list[int], index: list[int]) -> None:
        if dim == base_axis:
            rows.append(at[0])
            entries.append(entered)
            places.append(index)
            return
        row = at[0]
        for i in range(int(shape[dim])):
            visit(dim + 1, entered + [row], index + [i])
            at[0] = (at[0] + 1) % samples
    visit(0, [], [])
    return rows, entries, places


def _nnabla_rows(shape, base_axis: int, samples: int) -> torch.Tensor:
    """The row of NNabla's per-sample draws each sample (in order) takes: NNabla's CPU kernels
    (random_flip.cpp, random_crop.cpp) step their index once per index of every axis before
    ``base_axis`` as they recurse, the inner axes' steps included, modulo ``samples``."""
    rows, at = [], [0]

    def visit(dim: int) -> None:
        if dim == base_axis:
            rows.append(at[0])
            return
        for _ in range(shape[dim]):
            visit(dim + 1)
            at[0] = (at[0] + 1) % samples
    visit(0)
    return torch.tensor(rows, dtype=torch.long)


_BORDERS = ("nearest", "reflect", "constant")


@op(1, category=_C)
def random_shift(x, shifts=None, border_mode="nearest", constant_value=0, base_axis=1, seed=-1,
                 rule="torch"):
    """Move each sample by a random whole number of positions along each axis.

    ``shifts`` gives the largest move of each of the last ``len(shifts)`` axes (NNabla's
    ``(3, 2)``: up to 3 rows and 2 columns); ``border_mode`` fills what comes in.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.arange(5.0).reshape(1, 5))
        >>> with sd.auto_forward():
        ...     y = F.random_shift(x, shifts=(2,), border_mode="constant", constant_value=-1)
        >>> y.shape, bool(set(y.d.ravel()) <= {-1.0, 0.0, 1.0, 2.0, 3.0, 4.0})
        ((1, 5), True)
    """
    if border_mode not in _BORDERS:
        raise ValueError(f"random_shift: border_mode {border_mode!r} is not one of "
                         f"{', '.join(_BORDERS)}")
    base_axis = _refined(base_axis, x)
    samples = _samples(x, base_axis, "random_shift")
    moves = _trailing((0,) * x.dim() if shifts is None else shifts, x.dim(), "random_shift",
                      "shifts")
    y = x.reshape((samples,) + tuple(x.shape[base_axis:]))
    if any(d < base_axis and m for d, m in moves):    # (NNabla moves samples too)
        if _nnabla_cpu(rule, x.device):
            words = nnabla_draw("words", 0, 0, (samples, len(moves)), seed)
            table = torch.stack([words[:, k] % (2 * m + 1) - m
                                 for k, (_, m) in enumerate(moves)], 1)
        else:
            generator = _source(seed, x)
            table = torch.stack([torch.randint(-m, m + 1, (samples,), generator=generator,
                                               device=x.device) for _, m in moves], 1)
        y, drawn = move_samples(x, y, table, moves, base_axis, border_mode, constant_value)
    elif _nnabla_cpu(rule, x.device):
        # NNabla (random_shift.cpp): per sample one number ``w`` for each entry of ``shifts``
        # (zeros too), the move ``w % (2m + 1) - m``; samples in NNabla's order
        words = nnabla_draw("words", 0, 0, (samples, len(moves)), seed)
        words = words[_nnabla_rows(x.shape, base_axis, samples)]
        every = torch.stack([words[:, k] % (2 * m + 1) - m for k, (_, m) in enumerate(moves)], 1)
        drawn = every[:, [k for k, (_, m) in enumerate(moves) if m > 0]]
        moves = [(d, m) for d, m in moves if m > 0]
        if not moves:
            return y.reshape(x.shape)
    else:
        moves = [(d, m) for d, m in moves if m > 0]
        if not moves:
            return y.reshape(x.shape)
        generator = _source(seed, x)
        drawn = torch.stack([torch.randint(-m, m + 1, (samples,), generator=generator,
                                           device=x.device) for _, m in moves], 1)
    for k, (d, m) in enumerate(moves):
        if d < base_axis:
            continue
        axis, size = d - base_axis + 1, x.shape[d]
        source = torch.arange(size, device=x.device)[None, :] - drawn[:, k:k + 1]
        if border_mode == "reflect":
            a = (source + 2 * size).abs() % (2 * size)
            index = torch.where(a >= size, 2 * size - 1 - a, a) if size > 1 else source * 0
        else:
            index = source.clamp(0, size - 1)
        moved = _take(y, axis, index)
        if border_mode == "constant":
            inside = ((source >= 0) & (source < size))
            view = [samples] + [1] * (y.dim() - 1)
            view[axis] = size
            moved = torch.where(inside.reshape(view), moved,
                                torch.full((), float(constant_value), dtype=y.dtype,
                                           device=y.device))
        y = moved
    return y.reshape(x.shape)


def _crop_shape(x, shape=None, base_axis=1, seed=-1):
    out = list(x.shape)
    for d, n in _trailing(x.shape if shape is None else shape, x.dim(), "random_crop", "shape"):
        if not 0 < n <= x.shape[d]:
            raise ValueError(f"random_crop: shape {tuple(shape)} does not fit in an input of "
                             f"shape {tuple(x.shape)} (axis {d})")
        if d < base_axis and n != x.shape[d]:
            raise ValueError(f"random_crop: shape {tuple(shape)} crops a sample axis (before "
                             f"base_axis={base_axis}) of an input of shape {tuple(x.shape)}")
        out[d] = n
    return out


@op(1, category=_C, shape=lambda x, shape=None, base_axis=1, seed=-1, rule="torch": torch.empty(
    _crop_shape(x, shape, base_axis), device="meta", dtype=x.dtype))
def random_crop(x, shape=None, base_axis=1, seed=-1, rule="torch"):
    """A window of ``shape`` (the last axes) of each sample at a uniformly drawn offset.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.arange(30.0).reshape(1, 5, 6))
        >>> with sd.auto_forward():
        ...     y = F.random_crop(x, shape=(3, 4))
        >>> y.shape, float(y.d[0, 1, 0] - y.d[0, 0, 0])
        ((1, 3, 4), 6.0)
    """
    base_axis = _refined(base_axis, x)
    samples = _samples(x, base_axis, "random_crop")
    out = _crop_shape(x, shape, base_axis)
    y = x.reshape((samples,) + tuple(x.shape[base_axis:]))
    nnabla = _nnabla_cpu(rule, x.device)
    if nnabla:
        # NNabla (random_crop.cpp): per sample, one number for each axis of ``shape`` (the
        # uncropped ones too), the offset that number modulo the offsets that fit
        first = x.dim() - len(x.shape if shape is None else shape)
        words = nnabla_draw("words", 0, 0, (samples, x.dim() - first), seed)
        words = words[_nnabla_rows(x.shape, base_axis, samples)]
    generator = None if nnabla else _source(seed, x)
    for d in range(base_axis, x.dim()):
        if out[d] == x.shape[d]:
            continue
        if nnabla:
            left = (words[:, d - first] % (x.shape[d] - out[d] + 1)).reshape(samples, 1)
        else:
            left = torch.randint(0, x.shape[d] - out[d] + 1, (samples, 1),
                                 generator=generator, device=x.device)
        y = _take(y, d - base_axis + 1, left + torch.arange(out[d], device=x.device)[None, :])
    return y.reshape(out)


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

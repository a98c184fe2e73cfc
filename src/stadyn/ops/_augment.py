"""Data augmentation that moves samples' values: ``random_flip``, ``random_shift``,
``random_crop`` (NNabla 1.39's names, arguments, defaults and meanings), and what the
augmentation ops share (their seeding and draws); ``random_erase`` and
``image_augmentation`` are in :mod:`stadyn.ops._augment_image`.

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
"""

from __future__ import annotations

import math

import torch

from ._random import _generator, _nnabla_cpu, nnabla_draw
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

"""Harness entries of the augmentation ops (``stadyn/ops/_augment.py``, ``_augment_image.py``).

They are random, so each case gets a check instead of a reference: every output sample must be
one of the outcomes NNabla 1.39's meaning allows, computed here with NumPy (a flip of the
sample, a shift within range with the border rule, a window that fits, an inclusive box of an
allowed size filled from the replacement range, a bilinear crop of a ramp image), and with many
samples each outcome must turn up about as often as NNabla draws it.  What the real NNabla
returns for the same calls is compared in ``tests/compat/compat_cases/nnabla_augment.py``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

_RNG = np.random.default_rng(4242)


def _normal(*shape):
    return _RNG.standard_normal(shape).astype(np.float32)


def _ramp(n, h, w, per_row=100.0):
    """Images whose value is ``column + per_row * row`` (bilinear sampling keeps it linear)."""
    plane = np.arange(w)[None, :] + per_row * np.arange(h)[:, None]
    return np.broadcast_to(plane, (n, 1, h, w)).astype(np.float32).copy()


def _close_fraction(count, n, p, what):
    tolerance = 5 * math.sqrt(p * (1 - p) / n) + 1e-9
    assert abs(count / n - p) < tolerance, f"{what}: {count}/{n}, expected {p}"


# ---------------------------------------------------------------------------------------------
# random_flip
# ---------------------------------------------------------------------------------------------
def check_random_flip(inputs, outputs, axes=None, base_axis=1, seed=-1):
    x, y = inputs[0], outputs[0]
    assert y.shape == x.shape and y.dtype == x.dtype
    axes = [x.ndim - 1] if axes is None else [a % x.ndim for a in axes]
    lead = x.shape[:base_axis]
    xs, ys = x.reshape((-1,) + x.shape[base_axis:]), y.reshape((-1,) + x.shape[base_axis:])
    counts = np.zeros(len(axes))
    for xi, yi in zip(xs, ys):
        matches = [bits for bits in itertools.product([0, 1], repeat=len(axes))
                   if np.array_equal(yi, np.flip(xi, [a - base_axis for a, b in zip(axes, bits)
                                                      if b]))]
        assert matches, "a sample is no flip of its input"
        counts += matches[0]
    for k, a in enumerate(axes):
        _close_fraction(counts[k], int(np.prod(lead)), 0.5, f"flips of axis {a}")


# ---------------------------------------------------------------------------------------------
# random_shift
# ---------------------------------------------------------------------------------------------
def _shift_index(size, s, mode):
    source = np.arange(size) - s
    if mode == "reflect":
        a = np.abs(source + 2 * size) % (2 * size)
        return np.where(a >= size, 2 * size - 1 - a, a), np.ones(size, bool)
    return np.clip(source, 0, size - 1), (source >= 0) & (source < size)


def _shifted(sample, moves, mode, value):
    out = sample.astype(np.float64)
    for axis, s in moves:
        index, inside = _shift_index(out.shape[axis], s, mode)
        out = np.take(out, index, axis=axis)
        if mode == "constant":
            shape = [1] * out.ndim
            shape[axis] = -1
            out = np.where(inside.reshape(shape), out, value)
    return out


def check_random_shift(inputs, outputs, shifts=None, border_mode="nearest", constant_value=0,
                       base_axis=1, seed=-1):
    x, y = inputs[0], outputs[0]
    assert y.shape == x.shape and y.dtype == x.dtype
    shifts = (0,) * x.ndim if shifts is None else tuple(shifts)
    sample_shape = x.shape[base_axis:]
    axes = [(x.ndim - len(shifts) + k - base_axis, m) for k, m in enumerate(shifts) if m]
    seen = [set() for _ in axes]
    for xi, yi in zip(x.reshape((-1,) + sample_shape), y.reshape((-1,) + sample_shape)):
        options = itertools.product(*[range(-m, m + 1) for _, m in axes])
        found = [o for o in options if np.array_equal(
            yi, _shifted(xi, [(a, s) for (a, _), s in zip(axes, o)], border_mode,
                         constant_value))]
        assert found, "a sample is no allowed shift of its input"
        for k, s in enumerate(found[0]):
            seen[k].add(s)
    for (a, m), values in zip(axes, seen):          # every move turns up (many samples)
        assert values == set(range(-m, m + 1)), f"moves of axis {a}: {sorted(values)}"


# ---------------------------------------------------------------------------------------------
# random_crop
# ---------------------------------------------------------------------------------------------
def check_random_crop(inputs, outputs, shape=None, base_axis=1, seed=-1):
    x, y = inputs[0], outputs[0]
    shape = x.shape if shape is None else tuple(shape)
    expected = x.shape[:x.ndim - len(shape)] + tuple(shape)
    assert y.shape == expected and y.dtype == x.dtype
    sample_in, sample_out = x.shape[base_axis:], y.shape[base_axis:]
    ranges = [range(i - o + 1) for i, o in zip(sample_in, sample_out)]
    seen = set()
    for xi, yi in zip(x.reshape((-1,) + sample_in), y.reshape((-1,) + sample_out)):
        found = [o for o in itertools.product(*ranges) if np.array_equal(
            yi, xi[tuple(slice(s, s + n) for s, n in zip(o, sample_out))])]
        assert found, "a sample is no window of its input"
        seen.add(found[0])
    assert len(seen) == math.prod(len(r) for r in ranges), f"offsets seen: {sorted(seen)}"


# ---------------------------------------------------------------------------------------------
# random_erase
# ---------------------------------------------------------------------------------------------
def check_random_erase(inputs, outputs, prob=0.5, area_ratios=(0.02, 0.4),
                       aspect_ratios=(0.3, 3.3333), replacements=(0.0, 255.0), n=None,
                       share=True, inplace=False, base_axis=1, seed=-1, channel_last=False,
                       ste_fine_grained=True):
    x, y = inputs[0], outputs[0]
    assert y.shape == x.shape and y.dtype == x.dtype
    low, high = replacements
    erased = y != x                                  # inputs lie outside the replacement range
    assert ((y[erased] >= low) & (y[erased] < high)).all()
    images = erased.reshape((-1,) + x.shape[base_axis:])
    if channel_last:
        images = np.moveaxis(images, -1, 1)
    c, h, w = images.shape[1:]
    sizes = {(int(math.sqrt(a * r)), int(math.sqrt(a / r)))
             for a in np.linspace(area_ratios[0], area_ratios[1], 50) * h * w
             for r in np.linspace(aspect_ratios[0], aspect_ratios[1], 50)}
    hit = 0
    for image in images:
        planes = [image[0]] if share else list(image)
        if share:
            assert all(np.array_equal(p, image[0]) for p in image), "share: one box per image"
        for plane in planes:
            if not plane.any():
                continue
            hit += 1
            rows, cols = np.nonzero(plane.any(1))[0], np.nonzero(plane.any(0))[0]
            if n in (None, 1):
                assert plane[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1].all(), "not one box"
            # an inclusive box: He + 1 rows unless it reaches the last row (then He or He + 1)
            assert rows[-1] - rows[0] <= max(s[0] for s in sizes)
            assert cols[-1] - cols[0] <= max(s[1] for s in sizes)
    if n in (None, 1):
        _close_fraction(hit, len(images) * (1 if share else c), prob, "erased images")


# ---------------------------------------------------------------------------------------------
# image_augmentation
# ---------------------------------------------------------------------------------------------
def _on_grid(values, low, high, what, atol=2e-2):
    """``values`` are ``low + k / 1000 * (high - low)`` for whole ``k`` (NNabla's steps)."""
    k = (np.asarray(values) - low) / (high - low) * 1000 if high != low else np.zeros(1)
    assert np.allclose(k, np.round(k), atol=atol), f"{what} off NNabla's 1001 steps: {values}"


def check_image_augmentation(inputs, outputs, shape=None, pad=(0, 0), min_scale=1.0,
                             max_scale=1.0, angle=0.0, aspect_ratio=1.0, distortion=0.0,
                             flip_lr=False, flip_ud=False, brightness=0.0, brightness_each=False,
                             contrast=1.0, contrast_center=0.0, contrast_each=False, noise=0.0,
                             seed=-1):
    x, y = inputs[0], outputs[0]
    shape = x.shape if shape is None else tuple(shape)
    assert y.shape == x.shape[:x.ndim - len(shape)] + tuple(shape) and y.dtype == x.dtype
    h, w = x.shape[-2:]
    ho, wo = y.shape[-2:]
    if flip_lr or flip_ud:
        counts = np.zeros(2)
        for xi, yi in zip(x, y):
            found = [(a, b) for a in (0, 1) for b in (0, 1) if (a or flip_lr) and (b or flip_ud)
                     and np.array_equal(yi, xi[..., ::-1 if b else 1, ::-1 if a else 1])]
            assert found, "an image is no flip of its input"
            counts += found[0]
        for k, on in enumerate((flip_lr, flip_ud)):
            if on:
                _close_fraction(counts[k], len(x), 0.5, "flipped images")
        return
    if brightness or contrast != 1.0:                # two-valued images: (v + b - cc) * c + cc
        lo, hi = y[:, :, 0, 0], y[:, :, 0, 1]
        c = (hi - lo) / (x[:, :, 0, 1] - x[:, :, 0, 0])
        b = (lo - contrast_center) / c + contrast_center - x[:, :, 0, 0]
        assert ((c >= 1 / contrast - 1e-5) & (c <= contrast + 1e-5)).all()
        assert (np.abs(b) <= brightness + 1e-4).all()
        for values, each in ((c, contrast_each), (b, brightness_each)):
            differ = (np.ptp(values, axis=1) > 1e-4).mean()
            assert differ > 0.5 if each else differ == 0, "per-channel draws"
        if contrast != 1.0:
            _on_grid(np.log(c * contrast) / (2 * np.log(contrast)), 0, 1, "contrast")
        if brightness:
            _on_grid(b, -brightness, brightness, "brightness")
        return
    # a ramp image (column + 100 * row): a scale stretches it, a crop or pad moves it
    step = y[:, 0, 0, 1] - y[:, 0, 0, 0]                     # at column 0 nothing is clamped
    if min_scale != max_scale:
        s = 1.0 / step
        assert ((s >= min_scale - 1e-3) & (s <= max_scale + 1e-3)).all(), f"scales {s}"
        _on_grid(np.log(s / min_scale), 0, np.log(max_scale / min_scale), "scale")
        return
    np.testing.assert_allclose(y[:, 0, :, 0] - y[:, :1, 0, 0], np.broadcast_to(
        100.0 * np.arange(ho), (len(y), ho)), atol=1e-3)      # no vertical move in these cases
    cols = y[:, 0, 0, :]
    inside = (cols > 0) & (cols < w - 1)
    offset = np.nanmedian(np.where(inside, cols - np.arange(wo), np.nan), axis=1)
    np.testing.assert_allclose(cols, np.clip(np.arange(wo) + offset[:, None], 0, w - 1),
                               atol=1e-3)                    # a moved ramp, edges repeated
    px = pad[1]
    assert (offset >= -px - 1e-4).all() and (offset <= w + px - wo + 1e-4).all()
    _on_grid(offset + px, 0, w + 2 * px - wo, "crop offsets")
    assert np.ptp(offset) > 0.5 * (w + 2 * px - wo), "offsets cover their range"


def augment_entries(Case, Entry):
    """The entries, built with test_ops.py's ``Case`` and ``Entry``."""
    images = _normal(400, 1, 3, 4)
    return {
        "random_flip": Entry(
            [Case((_normal(400, 2, 3),)), Case((images,), {"axes": (2, 3)}),
             Case((_normal(2, 200, 3, 2),), {"axes": (3,), "base_axis": 2, "seed": 5})],
            check=check_random_flip, random=True),
        "random_shift": Entry(
            [Case((_normal(300, 2, 5),), {"shifts": (2,)}),
             Case((_normal(300, 1, 4, 5),), {"shifts": (1, 2), "border_mode": "reflect"}),
             Case((_normal(300, 1, 4, 5),), {"shifts": (0, 3), "border_mode": "constant",
                                            "constant_value": -7, "seed": 3})],
            check=check_random_shift, random=True),
        "random_crop": Entry(
            [Case((_normal(300, 5, 6),), {"shape": (3, 4)}),
             Case((_normal(300, 2, 4, 5),), {"shape": (2, 3, 3), "seed": 9})],
            check=check_random_crop, random=True),
        "random_erase": Entry(
            [Case((_normal(600, 2, 8, 8),), {"prob": 0.3, "replacements": (10.0, 20.0)}),
             Case((_normal(400, 3, 6, 7),), {"prob": 0.7, "share": False,
                                            "replacements": (10.0, 11.0),
                                            "area_ratios": (0.1, 0.3)}),
             Case((_normal(300, 6, 7, 2),), {"prob": 1.0, "channel_last": True, "n": 2,
                                            "replacements": (10.0, 11.0), "seed": 2}),
             Case((_normal(300, 2, 6, 6),), {"prob": 0.5, "ste_fine_grained": False,
                                            "replacements": (10.0, 11.0)})],
            check=check_random_erase, random=True),
        "image_augmentation": Entry(
            [Case((_ramp(200, 5, 7),), {"pad": (0, 2)}),
             Case((_ramp(200, 6, 7),), {"shape": (6, 4)}),
             Case((_ramp(100, 6, 7, per_row=0.0),),
                  {"min_scale": 1.5, "max_scale": 3.0, "seed": 4}),
             Case((images,), {"flip_lr": True, "flip_ud": True}),
             Case((np.tile(np.array([[1.0, 3.0]], np.float32), (300, 3, 2, 1)),),
                  {"brightness": 0.4, "contrast": 1.5, "contrast_center": 0.5,
                   "contrast_each": True})],
            check=check_image_augmentation, random=True,
            no_grad="NNabla defines no backward for image_augmentation"),
    }

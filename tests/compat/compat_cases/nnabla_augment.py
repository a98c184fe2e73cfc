"""``nnabla.functions``' augmentation: ``random_flip``, ``random_shift``, ``random_crop``,
``random_erase``, ``image_augmentation``.

Their random streams differ (NNabla's Mersenne twister, Stadyn's torch generator), so the cases
compare what the draws mean: the set of outcomes seen over many samples (every shift, offset,
flip, box size), the fractions drawn (within a stated tolerance), the ranges, the identity a
setting gives, gradients where each sample's outcome decides them, and NNabla's seeding rule.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_functions_more import _seeding

_FRACTION = "fractions of random draws: within 0.06 (5 sigma of the smallest sample here)"


def _rows(a):
    """The distinct rows of a 2-d array, sorted (a set, as an array)."""
    return np.array(sorted({tuple(row) for row in a.tolist()}), np.float32)


def _ramp(n, h, w, per_row=100.0):
    plane = np.arange(w)[None, :] + per_row * np.arange(h)[:, None]
    return np.broadcast_to(plane, (n, 1, h, w)).astype(np.float32).copy()


@nnabla_case(names=["nnabla.functions.random_flip"], tols={"flipped": (0, 0.06)}, note=_FRACTION)
def random_flip(nn, F, r):
    """Each sample is itself or its flip, about half flipped; the gradient is flipped back."""
    nn.seed(3)
    x = nn.Variable.from_numpy_array(r.randn(400, 2, 3), need_grad=True)
    y = F.random_flip(x)                                   # default: the last axis
    y.forward()
    x.g = 0
    w = r.weights_like(y.d)
    y.backward(w)
    flipped = np.array([np.array_equal(y.d[i], x.d[i, :, ::-1]) for i in range(400)])
    same = np.array([np.array_equal(y.d[i], x.d[i]) for i in range(400)])
    grad_back = np.where(flipped[:, None, None], w[:, :, ::-1], w)
    src = r.randn(300, 1, 2, 3)
    z = F.random_flip(nn.Variable.from_numpy_array(src), axes=(2, 3))
    z.forward()
    kinds = set()
    for i in range(300):
        kinds.update(k for k, axes in enumerate([(), (1,), (2,), (1, 2)])
                     if np.array_equal(z.d[i], np.flip(src[i], axes) if axes else src[i]))
    res = {"shape": list(y.shape), "all_allowed": bool((flipped | same).all()),
           "flipped": np.float32(flipped.mean()), "grad_flipped_back":
           bool(np.array_equal(x.g, grad_back)), "two_axes_outcomes": sorted(kinds)}
    res.update(_seeding(nn, lambda: F.random_flip(
        nn.Variable.from_numpy_array(np.arange(24.0).reshape(4, 6)), seed=4)))
    return res


@nnabla_case(names=["nnabla.functions.random_shift"])
def random_shift(nn, F, r):
    """The rows a shift of a ramp can give, per border mode, over 300 samples; the gradient
    goes back to the positions read (nothing from a constant fill)."""
    nn.seed(5)
    ramp = np.tile(np.arange(6, dtype=np.float32), (300, 1, 1))
    res = {}
    for mode in ("nearest", "reflect", "constant"):
        x = nn.Variable.from_numpy_array(ramp, need_grad=True)
        y = F.random_shift(x, shifts=(3,), border_mode=mode, constant_value=-1)
        y.forward()
        x.g = 0
        y.backward(np.ones(y.shape, np.float32))
        res[mode] = _rows(y.d[:, 0])
        # each sample sends back one unit per output position not filled with the constant
        res[mode + "_grad_total"] = bool(np.array_equal(
            x.g.sum(axis=(1, 2)), (y.d != -1).sum(axis=(1, 2)).astype(np.float32)))
    x = nn.Variable.from_numpy_array(r.randn(50, 2, 4, 5))
    y = F.random_shift(x, shifts=(1, 2))
    y.forward()
    res["image_shape"] = list(y.shape)
    same = F.random_shift(x)                             # default shifts: all zero
    same.forward()
    res["default_is_identity"] = bool(np.array_equal(same.d, x.d))
    res.update(_seeding(nn, lambda: F.random_shift(
        nn.Variable.from_numpy_array(np.arange(24.0).reshape(4, 6)), shifts=(2,), seed=4)))
    return res


@nnabla_case(names=["nnabla.functions.random_crop"])
def random_crop(nn, F, r):
    """The window offsets seen over 300 samples, the shape, and the gradient's placement."""
    nn.seed(6)
    base = np.arange(30, dtype=np.float32).reshape(1, 5, 6)
    x = nn.Variable.from_numpy_array(np.tile(base, (300, 1, 1)), need_grad=True)
    y = F.random_crop(x, shape=(3, 4))
    y.forward()
    x.g = 0
    y.backward(np.ones(y.shape, np.float32))
    corners = y.d[:, 0, 0]
    offsets = np.stack([corners // 6, corners % 6], 1)
    windows = [base[0, int(a):int(a) + 3, int(b):int(b) + 4] for a, b in offsets]
    z = F.random_crop(nn.Variable.from_numpy_array(r.randn(4, 3, 5, 6)), shape=(4,))
    z.forward()
    res = {"shape": list(y.shape), "offsets": _rows(offsets),
           "windows": bool(all(np.array_equal(w, y.d[i]) for i, w in enumerate(windows))),
           "grad_total": np.float32(x.g.sum()), "grad_ones_in_window": bool(
               all(x.g[i][int(a):int(a) + 3, int(b):int(b) + 4].min() == 1
                   for i, (a, b) in enumerate(offsets))),
           "last_axis_only": list(z.shape)}
    res.update(_seeding(nn, lambda: F.random_crop(
        nn.Variable.from_numpy_array(np.arange(24.0).reshape(2, 12)), shape=(5,), seed=4)))
    return res


@nnabla_case(names=["nnabla.functions.random_erase"],
             tols={"erased_fraction": (0, 0.04), "per_channel_differs": (0, 0.06),
                   "replacement_mean": (0, 0.02)}, note=_FRACTION)
def random_erase(nn, F, r):
    """Box sizes (NNabla's inclusive boxes: He + 1 rows unless at the edge), the replacement
    range, the erased fraction, per-channel boxes with share=False, and the gradients."""
    nn.seed(8)
    zeros = nn.Variable.from_numpy_array(np.zeros((300, 1, 10, 10), np.float32))
    e = F.random_erase(zeros, prob=1.0, area_ratios=(0.04, 0.04), aspect_ratios=(1.0, 1.0),
                       replacements=(1.0, 2.0))
    e.forward()
    m = e.d[:, 0] > 0
    rows, cols = m.any(axis=2).sum(axis=1), m.any(axis=1).sum(axis=1)
    many = F.random_erase(nn.Variable.from_numpy_array(np.zeros((1500, 1, 10, 10), np.float32)),
                          prob=0.3, area_ratios=(0.04, 0.04), aspect_ratios=(1.0, 1.0))
    many.forward()
    three = F.random_erase(nn.Variable.from_numpy_array(np.zeros((300, 3, 6, 6), np.float32)),
                           prob=1.0, share=False, replacements=(1.0, 2.0))
    three.forward()
    erased = three.d > 0
    differs = np.mean([not (np.array_equal(a[0], a[1]) and np.array_equal(a[1], a[2]))
                       for a in erased])
    res = {"box_rows": sorted(set(rows.tolist())), "box_cols": sorted(set(cols.tolist())),
           "in_range": bool(((e.d[:, 0][m] >= 1.0) & (e.d[:, 0][m] < 2.0)).all()),
           "replacement_mean": np.float32(e.d[:, 0][m].mean()),
           "erased_fraction": np.float32((many.d.reshape(1500, -1) > 0).any(1).mean()),
           "per_channel_differs": np.float32(differs)}
    for fine in (True, False):
        x = nn.Variable.from_numpy_array(r.randn(40, 2, 6, 6) - 10.0, need_grad=True)
        y = F.random_erase(x, prob=0.8, replacements=(0.0, 1.0), ste_fine_grained=fine)
        y.forward()
        x.g = 0
        w = r.weights_like(y.d)
        y.backward(w)
        kept = y.d < -1.0                                # the inputs are far below 0
        expected = np.where(kept, w, 0.0) if fine else w
        res["grad_fine_%s" % fine] = bool(np.array_equal(x.g, expected))
    res.update(_seeding(nn, lambda: F.random_erase(
        nn.Variable.from_numpy_array(np.zeros((2, 1, 6, 6), np.float32)), prob=1.0, seed=4)))
    return res


@nnabla_case(names=["nnabla.functions.image_augmentation"],
             tols={"offset_min": (0, 0.05), "offset_max": (0, 0.05), "flipped": (0, 0.08),
                   "noise_std": (0, 0.008), "contrast_min": (0, 0.05), "contrast_max": (0, 0.05),
                   "brightness_min": (0, 0.03), "brightness_max": (0, 0.03)},
             note=_FRACTION + "; ranges of 300 draws within 0.05 of their ends; the noise's "
             "standard deviation (sqrt(E[sigma^2]) = 0.3 / sqrt(3)) over 192000 values "
             "within 0.008 (3 sigma)")
def image_augmentation(nn, F, r):
    """The identity of the defaults, crop offsets on NNabla's 1001 steps within the padding,
    a fixed zoom's step, flips, brightness/contrast ranges, noise, and no gradient."""
    nn.seed(9)
    res = {}
    with nn.auto_forward():
        x = nn.Variable.from_numpy_array(r.randn(4, 3, 5, 6))
        res["identity"] = bool(np.array_equal(F.image_augmentation(x).d, x.d))
        ramp = nn.Variable.from_numpy_array(_ramp(300, 5, 8, per_row=0.0))
        y = F.image_augmentation(ramp, pad=(0, 2)).d[:, 0, 0]
        inside = (y > 0) & (y < 7)
        offset = np.nanmedian(np.where(inside, y - np.arange(8), np.nan), axis=1)
        steps = (offset + 2) / 4 * 1000
        res["offset_min"], res["offset_max"] = np.float32(offset.min()), np.float32(offset.max())
        res["offset_steps"] = bool(np.allclose(steps, np.round(steps), atol=0.02))
        res["clamped_edges"] = bool(np.allclose(y, np.clip(np.arange(8) + offset[:, None], 0, 7),
                                                atol=1e-4))
        crop = F.image_augmentation(ramp, shape=(3, 5))
        res["crop_shape"] = list(crop.shape)
        zoom = F.image_augmentation(ramp, min_scale=2.0, max_scale=2.0).d[:, 0, 0]
        res["zoom_step"] = np.float32(np.median(zoom[:, 1] - zoom[:, 0]))
        img = nn.Variable.from_numpy_array(r.randn(300, 2, 3, 4))
        f = F.image_augmentation(img, flip_lr=True).d
        lr = np.array([np.array_equal(f[i], img.d[i, :, :, ::-1]) for i in range(300)])
        same = np.array([np.array_equal(f[i], img.d[i]) for i in range(300)])
        res["flipped"], res["flip_allowed"] = np.float32(lr.mean()), bool((lr | same).all())
        two = nn.Variable.from_numpy_array(np.tile(np.array([[1.0, 3.0]], np.float32),
                                                   (300, 1, 2, 1)))
        bc = F.image_augmentation(two, brightness=0.4, contrast=1.5, contrast_center=0.5).d
        c = (bc[:, 0, 0, 1] - bc[:, 0, 0, 0]) / 2.0
        b = (bc[:, 0, 0, 0] - 0.5) / c + 0.5 - 1.0
        res["contrast_min"], res["contrast_max"] = np.float32(c.min()), np.float32(c.max())
        res["brightness_min"], res["brightness_max"] = np.float32(b.min()), np.float32(b.max())
        flat = nn.Variable.from_numpy_array(np.zeros((3000, 1, 8, 8), np.float32))
        res["noise_std"] = np.float32(F.image_augmentation(flat, noise=0.3).d.std())
    x = nn.Variable.from_numpy_array(r.randn(2, 1, 4, 4), need_grad=True)
    y = F.image_augmentation(x, flip_lr=True)
    loss = F.sum(y * 2.0) + F.sum(x)
    loss.forward()
    x.g = 0
    loss.backward()
    res["no_gradient_through_it"] = x.g.copy()
    data = r.randn(2, 1, 4, 5)
    res.update(_seeding(nn, lambda: F.image_augmentation(
        nn.Variable.from_numpy_array(data), pad=(1, 1), seed=4)))
    return res

"""Harness entries of the NNabla functions added after the first two sets (``shift``, batched
linear algebra, norm rescalings, quantisation, grids and warping, ``add_n``/``mul_n``, ``dot``,
``kl_multinomial``, ``searchsorted``), merged into ``test_ops.ENTRIES``.

The references are NumPy, written from NNabla 1.39's documented semantics (the compat harness,
``tests/compat``, compares the functions with NNabla's own numbers).
"""

from __future__ import annotations

import math

import numpy as np

from op_harness_types import Case, Data, Entry

_D = Data(2281)
normal, uniform = _D.normal, _D.uniform


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    return tuple(a % ndim for a in (axis if isinstance(axis, (list, tuple)) else [axis]))


# -- shift: np.pad's edge / symmetric modes are NNabla's nearest / reflect ----------------------
def ref_shift(x, shifts=None, border_mode="nearest"):
    shifts = tuple(shifts or ())
    y = x
    for axis, s in zip(range(x.ndim - len(shifts), x.ndim), shifts):
        width = [(0, 0)] * x.ndim
        width[axis] = (abs(s), abs(s))
        padded = np.pad(y, width, mode="edge" if border_mode == "nearest" else "symmetric")
        y = np.take(padded, np.arange(x.shape[axis]) - s + abs(s), axis=axis)
    return y


# -- linear algebra ---------------------------------------------------------------------------
def _well_conditioned(*shape):
    return (normal(*shape, scale=0.3) + np.eye(shape[-1], dtype=np.float32)).astype(np.float32)


def ref_matrix_diag(x):
    out = np.zeros(x.shape + (x.shape[-1],), x.dtype)
    idx = np.arange(x.shape[-1])
    out[..., idx, idx] = x
    return out


def ref_dot(a, b):
    return np.dot(a, b)


# -- rescalings ---------------------------------------------------------------------------------
def ref_clip_by_norm(x, clip_norm, axis=None):
    norm = np.sqrt((x ** 2).sum(axis=_axes(axis, x.ndim), keepdims=True))
    return np.where(norm > clip_norm, x * clip_norm / norm, x)


def ref_norm_normalization(x, p=None, axes=None, eps=1e-12):
    p = 2.0 if p is None else p
    return x / ((np.abs(x) ** p).sum(axis=_axes(axes, x.ndim), keepdims=True) + eps) ** (1 / p)


def ref_weight_standardization(w, channel_axis=0, eps=1e-5, output_stat=False):
    other = tuple(a for a in range(w.ndim) if a != channel_axis % w.ndim)
    mean = w.mean(axis=other, keepdims=True)
    var = w.var(axis=other, keepdims=True)
    y = (w - mean) / np.sqrt(var + eps)
    return (y, mean, var) if output_stat else y


def ref_weight_normalization(w, g, dim=0, eps=1e-12):
    d = dim % w.ndim
    wm = np.moveaxis(w, d, 0)
    norms = np.sqrt((wm.reshape(wm.shape[0], -1) ** 2).sum(axis=1) + eps)
    return np.moveaxis(wm * (g / norms).reshape((-1,) + (1,) * (w.ndim - 1)), 0, d)


# -- quantisation ----------------------------------------------------------------------------
def ref_fixed_point_quantize(x, sign=True, n=8, delta=0.0625, quantize=True,
                             ste_fine_grained=True):
    if not quantize:
        return x
    high = (2 ** (n - 1) - 1) * delta if sign else (2 ** n - 1) * delta
    low = -high if sign else 0.0
    q = np.sign(x) * np.floor(np.abs(x) / delta + 0.5) * delta
    return np.clip(q, low, high)


def ref_pow2_quantize(x, sign=True, with_zero=True, n=8, m=1, quantize=True,
                      ste_fine_grained=True):
    """NNabla's documented rule: powers of two with geometric-mean thresholds between
    ``2^(m - (2^b - 1))`` and ``2^m`` (``b``: the bits left after sign and zero)."""
    if not quantize:
        return x
    bits = n - int(sign) - int(with_zero)
    low, high = 2.0 ** (m - (2 ** bits - 1)), 2.0 ** m
    out = np.empty_like(x)
    for i, v in np.ndenumerate(x):
        a = abs(v) if sign else max(v, 0.0)
        q = 0.0 if a == 0 else 2.0 ** math.floor(math.log2(a) + 0.5)
        q = min(max(q, low), high)
        if with_zero and a < low / math.sqrt(2.0):
            q = 0.0
        out[i] = -q if (sign and v < 0) else q
    return out


def _pow2_data(*shape):
    v = np.exp2(uniform(-8.0, 2.4, *shape)) * np.where(uniform(0, 1, *shape) < 0.3, -1, 1)
    v.flat[0] = 0.0
    return v.astype(np.float32)


# -- grids ------------------------------------------------------------------------------------
def ref_meshgrid(*x, ij_indexing=False):
    return tuple(np.meshgrid(*x, indexing="ij" if ij_indexing else "xy"))


def _positions(n, align_corners):
    pos = np.linspace(-1.0, 1.0, n)
    return pos if align_corners else pos * (n - 1) / n


def ref_affine_grid(theta, size, align_corners=False):
    axes = [_positions(n, align_corners) for n in size]
    mesh = np.meshgrid(*axes, indexing="ij")          # (D,) H, W
    coords = [m for m in reversed(mesh)] + [np.ones_like(mesh[0])]   # x first, then 1
    base = np.stack(coords, axis=-1)                  # (*size, k + 1)
    return np.einsum("...j,bij->b...i", base, theta)


def _reflect(c, low, high):
    span = high - low
    c = np.abs(c - low)
    flips = np.floor(c / span)
    extra = np.mod(c, span)
    return np.where(flips % 2 == 0, extra + low, span - extra + low)


def _source(g, n, padding_mode, align_corners):
    c = (g + 1) / 2 * (n - 1) if align_corners else ((g + 1) * n - 1) / 2
    if padding_mode == "repeat":
        c = np.clip(c, 0, n - 1)
    elif padding_mode == "reflect":
        c = _reflect(c, 0, n - 1) if align_corners else _reflect(c, -0.5, n - 0.5)
        c = np.clip(c, 0, n - 1)
    return c


def ref_warp_by_grid(x, grid, mode="linear", padding_mode="zero", align_corners=False,
                     channel_last=False):
    if channel_last:
        x = np.moveaxis(x, -1, 1)
    b, c, h, w = x.shape
    sx = _source(grid[..., 0], w, padding_mode, align_corners)
    sy = _source(grid[..., 1], h, padding_mode, align_corners)
    out = np.zeros((b, c) + grid.shape[1:3])

    def pick(bi, yy, xx):
        inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        v = x[bi][:, np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]
        return v * inside

    for bi in range(b):
        if mode == "nearest":
            out[bi] = pick(bi, np.rint(sy[bi]).astype(int), np.rint(sx[bi]).astype(int))
            continue
        x0, y0 = np.floor(sx[bi]).astype(int), np.floor(sy[bi]).astype(int)
        fx, fy = sx[bi] - x0, sy[bi] - y0
        out[bi] = (pick(bi, y0, x0) * (1 - fx) * (1 - fy) + pick(bi, y0, x0 + 1) * fx * (1 - fy)
                   + pick(bi, y0 + 1, x0) * (1 - fx) * fy + pick(bi, y0 + 1, x0 + 1) * fx * fy)
    return np.moveaxis(out, 1, -1) if channel_last else out


# -- the rest ---------------------------------------------------------------------------------
def ref_kl_multinomial(p, q, base_axis=1):
    return (p * (np.log(p) - np.log(q))).sum(axis=tuple(range(base_axis, p.ndim)), keepdims=True)


def ref_searchsorted(s, v, right=False):
    side = "right" if right else "left"
    flat_s, flat_v = s.reshape(-1, s.shape[-1]), v.reshape(-1, v.shape[-1])
    rows = [np.searchsorted(a, b, side=side) for a, b in zip(flat_s, flat_v)]
    return np.array(rows, np.float64).reshape(v.shape)


def _probabilities(*shape):
    e = np.exp(normal(*shape).astype(np.float64))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def _halves(*shape):
    return (_D.rng.integers(-6, 7, shape) * 0.5).astype(np.float32)


def _sorted_halves(*shape):
    return np.sort(_halves(*shape), axis=-1)


def _grid(*shape):
    return uniform(-1.2, 1.2, *shape)


_STE = ("a straight-through estimator: its gradient is not the derivative (the compat "
        "harness checks it against NNabla's)")

EXTRA_ENTRIES: dict[str, Entry] = {
    "shift": Entry([Case((normal(2, 3, 5),), {"shifts": (1, -2)}),
                    Case((normal(2, 4, 5),), {"shifts": (-3, 2), "border_mode": "reflect"}),
                    Case((normal(2, 4),), {"shifts": (9,), "border_mode": "reflect"}),
                    Case((normal(2, 3),))], ref_shift),
    "batch_inv": Entry([Case((_well_conditioned(2, 3, 3),))], np.linalg.inv, rtol=1e-4),
    "batch_det": Entry([Case((_well_conditioned(3, 3, 3),))], np.linalg.det, rtol=1e-4),
    "batch_logdet": Entry([Case((_well_conditioned(2, 4, 4),))],
                          lambda x: np.linalg.slogdet(x)[1], rtol=1e-4),
    "matrix_diag": Entry([Case((normal(2, 3),)), Case((normal(4),))], ref_matrix_diag),
    "matrix_diag_part": Entry([Case((normal(2, 3, 3),)), Case((normal(4, 4),))],
                              lambda x: np.diagonal(x, axis1=-2, axis2=-1)),
    "dot": Entry([Case((normal(3, 4), normal(4, 2))), Case((normal(2, 3, 4), normal(4))),
                  Case((normal(2, 3, 4), normal(2, 4, 5))), Case((normal(4), normal(4))),
                  Case((normal(4), normal(3, 4, 2)))], ref_dot),
    "clip_by_norm": Entry([Case((normal(3, 4),), {"clip_norm": 1.5}),
                           Case((normal(3, 4),), {"clip_norm": 1.5, "axis": 1}),
                           Case((normal(2, 3, 4),), {"clip_norm": 2.0, "axis": (0, 2)})],
                          ref_clip_by_norm),
    "norm_normalization": Entry([Case((normal(3, 4),)),
                                 Case((uniform(0.3, 2.0, 3, 4),), {"p": 3, "axes": 1}),
                                 Case((normal(2, 3, 4),), {"axes": [0, 2]})],
                                ref_norm_normalization),
    "weight_standardization": Entry([Case((normal(3, 2, 2, 2),)),
                                     Case((normal(3, 4, 2),), {"channel_axis": 1, "eps": 0.1}),
                                     Case((normal(3, 4),), {"output_stat": True})],
                                    ref_weight_standardization, rtol=1e-4),
    "weight_normalization": Entry([Case((normal(3, 2, 2), uniform(0.5, 2, 3))),
                                   Case((normal(3, 4, 2), normal(4)), {"dim": 1})],
                                  ref_weight_normalization),
    "fixed_point_quantize": Entry([Case((uniform(-1.3, 1.3, 4, 5),), {"n": 4, "delta": 0.125}),
                                   Case((uniform(-1.3, 1.3, 4, 5),),
                                        {"sign": False, "n": 3, "delta": 0.25,
                                         "ste_fine_grained": False}),
                                   Case((normal(2, 3),), {"quantize": False})],
                                  ref_fixed_point_quantize, no_grad=_STE),
    "pow2_quantize": Entry([Case((_pow2_data(5, 6),), {"n": 4, "m": 1}),
                            Case((_pow2_data(5, 6),), {"sign": False, "n": 3, "m": 0}),
                            Case((_pow2_data(5, 6),), {"with_zero": False, "n": 3, "m": 0,
                                                       "ste_fine_grained": False}),
                            Case((normal(2, 3),), {"quantize": False})],
                           ref_pow2_quantize, no_grad=_STE),
    "meshgrid": Entry([Case((normal(3), normal(2))),
                       Case((normal(3), normal(2), normal(4)), {"ij_indexing": True})],
                      ref_meshgrid),
    "affine_grid": Entry([Case((normal(2, 2, 3),), {"size": (3, 4)}),
                          Case((normal(1, 3, 4),), {"size": (2, 3, 4), "align_corners": True})],
                         ref_affine_grid),
    "warp_by_grid": Entry([Case((normal(2, 3, 4, 5), _grid(2, 3, 2, 2))),
                           Case((normal(1, 2, 4, 4), _grid(1, 3, 3, 2)),
                                {"padding_mode": "repeat", "align_corners": True}),
                           Case((normal(1, 2, 4, 4), _grid(1, 3, 3, 2)),
                                {"padding_mode": "reflect"}),
                           Case((normal(1, 4, 5, 3), _grid(1, 2, 3, 2)), {"channel_last": True}),
                           Case((normal(1, 2, 4, 4), _grid(1, 3, 3, 2)), {"mode": "nearest"},
                                no_grad="nearest sampling is piecewise constant")],
                          ref_warp_by_grid, rtol=1e-4),
    "add_n": Entry([Case((normal(2, 3), normal(2, 3), normal(2, 3))), Case((normal(4),))],
                   lambda *x: sum(x)),
    "mul_n": Entry([Case((normal(2, 3), normal(2, 3), normal(2, 3))),
                    Case((normal(4), normal(4)))], lambda *x: np.prod(np.stack(x), axis=0)),
    "kl_multinomial": Entry([Case((_probabilities(3, 4), _probabilities(3, 4))),
                             Case((_probabilities(2, 3, 4), _probabilities(2, 3, 4)),
                                  {"base_axis": 2})], ref_kl_multinomial),
    "searchsorted": Entry([Case((_sorted_halves(2, 6), _halves(2, 5))),
                           Case((_sorted_halves(2, 3, 6), _halves(2, 3, 4)), {"right": True})],
                          ref_searchsorted,
                          no_grad="positions are piecewise constant (NNabla defines no "
                                  "backward)"),
}


# -- binarised-weight layers (the layers' own references come from test_ops) -----------------
def _sign(w, quantize_zero_to):
    return np.where(w > 0, 1.0, np.where(w < 0, -1.0, quantize_zero_to))


def _unit_scales(w, unit_axis):
    return np.abs(w).mean(axis=tuple(a for a in range(w.ndim) if a != unit_axis))


def _with_a_zero(w):
    w = w.copy()
    w.flat[1] = 0.0
    return w


_BINARY_WHY = ("the weight's gradient is straight-through (not the derivative of sign), and the "
               "binarised weight and scales are outputs the op writes (the compat harness "
               "checks all three against NNabla)")


def binary_entries(ref_affine, ref_convolution) -> dict:
    """Entries of ``binary_connect_*`` / ``binary_weight_*`` given the references of the plain
    layers (kept in ``test_ops``)."""
    def connect_affine(x, w, wb, b=None, base_axis=1, quantize_zero_to=1.0):
        return ref_affine(x, _sign(w, quantize_zero_to), b, base_axis)

    def weight_affine(x, w, wb, alpha, b=None, base_axis=1, quantize_zero_to=1.0):
        flat = w.reshape(w.shape[0], -1)
        value = _sign(flat, quantize_zero_to) * _unit_scales(flat, 1)
        return ref_affine(x, value.reshape(w.shape), b, base_axis)

    def connect_conv(x, w, wb, b=None, base_axis=1, pad=None, stride=None, dilation=None,
                     group=1, quantize_zero_to=1.0):
        return ref_convolution(x, _sign(w, quantize_zero_to), b, base_axis, pad, stride,
                               dilation, group)

    def weight_conv(x, w, wb, alpha, b=None, base_axis=1, pad=None, stride=None,
                    dilation=None, group=1, quantize_zero_to=1.0):
        scales = _unit_scales(w, 0).reshape((-1,) + (1,) * (w.ndim - 1))
        return ref_convolution(x, _sign(w, quantize_zero_to) * scales, b, base_axis, pad, stride,
                               dilation, group)

    def writes_sign(x, w, wb, *rest, quantize_zero_to=1.0, **attrs):
        return {2: _sign(w, quantize_zero_to)}

    def writes_sign_and_scales(unit_axis):
        def updates(x, w, wb, alpha, *rest, quantize_zero_to=1.0, **attrs):
            flat = w.reshape(w.shape[0], -1) if unit_axis == 1 else w
            return {2: _sign(w, quantize_zero_to), 3: _unit_scales(flat, unit_axis)}
        return updates

    return {
        "binary_connect_affine": Entry(
            [Case((normal(2, 3, 2), _with_a_zero(normal(6, 4)), np.zeros((6, 4), np.float32),
                   normal(4)), {"quantize_zero_to": 0.25}),
             Case((normal(2, 5), normal(5, 3), np.zeros((5, 3), np.float32), None),
                  no_grad="no bias: the first case checks the gradients")],
            connect_affine, grad_inputs=(0, 3), why_not_others=_BINARY_WHY,
            updates=writes_sign),
        "binary_weight_affine": Entry(
            [Case((normal(2, 5), _with_a_zero(normal(5, 3)), np.zeros((5, 3), np.float32),
                   np.zeros(3, np.float32), normal(3)), {"quantize_zero_to": 0.5})],
            weight_affine, grad_inputs=(0, 4), why_not_others=_BINARY_WHY,
            updates=writes_sign_and_scales(1)),
        "binary_connect_convolution": Entry(
            [Case((normal(2, 3, 5, 5), normal(4, 3, 3, 3), np.zeros((4, 3, 3, 3), np.float32),
                   normal(4)), {"pad": (1, 1)})],
            connect_conv, grad_inputs=(0, 3), why_not_others=_BINARY_WHY,
            updates=writes_sign),
        "binary_weight_convolution": Entry(
            [Case((normal(1, 4, 6, 6), _with_a_zero(normal(6, 2, 3, 2)),
                   np.zeros((6, 2, 3, 2), np.float32), np.zeros(6, np.float32), normal(6)),
                  {"stride": (2, 1), "group": 2, "quantize_zero_to": 0.25})],
            weight_conv, grad_inputs=(0, 4), why_not_others=_BINARY_WHY,
            updates=writes_sign_and_scales(0)),
    }


def fused_bn_entry(ref_batch_normalization, updates_batch_normalization) -> dict:
    """The entry of ``fused_batch_normalization``: ``relu(batch_normalization + z)`` from the
    batch normalisation's own reference (kept in ``test_ops``)."""
    def reference(x, beta, gamma, mean, variance, z=None, axes=(1,), decay_rate=0.9, eps=1e-5,
                  batch_stat=True, nonlinearity="relu", output_stat=False):
        y = ref_batch_normalization(x, beta, gamma, mean, variance, axes, decay_rate, eps,
                                    batch_stat)
        return np.maximum(y + (0.0 if z is None else z), 0.0)

    def updates(x, beta, gamma, mean, variance, z=None, axes=(1,), decay_rate=0.9, eps=1e-5,
                batch_stat=True, nonlinearity="relu", output_stat=False):
        return updates_batch_normalization(x, beta, gamma, mean, variance, axes, decay_rate, eps,
                                           batch_stat)

    s = (1, 3, 1, 1)

    def inputs(z):
        return (normal(4, 3, 2, 2), normal(*s), uniform(0.5, 1.5, *s), normal(*s),
                uniform(0.5, 1.5, *s), z)
    return {"fused_batch_normalization": Entry(
        [Case(inputs(normal(4, 3, 2, 2))), Case(inputs(None), {"decay_rate": 0.5}),
         Case(inputs(normal(4, 3, 2, 2)), {"batch_stat": False})],
        reference, grad_inputs=(0, 1, 2), updates=updates, rtol=1e-4,
        why_not_others="the running mean and variance are statistics (need_grad=False in PF); "
                       "z's gradient is the output's where it is positive, checked against "
                       "NNabla by the compat harness")}

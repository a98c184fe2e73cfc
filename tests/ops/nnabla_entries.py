"""Harness entries of NNabla's further functions (random sources, trigonometry, comparisons and
logic, straight-through binarisers, normalisations, indexing and scans, resampling, depthwise
convolution), merged into ``test_ops.ENTRIES``.

The references are NumPy, written from NNabla 1.39's documented semantics (its numbers are
checked separately by the compat harness, ``tests/compat``).  Random sources get a statistical
check instead of a reference.
"""

from __future__ import annotations

import math

import numpy as np

from op_harness_types import Case, Data, Entry

_D = Data(1839)
normal, uniform, away_from = _D.normal, _D.uniform, _D.away_from
nonzero, ints, distinct = _D.nonzero, _D.ints, _D.distinct

_NO_GRAD_COMPARISON = "a comparison or logical function: NNabla defines no backward for it"
_STRAIGHT_THROUGH = ("a straight-through estimator: its gradient is not the derivative "
                     "(test_nnabla_ops.py checks it against NNabla's rule)")


def _halves(*shape: int) -> np.ndarray:
    """Multiples of 0.5 in [-1.5, 1.5]: comparisons meet ties and exact zeros."""
    return (_D.rng.integers(-3, 4, shape) * 0.5).astype(np.float32)


_ROUNDING = ("rounding passes the gradient straight through, not its derivative "
             "(test_nnabla_ops.py checks it)")


def _quarters(*shape: int) -> np.ndarray:
    """Multiples of 0.25 in [-2.5, 2.5]: integers and halves, where rounding rules differ."""
    return (_D.rng.integers(-10, 11, shape) * 0.25).astype(np.float32)


def _specials() -> np.ndarray:
    return np.array([[1.0, np.nan, -np.inf], [np.inf, -2.0, np.nan]], np.float32)


def _erf(x):
    return np.vectorize(math.erf)(x)


def _elu(x, alpha):
    return np.where(x > 0, x, alpha * (np.exp(x) - 1))


def _like(result, *inputs):
    return result.astype(np.result_type(*inputs))


# ---------------------------------------------------------------------------------------------
# Random sources: statistical checks
# ---------------------------------------------------------------------------------------------
def _sigma_bound(std: float, n: int) -> float:
    return 5 * std / math.sqrt(n)


def check_rand(inputs, outputs, low=0.0, high=1.0, shape=(), seed=-1):
    u = outputs[0]
    assert u.shape == tuple(shape) and u.dtype == np.float32
    assert (u >= low).all() and (u < high).all()
    width = high - low
    assert abs(u.mean() - (low + high) / 2) < _sigma_bound(width / math.sqrt(12), u.size)
    assert abs(u.std() - width / math.sqrt(12)) < 0.05 * width


def check_randn(inputs, outputs, mu=0.0, sigma=1.0, shape=(), seed=-1):
    z = outputs[0]
    assert z.shape == tuple(shape) and z.dtype == np.float32
    assert abs(z.mean() - mu) < _sigma_bound(sigma, z.size)
    assert abs(z.std() / sigma - 1) < 0.05


def check_randint(inputs, outputs, low=0, high=1, shape=(), seed=-1):
    k = outputs[0]
    assert k.shape == tuple(shape) and k.dtype == np.int32
    assert sorted(set(k.ravel().tolist())) == list(range(low, high))
    counts = np.bincount(k.ravel() - low, minlength=high - low) / k.size
    p = 1.0 / (high - low)
    assert np.abs(counts - p).max() < 5 * math.sqrt(p * (1 - p) / k.size)


# ---------------------------------------------------------------------------------------------
# Normalisations
# ---------------------------------------------------------------------------------------------
def _normalized(x, reduce, eps):
    mean = x.mean(axis=tuple(reduce), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=tuple(reduce), keepdims=True)
    return (x - mean) / np.sqrt(var + eps), mean, var


def _affine(y, beta, gamma):
    return (y if gamma is None else y * gamma) + (0 if beta is None else beta)


def ref_layer_normalization(x, beta, gamma, batch_axis=0, eps=1e-5, output_stat=False):
    keep = batch_axis if isinstance(batch_axis, (list, tuple)) else [batch_axis]
    y, m, v = _normalized(x, [a for a in range(x.ndim) if a not in keep], eps)
    y = _affine(y, beta, gamma)
    return (y, m, v) if output_stat else y


def ref_instance_normalization(x, beta, gamma, channel_axis=1, batch_axis=0, eps=1e-5,
                               output_stat=False):
    y, m, v = _normalized(x, [a for a in range(x.ndim) if a not in (channel_axis, batch_axis)],
                          eps)
    y = _affine(y, beta, gamma)
    return (y, m, v) if output_stat else y


def ref_group_normalization(x, beta, gamma, num_groups, channel_axis=1, batch_axis=0, eps=1e-5,
                            output_stat=False):
    n, c = x.shape[0], x.shape[1]
    g = x.reshape((n, num_groups, c // num_groups) + x.shape[2:])
    y, m, v = _normalized(g, list(range(2, g.ndim)), eps)
    y = _affine(y.reshape(x.shape), beta, gamma)
    return (y, m, v) if output_stat else y


def ref_norm(x, p=None, axis=None, keepdims=False):
    p = 2.0 if p is None else p
    axis = tuple(axis) if isinstance(axis, list) else axis
    return (np.abs(x) ** p).sum(axis=axis, keepdims=keepdims) ** (1.0 / p)


# ---------------------------------------------------------------------------------------------
# Indexing, ordering, scans
# ---------------------------------------------------------------------------------------------
def ref_gather(x, idx, axis=None, batch_dims=None):
    axis, b = axis or 0, batch_dims or 0
    if b == 0:
        return np.take(x, idx, axis=axis)
    return np.stack([ref_gather(x[i], idx[i], axis - 1, b - 1) for i in range(x.shape[0])])


def ref_gather_nd(data, indices):
    return data[tuple(indices)]


def ref_sort(x, axis=-1, reverse=False, with_index=False, only_index=False):
    index = np.argsort(-x if reverse else x, axis=axis, kind="stable")
    values = np.take_along_axis(x, index, axis=axis)
    if only_index:
        return index
    return (values, index) if with_index else values


def ref_top_k_data(x, k, abs=False, reduce=True, base_axis=1, largest=True,  # noqa: A002
                   with_index=False):
    flat = x.reshape(x.shape[:base_axis] + (-1,))
    key = np.abs(flat) if abs else flat
    index = np.argsort(-key if largest else key, axis=-1, kind="stable")[..., :k]
    values = np.take_along_axis(flat, index, axis=-1)
    if not reduce:
        full = np.zeros_like(flat)
        np.put_along_axis(full, index, values, axis=-1)
        values = full.reshape(x.shape)
    return (values, index) if with_index else values


def _ref_scan(accumulate, identity):
    def ref(x, axis=None, exclusive=False, reverse=False):
        axis = 0 if axis is None else axis
        if reverse:
            x = np.flip(x, axis)
        y = accumulate(x, axis=axis)
        if exclusive:
            first = np.full_like(np.take(y, [0], axis=axis), identity)
            y = np.concatenate([first, np.take(y, range(y.shape[axis] - 1), axis=axis)], axis)
        return np.flip(y, axis) if reverse else y
    return ref


# ---------------------------------------------------------------------------------------------
# Resampling and the rest
# ---------------------------------------------------------------------------------------------
def _coordinates(n_in, n_out, mode, align_corners, half_pixel, half_pixel_for_nn):
    """Where output index ``o`` reads the input, per NNabla's rules (see ops/_resample.py)."""
    ratio = ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0) if align_corners else n_in / n_out
    out = []
    for o in range(n_out):
        if mode == "nearest":
            src = math.floor((o + 0.5) * ratio if half_pixel_for_nn else o * ratio)
        elif half_pixel and not align_corners:
            src = max((o + 0.5) * ratio - 0.5, 0.0)
        else:
            src = o * ratio
        out.append(min(src, n_in - 1))
    return out


def ref_interpolate(x, scale=None, output_size=None, mode="linear", align_corners=False,
                    half_pixel=False, half_pixel_for_nn=False, channel_last=False):
    n = len(scale if output_size is None else output_size)
    size = output_size or [int(math.floor(s * d)) for s, d in zip(scale, x.shape[-n:])]
    y = x
    for k, n_out in enumerate(size):
        axis = x.ndim - n + k
        n_in = y.shape[axis]
        rows = []
        for src in _coordinates(n_in, n_out, mode, align_corners, half_pixel, half_pixel_for_nn):
            lo = int(math.floor(src))
            hi, w = min(lo + 1, n_in - 1), src - lo
            a, b = np.take(y, lo, axis=axis), np.take(y, hi, axis=axis)
            rows.append(a if mode == "nearest" else a * (1 - w) + b * w)
        y = np.stack(rows, axis=axis)
    return y


def ref_unpooling(x, kernel, channel_last=False):
    for k, r in enumerate(kernel):
        x = np.repeat(x, r, axis=x.ndim - len(kernel) + k)
    return x


def ref_depthwise_convolution(x, weight, bias=None, base_axis=1, pad=None, stride=None,
                              dilation=None, multiplier=1):
    """Each output channel ``o`` correlates input channel ``o // multiplier`` with
    ``weight[o]`` (2-d, an explicit sum over each output position's patch)."""
    pad, stride, dilation = pad or (0, 0), stride or (1, 1), dilation or (1, 1)
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    kh, kw = weight.shape[1:]
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    y = np.zeros((x.shape[0], weight.shape[0], oh, ow))
    for o in range(weight.shape[0]):
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, o // multiplier,
                           i * stride[0]:i * stride[0] + dilation[0] * (kh - 1) + 1:dilation[0],
                           j * stride[1]:j * stride[1] + dilation[1] * (kw - 1) + 1:dilation[1]]
                y[:, o, i, j] = (patch * weight[o]).sum(axis=(1, 2))
    return y if bias is None else y + bias.reshape(1, -1, 1, 1)


def _power_iteration(w, u, dim, itr, eps):
    matrix = np.moveaxis(w, dim, 0).reshape(w.shape[dim], -1)
    left, right = u, None
    for _ in range(itr):
        right = matrix.T @ left
        right = right / np.sqrt((right ** 2).sum() + eps)
        left = matrix @ right
        left = left / np.sqrt((left ** 2).sum() + eps)
    return matrix, left, right


def ref_spectral_norm(w, u, dim=0, itr=1, eps=1e-12, test=False, output_u=False):
    matrix, left, right = _power_iteration(w, u, dim, itr, eps)
    y = w / (left @ matrix @ right)
    return (y, u) if output_u else y


def updates_spectral_norm(w, u, dim=0, itr=1, eps=1e-12, test=False, output_u=False):
    return {} if test else {1: _power_iteration(w, u, dim, itr, eps)[1]}


def ref_prelu(x0, x1, base_axis=1):
    slope = x1.reshape((-1,) + (1,) * (x0.ndim - base_axis - 1)) if x1.size > 1 else x1
    return np.where(x0 > 0, x0, slope * x0)


def ref_clip_by_value(x, low, high):
    return np.minimum(np.maximum(x, low), high)


def _unary(reference, *cases, **options):
    return Entry(list(cases), reference, **options)


def _compare(reference, *cases):
    return Entry(list(cases), lambda *x, **attrs: _like(reference(*x, **attrs), *x),
                 no_grad=_NO_GRAD_COMPARISON)


def _pair(*shape):
    return Case((_halves(*shape), _halves(*shape)))


_BN3 = (normal(2, 3, 4), normal(1, 3, 4), uniform(0.5, 2, 1, 3, 4))
_IN4 = (normal(2, 3, 4, 5), normal(1, 3, 1, 1), uniform(0.5, 2, 1, 3, 1, 1))
_GN3 = (normal(2, 6, 5), normal(1, 6, 1), uniform(0.5, 2, 1, 6, 1))
_ABS_DISTINCT = distinct(3, 6) + np.float32(0.1)      # no two values of equal magnitude


NNABLA_ENTRIES: dict[str, Entry] = {
    # -- random sources -------------------------------------------------------------------
    "rand": Entry([Case((), {"shape": (40, 50)}),
                   Case((), {"low": -2.0, "high": 3.0, "shape": (4000,), "seed": 5})],
                  check=check_rand, random=True, no_grad="a random source has no inputs"),
    "randn": Entry([Case((), {"shape": (40, 50)}),
                    Case((), {"mu": 1.5, "sigma": 0.5, "shape": (4000,), "seed": 3})],
                   check=check_randn, random=True, no_grad="a random source has no inputs"),
    "randint": Entry([Case((), {"low": 0, "high": 4, "shape": (50, 40)}),
                      Case((), {"low": -3, "high": 2, "shape": (4000,), "seed": 11})],
                     check=check_randint, random=True, no_grad="a random source has no inputs"),
    # -- trigonometry -------------------------------------------------------------------------
    "sin": _unary(np.sin, Case((normal(3, 4, scale=2.0),))),
    "cos": _unary(np.cos, Case((normal(3, 4, scale=2.0),))),
    "tan": _unary(np.tan, Case((uniform(-1.2, 1.2, 3, 4),))),
    "asin": _unary(np.arcsin, Case((uniform(-0.9, 0.9, 3, 4),))),
    "acos": _unary(np.arccos, Case((uniform(-0.9, 0.9, 3, 4),))),
    "atan": _unary(np.arctan, Case((normal(3, 4, scale=2.0),))),
    "atan2": Entry([Case((normal(3, 4), nonzero(3, 4))), Case((normal(2, 3), nonzero(3)))],
                   np.arctan2),
    "sinh": _unary(np.sinh, Case((normal(3, 4),))),
    "cosh": _unary(np.cosh, Case((normal(3, 4),))),
    "asinh": _unary(np.arcsinh, Case((normal(3, 4, scale=2.0),))),
    "acosh": _unary(np.arccosh, Case((uniform(1.1, 4.0, 3, 4),))),
    "atanh": _unary(np.arctanh, Case((uniform(-0.9, 0.9, 3, 4),))),
    # -- comparisons and logic ------------------------------------------------------------
    "equal": _compare(np.equal, _pair(3, 4), Case((_halves(2, 3), _halves(3)))),
    "not_equal": _compare(np.not_equal, _pair(3, 4)),
    "less_equal": _compare(np.less_equal, _pair(3, 4), Case((_halves(2, 3), _halves(2, 1)))),
    "greater_scalar": _compare(lambda x, val=1.0: x > val, Case((_halves(3, 4), ), {"val": 0.5}),
                               Case((_halves(3, 4),))),
    "greater_equal_scalar": _compare(lambda x, val=1.0: x >= val,
                                     Case((_halves(3, 4),), {"val": -0.5})),
    "less_scalar": _compare(lambda x, val=1.0: x < val, Case((_halves(3, 4),), {"val": 0.0})),
    "less_equal_scalar": _compare(lambda x, val=1.0: x <= val,
                                  Case((_halves(3, 4),), {"val": 0.5})),
    "equal_scalar": _compare(lambda x, val=1.0: x == val, Case((_halves(3, 4),), {"val": 0.5}),
                             Case((ints(3, 4, 5),), {"val": 2})),
    "not_equal_scalar": _compare(lambda x, val=1.0: x != val,
                                 Case((_halves(3, 4),), {"val": 1.5})),
    "logical_and": _compare(np.logical_and, _pair(3, 4)),
    "logical_or": _compare(np.logical_or, _pair(3, 4), Case((_halves(2, 3), _halves(3)))),
    "logical_xor": _compare(np.logical_xor, _pair(3, 4)),
    "logical_not": _compare(np.logical_not, Case((_halves(3, 4),))),
    # -- activations --------------------------------------------------------------------------
    "binary_tanh": _unary(lambda x: np.where(x > 0, 1.0, -1.0), Case((_halves(3, 4),)),
                          no_grad=_STRAIGHT_THROUGH),
    "binary_sigmoid": _unary(lambda x: np.where(x > 0, 1.0, 0.0), Case((_halves(3, 4),)),
                             no_grad=_STRAIGHT_THROUGH),
    "prelu": Entry([Case((nonzero(2, 3, 4), np.array(0.25, np.float32))),
                    Case((nonzero(2, 3, 4), normal(3))),
                    Case((nonzero(2, 3, 4), normal(4)), {"base_axis": 2})], ref_prelu),
    "clip_by_value": Entry([Case((away_from((-0.5, 0.7), 3, 4), np.full((1,), -0.5, np.float32),
                                  np.full((1,), 0.7, np.float32))),
                            Case((away_from((-1.0, 1.0), 2, 3, scale=2.0),
                                  np.array([-1.0, -2.0, -0.5], np.float32),
                                  np.array([1.0, 0.5, 2.0], np.float32)))],
                           ref_clip_by_value),
    # -- generators and graph helpers -----------------------------------------------------
    "arange": Entry([Case((), {"start": 0, "stop": 5}),
                     Case((), {"start": 1, "stop": 2, "step": 0.25}),
                     Case((), {"start": 3, "stop": -1, "step": -1.5})],
                    lambda start, stop, step=1: np.arange(start, stop, step, dtype=np.float32),
                    no_grad="a generator has no inputs"),
    "assign": Entry([Case((normal(2, 3), normal(2, 3)))], lambda dst, src: src,
                    updates=lambda dst, src: {0: src},
                    no_grad="NNabla's assign sends the output's gradient to dst, whose "
                            "value the output does not depend on (assign.cpp), none to src: "
                            "case tests43_assign__gradient_to_dst"),
    "sink": Entry([Case((normal(2, 3), normal(4))),
                   Case((normal(3),), {"one_input_grad": False})],
                  lambda *x, one_input_grad=True: np.float32(0.0),
                  no_grad="its gradient is ones by definition, not a derivative "
                          "(test_nnabla_ops.py checks it)"),
    # -- rounding (straight-through), bounded and smooth activations, NaN and Inf ----------
    "sign": _unary(lambda x, alpha=1.0: np.where(x == 0, alpha, np.sign(x)),
                   Case((_halves(3, 4),)), Case((_halves(3, 4),), {"alpha": -0.5}),
                   no_grad=_ROUNDING),
    "floor": _unary(np.floor, Case((_quarters(3, 4),)), no_grad=_ROUNDING),
    "ceil": _unary(np.ceil, Case((_quarters(3, 4),)), no_grad=_ROUNDING),
    "round": _unary(lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), Case((_quarters(3, 4),)),
                    no_grad=_ROUNDING),
    "hard_sigmoid": _unary(lambda x: np.clip(0.2 * x + 0.5, 0, 1),
                           Case((away_from((-2.5, 2.5), 3, 4, scale=2.0),))),
    "hard_tanh": _unary(lambda x: np.clip(x, -1, 1), Case((away_from((-1.0, 1.0), 3, 4),))),
    "softsign": _unary(lambda x: x / (1 + np.abs(x)), Case((nonzero(3, 4),))),
    "log_sigmoid": _unary(lambda x: -np.log1p(np.exp(-x)), Case((normal(3, 4, scale=2.0),))),
    "mish": _unary(lambda x: x * np.tanh(np.log1p(np.exp(x))), Case((normal(3, 4),))),
    "tanh_shrink": _unary(lambda x: x - np.tanh(x), Case((normal(3, 4),))),
    "sinc": _unary(lambda x: np.where(x == 0, 1.0, np.sin(x) / np.where(x == 0, 1.0, x)),
                   Case((nonzero(3, 4),)), Case((np.array([0.0, 1.0], np.float32),),
                                                no_grad="sinc's gradient at 0 is 0 by its limit; "
                                                        "finite differences there are noisy")),
    "erf": _unary(_erf, Case((normal(3, 4),))),
    "crelu": _unary(lambda x, axis=1: np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], axis),
                    Case((nonzero(2, 3),)), Case((nonzero(2, 3, 2),), {"axis": 2})),
    "celu": _unary(lambda x, alpha=1.0, axis=1: np.concatenate([_elu(x, alpha), _elu(-x, alpha)],
                                                               axis),
                   Case((nonzero(2, 3),)), Case((nonzero(2, 3),), {"alpha": 0.5, "axis": 0})),
    "isnan": _compare(np.isnan, Case((_specials(),),)),
    "isinf": _compare(np.isinf, Case((_specials(),),)),
    "reset_nan": _unary(lambda x, val=0.0: np.where(np.isnan(x), val, x),
                        Case((_specials(),), {"val": -2.0}),
                        no_grad="its inputs hold NaN and Inf"),
    "reset_inf": _unary(lambda x, val=0.0: np.where(np.isinf(x), val, x),
                        Case((_specials(),), {"val": 3.0}),
                        no_grad="its inputs hold NaN and Inf"),
    # -- normalisations -----------------------------------------------------------------------
    "layer_normalization": Entry([Case(_BN3), Case((normal(4, 5), None, None)),
                                  Case(_BN3, {"output_stat": True, "eps": 0.01})],
                                 ref_layer_normalization, rtol=1e-4, atol=1e-5),
    "instance_normalization": Entry([Case(_IN4), Case(_IN4, {"output_stat": True}),
                                     Case((normal(2, 4, 3, 2), None, None),
                                          {"channel_axis": 3})],
                                    ref_instance_normalization, rtol=1e-4, atol=1e-5),
    "group_normalization": Entry([Case(_GN3, {"num_groups": 3}),
                                  Case(_GN3, {"num_groups": 2, "output_stat": True})],
                                 ref_group_normalization, rtol=1e-4, atol=1e-5),
    "norm": Entry([Case((normal(2, 3, 4),)),
                   Case((nonzero(2, 3, 4),), {"p": 1, "axis": 1, "keepdims": True}),
                   Case((nonzero(2, 3, 4),), {"p": 3, "axis": [0, 2]})], ref_norm),
    # Converged iterations: there u and v are singular vectors, so the gradient that holds them
    # fixed (the definition) is the derivative the gradient check computes.  tests/compat
    # checks a short iteration against NNabla.
    "spectral_norm": Entry([Case((normal(4, 3), normal(4)), {"itr": 60}),
                            Case((normal(3, 2, 2), normal(2)), {"dim": 1, "itr": 60}),
                            Case((normal(4, 3), normal(4)), {"itr": 60, "test": True,
                                                             "output_u": True})],
                           ref_spectral_norm, grad_inputs=(0,), updates=updates_spectral_norm,
                           why_not_others="u is the power iteration's running estimate "
                                          "(need_grad=False in PF)", rtol=1e-4),
    # -- indexing, ordering, scans --------------------------------------------------------
    "gather": Entry([Case((normal(2, 3, 4), ints(3, 5)), {"axis": 1}),
                     Case((normal(4, 3), ints(4, 2, 2))),
                     Case((normal(2, 3, 4), ints(3, 2, 5)), {"axis": 1, "batch_dims": 1}),
                     Case((normal(2, 3, 4), ints(4, 2, 5)), {"axis": 2, "batch_dims": 1})],
                    ref_gather, why_not_others="indices are integers"),
    "gather_nd": Entry([Case((normal(3, 4, 2), np.array([[0, 2, 1], [3, 0, 3]]))),
                        Case((normal(3, 4), np.array([[2, 0, -1]])))],
                       ref_gather_nd, why_not_others="indices are integers"),
    "sort": Entry([Case((distinct(3, 5),)), Case((distinct(3, 5),), {"axis": 0, "reverse": True}),
                   Case((distinct(4, 3),), {"with_index": True}),
                   Case((distinct(4, 3),), {"only_index": True},
                        no_grad="only_index returns integer indices")], ref_sort),
    "top_k_data": Entry([Case((distinct(3, 6),), {"k": 2}),
                         Case((_ABS_DISTINCT,), {"k": 3, "abs": True}),
                         Case((distinct(3, 6),), {"k": 2, "reduce": False},
                              no_grad="NNabla passes the whole gradient back, not the "
                                      "derivative (test_nnabla_ops.py checks it)"),
                         Case((distinct(3, 6),), {"k": 1, "largest": False, "with_index": True}),
                         Case((distinct(2, 3, 4),), {"k": 2, "base_axis": 2})],
                        ref_top_k_data),
    "cumsum": Entry([Case((normal(3, 4),)), Case((normal(3, 4),), {"axis": 1, "exclusive": True}),
                     Case((normal(2, 3, 4),), {"axis": -1, "reverse": True}),
                     Case((normal(2, 5),), {"axis": 1, "exclusive": True, "reverse": True})],
                    _ref_scan(np.cumsum, 0.0)),
    "cumprod": Entry([Case((uniform(0.5, 1.5, 3, 4),)),
                      Case((uniform(0.5, 1.5, 3, 4),), {"axis": 1, "exclusive": True}),
                      Case((uniform(0.5, 1.5, 2, 5),), {"axis": 1, "reverse": True,
                                                         "exclusive": True})],
                     _ref_scan(np.cumprod, 1.0)),
    # -- resampling -----------------------------------------------------------------------
    "interpolate": Entry([Case((normal(1, 2, 3, 4),), {"scale": (2, 2)}),
                          Case((normal(2, 3, 5),), {"output_size": (7,)}),
                          Case((normal(1, 2, 3, 4),), {"output_size": (5, 3),
                                                        "align_corners": True}),
                          Case((normal(1, 2, 4, 3),), {"scale": (1.5, 2.5), "half_pixel": True}),
                          Case((normal(1, 2, 3, 4),), {"scale": (2, 1.5), "mode": "nearest"}),
                          Case((normal(1, 2, 5, 3),), {"output_size": (3, 7), "mode": "nearest",
                                                        "half_pixel_for_nn": True})],
                         ref_interpolate),
    "unpooling": Entry([Case((normal(2, 3, 2, 3),), {"kernel": (2, 2)}),
                        Case((normal(2, 3, 4),), {"kernel": (3,)}),
                        Case((normal(1, 2, 2, 2),), {"kernel": (1, 3)})], ref_unpooling),
    "tile": Entry([Case((normal(2, 3),), {"reps": (2, 1)}), Case((normal(2, 3),), {"reps": 3}),
                   Case((normal(2, 3),), {"reps": (2, 1, 2)})],
                  lambda x, reps: np.tile(x, reps)),
    "depthwise_convolution": Entry(
        [Case((normal(2, 3, 5, 5), normal(3, 3, 3), normal(3))),
         Case((normal(2, 2, 6, 5), normal(4, 3, 2)), {"multiplier": 2, "pad": (1, 0),
                                                      "stride": (2, 1)}),
         Case((normal(1, 3, 6, 6), normal(3, 2, 2), None), {"dilation": (2, 2)})],
        ref_depthwise_convolution),
}

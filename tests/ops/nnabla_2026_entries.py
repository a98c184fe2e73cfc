"""Harness entries of NNabla 1.39's functions added in 2026 (``flip``, ``trilu``,
``eye_like``, ``linspace``, ``einsum``, ``shape``, ``mod2``, ``bit_shift``, ``sum_pooling``,
the gradient shapers, ``scatter_add``, ``bool_fill``, ``confusion_matrix``,
``mean_subtraction``, the random sources and ``unlink``), merged into ``test_ops.ENTRIES``.

The references are NumPy, written from NNabla 1.39's semantics (tests/compat's
``nnabla_functions_2026`` cases compare the functions with NNabla's own numbers).
"""

from __future__ import annotations

import math

import numpy as np

from op_harness_types import Data

_D = Data(2026)
normal = _D.normal

_SHAPER = ("forward is the identity; the backward is a shaped gradient, not a derivative "
           "(tests/compat's cases compare it with NNabla 1.39's)")
_NOGRAD = "no gradient (NNabla 1.39 has none)"


def _sum_pool_2d(x, kernel, stride=None, ignore_border=True, pad=None, channel_last=False):
    stride = tuple(stride or kernel)
    pad = tuple(pad or (0, 0))
    if channel_last:
        x = np.moveaxis(x, -1, -3)
    x = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(p, p) for p in pad])
    sizes = []
    for size, k, s in zip(x.shape[-2:], kernel, stride):
        n = (size - k) // s + 1 if ignore_border else -(-(size - k) // s) + 1
        sizes.append(n)
    out = np.zeros(x.shape[:-2] + tuple(sizes))
    for i in range(sizes[0]):
        for j in range(sizes[1]):
            win = x[..., i * stride[0]:i * stride[0] + kernel[0],
                    j * stride[1]:j * stride[1] + kernel[1]]
            out[..., i, j] = win.sum(axis=(-2, -1))
    return np.moveaxis(out, -3, -1) if channel_last else out


def _scatter_add(x0, indices, x1, axis=None):
    axis = 0 if axis is None else axis
    out = x0.copy()
    for pos in np.ndindex(*indices.shape):
        target = list(pos)
        target[axis] = indices[pos]
        out[tuple(target)] += x1[pos]
    return out


def _confusion(x, target, axis=None):
    axis = x.ndim - 1 if axis is None else axis
    c = x.shape[axis]
    pred = x.argmax(axis)
    t = np.squeeze(target, axis).astype(np.int64)
    out = np.zeros((c, c), np.int32)
    np.add.at(out, (t.ravel(), pred.ravel()), 1)
    return out


def _mean_sub_updates(x, mean, t, base_axis=1, update_running_mean=True):
    if not update_running_mean:
        return {}
    n = int(np.prod(x.shape[:base_axis]))
    count = t[0] + 1
    batch = x.reshape((n,) + x.shape[base_axis:]).mean(0)
    return {1: mean + (batch - mean) / count, 2: np.array([count])}


def _mean_sub(x, mean, t, base_axis=1, update_running_mean=True):
    new = _mean_sub_updates(x, mean, t, base_axis, update_running_mean)
    return x - new.get(1, mean)


def _sigma_bound(sigma, n):
    return 6 * sigma / math.sqrt(n)


def _check_binomial(inputs, outputs, n=1, p=0.5, shape=(), seed=-1):
    k = outputs[0]
    assert k.shape == tuple(shape) and k.dtype == np.float32
    assert set(np.unique(k).tolist()) <= set(float(i) for i in range(n + 1))
    assert abs(k.mean() - n * p) < _sigma_bound(math.sqrt(n * p * (1 - p)), k.size)


def _check_gamma(inputs, outputs, k=0.5, theta=1, shape=(), seed=-1):
    g = outputs[0]
    assert g.shape == tuple(shape) and g.dtype == np.float32 and (g >= 0).all()
    assert abs(g.mean() - k * theta) < _sigma_bound(math.sqrt(k) * theta, g.size)


def _check_beta(inputs, outputs, alpha=0.5, beta=0.5, shape=(), seed=-1):
    b = outputs[0]
    var = alpha * beta / ((alpha + beta) ** 2 * (alpha + beta + 1))
    assert b.shape == tuple(shape) and ((b >= 0) & (b <= 1)).all()
    assert abs(b.mean() - alpha / (alpha + beta)) < _sigma_bound(math.sqrt(var), b.size)


def nnabla_2026_entries(Case, Entry) -> dict:
    x234 = normal(2, 3, 4)
    ints = np.array([[-5, 5, 7, -7], [9, -9, 1, 0]], np.int32)
    divisors = np.array([[3, -3, 2, 2], [4, 4, -5, 3]], np.int32)
    return {
        "flip": Entry([Case((x234,)), Case((x234,), {"axes": [0, 2]})],
                      lambda x, axes=None: np.flip(x, tuple(axes) if axes else -1)),
        "trilu": Entry([Case((x234,)), Case((normal(4, 3),), {"k": -1, "upper": False})],
                       lambda x, k=0, upper=True: np.triu(x, k) if upper else np.tril(x, k)),
        "eye_like": Entry([Case((normal(3, 4),), {"k": 1}), Case((normal(4, 3),), {"k": -2})],
                          lambda x, k=0: np.eye(x.shape[0], x.shape[1], k), no_grad=_NOGRAD),
        "linspace": Entry([Case((), {"start": 0, "stop": 1, "num": 5}),
                           Case((), {"start": 2.5, "stop": -1, "num": 8})],
                          lambda start, stop, num: np.linspace(start, stop, num),
                          no_grad="a generator has no inputs"),
        "einsum": Entry([Case((normal(2, 3, 4), normal(2, 4, 2)), {"equation": "bij,bjk->bik"}),
                         Case((normal(3, 3), normal(2)), {"equation": "ii,j->ij"})],
                        lambda *x, equation="": np.einsum(equation, *x)),
        "shape": Entry([Case((x234,)), Case((normal(2, 3, 4, 5),), {"start": 1, "end": -1})],
                       lambda x, start=None, end=None: np.array(x.shape[start:end], np.float32),
                       no_grad=_NOGRAD),
        "mod2": Entry([Case((normal(3, 4), _D.uniform(0.5, 2.0, 3, 4))),
                       Case((ints, divisors)), Case((ints, divisors), {"fmod": True})],
                      lambda a, b, fmod=False: np.fmod(a, b) if fmod or a.dtype.kind == "f"
                      else np.mod(a, b), no_grad=_NOGRAD),
        "bit_shift": Entry([Case((np.array([1, 2, 255, 7], np.uint8),
                                  np.array([1, 2, 3, 0], np.uint8))),
                            Case((np.array([1, 2, 255, 7], np.uint8),
                                  np.array([1, 2, 3, 0], np.uint8)), {"direction": "RIGHT"})],
                           lambda x, s, direction="LEFT": (
                               np.left_shift(x, s) if direction == "LEFT" else
                               np.right_shift(x, s)).astype(np.uint8), no_grad=_NOGRAD),
        "sum_pooling": Entry([Case((normal(2, 3, 4, 4),), {"kernel": (2, 2)}),
                              Case((normal(1, 2, 5, 6),), {"kernel": (2, 3), "stride": (2, 2),
                                                           "ignore_border": False}),
                              Case((normal(1, 2, 5, 4),), {"kernel": (2, 2), "pad": (1, 0)}),
                              Case((normal(2, 4, 4, 3),), {"kernel": (3, 2), "stride": (1, 2),
                                                           "channel_last": True})],
                             _sum_pool_2d),
        "clip_grad_by_value": Entry(
            [Case((normal(3, 4), np.full((3, 4), -0.5, np.float32),
                   np.full((3, 4), 0.5, np.float32)))],
            lambda x, lo, hi: x, no_grad=_SHAPER),
        "clip_grad_by_norm": Entry([Case((x234,), {"clip_norm": 2.0}),
                                    Case((x234,), {"axes": [1, 2]})],
                                   lambda x, clip_norm=None, axes=None: x, no_grad=_SHAPER),
        "top_k_grad": Entry([Case((x234,), {"k": 3}),
                             Case((x234,), {"k": 2, "abs": True, "base_axis": 2})],
                            lambda x, k, abs=False, base_axis=1: x, no_grad=_SHAPER),
        "scatter_add": Entry([Case((normal(3, 4), np.array([[0, 2, 1, 0], [1, 1, 2, 0]]),
                                    normal(2, 4))),
                              Case((normal(3, 4), np.array([[3, 0, 3], [1, 1, 2]]), normal(2, 5)),
                                   {"axis": 1})],
                             _scatter_add, grad_inputs=(0, 2),
                             why_not_others="indices are integers"),
        "bool_fill": Entry([Case((normal(3, 4), (normal(3, 4) > 0).astype(np.float32)),
                                 {"value": 2.5}),
                            Case((x234, (normal(2, 1, 4) > 0).astype(np.float32)))],
                           lambda d, m, value=0: np.where(np.broadcast_to(m != 0, d.shape),
                                                          value, d),
                           grad_inputs=(0,), why_not_others="the mask selects; no gradient"),
        "confusion_matrix": Entry([Case((normal(12, 4), _D.ints(4, 12, 1))),
                                   Case((normal(3, 3, 5), _D.ints(3, 3, 1, 5)), {"axis": 1})],
                                  _confusion, no_grad=_NOGRAD),
        "mean_subtraction": Entry(
            [Case((normal(3, 2, 4), normal(2, 4), np.array([2.0], np.float32))),
             Case((normal(3, 2, 4), normal(4), np.array([2.0], np.float32)),
                  {"base_axis": 2, "update_running_mean": False})],
            _mean_sub, updates=_mean_sub_updates,
            no_grad="NNabla 1.39's gradient is dy * (1 - 1 / (N * t)), not the derivative "
                    "(tests/compat's cases compare it with NNabla's)"),
        "rand_binomial": Entry([Case((), {"n": 6, "p": 0.3, "shape": (50, 40)}),
                                Case((), {"shape": (4000,), "seed": 5})],
                               check=_check_binomial, random=True,
                               no_grad="a random source has no inputs"),
        "rand_gamma": Entry([Case((), {"k": 0.5, "theta": 2.0, "shape": (50, 40)}),
                             Case((), {"k": 3.0, "shape": (4000,), "seed": 5})],
                            check=_check_gamma, random=True,
                            no_grad="a random source has no inputs"),
        "rand_beta": Entry([Case((), {"shape": (50, 40)}),
                            Case((), {"alpha": 2.0, "beta": 5.0, "shape": (4000,), "seed": 5})],
                           check=_check_beta, random=True,
                           no_grad="a random source has no inputs"),
        "unlink": Entry([Case((normal(2, 3),))], lambda x: x,
                        no_grad="passes no gradient by definition "
                                "(test_no_gradient_flows_through checks it)"),
    }

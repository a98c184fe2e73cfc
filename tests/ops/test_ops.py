"""The op harness: one declarative entry per op of ``stadyn.ops.CATALOG``.

Each entry in :data:`ENTRIES` lists the op's cases (inputs and attributes) and a NumPy reference
written here from NNabla's semantics (CNTK's for the CNTK ops), never by calling torch.  For
every case the harness checks:

1. **forward**: the op run in dynamic mode on float32 data equals the reference computed in
   float64 (ops that update inputs in place, like batch normalisation's running statistics, also
   give the expected new input values; random ops give a statistical check instead);
2. **gradient**: ``torch.autograd.gradcheck`` in float64 on the op's torch implementation
   (``CATALOG[name].impl``) w.r.t. the inputs the entry marks differentiable; an op without a
   gradient says why in its entry;
3. **static == dynamic**: the op built on Variables in static mode (``forward()``, generated
   backward program) and in ``auto_forward`` mode (torch autograd) gives bit-identical outputs and
   in-place updates, and the same input gradients of ``sum(out * w)`` for random ``w``.

The list of ops is the catalog: an op without an entry fails :func:`test_every_op_has_an_entry`
and each of its parametrised checks.  The module also runs every docstring example of the op
modules and checks the errors users see (shape mismatches, ``.d`` assignment, parameters).
"""

from __future__ import annotations

import doctest
import importlib
import math
import os
import sys
import warnings
import zlib
from dataclasses import dataclass

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
from stadyn.ops import CATALOG, function_of

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # also when loaded by path
from nnabla_entries import NNABLA_ENTRIES  # noqa: E402
from nnabla_entries_extra import EXTRA_ENTRIES, binary_entries, fused_bn_entry  # noqa: E402
from inq_entries import inq_entries  # noqa: E402
from op_harness_types import Case, Data, Entry  # noqa: E402
from sequence_entries import LENGTHS as _SEQ_LENGTHS, padded as _seq_padded  # noqa: E402
from cntk_bn_reference import (ref_cntk_batch_normalization,  # noqa: E402
                               updates_cntk_batch_normalization)

# ---------------------------------------------------------------------------------------------
# Input data (float inputs are float32 values; references compute on them in float64) and the
# declaration of an entry (op_harness_types.py)
# ---------------------------------------------------------------------------------------------
_DATA = Data(20240611)
normal, uniform, away_from = _DATA.normal, _DATA.uniform, _DATA.away_from
nonzero, ints, distinct = _DATA.nonzero, _DATA.ints, _DATA.distinct


# ---------------------------------------------------------------------------------------------
# NumPy references: element-wise
# ---------------------------------------------------------------------------------------------
SELU_SCALE = 1.05070098735548
SELU_ALPHA = 1.673263242354377


def ref_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def ref_gelu(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def ref_elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * (np.exp(x) - 1.0))


def ref_selu(x, scale=SELU_SCALE, alpha=SELU_ALPHA):
    return scale * ref_elu(x, alpha)


def _axis(x, axis):
    return x.ndim - 1 if axis is None else axis % x.ndim


def ref_softmax(x, axis=None):
    a = _axis(x, axis)
    e = np.exp(x - x.max(axis=a, keepdims=True))
    return e / e.sum(axis=a, keepdims=True)


def ref_log_softmax(x, axis=None):
    a = _axis(x, axis)
    shifted = x - x.max(axis=a, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=a, keepdims=True))


def ref_batch_matmul(a, b, transpose_a=False, transpose_b=False):
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    out = np.zeros(a.shape[:-1] + b.shape[-1:])
    for idx in np.ndindex(*a.shape[:-2]):
        out[idx] = np.einsum("ik,kj->ij", a[idx], b[idx])
    return out


# ---------------------------------------------------------------------------------------------
# NumPy references: losses and metrics
# ---------------------------------------------------------------------------------------------
def ref_softmax_cross_entropy(x, target, axis=None):
    a = _axis(x, axis)
    return -np.take_along_axis(ref_log_softmax(x, a), target, axis=a)


def ref_categorical_cross_entropy(x, target, axis=None):
    return -np.log(np.take_along_axis(x, target, axis=_axis(x, axis)))


def ref_sigmoid_cross_entropy(x, target):
    s = ref_sigmoid(x)
    return -(target * np.log(s) + (1 - target) * np.log(1 - s))


def ref_binary_cross_entropy(x, target):
    return -(target * np.log(x) + (1 - target) * np.log(1 - x))


def ref_huber_loss(x0, x1, delta=1.0):
    d = np.abs(x0 - x1)
    return np.where(d < delta, d ** 2, delta * (2 * d - delta))


def ref_top_n_error(x, target, axis=None, n=1):
    """NNabla: count the scores >= the target's score (itself included); error if count > n.
    A NaN, the target's or another's, counts as >= (Stadyn: a row of NaN is an error)."""
    a = _axis(x, axis)
    moved = np.moveaxis(x, a, -1)
    labels = np.moveaxis(target, a, -1)[..., 0]
    out = np.zeros(labels.shape)
    for idx in np.ndindex(*labels.shape):
        scores = moved[idx]
        mine = scores[labels[idx]]
        count = sum(1 for s in scores if np.isnan(s) or np.isnan(mine) or s >= mine)
        out[idx] = float(count > n)
    return np.expand_dims(out, a)


# a diverged model's scores: a row of NaN, a NaN above the target, a clean row
_NAN_SCORES = np.array([[np.nan] * 3, [0.9, np.nan, 0.0], [0.1, 0.7, 0.2]], np.float32)


def ref_cross_entropy_with_softmax(output_vector, target_vector, axis=-1):
    """CNTK 2.7: ``log_sum_exp(z) - sum(t * z)`` over ``axis`` (kept with size 1), dense
    targets; for a target summing to 1 it is ``-sum(t * log softmax(z))``."""
    z = output_vector
    lse = np.log(np.exp(z - z.max(axis=axis, keepdims=True)).sum(axis=axis, keepdims=True)) \
        + z.max(axis=axis, keepdims=True)
    return lse - (target_vector * z).sum(axis=axis, keepdims=True)


class _CubeAndScale:
    """A CNTK user function's NumPy protocol: ``x ** 3 * y`` and its gradients
    (``for_backward``: whether a gradient may follow; the state is kept either way)."""

    def forward_arrays(self, arrays, for_backward):
        x, y = arrays
        return (x, y), x ** 3 * y

    def backward_arrays(self, state, gradient):
        x, y = state
        return [3 * x ** 2 * y * gradient, (x ** 3 * gradient).sum(axis=0)]

    def output_shape(self, shapes):
        return shapes[0], None


class _CubeAndRowSums:
    """The ``python_function`` op's protocol, two outputs: ``x ** 3 * y`` and the row sums of
    ``x * y``, and their gradients (a missing output gradient is zero)."""

    def output_shapes(self, shapes, dtypes):
        return [(shapes[0], dtypes[0]), (shapes[0][:1], dtypes[0])]

    def forward_arrays(self, arrays):
        x, y = arrays
        return (x, y), [x ** 3 * y, (x * y).sum(axis=1)]

    def backward_arrays(self, state, grads, needed):
        x, y = state
        g0 = np.zeros_like(x) if grads[0] is None else grads[0]
        g1 = np.zeros(x.shape[:1], x.dtype) if grads[1] is None else grads[1]
        gx = 3 * x ** 2 * y * g0 + y * g1[:, None]
        gy = (x ** 3 * g0).sum(axis=0) + (x * g1[:, None]).sum(axis=0)
        return [gx if needed[0] else None, gy if needed[1] else None]


def ref_classification_error(output_vector, target_vector, axis=-1, topN=1):
    """CNTK: 1 unless the target's argmax is among the ``topN`` largest outputs (of distinct
    values).  ``topN`` 1: the prediction is CNTK 2.7's scan from the first output, ``if (best <
    x[i]) best = i`` (a NaN first stays the prediction, a later one is passed by); ``topN`` > 1:
    the positions ``std::partial_sort(.., a > b)`` puts first (CPUMatrix::VectorMax), replayed
    step by step below as libstdc++ writes it (NaN compares false with all)."""
    z = np.moveaxis(output_vector, axis, -1)
    labels = np.moveaxis(target_vector, axis, -1).argmax(axis=-1)
    out = np.zeros(labels.shape)
    for idx in np.ndindex(*labels.shape):
        row, label = z[idx], labels[idx]
        if topN == 1:
            best = 0
            for i in range(1, len(row)):
                if row[best] < row[i]:
                    best = i
            out[idx] = float(best != label)
        elif np.isnan(row).any():
            out[idx] = float(label not in _libstdcxx_partial_sort(row, topN))
        else:
            out[idx] = float(label not in np.argsort(-row)[:topN])
    return np.expand_dims(out, axis)


def _libstdcxx_partial_sort(values, k):
    """The first ``k`` of ``range(len(values))`` after libstdc++'s ``std::partial_sort`` with
    ``values[a] > values[b]`` (bits/stl_heap.h, bits/stl_algo.h ``__heap_select``)."""
    pos = list(range(len(values)))

    def comp(a, b):
        return bool(values[a] > values[b])

    def push(hole, top, value):
        parent = (hole - 1) // 2
        while hole > top and comp(pos[parent], value):
            pos[hole], hole = pos[parent], parent
            parent = (hole - 1) // 2
        pos[hole] = value

    def adjust(hole, n, value):
        top, child = hole, hole
        while child < (n - 1) // 2:
            child = 2 * (child + 1)
            if comp(pos[child], pos[child - 1]):
                child -= 1
            pos[hole], hole = pos[child], child
        if n % 2 == 0 and child == (n - 2) // 2:
            child = 2 * (child + 1)
            pos[hole], hole = pos[child - 1], child - 1
        push(hole, top, value)

    for parent in range((k - 2) // 2, -1, -1) if k >= 2 else []:     # make_heap
        adjust(parent, k, pos[parent])
    for i in range(k, len(pos)):                                      # heap_select
        if comp(pos[i], pos[0]):
            value, pos[i] = pos[i], pos[0]
            adjust(0, k, value)
    for end in range(k - 1, 0, -1):                                   # sort_heap
        value, pos[end] = pos[end], pos[0]
        adjust(0, end, value)
    return pos[:k]


def _one_hot_rows(labels, classes, axis=-1):
    return np.moveaxis(np.eye(classes, dtype=np.float32)[labels], -1, axis)


def ref_one_hot(x, shape):
    out = np.zeros(x.shape[:-1] + tuple(shape))
    for idx in np.ndindex(*x.shape[:-1]):
        out[idx + tuple(int(i) for i in x[idx])] = 1.0
    return out


# ---------------------------------------------------------------------------------------------
# NumPy references: neural-network layers
# ---------------------------------------------------------------------------------------------
def _spatial(value, n, default):
    return (default,) * n if value is None else tuple(int(v) for v in value)


def ref_affine(x, weight, bias=None, base_axis=1):
    batch = x.shape[:base_axis]
    rows = x.reshape(int(np.prod(batch)), -1)
    y = np.einsum("bi,io->bo", rows, weight.reshape(weight.shape[0], -1))
    if bias is not None:
        y = y + bias.reshape(-1)
    return y.reshape(batch + weight.shape[1:])


def ref_convolution(x, weight, bias=None, base_axis=1, pad=None, stride=None, dilation=None,
                    group=1, channel_last=False):
    """Cross-correlation as an explicit sum over each output position's patch."""
    n = weight.ndim - 2
    if channel_last:
        x = np.moveaxis(x, -1, base_axis)
        weight = np.moveaxis(weight, -1, 1)
    pad, stride, dilation = (_spatial(pad, n, 0), _spatial(stride, n, 1),
                             _spatial(dilation, n, 1))
    batch = x.shape[:base_axis]
    x = x.reshape((-1,) + x.shape[base_axis:])
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in pad])
    kernel = weight.shape[2:]
    out_size = [(s + 2 * p - d * (k - 1) - 1) // st + 1
                for s, p, d, k, st in zip(x.shape[2:], pad, dilation, kernel, stride)]
    oc, icg = weight.shape[:2]
    ocg = oc // group
    y = np.zeros((x.shape[0], oc, *out_size))
    for pos in np.ndindex(*out_size):
        window = tuple(slice(o * st, o * st + d * (k - 1) + 1, d)
                       for o, st, d, k in zip(pos, stride, dilation, kernel))
        patch = xp[(slice(None), slice(None)) + window]
        for g in range(group):
            xs = patch[:, g * icg:(g + 1) * icg].reshape(x.shape[0], icg, -1)
            ws = weight[g * ocg:(g + 1) * ocg].reshape(ocg, icg, -1)
            y[(slice(None), slice(g * ocg, (g + 1) * ocg)) + pos] = np.einsum("nck,ock->no", xs, ws)
    if bias is not None:
        y = y + bias.reshape((1, oc) + (1,) * n)
    y = y.reshape(batch + y.shape[1:])
    return np.moveaxis(y, base_axis, -1) if channel_last else y


def ref_deconvolution(x, weight, bias=None, base_axis=1, pad=None, stride=None, dilation=None,
                      group=1, channel_last=False, output_padding=None):
    """Transposed convolution as a scatter-add of ``x[c, i] * w[c, :, k]`` to ``i*s + k*d``."""
    n = weight.ndim - 2
    if channel_last:
        x = np.moveaxis(x, -1, base_axis)
        weight = np.moveaxis(weight, -1, 1)
    pad, stride, dilation = (_spatial(pad, n, 0), _spatial(stride, n, 1),
                             _spatial(dilation, n, 1))
    output_padding = _spatial(output_padding, n, 0)
    batch = x.shape[:base_axis]
    x = x.reshape((-1,) + x.shape[base_axis:])
    ic, ocg = weight.shape[:2]
    icg = ic // group
    kernel = weight.shape[2:]
    full = [(i - 1) * s + d * (k - 1) + 1 + op
            for i, s, d, k, op in zip(x.shape[2:], stride, dilation, kernel, output_padding)]
    y = np.zeros((x.shape[0], ocg * group, *full))
    for g in range(group):
        cin = slice(g * icg, (g + 1) * icg)
        cout = slice(g * ocg, (g + 1) * ocg)
        for ipos in np.ndindex(*x.shape[2:]):
            for kpos in np.ndindex(*kernel):
                at = tuple(i * s + k * d for i, s, k, d in zip(ipos, stride, kpos, dilation))
                contribution = np.einsum("nc,co->no", x[(slice(None), cin) + ipos],
                                         weight[(cin, slice(None)) + kpos])
                y[(slice(None), cout) + at] += contribution
    y = y[(slice(None), slice(None)) + tuple(slice(p, f - p) for p, f in zip(pad, full))]
    if bias is not None:
        y = y + bias.reshape((1, -1) + (1,) * n)
    y = y.reshape(batch + y.shape[1:])
    return np.moveaxis(y, base_axis, -1) if channel_last else y


def _pool_windows(sizes, kernel, stride, pad, ignore_border):
    """NNabla's pooling windows per output position: ``(start, end)`` before clipping to the
    input, with ``end`` clipped to ``size + pad``; output size ``(W + 2P - K) // S + 1`` with
    ``ignore_border``, ``(W + P - 1) // S + 1`` without (NNabla 1.39)."""
    out = [(w + 2 * p - k) // s + 1 if ignore_border else (w + p - 1) // s + 1
           for w, k, s, p in zip(sizes, kernel, stride, pad)]
    per_axis = []
    for w, k, s, p, o in zip(sizes, kernel, stride, pad, out):
        per_axis.append([(i * s - p, min(i * s - p + k, w + p)) for i in range(o)])
    return out, per_axis


def _pool(x, kernel, stride, pad, ignore_border, channel_last, reduce):
    n = len(kernel)
    if channel_last:
        x = np.moveaxis(x, -1, x.ndim - n - 1)
    stride = tuple(kernel) if stride is None else tuple(stride)
    pad = _spatial(pad, n, 0)
    sizes = x.shape[-n:]
    out, windows = _pool_windows(sizes, kernel, stride, pad, ignore_border)
    y = np.zeros(x.shape[:-n] + tuple(out))
    for pos in np.ndindex(*out):
        bounds = [windows[a][pos[a]] for a in range(n)]
        inside = tuple(slice(max(b, 0), min(e, w)) for (b, e), w in zip(bounds, sizes))
        y[(Ellipsis,) + pos] = reduce(x[(Ellipsis,) + inside], bounds, inside)
    return np.moveaxis(y, y.ndim - n - 1, -1) if channel_last else y


def ref_max_pooling(x, kernel, stride=None, ignore_border=True, pad=None, channel_last=False):
    n = len(kernel)

    def window_max(values, bounds, inside):
        return values.reshape(values.shape[:-n] + (-1,)).max(axis=-1)
    return _pool(x, kernel, stride, pad, ignore_border, channel_last, window_max)


def ref_average_pooling(x, kernel, stride=None, ignore_border=True, pad=None, channel_last=False,
                        including_pad=True):
    n = len(kernel)

    def window_mean(values, bounds, inside):
        if including_pad:
            count = np.prod([e - b for b, e in bounds])
        else:
            count = np.prod([s.stop - s.start for s in inside])
        return values.reshape(values.shape[:-n] + (-1,)).sum(axis=-1) / count
    return _pool(x, kernel, stride, pad, ignore_border, channel_last, window_mean)


def ref_global_average_pooling(x):
    return x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)


def _bn_reduced_axes(x, axes):
    axes = [a % x.ndim for a in axes]
    return tuple(a for a in range(x.ndim) if a not in axes)


def ref_batch_normalization(x, beta, gamma, mean, variance, axes=(1,), decay_rate=0.9,
                            eps=1e-5, batch_stat=True, output_stat=False, time_constant=None):
    reduced = _bn_reduced_axes(x, axes)
    if batch_stat:
        m = x.mean(axis=reduced, keepdims=True)
        v = ((x - m) ** 2).mean(axis=reduced, keepdims=True)
    else:
        m, v = mean, variance
    y = (x - m) / np.sqrt(v + eps) * gamma + beta
    return (y, m, v) if output_stat else y


def updates_batch_normalization(x, beta, gamma, mean, variance, axes=(1,), decay_rate=0.9,
                                eps=1e-5, batch_stat=True, output_stat=False, time_constant=None):
    """Running statistics: ``r = decay r + (1 - decay) batch``, the variance unbiased.  CNTK's
    ``time_constant`` (in samples) sets ``decay = exp(-batch size / time_constant)``, 0 for 0."""
    if not batch_stat:
        return {}
    if time_constant is not None:
        decay_rate = math.exp(-x.shape[0] / time_constant) if time_constant > 0 else 0.0
    reduced = _bn_reduced_axes(x, axes)
    count = int(np.prod([x.shape[a] for a in reduced]))
    m = x.mean(axis=reduced, keepdims=True)
    with np.errstate(invalid="ignore"):         # one value: NaN, as NNabla's
        v = ((x - m) ** 2).sum(axis=reduced, keepdims=True) / (count - 1)
    return {3: decay_rate * mean + (1 - decay_rate) * m,
            4: decay_rate * variance + (1 - decay_rate) * v}


def ref_sync_batch_normalization(x, beta, gamma, mean, variance, comm=None, group="world",
                                 **attrs):
    """In one process the global minibatch is the local one: batch normalisation."""
    return ref_batch_normalization(x, beta, gamma, mean, variance, **attrs)


def updates_sync_batch_normalization(x, beta, gamma, mean, variance, comm=None, group="world",
                                     **attrs):
    return updates_batch_normalization(x, beta, gamma, mean, variance, **attrs)


def check_dropout(inputs, outputs, p=0.5, seed=-1, output_mask=False):
    """Kept values are ``x / (1 - p)``, the zeroed fraction is ``p`` within 5 sigma."""
    x, y = inputs[0], outputs[0]
    if p == 0.0:
        np.testing.assert_array_equal(y, x)
        return
    kept = y != 0
    np.testing.assert_allclose(y[kept], x[kept] / (1 - p), rtol=1e-6)
    tolerance = 5 * math.sqrt(p * (1 - p) / x.size)
    assert abs((~kept).mean() - p) < tolerance, f"zeroed fraction {(~kept).mean()} vs p={p}"
    if output_mask:
        np.testing.assert_array_equal(outputs[1], kept.astype(outputs[1].dtype))


def ref_embed(x0, w):
    return w[x0]


# ---------------------------------------------------------------------------------------------
# NumPy references: reductions and shapes
# ---------------------------------------------------------------------------------------------
def _axes(x, axis):
    if axis is None:
        return tuple(range(x.ndim))
    return tuple(a % x.ndim for a in ([axis] if isinstance(axis, int) else axis))


def _reduction(fn):
    def reference(x, axis=None, keepdims=False):
        return fn(x, axis=_axes(x, axis), keepdims=keepdims)
    return reference


def _extreme(arg):
    def reference(x, axis=None, keepdims=False, with_index=False, only_index=False):
        axes = _axes(x, axis)
        keep = [a for a in range(x.ndim) if a not in axes]
        moved = np.transpose(x, keep + list(axes)).reshape([x.shape[a] for a in keep] + [-1])
        index = arg(moved, axis=-1)
        values = np.take_along_axis(moved, index[..., None], axis=-1)[..., 0]
        if keepdims:
            shape = [1 if a in axes else x.shape[a] for a in range(x.ndim)]
            values, index = values.reshape(shape), index.reshape(shape)
        if only_index:
            return index.astype(np.int64)
        if with_index:
            return values, index.astype(np.int64)
        return values
    return reference


def ref_slice(x, start=None, stop=None, step=None):
    """NNabla: lists shorter than ``x.ndim`` are padded in front with whole-axis slices."""
    n = len(start if start is not None else stop if stop is not None else step)
    start = start or [None] * n
    stop = stop or [None] * n
    step = step or [1] * n
    lead = [slice(0, size, 1) for size in x.shape[:x.ndim - n]]
    return x[tuple(lead + [slice(a, b, c) for a, b, c in zip(start, stop, step)])]


def ref_pad(x, pad_width, mode="constant", constant_value=0.0):
    """NNabla's order: ``(before_1, after_1, ..., before_k, after_k)`` for the last k axes."""
    pairs = [(pad_width[i], pad_width[i + 1]) for i in range(0, len(pad_width), 2)]
    widths = [(0, 0)] * (x.ndim - len(pairs)) + pairs
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=constant_value)
    return np.pad(x, widths, mode={"reflect": "reflect", "repeat": "edge"}[mode])


def ref_split(x, axis=0):
    return tuple(np.take(x, i, axis=axis) for i in range(x.shape[axis]))


def ref_flatten(x, axis=1):
    return x.reshape(x.shape[:axis] + (-1,))


def ref_grad(x, w, n_outputs=1, grad_outputs=()):
    """d/dx and d/dw of ``tanh(x) * x * w`` (what :func:`call_grad` differentiates), times
    the seed."""
    seed = 1.0 if not grad_outputs or grad_outputs[0] is None else grad_outputs[0]
    t = np.tanh(x)
    return seed * w * (x * (1 - t ** 2) + t), seed * t * x


# ---------------------------------------------------------------------------------------------
# The entries, one per op
# ---------------------------------------------------------------------------------------------
def unary(reference, *cases: Case, **options) -> Entry:
    return Entry(list(cases), reference, **options)


def call_grad(grad, inputs, attrs):
    """``grad(tanh(x) * x * w, x, w)`` for the case's inputs ``x`` and ``w``, made Variables
    that need a gradient (grad gives zeros for others, as NNabla's ``nn.grad`` does)."""
    x, w = inputs
    x.need_grad = w.need_grad = True
    return grad(F.tanh(x) * x * w, x, w, **attrs)


_NO_BACKWARD = "integer ids or a metric: no backward is defined for it"
_COMPARISON = "a comparison: NNabla defines no backward for it"
_COMPARE_CASES = [Case((distinct(2, 3), distinct(2, 3))), Case((normal(2, 3), normal(3))),
                  Case((ints(4, 3, 4), ints(4, 3, 4)))]


def _as_type(result, x0, x1):
    """A comparison's 1 or 0 in the inputs' type (NNabla's comparisons)."""
    return result.astype(np.result_type(x0, x1))


def ref_where(condition, x_true, x_false):
    """NumPy's where, with NNabla's rule for a condition over the leading dimensions."""
    c = condition
    if c.ndim < x_true.ndim and c.shape == x_true.shape[:c.ndim]:
        c = c.reshape(c.shape + (1,) * (x_true.ndim - c.ndim))
    return np.where(c != 0, x_true, x_false)
_LABELS = "the targets are labels: NNabla does not backpropagate to them"

def _bn_cases(sync_attrs: dict | None = None) -> list:
    """The batch-normalisation cases, shared by ``batch_normalization`` and
    ``sync_batch_normalization`` (which alone is the same op; ``sync_attrs`` are its own
    arguments, given in the second case)."""
    extra = sync_attrs or {}
    return [
        Case((normal(4, 3, 2, 2), normal(1, 3, 1, 1), uniform(0.5, 2, 1, 3, 1, 1),
              normal(1, 3, 1, 1), uniform(0.5, 2, 1, 3, 1, 1))),
        Case((normal(4, 3, 2, 2), normal(1, 3, 1, 1), uniform(0.5, 2, 1, 3, 1, 1),
              normal(1, 3, 1, 1), uniform(0.5, 2, 1, 3, 1, 1)), {**extra, "batch_stat": False}),
        Case((normal(3, 2, 2, 4), normal(1, 1, 1, 4), uniform(0.5, 2, 1, 1, 1, 4),
              normal(1, 1, 1, 4), uniform(0.5, 2, 1, 1, 1, 4)),
             {"axes": [3], "decay_rate": 0.8, "eps": 1e-3}),
        Case((normal(3, 2, 2, 4), normal(1, 2, 1, 4), uniform(0.5, 2, 1, 2, 1, 4),
              normal(1, 2, 1, 4), uniform(0.5, 2, 1, 2, 1, 4)), {"axes": [1, 3]}),
        Case((normal(5, 3), normal(1, 3), uniform(0.5, 2, 1, 3), normal(1, 3),
              uniform(0.5, 2, 1, 3)), {"output_stat": True}),
        Case((normal(4, 3), normal(1, 3), uniform(0.5, 2, 1, 3), normal(1, 3),
              uniform(0.5, 2, 1, 3)), {"time_constant": 10.0}),
        Case((normal(4, 3), normal(1, 3), uniform(0.5, 2, 1, 3), normal(1, 3),
              uniform(0.5, 2, 1, 3)), {"time_constant": 0.0})]


def _bn_one_sample_cases() -> list:
    """One value per channel (torch's kernel refuses it; NNabla gives ``beta``, mean ``x``,
    variance 0 and a NaN running variance): a batch of one, and every axis a channel axis.
    Drawn from a generator of their own, so the other entries' data stay as they were."""
    d = Data(77)
    return [Case((d.normal(1, 3), d.normal(1, 3), d.uniform(0.5, 2, 1, 3), d.normal(1, 3),
                  d.uniform(0.5, 2, 1, 3)), {"output_stat": True}),
            Case((d.normal(2, 3), d.normal(2, 3), d.uniform(0.5, 2, 2, 3), d.normal(2, 3),
                  d.uniform(0.5, 2, 2, 3)), {"axes": [0, 1], "decay_rate": 0.5})]


ENTRIES: dict[str, Entry] = {
    # -- activations ------------------------------------------------------------------------
    "relu": unary(lambda x, inplace=False: np.maximum(x, 0), Case((nonzero(3, 4),))),
    "leaky_relu": unary(lambda x, alpha=0.1, inplace=False: np.where(x > 0, x, alpha * x),
                        Case((nonzero(3, 4),)), Case((nonzero(5,),), {"alpha": 0.3})),
    "relu6": unary(lambda x: np.clip(x, 0, 6),
                   Case((away_from((0.0, 6.0), 4, 5, margin=0.1, scale=4.0),))),
    "elu": unary(ref_elu, Case((nonzero(3, 4),)), Case((nonzero(6,),), {"alpha": 0.5})),
    "selu": unary(ref_selu, Case((nonzero(3, 4),)),
                  Case((nonzero(6,),), {"scale": 2.0, "alpha": 0.5})),
    "gelu": unary(ref_gelu, Case((normal(3, 4, scale=2.0),))),
    "sigmoid": unary(ref_sigmoid, Case((normal(3, 4, scale=2.0),))),
    "tanh": unary(np.tanh, Case((normal(3, 4),))),
    "swish": unary(lambda x: x * ref_sigmoid(x), Case((normal(3, 4, scale=2.0),))),
    "softplus": unary(lambda x, beta=1.0: np.log1p(np.exp(beta * x)) / beta,
                      Case((normal(3, 4),)), Case((normal(5,),), {"beta": 2.5})),
    "softmax": unary(ref_softmax, Case((normal(3, 4),)), Case((normal(2, 3, 4),), {"axis": 1}),
                     Case((normal(2, 3),), {"axis": -2})),
    "log_softmax": unary(ref_log_softmax, Case((normal(3, 4),)),
                         Case((normal(2, 3, 4),), {"axis": 0})),
    # -- arithmetic -------------------------------------------------------------------------
    "add2": Entry([Case((normal(2, 3), normal(2, 3))), Case((normal(2, 3), normal(3)))],
                  lambda a, b, inplace=False: a + b),
    "sub2": Entry([Case((normal(2, 3), normal(2, 1)))], lambda a, b, inplace=False: a - b),
    "mul2": Entry([Case((normal(2, 1, 3), normal(4, 3)))], lambda a, b, inplace=False: a * b),
    "div2": Entry([Case((normal(2, 3), nonzero(2, 3)))], lambda a, b, inplace=False: a / b),
    "pow2": Entry([Case((uniform(0.5, 2.0, 2, 3), normal(2, 3)))],
                  lambda a, b, inplace=False: a ** b),
    "maximum2": Entry([Case((distinct(2, 3), distinct(2, 3) + 0.1))], np.maximum),
    # -- comparisons and selection (distinct values of one grid: ties happen) ---------------
    "greater": Entry(_COMPARE_CASES, lambda x0, x1: _as_type(x0 > x1, x0, x1),
                     no_grad=_COMPARISON),
    "greater_equal": Entry(_COMPARE_CASES, lambda x0, x1: _as_type(x0 >= x1, x0, x1),
                           no_grad=_COMPARISON),
    "less": Entry(_COMPARE_CASES, lambda x0, x1: _as_type(x0 < x1, x0, x1), no_grad=_COMPARISON),
    "where": Entry([Case((ints(2, 2, 3).astype(np.float32), normal(2, 3), normal(2, 3))),
                    Case((np.array([1.0, 0.0], np.float32), normal(2, 3), normal(2, 3))),
                    Case((np.array([[0.0], [2.0]], np.float32), normal(2, 3), normal(3)))],
                   ref_where, grad_inputs=(1, 2),
                   why_not_others="the condition only selects: no gradient reaches it"),
    "take_along_axis": Entry([Case((normal(3, 4), ints(4, 3, 2)), {"axis": 1}),
                              Case((normal(3, 4), -1 - ints(3, 2, 4)), {"axis": 0}),
                              Case((normal(2, 3, 4), ints(4, 2, 3, 1)))],
                             lambda x, indices, axis=-1: np.take_along_axis(x, indices, axis),
                             grad_inputs=(0,), why_not_others="the indices are integers"),
    "cast": Entry([Case((normal(2, 3),), {"dtype": "float64"}),
                   Case((normal(2, 3, scale=3.0),), {"dtype": "int64"},
                        no_grad="an integer result has no gradient"),
                   Case((ints(5, 4),), {"dtype": "float32"})],
                  lambda x, dtype="float32": x.astype(dtype)),
    "minimum2": Entry([Case((distinct(2, 3), distinct(2, 3) + 0.1))], np.minimum),
    "add_scalar": unary(lambda x, val=1.0, inplace=False: x + val, Case((normal(2, 3),)),
                        Case((normal(4,),), {"val": 2.5})),
    "mul_scalar": unary(lambda x, val=1.0, inplace=False: x * val, Case((normal(2, 3),)),
                        Case((normal(4,),), {"val": -1.5})),
    "pow_scalar": unary(lambda x, val=1.0, inplace=False: x ** val,
                        Case((uniform(0.5, 2.0, 2, 3),)),
                        Case((uniform(0.5, 2.0, 2, 3),), {"val": 0.5}),
                        Case((normal(4,),), {"val": 3.0})),
    "r_sub_scalar": unary(lambda x, val=1.0: val - x, Case((normal(2, 3),)),
                          Case((normal(4,),), {"val": -2.0})),
    "r_div_scalar": unary(lambda x, val=1.0: val / x, Case((nonzero(2, 3),)),
                          Case((nonzero(4,),), {"val": 3.0})),
    "r_pow_scalar": unary(lambda x, val=1.0: val ** x, Case((normal(2, 3),)),
                          Case((normal(4,),), {"val": 2.0})),
    "maximum_scalar": unary(lambda x, val=1.0: np.maximum(x, val),
                            Case((away_from((1.0,), 2, 3),)),
                            Case((away_from((0.3,), 4),), {"val": 0.3})),
    "minimum_scalar": unary(lambda x, val=1.0: np.minimum(x, val),
                            Case((away_from((1.0,), 2, 3),)),
                            Case((away_from((-0.2,), 4),), {"val": -0.2})),
    "clip_by_value_scalar": unary(lambda x, min=-1.0, max=1.0: np.clip(x, min, max),
                                  Case((away_from((-1.0, 1.0), 3, 4),)),
                                  Case((away_from((0.0, 0.5), 6),), {"min": 0.0, "max": 0.5})),
    "batch_matmul": Entry([Case((normal(2, 3, 4), normal(2, 4, 5))),
                           Case((normal(2, 4, 3), normal(2, 5, 4)),
                                {"transpose_a": True, "transpose_b": True})],
                          ref_batch_matmul),
    "abs": unary(np.abs, Case((nonzero(3, 4),))),
    "exp": unary(np.exp, Case((normal(3, 4),))),
    "log": unary(np.log, Case((uniform(0.2, 3.0, 3, 4),))),
    # (its floor below 1e-37: tests/serialize/test_cntk_onnx_roundtrip.py and the compat case
    # log_below_eps; ONNX's Log, which it exports as, has none)
    "cntk_log": unary(np.log, Case((uniform(0.2, 3.0, 3, 4),))),
    "sqrt": unary(np.sqrt, Case((uniform(0.2, 3.0, 3, 4),))),
    # -- losses and metrics -----------------------------------------------------------------
    "softmax_cross_entropy": Entry(
        [Case((normal(4, 5), ints(5, 4, 1).astype(np.int32))),
         Case((normal(2, 4, 3), ints(4, 2, 1, 3)), {"axis": 1})],
        ref_softmax_cross_entropy, grad_inputs=(0,), why_not_others=_LABELS),
    "categorical_cross_entropy": Entry(
        [Case((uniform(0.05, 1.0, 4, 5), ints(5, 4, 1))),
         Case((uniform(0.05, 1.0, 2, 4, 3), ints(4, 2, 1, 3)), {"axis": 1})],
        ref_categorical_cross_entropy, grad_inputs=(0,), why_not_others=_LABELS),
    "sigmoid_cross_entropy": Entry(
        [Case((normal(3, 4), uniform(0.0, 1.0, 3, 4))),
         Case((normal(5,), ints(2, 5)))],
        ref_sigmoid_cross_entropy, grad_inputs=(0,), why_not_others=_LABELS),
    "binary_cross_entropy": Entry(
        [Case((uniform(0.05, 0.95, 3, 4), uniform(0.0, 1.0, 3, 4))),  # NNabla: d/dt too
         Case((uniform(0.05, 0.95, 5), ints(2, 5)))],
        ref_binary_cross_entropy),
    "squared_error": Entry([Case((normal(3, 4), normal(3, 4)))], lambda a, b: (a - b) ** 2),
    "absolute_error": Entry([Case((nonzero(3, 4), np.zeros((3, 4), np.float32)))],
                            lambda a, b: np.abs(a - b)),
    "huber_loss": Entry([Case((away_from((-1.0, 0.0, 1.0), 3, 4, scale=1.5),
                               np.zeros((3, 4), np.float32))),
                         Case((away_from((-0.5, 0.0, 0.5), 6, scale=1.5), normal(6, scale=0.01)),
                              {"delta": 0.5})],
                        ref_huber_loss),
    "top_n_error": Entry(
        [Case((normal(5, 4), ints(4, 5, 1))),
         Case((normal(5, 4), ints(4, 5, 1)), {"n": 2}),
         # ties: NNabla counts every score >= the target's, so a tied target is an error
         Case((np.array([[0.5, 0.5, 0.1], [0.0, 0.0, 0.0], [0.2, 0.9, 0.9]], np.float32),
               np.array([[1], [2], [0]]))),
         Case((normal(2, 4, 3), ints(4, 2, 1, 3)), {"axis": 1, "n": 2}),
         Case((_NAN_SCORES, np.array([[0], [0], [1]]))),
         Case((_NAN_SCORES, np.array([[0], [0], [1]])), {"n": 2})],
        ref_top_n_error, no_grad=_NO_BACKWARD),
    "cross_entropy_with_softmax": Entry(
        [Case((normal(4, 5), _one_hot_rows(ints(5, 4), 5))),
         Case((normal(2, 4, 3), uniform(0.0, 1.0, 2, 4, 3)), {"axis": 1})],
        ref_cross_entropy_with_softmax),
    "cntk_batch_normalization": Entry(
        [Case((normal(4, 3, 2, 2), uniform(0.5, 2, 3), normal(3), normal(3), uniform(0.5, 2, 3),
               np.array(0.0, np.float32)), {"spatial": True, "batch_stat": True}),
         Case((normal(5, 6), uniform(0.5, 2, 6), normal(6), normal(6), uniform(0.5, 2, 6),
               np.array(7.0, np.float32)),
              {"time_constant": 20.0, "blend_time_constant": 3.0, "batch_stat": True},
              no_grad="with a blend CNTK's gradient is not the derivative of its forward (the "
                      "running statistics count as constants, the minibatch's with weight "
                      "1 - w): tests/ops/test_cntk_bn_blend.py checks it against NumPy"),
         # running statistics only (blend and time constant infinite): a true derivative
         Case((normal(5, 6), uniform(0.5, 2, 6), normal(6), normal(6), uniform(0.5, 2, 6),
               np.array(7.0, np.float32)),
              {"time_constant": math.inf, "blend_time_constant": math.inf, "batch_stat": True}),
         Case((normal(2, 3, 2), uniform(0.5, 2, 3), normal(3), normal(3), uniform(0.5, 2, 3),
               np.array(9.0, np.float32)), {"spatial": True, "batch_stat": False}),
         # sequences (lengths 3, 1, 4 padded with 50: CNTK packs them into two rows of 4)
         Case((_seq_padded(3, 2, 2), uniform(0.5, 2, 3), normal(3), normal(3),
               uniform(0.5, 2, 3), np.array(6.0, np.float32), _SEQ_LENGTHS),
              {"spatial": True, "time_constant": 8.0, "batch_stat": True}),
         Case((_seq_padded(3), uniform(0.5, 2, 3), normal(3), normal(3), uniform(0.5, 2, 3),
               np.array(0.0, np.float32), _SEQ_LENGTHS), {"batch_stat": True}),
         Case((_seq_padded(3), uniform(0.5, 2, 3), normal(3), normal(3), uniform(0.5, 2, 3),
               np.array(6.0, np.float32), _SEQ_LENGTHS), {"batch_stat": False})],
        ref_cntk_batch_normalization, grad_inputs=(0, 1, 2),
        updates=updates_cntk_batch_normalization,
        why_not_others="the running mean, variance and sample count are statistics"),
    "cntk_user_function": Entry(
        [Case((normal(3, 2), normal(2)), {"function": _CubeAndScale()})],
        lambda x, y, function=None: x ** 3 * y),
    "python_function": Entry(
        [Case((normal(3, 2), normal(2)), {"function": _CubeAndRowSums()})],
        lambda x, y, function=None: (x ** 3 * y, (x * y).sum(axis=1))),
    "cntk_max_unpooled": Entry(
        [Case((normal(2, 1, 4, 6), normal(2, 1, 2, 3)),
              {"kernel": (2, 2), "stride": (2, 2), "lower_pad": (0, 0), "upper_pad": (0, 0)}),
         Case((normal(1, 2, 5), normal(1, 2, 3)),
              {"kernel": (3,), "stride": (2,), "lower_pad": (1,), "upper_pad": (1,)})],
        lambda unpooled, values, **geometry: unpooled,
        no_grad="its gradient is CNTK 2.7's, not the derivative: the values get the max "
                "pooling of the output's gradient (tests/ops/test_cntk_max_unpooled.py checks "
                "it)"),
    "cntk_eye_like": Entry([Case((normal(3, 4),)), Case((normal(4, 2),))],
                      lambda x: np.eye(x.shape[0], x.shape[1]),
                      no_grad="its value does not depend on the input's values"),
    "classification_error": Entry(
        [Case((distinct(5, 4), _one_hot_rows(ints(4, 5), 4))),
         Case((distinct(5, 4), _one_hot_rows(ints(4, 5), 4)), {"topN": 2}),
         Case((distinct(2, 4, 3), _one_hot_rows(ints(4, 2, 3), 4, axis=1)), {"axis": 1}),
         Case((_NAN_SCORES, np.eye(3, dtype=np.float32)[[0, 0, 1]])),
         Case((_NAN_SCORES, np.eye(3, dtype=np.float32)[[0, 0, 1]]), {"topN": 2})],
        ref_classification_error, no_grad=_NO_BACKWARD),
    "one_hot": Entry([Case((ints(5, 4, 1).astype(np.int32), ), {"shape": (5,)}),
                      Case((np.stack([ints(3, 2, 3), ints(4, 2, 3)], axis=-1),),
                           {"shape": (3, 4)})],
                     ref_one_hot, no_grad=_NO_BACKWARD),
    # -- misc -------------------------------------------------------------------------------
    "identity": unary(lambda x: x, Case((normal(2, 3),))),
    # first=0, every=0: the probe prints nothing here (test_trace.py checks its lines).
    "trace": unary(lambda x, **_: x, Case((normal(2, 3),), {"say": "p", "first": 0, "every": 0})),
    "constant": Entry([Case((), {"val": 2.5, "shape": (2, 3)}), Case(())],
                      lambda val=0.0, shape=(): np.full(tuple(shape), val),
                      no_grad="no inputs"),
    "stop_gradient": unary(lambda x: x, Case((normal(2, 3),)),
                           no_grad="stops the gradient by definition "
                                   "(test_no_gradient_flows_through checks it)"),
    "grad": Entry([Case((normal(2, 3), normal(2, 3))),
                   Case((normal(4,), normal(4,)), {"grad_outputs": (0.5,)})],
                  ref_grad, call=call_grad,
                  no_grad="its gradient, a second derivative, is checked in both modes by "
                          "tests/graph/test_graph.py::test_higher_order_gradients; gradcheck on "
                          "the implementation would see its inputs as unconnected leaves"),
    # -- neural-network layers --------------------------------------------------------------
    "affine": Entry(
        [Case((normal(4, 3), normal(3, 2), normal(2))),
         Case((normal(2, 3, 4), normal(12, 5), None)),
         Case((normal(2, 3, 4), normal(4, 2, 3), normal(2, 3)), {"base_axis": 2})],
        ref_affine),
    "convolution": Entry(
        [Case((normal(2, 3, 5, 5), normal(4, 3, 3, 3), normal(4)), {"pad": (1, 1)}),
         Case((normal(1, 2, 7, 6), normal(3, 2, 2, 2), None),
              {"stride": (2, 2), "dilation": (2, 1), "pad": (1, 0)}),
         Case((normal(2, 4, 4, 4), normal(6, 2, 3, 3), normal(6)), {"group": 2}),
         Case((normal(2, 2, 3, 5, 5), normal(2, 3, 3, 3), normal(2)), {"base_axis": 2}),
         Case((normal(2, 5, 6, 3), normal(4, 2, 3, 3), normal(4)),
              {"channel_last": True, "pad": (1, 0)}),
         Case((normal(2, 3, 8), normal(2, 3, 3), normal(2)), {"stride": (2,), "pad": (1,)})],
        ref_convolution, atol=1e-4),
    "deconvolution": Entry(
        [Case((normal(2, 3, 3, 3), normal(3, 2, 2, 2), normal(2)), {"stride": (2, 2)}),
         Case((normal(1, 2, 3, 4), normal(2, 3, 3, 2), None),
              {"stride": (2, 2), "pad": (1, 1), "dilation": (2, 1), "output_padding": (1, 0)}),
         Case((normal(1, 4, 3, 3), normal(4, 1, 3, 3), normal(2)), {"group": 2, "pad": (1, 1)}),
         Case((normal(2, 3, 4), normal(3, 2, 3), normal(2)), {"stride": (3,)}),
         Case((normal(2, 3, 3, 2), normal(2, 2, 2, 3), normal(3)),
              {"stride": (2, 1), "channel_last": True})],
        ref_deconvolution, atol=1e-4),
    "max_pooling": Entry(
        [Case((distinct(2, 2, 4, 6),), {"kernel": (2, 2)}),
         Case((distinct(1, 2, 5, 6),), {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1),
                                        "ignore_border": False}),
         Case((distinct(1, 1, 7, 7),), {"kernel": (2, 2), "ignore_border": False}),
         Case((distinct(2, 5, 7),), {"kernel": (2, 3), "stride": (1, 2), "pad": (1, 0)}),
         Case((distinct(1, 1, 5, 5),), {"kernel": (3, 3), "stride": (1, 1), "pad": (2, 2)}),
         Case((distinct(1, 5, 6, 2),), {"kernel": (2, 2), "channel_last": True,
                                        "ignore_border": False})],
        ref_max_pooling),
    "average_pooling": Entry(
        [Case((normal(2, 2, 4, 6),), {"kernel": (2, 2)}),
         Case((normal(1, 2, 5, 6),), {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1),
                                      "ignore_border": False}),
         Case((normal(1, 2, 5, 6),), {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1),
                                      "ignore_border": False, "including_pad": False}),
         Case((normal(1, 1, 7, 7),), {"kernel": (2, 2), "ignore_border": False}),
         Case((normal(1, 1, 5, 5),), {"kernel": (3, 3), "stride": (1, 1), "pad": (1, 1),
                                      "including_pad": False}),
         Case((normal(1, 1, 5, 5),), {"kernel": (3, 3), "stride": (1, 1), "pad": (2, 2)}),
         Case((normal(1, 1, 3, 4, 5),), {"kernel": (2, 2, 2), "stride": (2, 1, 2),
                                         "pad": (1, 0, 1), "ignore_border": False,
                                         "including_pad": False}),
         Case((normal(1, 5, 6, 2),), {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1),
                                      "ignore_border": False, "including_pad": False,
                                      "channel_last": True})],
        ref_average_pooling),
    "global_average_pooling": unary(ref_global_average_pooling, Case((normal(2, 3, 4, 5),)),
                                    Case((normal(2, 3, 4),)), Case((normal(2, 3),))),
    "batch_normalization": Entry(
        _bn_cases() + _bn_one_sample_cases(), ref_batch_normalization, grad_inputs=(0, 1, 2),
        updates=updates_batch_normalization,
        why_not_others="the running mean and variance are statistics (need_grad=False in PF)"),
    "sync_batch_normalization": Entry(
        _bn_cases({"comm": None, "group": "world"}), ref_sync_batch_normalization,
        grad_inputs=(0, 1, 2), updates=updates_sync_batch_normalization,
        why_not_others="the running mean and variance are statistics (need_grad=False in PF)"),
    "dropout": Entry(
        [Case((nonzero(3, 4),), {"p": 0.0}),
         Case((nonzero(3, 4),), {"p": 0.3}),
         Case((nonzero(40, 100),), {"p": 0.5}),
         Case((nonzero(40, 100),), {"p": 0.2, "output_mask": True})],
        check=check_dropout, random=True),
    "embed": Entry([Case((ints(6, 2, 3), normal(6, 4))), Case((ints(5, 4), normal(5, 2, 3)))],
                   ref_embed),
    # -- reductions -------------------------------------------------------------------------
    "sum": unary(_reduction(np.sum), Case((normal(2, 3, 4),)),
                 Case((normal(2, 3, 4),), {"axis": 1}),
                 Case((normal(2, 3, 4),), {"axis": [0, 2], "keepdims": True})),
    "mean": unary(_reduction(np.mean), Case((normal(2, 3, 4),)),
                  Case((normal(2, 3, 4),), {"axis": -1}),
                  Case((normal(2, 3, 4),), {"axis": [0, 1], "keepdims": True})),
    "prod": unary(_reduction(np.prod), Case((uniform(0.5, 1.5, 2, 3),)),
                  Case((uniform(0.5, 1.5, 2, 3, 4),), {"axis": [0, 2]}),
                  Case((uniform(0.5, 1.5, 2, 3),), {"axis": 1, "keepdims": True})),
    "max": unary(_extreme(np.argmax), Case((distinct(2, 3, 4),)),
                 Case((distinct(2, 3, 4),), {"axis": 1, "with_index": True}),
                 Case((distinct(2, 3, 4),), {"axis": [0, 2], "keepdims": True}),
                 Case((distinct(2, 3, 4),), {"axis": [1, 2], "with_index": True}),
                 Case((distinct(2, 3, 4),), {"axis": [0, 2], "keepdims": True,
                                             "only_index": True},
                      no_grad="only_index returns integer indices")),
    "min": unary(_extreme(np.argmin), Case((distinct(2, 3, 4),)),
                 Case((distinct(2, 3, 4),), {"axis": 2, "keepdims": True, "with_index": True}),
                 Case((distinct(2, 3, 4),), {"axis": [0, 1]}),
                 Case((distinct(2, 3, 4),), {"axis": 1, "only_index": True},
                      no_grad="only_index returns integer indices")),
    # -- shapes -----------------------------------------------------------------------------
    "reshape": unary(lambda x, shape, inplace=True: x.reshape(shape),
                     Case((normal(2, 3, 4),), {"shape": (4, -1)})),
    "transpose": unary(lambda x, axes: np.transpose(x, axes),
                       Case((normal(2, 3, 4),), {"axes": (2, 0, 1)})),
    "concatenate": Entry([Case((normal(2, 3), normal(2, 1))),
                          Case((normal(2, 3), normal(1, 3), normal(3, 3)), {"axis": 0})],
                         lambda *x, axis=None: np.concatenate(x, axis=_axis(x[0], axis))),
    "stack": Entry([Case((normal(2, 3), normal(2, 3))),
                    Case((normal(2, 3), normal(2, 3), normal(2, 3)), {"axis": 2})],
                   lambda *x, axis=0: np.stack(x, axis=axis)),
    "split": unary(ref_split, Case((normal(3, 2),)), Case((normal(2, 3, 4),), {"axis": 1})),
    "slice": unary(ref_slice,
                   Case((normal(4, 6),), {"start": (1, 0), "stop": (3, 6), "step": (1, 2)}),
                   Case((normal(3, 4, 5),), {"start": (0, 1), "stop": (3, 4), "step": (2, 1)}),
                   Case((normal(3, 5),), {"start": (-4,), "stop": (-1,), "step": (2,)})),
    "flatten": unary(ref_flatten, Case((normal(2, 3, 4),)),
                     Case((normal(2, 3, 4, 2),), {"axis": 2})),
    "reshape_trailing": unary(
        lambda x, shape, base_axis=1: x.reshape(x.shape[:base_axis] + tuple(shape)),
        Case((normal(2, 3, 4),), {"shape": (2, 2, 3)}),
        Case((normal(2, 3, 4, 2),), {"shape": (-1, 2), "base_axis": 2})),
    "broadcast": unary(lambda x, shape: np.broadcast_to(x, shape),
                       Case((normal(1, 3),), {"shape": (4, 3)}),
                       Case((normal(2, 1, 3),), {"shape": (2, 4, 3)})),
    "pad": unary(ref_pad,
                 Case((normal(1, 2, 3),), {"pad_width": (1, 1, 2, 2)}),
                 Case((normal(2, 3),), {"pad_width": (0, 2), "constant_value": -1.5}),
                 Case((normal(2, 3, 4, 5),), {"pad_width": (1, 2, 2, 1), "mode": "reflect"}),
                 Case((normal(2, 3, 4, 5),), {"pad_width": (2, 1), "mode": "reflect"}),
                 Case((normal(2, 3, 4),), {"pad_width": (1, 2, 0, 3), "mode": "repeat"}),
                 Case((normal(2, 3, 4, 5),), {"pad_width": (1, 0), "mode": "repeat"}),
                 Case((normal(5),), {"pad_width": (2, 1), "mode": "reflect"})),
}


ENTRIES.update(NNABLA_ENTRIES)
ENTRIES.update(EXTRA_ENTRIES)
ENTRIES.update(binary_entries(ref_affine, ref_convolution))
ENTRIES.update(inq_entries(Case, Entry, ref_affine, ref_convolution))   # NNabla's INQ layers
ENTRIES.update(fused_bn_entry(ref_batch_normalization, updates_batch_normalization))


def _more_entries(filename: str, function: str) -> dict:
    """Entries kept in another file of this folder (found by path: this module is also loaded
    from other folders' tests)."""
    import importlib.util
    import os
    import sys
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), filename)
    spec = importlib.util.spec_from_file_location(f"_stadyn_{filename[:-3]}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, function)(Case, Entry)


ENTRIES.update(_more_entries("sequence_entries.py", "sequence_entries"))   # the sequence axis
ENTRIES.update(_more_entries("sequence_entries.py", "new_axis_entries"))   # where, gather, ...
ENTRIES.update(_more_entries("sequence_entries.py", "lstm_entries"))   # the fused LSTM
ENTRIES.update(_more_entries("sequence_rnn_entries.py", "sequence_rnn_entries"))  # RNN, GRU, stack
ENTRIES.update(_more_entries("rnn_entries.py", "rnn_entries"))   # NNabla's lstm, gru, rnn
ENTRIES.update(_more_entries("augment_entries.py", "augment_entries"))   # random_*, augmentation
ENTRIES.update(_more_entries("cntk_random_entries.py", "cntk_random_entries"))  # CNTK's random,
# sampling and ranking ops
ENTRIES.update(_more_entries("quantize_entries.py", "quantize_entries"))   # store, min_max_
ENTRIES.update(_more_entries("quantize_entries.py", "nnabla_extra_entries"))   # scatter_nd
ENTRIES.update(_more_entries("nnabla_2026_entries.py", "nnabla_2026_entries"))   # flip, ...
ENTRIES.update(_more_entries("ctc_entries.py", "ctc_entries"))   # CNTK's CTC, edit distance
ENTRIES.update(_more_entries("roi_pool_entries.py", "roi_pool_entries"))   # CNTK's ROIPooling
ENTRIES.update(_more_entries("cntk_nodes_entries.py", "cntk_nodes_entries"))  # EnvironmentInput,
# GatherPacked's column gather
ENTRIES.update(_more_entries("signal_entries.py", "signal_entries"))   # fft, stft, ...
ENTRIES.update(_more_entries("vision_entries.py", "vision_entries"))   # roi_align, warp_by_flow
ENTRIES.update(_more_entries("vision_entries.py", "sampling_entries"))   # random_choice
ENTRIES.update(_more_entries("vision_entries.py", "nms_entries"))   # nms_detection2d
ENTRIES.update(_more_entries("vision_entries.py", "correlation_entries"))   # patch_correlation
ENTRIES.update(_more_entries("value_shape_entries.py", "value_shape_entries"))   # nonzero, ...
ENTRIES.update(_more_entries("nnabla_tensor_entries.py", "nnabla_tensor_entries"))  # prune, ...
ENTRIES.update(_more_entries("nnabla_tensor_entries.py", "nnabla_conv_entries"))  # deconv
ENTRIES.update(_more_entries("nnabla_tensor_entries.py", "nnabla_qlinear_entries"))  # quantize
ENTRIES.update(_more_entries("nnabla_tensor_entries.py", "nnabla_deform_entries"))  # deformable
ENTRIES.update(_more_entries("nnabla_tensor_entries.py", "nnabla_fused_conv_entries"))  # fused
ENTRIES.update(_more_entries("nnabla_tensor_entries.py", "nnabla_pool_backward_entries"))
ENTRIES.update(_more_entries("nnabla_more_entries.py", "nnabla_more_entries"))  # vat_noise, ...


def _case_params():
    """``(op name, case index)`` for every op of the catalog; an op without an entry gets one
    parameter that fails, so the missing entry cannot go unnoticed."""
    params = []
    for name in sorted(CATALOG):
        entry = ENTRIES.get(name)
        if entry is None:
            params.append(pytest.param(name, None, id=f"{name}-MISSING"))
            continue
        params += [pytest.param(name, k, id=f"{name}-{k}") for k in range(len(entry.cases))]
    return params


CASES = _case_params()


def _entry_and_case(name: str, index: int | None) -> tuple[Entry, Case]:
    if index is None:
        pytest.fail(f"op {name!r} is in the catalog but has no entry in tests/ops/test_ops.py")
    entry = ENTRIES[name]
    return entry, entry.cases[index]


def test_every_op_has_an_entry():
    assert sorted(set(CATALOG) - set(ENTRIES)) == [], "ops without a harness entry"
    assert sorted(set(ENTRIES) - set(CATALOG)) == [], "entries for ops not in the catalog"


def test_entries_say_why_inputs_are_not_differentiated():
    for name, entry in ENTRIES.items():
        for case in entry.cases:
            skipped = [i for i, a in enumerate(case.inputs)
                       if _is_float(a) and i not in _grad_positions(entry, case)]
            if skipped and not (entry.no_grad or case.no_grad):
                assert entry.why_not_others, f"{name}: float inputs {skipped} not differentiated"


# ---------------------------------------------------------------------------------------------
# Running a case
# ---------------------------------------------------------------------------------------------
def _is_float(a) -> bool:
    return a is not None and np.issubdtype(np.asarray(a).dtype, np.floating)


def _grad_positions(entry: Entry, case: Case) -> tuple[int, ...]:
    if entry.no_grad or case.no_grad:
        return ()
    if entry.grad_inputs is not None:
        return entry.grad_inputs
    return tuple(i for i, a in enumerate(case.inputs) if _is_float(a))


def _as_tuple(out) -> tuple:
    return out if isinstance(out, tuple) else (out,)


def _variables(case: Case, grad_positions: tuple[int, ...]) -> list:
    return [None if a is None else
            sd.Variable.from_numpy_array(a, need_grad=i in grad_positions)
            for i, a in enumerate(case.inputs)]


def _float64(case: Case) -> list:
    return [None if a is None else (a.astype(np.float64) if _is_float(a) else a)
            for a in case.inputs]


def _loss_weights(name: str, index: int, outputs) -> list:
    rng = np.random.default_rng(zlib.crc32(f"{name}-{index}".encode()))
    return [rng.standard_normal(o.shape).astype(np.float32) for o in outputs]


@dataclass
class Run:
    """The input Variables (after the run) and output Variables of one case in one mode."""

    inputs: list
    outputs: tuple


def run_op(name: str, index: int, dynamic: bool, with_backward: bool) -> Run:
    """Build the op on fresh Variables in one mode; forward, and backward of ``sum(out * w)``
    over the float outputs when ``with_backward``."""
    entry, case = ENTRIES[name], ENTRIES[name].cases[index]
    grad_positions = _grad_positions(entry, case) if with_backward else ()
    inputs = _variables(case, grad_positions)
    function = function_of(name)

    def build():
        outputs = _as_tuple(entry.call(function, inputs, case.attrs) if entry.call
                            else function(*inputs, **case.attrs))
        differentiable = [o for o in outputs if np.issubdtype(o.dtype, np.floating)]
        loss = None
        if grad_positions:
            weights = _loss_weights(name, index, differentiable)
            terms = [F.sum(o * sd.Variable.from_numpy_array(w))
                     for o, w in zip(differentiable, weights)]
            loss = terms[0]
            for t in terms[1:]:
                loss = loss + t
        return outputs, loss

    if entry.random:
        sd.seed(1234)
    if dynamic:
        with sd.auto_forward():
            outputs, loss = build()
    else:
        outputs, loss = build()
        if entry.random:
            sd.seed(1234)
        sd.forward_all(list(outputs) + ([loss] if loss is not None else []))
    if loss is not None:
        loss.backward()
    return Run(inputs, outputs)


# ---------------------------------------------------------------------------------------------
# 1. forward vs the NumPy reference
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, index", CASES)
def test_forward_matches_numpy_reference(name, index):
    entry, case = _entry_and_case(name, index)
    before = _float64(case)
    run = run_op(name, index, dynamic=True, with_backward=False)
    actual = [o.d for o in run.outputs]
    if entry.check is not None:
        entry.check([a for a in case.inputs], actual, **case.attrs)
    else:
        expected = _as_tuple(entry.reference(*before, **case.attrs))
        assert len(actual) == len(expected), f"{name}: {len(actual)} outputs"
        for k, (a, e) in enumerate(zip(actual, expected)):
            e = np.asarray(e)
            assert a.shape == e.shape, f"{name} output {k}: shape {a.shape}, expected {e.shape}"
            if np.issubdtype(e.dtype, np.integer):
                assert np.issubdtype(a.dtype, np.integer), f"{name} output {k}: dtype {a.dtype}"
                np.testing.assert_array_equal(a, e)
            else:
                assert np.issubdtype(a.dtype, np.floating), f"{name} output {k}: dtype {a.dtype}"
                np.testing.assert_allclose(a, e, rtol=entry.rtol, atol=entry.atol)
    expected_updates = entry.updates(*before, **case.attrs) if entry.updates else {}
    for position, value in expected_updates.items():
        np.testing.assert_allclose(run.inputs[position].d, value, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name}: input {position} after the call")
    for position, original in enumerate(case.inputs):
        if position not in expected_updates and original is not None:
            np.testing.assert_array_equal(run.inputs[position].d, original,
                                          err_msg=f"{name} changed input {position}")


# ---------------------------------------------------------------------------------------------
# 2. gradient check of the torch implementation in float64
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, index", CASES)
def test_gradient_matches_finite_differences(name, index):
    entry, case = _entry_and_case(name, index)
    positions = _grad_positions(entry, case)
    if not positions:
        pytest.skip(f"{name}: no gradient: {case.no_grad or entry.no_grad}")
    base = [None if a is None else torch.from_numpy(np.array(a)) for a in _float64(case)]
    impl = CATALOG[name].impl

    def function(*differentiable):
        args = [None if t is None else t.clone() for t in base]
        for p, t in zip(positions, differentiable):
            args[p] = t
        if entry.random:
            torch.manual_seed(99)
        return impl(*args, **case.attrs)

    wrt = tuple(base[p].clone().requires_grad_(True) for p in positions)
    large = sum(t.numel() for t in wrt) > 100
    assert torch.autograd.gradcheck(function, wrt, eps=1e-6, atol=1e-5, rtol=1e-4,
                                    fast_mode=large)


# ---------------------------------------------------------------------------------------------
# 3. static == dynamic
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, index", CASES)
def test_static_equals_dynamic(name, index, monkeypatch):
    entry, case = _entry_and_case(name, index)
    # a forward no backward follows (an op without gradients) would run eagerly first, as an
    # evaluation (graph/_runner.py): lowered at once, the static run is the plan's
    from stadyn.graph import _runner
    monkeypatch.setattr(_runner, "BUILD_RUNS", 0)
    with warnings.catch_warnings():
        # a traceable op must be lowered: a fall-back to eager would compare dynamic with itself
        warnings.filterwarnings("error", message="a static graph runs eagerly")
        static = run_op(name, index, dynamic=False, with_backward=True)
    dynamic = run_op(name, index, dynamic=True, with_backward=True)
    assert len(static.outputs) == len(dynamic.outputs)
    for k, (s, d) in enumerate(zip(static.outputs, dynamic.outputs)):
        assert s.shape == d.shape and s.dtype == d.dtype, f"{name} output {k}"
        np.testing.assert_array_equal(s.d, d.d, err_msg=f"{name} output {k}: static != dynamic")
    for position, (s, d) in enumerate(zip(static.inputs, dynamic.inputs)):
        if s is None:
            continue
        np.testing.assert_array_equal(s.d, d.d, err_msg=f"{name} input {position} after the run")
        if position in _grad_positions(entry, case):
            assert s.grad is not None and d.grad is not None, f"{name}: no gradient for {position}"
            gd = d.g
            scale = max(1.0, float(np.abs(gd).max()))
            np.testing.assert_allclose(s.g, gd, rtol=1e-6, atol=1e-6 * scale,
                                       err_msg=f"{name}: gradient of input {position}")


@pytest.mark.parametrize("name, inputs, attrs", [
    ("stop_gradient", (normal(2, 3),), {}),
    ("unlink", (np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3),), {}),
    ("top_n_error", (normal(4, 3), ints(3, 4, 1)), {"n": 1}),
])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_no_gradient_flows_through(name, inputs, attrs, dynamic):
    """``sum(op(x) * w) + sum(x * v)`` has gradient ``v``: nothing comes back through the op."""
    rng = np.random.default_rng(5)
    x = sd.Variable.from_numpy_array(inputs[0], need_grad=True)
    rest = [sd.Variable.from_numpy_array(a) for a in inputs[1:]]
    v = rng.standard_normal(inputs[0].shape).astype(np.float32)
    with sd.auto_forward(dynamic):
        y = function_of(name)(x, *rest, **attrs)
        w = rng.standard_normal(y.shape).astype(np.float32)
        loss = F.sum(y * sd.Variable.from_numpy_array(w)) + F.sum(
            x * sd.Variable.from_numpy_array(v))
    if not dynamic:
        loss.forward()
    loss.backward()
    np.testing.assert_array_equal(x.g, v)


@pytest.mark.parametrize("name, attrs", [
    ("identity", {}), ("dropout", {"p": 0.0}), ("sum", {"axis": []}), ("mean", {"axis": []}),
    ("prod", {"axis": []}), ("global_average_pooling", {}),
])
def test_pass_through_ops_give_outputs_of_their_own(name, attrs):
    """An op that passes its input through unchanged still gives an output with its own autograd
    node, so backward from it works in dynamic mode (it used to warn and re-run statically)."""
    x = sd.Variable.from_numpy_array(np.array([[1.0, 2.0, 3.0]]), need_grad=True)
    with sd.auto_forward():
        y = function_of(name)(x, **attrs)
    assert y.data is not x.data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y.backward(np.full(y.shape, 2.0, np.float32))
    np.testing.assert_array_equal(x.g, [[2.0, 2.0, 2.0]])


def test_backward_leaves_the_callers_gradient_array_alone():
    x = sd.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0]), need_grad=True)
    with sd.auto_forward():
        y = F.reshape(x, (3,))
    seed = np.array([1.0, 2.0, 3.0], np.float32)
    y.backward(seed)
    y.backward(seed)
    np.testing.assert_array_equal(x.g, [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(seed, [1.0, 2.0, 3.0])


def test_dropout_draws_new_masks_each_forward():
    x = sd.Variable.from_numpy_array(np.ones((50, 40), np.float32))
    y = F.dropout(x, 0.5)
    sd.seed(7)
    y.forward()
    first = y.d.copy()
    y.forward()
    assert not np.array_equal(first, y.d)
    sd.seed(7)
    y.forward()
    np.testing.assert_array_equal(first, y.d)


# ---------------------------------------------------------------------------------------------
# Docstring examples
# ---------------------------------------------------------------------------------------------
DOC_MODULES = sorted({spec.impl.__module__ for spec in CATALOG.values()}
                     | {"stadyn.ops._registry", "stadyn.functions"})


@pytest.mark.parametrize("module_name", DOC_MODULES)
def test_docstring_examples_run(module_name):
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{module_name} has no docstring examples"
    assert result.failed == 0, f"{result.failed} docstring example(s) of {module_name} failed"


# ---------------------------------------------------------------------------------------------
# Errors name the user's mistake
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_shape_error_names_op_scope_and_shapes(dynamic):
    x = sd.Variable.from_numpy_array(normal(2, 3, 8, 8))
    w = sd.Variable.from_numpy_array(normal(5, 4, 3, 3))
    with sd.auto_forward(dynamic), sd.parameter_scope("cnn/conv3"):
        with pytest.raises(sd.ShapeError) as info:
            F.convolution(x, w)
    message = str(info.value)
    for part in ("convolution", "cnn/conv3", "(2, 3, 8, 8)", "(5, 4, 3, 3)"):
        assert part in message, f"{part!r} not in {message!r}"


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_shape_error_of_an_elementwise_op(dynamic):
    a = sd.Variable.from_numpy_array(normal(2, 3))
    b = sd.Variable.from_numpy_array(normal(4, 5))
    with sd.auto_forward(dynamic), sd.parameter_scope("head"):
        with pytest.raises(sd.ShapeError, match=r"add2 in scope 'head'.*\(2, 3\).*\(4, 5\)"):
            F.add2(a, b)


@pytest.mark.parametrize("attribute", ["d", "g"])
def test_assigning_the_wrong_shape_names_both_shapes(attribute):
    v = sd.Variable((2, 3))
    with pytest.raises(sd.ShapeError) as info:
        setattr(v, attribute, np.zeros((3, 2)))
    assert "(3, 2)" in str(info.value) and "(2, 3)" in str(info.value)
    assert f".{attribute}" in str(info.value)


def test_parameter_asked_with_another_shape_names_it():
    with sd.parameter_registry(sd.ParameterRegistry()), sd.parameter_scope("net/fc"):
        sd.get_parameter_or_create("W", (2, 3))
        with pytest.raises(sd.ParameterError) as info:
            sd.get_parameter_or_create("W", (3, 2))
    message = str(info.value)
    assert "net/fc/W" in message and "(2, 3)" in message and "(3, 2)" in message


def test_harness_references_are_not_torch():
    """The references must be independent of the implementation under test."""
    import inspect
    import sys
    source = inspect.getsource(sys.modules[__name__])
    start = source.index("# NumPy references: element-wise")
    end = source.index("# The entries, one per op")
    assert "torch" not in source[start:end]
    import nnabla_entries
    assert "torch" not in inspect.getsource(nnabla_entries)


def test_cases_are_distinct_ids():
    ids = [p.id for p in CASES]
    assert len(ids) == len(set(ids))

"""NumPy reference of ``cntk_batch_normalization`` (CNTK 2.7's batch normalisation), for the
op harness in test_ops.py: the output and the running statistics it moves, of a batch or of a
sequence's steps (whose training statistics CNTK computes over the matrix it packs the
minibatch into, gaps included)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["ref_cntk_batch_normalization", "updates_cntk_batch_normalization"]


def _cntk_bn_parts(x, spatial, lead=1):
    axes = (lead,) if spatial else tuple(range(lead, x.ndim))
    reduced = tuple(a for a in range(x.ndim) if a not in axes)
    shape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
    return reduced, shape


def _cntk_packed_columns(lengths):
    """The columns of CNTK 2.7's minibatch matrix (MBLayout::InitAsPackedSequences): each
    sequence in turn on the first row with room for it, rows as long as the longest."""
    width, rows = int(max(lengths)), []
    for n in (int(n) for n in lengths):
        free = [r for r, used in enumerate(rows) if used + n <= width]
        if free:
            rows[free[0]] += n
        else:
            rows.append(n)
    return width * len(rows)


def _cntk_bn_batch(x, spatial, lengths):
    """(mean, biased variance, samples N, elements E) of the minibatch as CNTK 2.7 computes
    them; a sequence's over its valid steps and the packed matrix's gaps (zeros)."""
    if lengths is None:
        reduced, _ = _cntk_bn_parts(x, spatial)
        return (x.mean(axis=reduced, keepdims=True), x.var(axis=reduced, keepdims=True),
                x.shape[0], x.size // (x.shape[1] if spatial else int(np.prod(x.shape[1:]))))
    steps = np.concatenate([x[b, :int(n)] for b, n in enumerate(lengths)], 0)   # (N, *sample)
    reduced, _ = _cntk_bn_parts(steps, spatial)
    per_step = int(np.prod([steps.shape[a] for a in reduced if a > 0]))
    n = int(sum(lengths))
    elements = _cntk_packed_columns(lengths) * per_step
    m = steps.astype(np.float64).sum(axis=reduced, keepdims=True) / elements
    v = (((steps - m) ** 2).sum(axis=reduced, keepdims=True) + (elements - n * per_step) * m * m) \
        / elements
    return m[None], v[None], n, elements


def ref_cntk_batch_normalization(x, scale, bias, mean, variance, count, lengths=None,
                                 spatial=False, time_constant=5000.0, blend_time_constant=0.0,
                                 epsilon=1e-5, batch_stat=None):
    """CNTK: the minibatch's statistics (biased variance) in training, the running ones in
    inference; a sequence's every step normalised, its statistics over the packed minibatch
    matrix CNTK 2.7 makes.  With ``blend_time_constant`` b the mean and the inverse standard
    deviation are blended with the running ones *after* this minibatch's update, weight
    ``b / (b + N)`` for the running ones, 0 on the first minibatch (count 0): CNTK's
    CntkBatchNormalization.cuh (kComputeBatchMeanAndInvStdDev: ``run = expAvgFactor * mean +
    (1 - expAvgFactor) * run; x = blendFactor * run + (1 - blendFactor) * mean``, and
    ``im2 = blendFactor * RSqrt(run + epsilon) + (1 - blendFactor) * im2``) with
    TrainingNodes.h's ComputeBlendFactor."""
    _, shape = _cntk_bn_parts(x, spatial, 1 if lengths is None else 2)
    if batch_stat:
        m, v, n, _ = _cntk_bn_batch(x, spatial, lengths)
        inv = 1 / np.sqrt(v + epsilon)
        if blend_time_constant and float(count) != 0:
            w = 1.0 if math.isinf(blend_time_constant) else \
                blend_time_constant / (blend_time_constant + n)
            new = updates_cntk_batch_normalization(x, scale, bias, mean, variance, count,
                                                   lengths, spatial, time_constant,
                                                   blend_time_constant, epsilon, batch_stat)
            m = (1 - w) * m + w * new[3].reshape(shape)
            inv = (1 - w) * inv + w / np.sqrt(new[4].reshape(shape) + epsilon)
    else:
        m, inv = mean.reshape(shape), 1 / np.sqrt(variance.reshape(shape) + epsilon)
    return (x - m) * inv * scale.reshape(shape) + bias.reshape(shape)


def updates_cntk_batch_normalization(x, scale, bias, mean, variance, count, lengths=None,
                                     spatial=False, time_constant=5000.0,
                                     blend_time_constant=0.0, epsilon=1e-5, batch_stat=None):
    """CNTK's running statistics: the first minibatch (count 0) replaces them, later ones blend
    in with ``1 - exp(-N / time_constant)`` (N samples: a sequence's steps); the variance
    unbiased over the E elements of each statistic; count grows by N."""
    if not batch_stat:
        return {}
    m, v, n, elements = _cntk_bn_batch(x, spatial, lengths)
    v = v * elements / (elements - 1)
    f = 1.0 if float(count) == 0 else -math.expm1(-n / time_constant)
    return {3: mean + f * (m.reshape(mean.shape) - mean),
            4: variance + f * (v.reshape(variance.shape) - variance), 5: count + n}

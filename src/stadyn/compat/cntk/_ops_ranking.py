"""CNTK's ranking criteria over a minibatch of scored samples grouped into queries:
``lambda_rank`` (a loss with LambdaRank gradients) and ``ndcg_at_1`` (a metric).

Each takes, per sample, a score (``output``), a ``gain`` and a ``group`` id, all of shape
``(1,)``; a group is a run of consecutive samples with the same id, listed in decreasing gain.
A sample's discount is ``log(2 + rank)``; within a group, ranking is by decreasing score (ties:
the lower gain first).  The value is one number for the minibatch, as CNTK's: ``(1 - mean
NDCG) * 100 * N`` for ``lambda_rank``, ``mean NDCG@1 * 100 * N`` for ``ndcg_at_1``.  They run
CNTK's algorithm on NumPy arrays (``cntk_user_function``), so a graph holding one runs eagerly.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> group, score, gain = C.input_variable(1), C.input_variable(1), C.input_variable(1)
    >>> f = C.ndcg_at_1(score, gain, group)
    >>> g = np.array([[1], [1], [2], [2]], np.float32)
    >>> s = np.array([[2], [1], [3], [1]], np.float32)
    >>> n = np.array([[7], [1], [3], [1]], np.float32)
    >>> float(f.eval({score: s, gain: n, group: g}))
    400.0
"""

from __future__ import annotations

import math

import numpy as np

from ... import functions as F
from . import _graph as G
from ._adapt import batched, named, operand, sample_shape, wrap

__all__ = ["lambda_rank", "ndcg_at_1"]


def _groups(group: np.ndarray) -> list[list[int]]:
    """Runs of consecutive samples with the same group id (CNTK casts the id to int)."""
    runs: list[list[int]] = []
    previous = None
    for i, g in enumerate(group):
        gid = int(g)
        if gid != previous:
            runs.append([])
            previous = gid
        runs[-1].append(i)
    return runs


def _ranks(scores: np.ndarray, gains: np.ndarray) -> list[int]:
    """Each sample's rank in its group: by decreasing score, equal scores by increasing gain."""
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), float(gains[i])))
    ranks = [0] * len(scores)
    for r, i in enumerate(order):
        ranks[i] = r
    return ranks


class _Ranking:
    """The ``cntk_user_function`` callback: inputs (score, gain, group), each ``(N, 1)``."""

    def __init__(self, kind: str):
        self.kind = kind

    def output_shape(self, input_shapes):
        return (1,), None           # one number (reshaped to a scalar by the caller)

    def forward_arrays(self, arrays):
        s, g, q = (np.asarray(a, np.float64).reshape(-1) for a in arrays)
        runs = _groups(q)
        if not runs:
            raise ValueError(f"{self.kind}: the minibatch has no samples")
        total, state = 0.0, []
        for idx in runs:
            ranks = _ranks(s[idx], g[idx])
            gains = g[idx]
            if self.kind == "ndcg_at_1":
                ideal = gains[0] / math.log(2.0)
                if ideal != 0.0:
                    top = gains[ranks.index(0)] / math.log(2.0)
                    total += top / ideal
                continue
            ideal = float(sum(gn / math.log(2.0 + k) for k, gn in enumerate(gains)))
            dcg = float(sum(gn / math.log(2.0 + r) for gn, r in zip(gains, ranks)))
            if ideal != 0.0:
                total += dcg / ideal
            state.append((idx, ranks, ideal))
        n = len(s)
        if self.kind == "ndcg_at_1":
            value = total / len(runs) * 100 * n
        else:
            value = (1.0 - total / len(runs)) * 100 * n
        return (s, g, state), np.asarray([value], np.float32)

    def backward_arrays(self, state, gradient):
        """LambdaRank's gradient w.r.t. the scores (CNTK's: it does not scale by the incoming
        gradient); none to the gains and groups."""
        s, g, groups = state
        if self.kind == "ndcg_at_1":
            return [None, None, None]
        pairs = []          # score differences of every pair (i, j > i) whose i beats the minimum
        for idx, _, _ in groups:
            minimum = g[idx[-1]]
            for a, i in enumerate(idx):
                if g[i] > minimum:
                    pairs.extend(s[i] - s[j] for j in idx[a + 1:])
        lambdas = -1.0 / (1.0 + np.exp(np.asarray(pairs, np.float64)))
        out = np.zeros(len(s), np.float64)
        used = 0           # CNTK counts only the pairs of unequal gains here
        for idx, ranks, ideal in groups:
            minimum = g[idx[-1]]
            for a, i in enumerate(idx):
                if not g[i] > minimum:
                    continue
                di = math.log(2.0 + ranks[a])
                for b in range(a + 1, len(idx)):
                    j = idx[b]
                    if abs(g[i] - g[j]) < 1e-7:
                        continue
                    dj = math.log(2.0 + ranks[b])
                    delta = (g[i] - g[j]) * (di - dj) / (di * dj)
                    delta = 0.0 if ideal == 0.0 else abs(delta / ideal)
                    lam = lambdas[used] * delta
                    used += 1
                    out[i] += lam
                    out[j] -= lam
        return [out.reshape(-1, 1).astype(np.float32), None, None]


def _ranking(kind: str, op: str, output, gain, group, name: str):
    for label, x in (("output", output), ("gain", gain), ("group", group)):
        if not batched(x) or tuple(sample_shape(x)) != (1,):
            raise ValueError(f"{kind}: {label} needs the batch axis and shape (1,), got "
                             f"{tuple(sample_shape(x))}")
    out = F.cntk_user_function(operand(output), operand(gain), operand(group),
                               function=_Ranking(kind))
    out = F.reshape(out, ())
    G.BATCH.unmark(out)
    G.set_op_name(out, op)
    return named(wrap(out), name, op)


def lambda_rank(output, gain, group, name: str = ""):
    """``(1 - mean NDCG) * 100 * N`` over the minibatch's groups; backward gives LambdaRank's
    gradients to ``output`` (the scores).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> group, gain = C.input_variable(1), C.input_variable(1)
        >>> score = C.input_variable(1, needs_gradient=True)
        >>> f = C.lambda_rank(score, gain, group)
        >>> g = np.array([[1], [1], [2], [2]], np.float32)
        >>> s = np.array([[1], [2], [3], [4]], np.float32)
        >>> n = np.array([[7], [1], [3], [1]], np.float32)
        >>> f.grad({score: s, gain: n, group: g}, wrt=[score]).ravel().round(4)
        array([-0.2121,  0.2121, -0.1486,  0.1486], dtype=float32)
    """
    return _ranking("lambda_rank", "LambdaRank", output, gain, group, name)


def ndcg_at_1(output, gain, group, name: str = ""):
    """The mean over the minibatch's groups of the gain of the top-scored sample divided by
    the group's first (largest) gain, times ``100 * N``; no gradient (an evaluation metric).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> group, score, gain = C.input_variable(1), C.input_variable(1), C.input_variable(1)
        >>> f = C.ndcg_at_1(score, gain, group)
        >>> v = f.eval({score: [[1], [2]], gain: [[3], [1]], group: [[0], [0]]})
        >>> v.shape, round(float(v), 3)
        ((), 66.667)
    """
    return _ranking("ndcg_at_1", "NDCG1Eval", output, gain, group, name)

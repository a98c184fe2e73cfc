"""CNTK's sampling ops: ``random_sample`` (a set of classes drawn by weight, as one-hot rows)
and ``random_sample_inclusion_frequency`` (how often each class is expected in such a set).

``weights`` is a vector of non-negative numbers without the batch axis; class ``i`` is drawn
with probability ``weights[i] / sum(weights)``.  Without duplicates a class already drawn is
drawn again until ``num_samples`` distinct classes are in the set.  The draws are Stadyn's
(CNTK's seed rules, see ``cntk.random``), so they differ from CNTK's while their frequencies
agree; ``random_sample`` gives dense one-hot rows where CNTK gives a sparse matrix.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> rows = C.random_sample(np.array([1.0, 0.0, 3.0], np.float32), 4, True, seed=1).eval()
    >>> rows.shape, rows.sum(axis=1).tolist(), float(rows[:, 1].sum())
    ((4, 3), [1.0, 1.0, 1.0, 1.0], 0.0)
"""

from __future__ import annotations

import numpy as np
import torch

from ... import functions as F
from . import _graph as G
from ._adapt import batched, named, operand, wrap
from ._ops_nn import SentinelValueForAutoSelectRandomSeed
from .random import _seeded_generator as seeded_generator

__all__ = ["random_sample", "random_sample_inclusion_frequency"]


def _weights(weights, op: str):
    if batched(weights):
        raise ValueError(f"{op}: the weights cannot have the batch axis (a vector of class "
                         "weights)")
    w = operand(weights)
    if not hasattr(w, "shape"):
        raise ValueError(f"{op}: the weights must be a vector")
    if len(w.shape) != 1:
        raise ValueError(f"{op}: the weights must be a vector, got shape {tuple(w.shape)}")
    return w


def _probabilities(array: np.ndarray, op: str) -> np.ndarray:
    w = np.asarray(array, np.float64).reshape(-1)
    if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
        raise ValueError(f"{op}: the weights must be finite, non-negative and not all zero")
    return w / w.sum()


def _check_count(num_samples, classes: int, allow_duplicates: bool, op: str) -> int:
    n = int(num_samples)
    if n < 1:
        raise ValueError(f"{op}: num_samples must be positive, got {num_samples}")
    if not allow_duplicates and n > classes:
        raise ValueError(f"{op}: {n} distinct samples of only {classes} classes")
    return n


class _Sample:
    """The ``cntk_user_function`` callback drawing one set of samples per evaluation."""

    def __init__(self, n: int, allow_duplicates: bool, seed):
        self.n, self.duplicates = n, bool(allow_duplicates)
        self.generator = seeded_generator(seed)

    def output_shape(self, input_shapes):
        return (self.n, input_shapes[0][0]), None

    def forward_arrays(self, arrays):
        p = torch.as_tensor(_probabilities(arrays[0], "random_sample"))
        picks = torch.multinomial(p, self.n, replacement=self.duplicates,
                                  generator=self.generator)
        rows = np.zeros((self.n, p.numel()), np.float32)
        rows[np.arange(self.n), picks.numpy()] = 1.0
        return None, rows

    def backward_arrays(self, state, gradient):
        return [None]


def random_sample(weights, num_samples: int, allow_duplicates: bool,
                  seed=SentinelValueForAutoSelectRandomSeed, name: str = ""):
    """``num_samples`` classes drawn by ``weights`` (with replacement when
    ``allow_duplicates``), as one-hot rows: shape ``(num_samples, len(weights))``, no batch
    axis; a new set on every evaluation.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> rows = C.random_sample(np.ones(5, np.float32), 5, False, seed=3).eval()
        >>> sorted(rows.argmax(axis=1).tolist())        # five distinct classes
        [0, 1, 2, 3, 4]
    """
    w = _weights(weights, "random_sample")
    n = _check_count(num_samples, int(w.shape[0]), allow_duplicates, "random_sample")
    out = F.cntk_user_function(w, function=_Sample(n, allow_duplicates, seed))
    G.set_op_name(out, "RandomSample")
    return named(wrap(out), name, "RandomSample")


def _tries(p: np.ndarray, n: int) -> float:
    """The number of draws with replacement whose expected count of distinct classes is
    ``n``: ``sum(1 - (1 - p) ** t) = n``, solved by bisection."""
    def distinct(t):
        return float(np.sum(-np.expm1(t * np.log1p(-np.minimum(p, 1 - 1e-12)))))
    lo, hi = float(n), float(n)
    while distinct(hi) < n - 1e-9 and hi < 1e12:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if distinct(mid) < n else (lo, mid)
    return 0.5 * (lo + hi)


class _Frequency:
    """The ``cntk_user_function`` callback of :func:`random_sample_inclusion_frequency`."""

    def __init__(self, n: int, allow_duplicates: bool):
        self.n, self.duplicates = n, bool(allow_duplicates)

    def output_shape(self, input_shapes):
        return input_shapes[0], None

    def forward_arrays(self, arrays):
        p = _probabilities(arrays[0], "random_sample_inclusion_frequency")
        if self.duplicates:
            out = self.n * p
        else:
            out = -np.expm1(_tries(p, self.n) * np.log1p(-np.minimum(p, 1 - 1e-12)))
        return None, out.astype(np.float32)

    def backward_arrays(self, state, gradient):
        return [None]


def random_sample_inclusion_frequency(weights, num_samples: int, allow_duplicates: bool,
                                      seed=SentinelValueForAutoSelectRandomSeed,
                                      name: str = ""):
    """How often each class is expected among :func:`random_sample`'s ``num_samples``:
    ``num_samples * p`` with duplicates; without, ``1 - (1 - p) ** t`` for the number of draws
    ``t`` that yields ``num_samples`` distinct classes on average (CNTK estimates ``t`` by
    sampling, Stadyn solves for it; ``seed`` is accepted and not needed).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> w = np.concatenate([np.full(100, 1000.0), np.full(100, 1.0)]).astype(np.float32)
        >>> f = C.random_sample_inclusion_frequency(w, 150, True).eval()
        >>> round(float(f[0]), 5), round(float(f[110]), 8)      # 150 * 1000 / 100100, ...
        (1.4985, 0.0014985)
    """
    w = _weights(weights, "random_sample_inclusion_frequency")
    n = _check_count(num_samples, int(w.shape[0]), allow_duplicates,
                     "random_sample_inclusion_frequency")
    out = F.cntk_user_function(w, function=_Frequency(n, allow_duplicates))
    G.set_op_name(out, "RandomSampleInclusionFrequency")
    return named(wrap(out), name, "RandomSampleInclusionFrequency")

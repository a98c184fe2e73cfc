"""CNTK's sampling ops: ``random_sample`` (a set of classes drawn by weight, as one-hot rows)
and ``random_sample_inclusion_frequency`` (how often each class is expected in such a set).

``weights`` is a vector of non-negative numbers without the batch axis (or a row of them,
shape ``(1, n)``, as CNTK's Examples/Text/WordLMWithSampledSoftmax gives it); class ``i`` is drawn
with probability ``weights[i] / sum(weights)``.  Without duplicates a class already drawn is
drawn again until ``num_samples`` distinct classes are in the set.  The draws are CNTK 2.7's
own (its seed rules and its generator, see ``cntk.random``; CNTK's ``rngOffset`` counts the
tries); ``random_sample`` gives dense one-hot rows where CNTK gives a sparse matrix.  Both are
catalog ops (``F.random_sample``, ``F.random_sample_inclusion_frequency``).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> rows = C.random_sample(np.array([1.0, 0.0, 3.0], np.float32), 4, True, seed=1).eval()
    >>> rows.shape, rows.sum(axis=1).tolist(), float(rows[:, 1].sum())
    ((4, 3), [1.0, 1.0, 1.0, 1.0], 0.0)
"""

from __future__ import annotations

import numpy as np

from ... import functions as F
from ...cntk_semantics import cannot_run
from . import _graph as G
from ._adapt import batched, named, one_op, operand, wrap
from ._cntk_attributes import CNTK_ATTRIBUTES
from ._seeds import SentinelValueForAutoSelectRandomSeed, resolved_seed

__all__ = ["random_sample", "random_sample_inclusion_frequency"]


def _unrunnable(weights, shape: tuple, op: str):
    """``op`` of batched ``weights`` (an input, or computed from one): built as CNTK builds
    it, failing when it runs (:func:`stadyn.cntk_semantics.cannot_run`)."""
    w = operand(weights)
    if len(w.shape) not in (2, 3) or (len(w.shape) == 3 and w.shape[1] != 1):
        raise ValueError(f"{op}: the weights must be a vector, got shape {tuple(w.shape[1:])}")
    where = f"Node '{weights.uid}' (InputValue operation)" \
        if G.kind_of(w) == "input" and getattr(weights, "uid", "") else "The weights"
    return one_op(cannot_run(w, shape, where), w)


def _weights(weights, op: str):
    w = operand(weights)
    if not hasattr(w, "shape"):
        raise ValueError(f"{op}: the weights must be a vector")
    if len(w.shape) == 2 and w.shape[0] == 1:            # a row (1, n): CNTK takes it too
        w = F.reshape(_checked(w, op), (w.shape[1],))
    if len(w.shape) != 1:
        raise ValueError(f"{op}: the weights must be a vector, got shape {tuple(w.shape)}")
    return w


def _checked(w, op: str):
    """Weights known before the graph runs (a constant) are checked at once."""
    if G.kind_of(w) == "constant":
        array = np.asarray(w.d, np.float64)
        if (array < 0).any() or not np.isfinite(array).all() or array.sum() <= 0:
            raise ValueError(f"{op}: the weights must be finite, non-negative and not all zero")
    return w


def _refuse_endless_sampling(weights, num_samples, allow_duplicates) -> None:
    """CNTK 2.7's ValueError, as the op is made, for sampling without duplicates as many
    classes as there are or more (drawing distinct classes would never end)."""
    shape = tuple(getattr(weights, "shape", None) or np.shape(weights))
    classes = int(shape[-1]) if shape else 1
    if not allow_duplicates and classes > 0 and int(num_samples) >= classes:
        raise ValueError("RandomSample/RandomSampleInclusionFrequency: For sampling without "
                         f"duplicates the number of requested samples ({int(num_samples)}) "
                         f"must be less than the number of classes ({classes}).")


def random_sample(weights, num_samples: int, allow_duplicates: bool,
                  seed=SentinelValueForAutoSelectRandomSeed, name: str = ""):
    """``num_samples`` classes drawn by ``weights`` (with replacement when
    ``allow_duplicates``), as one-hot rows: shape ``(num_samples, len(weights))``, no batch
    axis; a new set on every evaluation.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> rows = C.random_sample(np.ones(5, np.float32), 4, False, seed=3).eval()
        >>> len(set(rows.argmax(axis=1).tolist()))      # four distinct classes of five
        4
    """
    _refuse_endless_sampling(weights, num_samples, allow_duplicates)
    if batched(weights):
        n = operand(weights).shape[-1]
        out = _unrunnable(weights, (int(num_samples), n), "random_sample")
        return named(wrap(out), name, "RandomSample")
    w = _weights(weights, "random_sample")
    out = F.random_sample(_checked(w, "random_sample"), int(num_samples), bool(allow_duplicates),
                          seed=resolved_seed(seed))
    return named(wrap(out), name, "RandomSample")


def random_sample_inclusion_frequency(weights, num_samples: int, allow_duplicates: bool,
                                      seed=SentinelValueForAutoSelectRandomSeed,
                                      name: str = ""):
    """How often each class is expected among :func:`random_sample`'s ``num_samples``:
    ``num_samples * p`` with duplicates; without, ``1 - (1 - p) ** t`` for CNTK 2.7's estimate
    ``t`` of the tries a set of distinct classes takes: the mean of ten samplings drawn from
    the Function's own stream (``seed``; drawn with duplicates too, and counted in its
    ``rngOffset``), once, and again only when the weights change, as CNTK computes it.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> w = np.concatenate([np.full(100, 1000.0), np.full(100, 1.0)]).astype(np.float32)
        >>> f = C.random_sample_inclusion_frequency(w, 150, True).eval()
        >>> round(float(f[0]), 5), round(float(f[110]), 8)      # 150 * 1000 / 100100, ...
        (1.4985, 0.0014985)
        >>> w = np.array([1, 2, 3, 4, 0, 10], np.float32)
        >>> C.random_sample_inclusion_frequency(w, 3, False, seed=1).eval()[:2].tolist()
        [0.23411643505096436, 0.4218226969242096]
    """
    _refuse_endless_sampling(weights, num_samples, allow_duplicates)
    if batched(weights):
        out = _unrunnable(weights, tuple(operand(weights).shape[1:]),
                          "random_sample_inclusion_frequency")
        return named(wrap(out), name, "RandomSampleInclusionFrequency")
    w = _weights(weights, "random_sample_inclusion_frequency")
    stream = resolved_seed(seed)
    out = F.random_sample_inclusion_frequency(
        _checked(w, "random_sample_inclusion_frequency"), int(num_samples),
        bool(allow_duplicates), seed=stream)
    if len(operand(weights).shape) == 2:                  # a row in, a row out (CNTK 2.7)
        # (one op reading the row, as CNTK shows it)
        out = one_op(F.reshape(out, (1, out.shape[0])), operand(weights))
    # (CNTK 2.7's attributes, which its file holds; the writer writes the offset where the
    # stream stands, the Function shows where it stood at its last save)
    CNTK_ATTRIBUTES[out] = {"numSamples": int(num_samples),
                            "allowDuplicates": bool(allow_duplicates),
                            "rngSeed": int(stream), "rngOffset": 0}
    return named(wrap(out), name, "RandomSampleInclusionFrequency")

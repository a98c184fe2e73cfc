"""Random values of another value's shape and dtype -- ``rand_like``, ``randn_like``,
``gumbel_like``, ``bernoulli_like`` (CNTK's ``cntk.random`` ``*_like`` Functions, ONNX's
``RandomUniformLike`` / ``RandomNormalLike``) -- and CNTK's sampling ops, ``random_sample`` and
``random_sample_inclusion_frequency``.

A :class:`stadyn.ops.CNTKStream` seed (compat.cntk's Functions) draws CNTK 2.7's own numbers
(``ops/_cntk_draws.py``).  Otherwise they draw from Stadyn's seeded generator in both modes, with
the seeding rule of
:mod:`stadyn.ops._random`: ``seed=-1`` draws from torch's generator (:func:`stadyn.seed` seeds
it); a seed of their own from a generator seeded with it when the op runs (each dynamic call
the same values, a static graph the next values on every ``forward()``); a
:class:`stadyn.ops.RandomStream` from that stream, in every mode and on every run.  No
gradient flows into the operand, whose values are not read (only its shape and dtype).
"""

from __future__ import annotations

import torch

from ._cntk_draws import CNTKStream, cntk_draw, cntk_inclusion_frequency, cntk_sample
from ._random import _generator
from ._registry import op

_C = "random"


def _float(x: torch.Tensor) -> torch.dtype:
    return x.dtype if x.is_floating_point() else torch.float32


def _like_shape(x, *args, **kwargs):
    """Shape rule: ``x``'s shape, a float dtype, no gradient; draws nothing."""
    return torch.empty(tuple(x.shape), dtype=_float(x), device="meta")


def _cntk(kind: str, x: torch.Tensor, a: float, b: float, seed: CNTKStream) -> torch.Tensor:
    return cntk_draw(kind, a, b, tuple(x.shape), _float(x), seed, x.device)


def _uniform(x: torch.Tensor, seed) -> torch.Tensor:
    return torch.rand(tuple(x.shape), generator=_generator(seed, x.device), device=x.device,
                      dtype=_float(x))


@op(1, category=_C, shape=_like_shape, frameworks=("cntk",))
def rand_like(x, low=0.0, high=1.0, seed=-1):
    """Values drawn uniformly from ``[low, high)``, of ``x``'s shape (and float dtype).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     u = F.rand_like(sd.Variable.from_numpy_array(np.zeros((2, 500))), 2.0, 3.0)
        >>> u.shape, bool((u.d >= 2).all() and (u.d < 3).all())
        ((2, 500), True)
    """
    if isinstance(seed, CNTKStream):
        return _cntk("uniform", x, low, high, seed)
    return _uniform(x, seed) * (float(high) - float(low)) + float(low)


@op(1, category=_C, shape=_like_shape, frameworks=("cntk",))
def randn_like(x, mu=0.0, sigma=1.0, seed=-1):
    """Normal values with mean ``mu`` and standard deviation ``sigma``, of ``x``'s shape.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     z = F.randn_like(sd.Variable.from_numpy_array(np.zeros(20000)), 5.0, 0.1, seed=1)
        >>> round(float(z.d.mean()), 1), round(float(z.d.std()), 2)
        (5.0, 0.1)
    """
    if isinstance(seed, CNTKStream):
        return _cntk("normal", x, mu, sigma, seed)
    z = torch.randn(tuple(x.shape), generator=_generator(seed, x.device), device=x.device,
                    dtype=_float(x))
    return z * float(sigma) + float(mu)


@op(1, category=_C, shape=_like_shape, frameworks=("cntk",))
def gumbel_like(x, loc=0.0, scale=1.0, seed=-1):
    """Gumbel values ``loc - scale * log(-log(u))`` (``u`` uniform on ``(0, 1)``), of ``x``'s
    shape: the noise of the Gumbel-max trick.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     v = F.gumbel_like(sd.Variable.from_numpy_array(np.zeros(20000)), seed=3)
        >>> round(float(v.d.mean()), 1)    # Euler's constant, 0.577...
        0.6
    """
    if isinstance(seed, CNTKStream):
        return _cntk("gumbel", x, loc, scale, seed)
    u = _uniform(x, seed).clamp_min(torch.finfo(_float(x)).tiny)
    return float(loc) - float(scale) * torch.log(-torch.log(u))


@op(1, category=_C, shape=_like_shape, frameworks=("cntk",))
def bernoulli_like(x, p=0.5, seed=-1):
    """Ones with probability ``p``, zeros otherwise, of ``x``'s shape.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     b = F.bernoulli_like(sd.Variable.from_numpy_array(np.zeros(20000)), 0.25, seed=5)
        >>> sorted(set(b.d.tolist())), abs(float(b.d.mean()) - 0.25) < 0.02
        ([0.0, 1.0], True)
    """
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"bernoulli_like: p (the probability of 1) must be in [0, 1], got {p}")
    if isinstance(seed, CNTKStream):
        return _cntk("bernoulli", x, p, 0.0, seed)
    return (_uniform(x, seed) < float(p)).to(_float(x))


# ---------------------------------------------------------------------------------------------
# CNTK's sampling ops
# ---------------------------------------------------------------------------------------------
def _check_count(weights, num_samples, allow_duplicates, name) -> int:
    if weights.dim() != 1:
        raise ValueError(f"{name}: the weights must be a vector, got shape "
                         f"{tuple(weights.shape)}")
    n = int(num_samples)
    if n < 1:
        raise ValueError(f"{name}: num_samples must be positive, got {num_samples}")
    if not allow_duplicates and n >= weights.shape[0]:
        # CNTK 2.7's rule: without duplicates, fewer samples than classes
        raise ValueError(f"{name}: sampling without duplicates needs fewer samples than "
                         f"classes, got {n} samples of {weights.shape[0]} classes")
    return n


def _sample_shape(weights, num_samples=1, allow_duplicates=True, seed=-1):
    n = _check_count(weights, num_samples, allow_duplicates, "random_sample")
    return torch.empty((n, weights.shape[0]), dtype=_float(weights), device="meta")


@op(1, category=_C, shape=_sample_shape, frameworks=("cntk",))
def random_sample(weights, num_samples=1, allow_duplicates=True, seed=-1):
    """``num_samples`` classes drawn with probabilities ``weights / sum(weights)`` (a vector of
    non-negative weights), as one-hot rows ``(num_samples, classes)``: with replacement when
    ``allow_duplicates``, else ``num_samples`` distinct classes (CNTK's ``random_sample``,
    dense).  No gradient.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> w = sd.Variable.from_numpy_array(np.array([1.0, 0.0, 3.0], np.float32))
        >>> with sd.auto_forward():
        ...     rows = F.random_sample(w, 4, True, seed=1)
        >>> rows.shape, rows.d.sum(axis=1).tolist(), float(rows.d[:, 1].sum())
        ((4, 3), [1.0, 1.0, 1.0, 1.0], 0.0)
    """
    n = _check_count(weights, num_samples, allow_duplicates, "random_sample")
    if isinstance(seed, CNTKStream):
        picks = cntk_sample(weights, n, bool(allow_duplicates), seed)
        return torch.nn.functional.one_hot(picks, weights.shape[0]).to(_float(weights))
    p = weights.detach().to(torch.float64)
    picks = torch.multinomial(p, n, replacement=bool(allow_duplicates),
                              generator=_generator(seed, weights.device))
    return torch.nn.functional.one_hot(picks, weights.shape[0]).to(_float(weights))


def _frequency_shape(weights, num_samples=1, allow_duplicates=True, seed=-1):
    _check_count(weights, num_samples, allow_duplicates, "random_sample_inclusion_frequency")
    return torch.empty(tuple(weights.shape), dtype=_float(weights), device="meta")


_DOUBLINGS, _HALVINGS = 64, 80     # bound, then bisect, the number of draws (float64 precision)


@op(1, category=_C, shape=_frequency_shape, frameworks=("cntk",))
def random_sample_inclusion_frequency(weights, num_samples=1, allow_duplicates=True, seed=-1):
    """How often each class is expected among :func:`random_sample`'s ``num_samples``:
    ``num_samples * p`` with duplicates; without, ``1 - (1 - p) ** t`` for the number of draws
    with replacement ``t`` whose expected count of distinct classes is ``num_samples`` (solved
    by bisection).  A :class:`stadyn.ops.CNTKStream` ``seed`` (compat.cntk's) makes ``t``
    CNTK 2.7's estimate instead, the mean tries of ten samplings drawn from the stream, the
    values computed again only when the weights change, as CNTK's are; any other seed is not
    used.  No gradient.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> w = sd.Variable.from_numpy_array(np.array([1.0, 1.0, 2.0], np.float32))
        >>> with sd.auto_forward():
        ...     f = F.random_sample_inclusion_frequency(w, 2, True)
        >>> f.d.tolist()
        [0.5, 0.5, 1.0]
    """
    n = _check_count(weights, num_samples, allow_duplicates, "random_sample_inclusion_frequency")
    if isinstance(seed, CNTKStream):
        return cntk_inclusion_frequency(weights, n, bool(allow_duplicates), seed).to(
            _float(weights))
    w = weights.detach().to(torch.float64)
    p = w / w.sum()
    if allow_duplicates:
        return (n * p).to(_float(weights))
    log_miss = torch.log1p(-p.clamp_max(1 - 1e-12))

    def distinct(t):
        return -torch.expm1(t * log_miss).sum()

    lo = torch.full((), float(n), dtype=torch.float64, device=w.device)
    hi = lo.clone()
    for _ in range(_DOUBLINGS):
        hi = torch.where(distinct(hi) < n - 1e-9, hi * 2, hi)
    for _ in range(_HALVINGS):
        mid = 0.5 * (lo + hi)
        below = distinct(mid) < n
        lo, hi = torch.where(below, mid, lo), torch.where(below, hi, mid)
    return (-torch.expm1(0.5 * (lo + hi) * log_miss)).to(_float(weights))

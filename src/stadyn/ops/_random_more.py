"""NNabla 1.39's other random sources: ``rand_binomial``, ``rand_gamma`` and ``rand_beta``
(NNabla's arguments and defaults; the seeding rule of ``rand``: ``seed=-1`` draws from
torch's generator, a seed of the op's own from a generator seeded with it).

torch's gamma sampler takes no generator, so ``rand_gamma`` and ``rand_beta`` draw by
Marsaglia and Tsang's method from normal and uniform draws of the op's generator.

Example:
    >>> import stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     k = F.rand_binomial(4, 0.5, shape=(1000,))
    >>> int(k.d.min()) >= 0 and int(k.d.max()) <= 4
    True
"""

from __future__ import annotations

import torch

from ..graph import get_current_context
from ._random import _generator, _shape
from ._registry import op

_C = "random"


def _float_shape(*args, shape=(), seed=-1, **kwargs):
    """Shape rules: the output without drawing, which would advance the generator."""
    return torch.empty(_shape(shape), device="meta")


def _binomial_shape(n=1, p=0.5, shape=(), seed=-1):
    return _float_shape(shape=shape)


def _gamma_shape(k=0.5, theta=1, shape=(), seed=-1):
    return _float_shape(shape=shape)


def _beta_shape(alpha=0.5, beta=0.5, shape=(), seed=-1):
    return _float_shape(shape=shape)


@op(0, category=_C, shape=_binomial_shape)
def rand_binomial(n=1, p=0.5, shape=(), seed=-1):
    """Binomial samples: successes in ``n`` trials of probability ``p``, of ``shape``
    (float32, as NNabla's; ``n=1`` is Bernoulli).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     a = F.rand_binomial(10, 0.3, (5,), seed=3)
        ...     b = F.rand_binomial(10, 0.3, (5,), seed=3)
        >>> bool((a.d == b.d).all()), a.d.dtype
        (True, dtype('float32'))
    """
    if int(n) < 0 or not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"rand_binomial: n must be >= 0 and p in [0, 1], got n={n}, p={p}")
    device = get_current_context().device
    count = torch.full(_shape(shape), float(int(n)), device=device)
    return torch.binomial(count, torch.full_like(count, float(p)),
                          generator=_generator(seed, device))


_ROUNDS = 16   # Marsaglia-Tsang accepts a draw with probability > 0.95: all 16 rounds
#                rejected happens with probability < 1e-20 (the sample is then d, the mode)


def _standard_gamma(k: float, shape, generator, device) -> torch.Tensor:
    """Gamma(k, 1) draws from ``generator`` by Marsaglia and Tsang's method (for ``k < 1``:
    a Gamma(k + 1) draw times ``U ** (1 / k)``), a fixed number of rounds at once, so the draw
    is one traceable computation and a seeded stream continues in static plans."""
    size = _shape(shape)
    a = float(k) + 1.0 if float(k) < 1.0 else float(k)
    d = a - 1.0 / 3.0
    c = 1.0 / (9.0 * d) ** 0.5
    z = torch.randn((_ROUNDS,) + size, generator=generator, device=device)
    u = torch.rand((_ROUNDS,) + size, generator=generator, device=device)
    base = 1.0 + c * z
    v = base.clamp_min(1e-30) ** 3
    accept = (base > 0) & (torch.log(u) < 0.5 * z * z + d - d * v + d * torch.log(v))
    first = accept.to(torch.int8).argmax(0, keepdim=True)
    value = torch.where(accept.any(0), (d * v).gather(0, first)[0],
                        torch.full(size, d, device=device))
    if float(k) < 1.0:
        w = torch.rand(size, generator=generator, device=device)
        value = value * w ** (1.0 / float(k))
    return value


@op(0, category=_C, shape=_gamma_shape)
def rand_gamma(k=0.5, theta=1, shape=(), seed=-1):
    """Gamma samples of shape parameter ``k`` and scale ``theta`` (mean ``k * theta``), of
    ``shape`` (float32).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     g = F.rand_gamma(2.0, 0.5, shape=(20000,))
        >>> bool(abs(g.d.mean() - 1.0) < 0.05)
        True
    """
    if float(k) <= 0 or float(theta) <= 0:
        raise ValueError(f"rand_gamma: k and theta must be > 0, got k={k}, theta={theta}")
    device = get_current_context().device
    return _standard_gamma(k, shape, _generator(seed, device), device) * float(theta)


@op(0, category=_C, shape=_beta_shape)
def rand_beta(alpha=0.5, beta=0.5, shape=(), seed=-1):
    """Beta samples of parameters ``alpha`` and ``beta`` (mean ``alpha / (alpha + beta)``), of
    ``shape`` (float32): ``X / (X + Y)`` of gamma draws ``X ~ G(alpha)``, ``Y ~ G(beta)``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     b = F.rand_beta(2.0, 6.0, shape=(20000,))
        >>> bool(abs(b.d.mean() - 0.25) < 0.02), bool((b.d >= 0).all() and (b.d <= 1).all())
        (True, True)
    """
    if float(alpha) <= 0 or float(beta) <= 0:
        raise ValueError(f"rand_beta: alpha and beta must be > 0, got {alpha}, {beta}")
    device = get_current_context().device
    generator = _generator(seed, device)   # one generator for both draws
    x = _standard_gamma(alpha, shape, generator, device)
    y = _standard_gamma(beta, shape, generator, device)
    return x / (x + y)

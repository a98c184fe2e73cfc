"""Random sources: ``rand``, ``randn``, ``randint`` (NNabla's names, arguments and defaults).

They take no inputs and draw an array of ``shape``.  With ``seed=-1`` (the default) they draw
from torch's generator, which :func:`stadyn.seed` seeds, in both modes.  With a seed of their
own they draw from a generator seeded with it when the op first runs -- NNabla's rule: in
dynamic mode each call draws the same values, a static graph draws the next values of that
stream on every ``forward()`` (the stream starts again when the graph is rebuilt).
"""

from __future__ import annotations

import torch

from ..graph import get_current_context
from ._registry import op

_C = "random"


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, int):
        return (int(shape),)
    return tuple(int(s) for s in shape)


class RandomStream(int):
    """A seed that carries its stream: passed as a random op's ``seed``, every run of that op
    node -- dynamic or static, replayed, re-traced or interpreted -- draws the next values of
    one generator seeded with it, where a plain seed starts a fresh generator per call (NNabla's
    rule).  CNTK's random Functions are built with one (every evaluation draws new values).  It
    is an ``int``, so a model file stores the seed and a loaded graph starts the stream again.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.zeros(3, np.float32))
        >>> s = sd.ops.RandomStream(7)
        >>> with sd.auto_forward():
        ...     a, b = F.rand_like(x, seed=s).d, F.rand_like(x, seed=s).d
        ...     c = F.rand_like(x, seed=7).d
        >>> bool((a == c).all()), bool((a == b).all()), int(s)
        (True, False, 7)
    """

    def __new__(cls, seed: int):
        if int(seed) < 0:
            raise ValueError(f"a random stream's seed must be >= 0, got {seed}")
        self = super().__new__(cls, int(seed))
        self._generators = {}
        return self

    def generator(self, device: torch.device) -> torch.Generator:
        """This stream's generator on ``device`` (made, seeded, on first use)."""
        key = str(torch.device(device))
        if key not in self._generators:
            generator = torch.Generator(device=device)
            generator.manual_seed(int(self))
            self._generators[key] = generator
        return self._generators[key]

    def __reduce__(self):
        return (RandomStream, (int(self),))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _generator(seed: int, device: torch.device) -> torch.Generator | None:
    """None (torch's own generator) for ``seed == -1``, a :class:`RandomStream`'s own
    generator, else a fresh generator seeded ``seed``."""
    if isinstance(seed, RandomStream):
        return seed.generator(device)
    if int(seed) == -1:
        return None
    if int(seed) < 0:
        raise ValueError(f"seed must be -1 (the global generator) or >= 0, got {seed}")
    generator = torch.Generator(device=device)
    generator.manual_seed(int(seed))
    return generator


def _uniform_shape(low=0.0, high=1.0, shape=(), seed=-1):
    """Shape rules: the output without drawing, which would advance the generator."""
    return torch.empty(_shape(shape), device="meta")


def _normal_shape(mu=0.0, sigma=1.0, shape=(), seed=-1):
    return torch.empty(_shape(shape), device="meta")


def _int_shape(low=0, high=1, shape=(), seed=-1):
    return torch.empty(_shape(shape), device="meta", dtype=torch.int32)


@op(0, category=_C, shape=_uniform_shape)
def rand(low=0.0, high=1.0, shape=(), seed=-1):
    """Uniform samples on ``[low, high)`` of ``shape`` (float32).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     u = F.rand(-1.0, 1.0, shape=(1000,))
        >>> bool((u.d >= -1).all() and (u.d < 1).all()), u.shape
        (True, (1000,))
    """
    device = get_current_context().device
    u = torch.rand(_shape(shape), generator=_generator(seed, device), device=device)
    return u * (float(high) - float(low)) + float(low)


@op(0, category=_C, shape=_normal_shape)
def randn(mu=0.0, sigma=1.0, shape=(), seed=-1):
    """Normal samples with mean ``mu`` and standard deviation ``sigma`` of ``shape`` (float32).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     a, b = F.randn(shape=(3,), seed=7), F.randn(shape=(3,), seed=7)
        >>> bool((a.d == b.d).all())
        True
    """
    device = get_current_context().device
    z = torch.randn(_shape(shape), generator=_generator(seed, device), device=device)
    return z * float(sigma) + float(mu)


@op(0, category=_C, shape=_int_shape)
def randint(low=0, high=1, shape=(), seed=-1):
    """Integers drawn uniformly from ``[low, high)`` of ``shape`` (int32, as NNabla's).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     k = F.randint(2, 5, shape=(100,))
        >>> sorted(set(k.d.tolist())), k.d.dtype
        ([2, 3, 4], dtype('int32'))
    """
    if int(high) <= int(low):
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    device = get_current_context().device
    return torch.randint(int(low), int(high), _shape(shape), generator=_generator(seed, device),
                         device=device, dtype=torch.int32)

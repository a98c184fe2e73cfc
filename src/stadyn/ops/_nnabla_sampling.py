"""NNabla's ``random_choice``: samples of a population drawn by relative weights, with or
without replacement (the seeding rule of ``rand``: ``seed=-1`` draws from torch's generator, a
seed of the op's own from a generator seeded with it).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.array([[11.0, 22.0, 33.0], [110.0, 220.0, 330.0]]))
    >>> w = sd.Variable.from_numpy_array(np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]))
    >>> with sd.auto_forward():
    ...     y = F.random_choice(x, w, shape=(2,))
    >>> y.d.tolist()
    [[33.0, 33.0], [110.0, 110.0]]
"""

from __future__ import annotations

import math

import torch

from ._random import _generator
from ._registry import op

_C = "random"


def _choice_shape(x, w, shape=(), replace=True, seed=-1):
    """The shape rule: the output without drawing, which would advance the generator."""
    out, _ = _check_choice(x, w, shape, replace)
    return torch.empty(out, dtype=x.dtype, device="meta").requires_grad_(
        x.requires_grad or w.requires_grad)


def _check_choice(x, w, shape, replace):
    if tuple(x.shape) != tuple(w.shape) or x.ndim == 0:
        raise ValueError(f"random_choice: x {tuple(x.shape)} and w {tuple(w.shape)} must have "
                         "one shape (of at least one axis)")
    sample = tuple(int(s) for s in shape) or (1,)
    count = math.prod(sample)
    if not replace and count > x.shape[-1]:
        raise ValueError(f"random_choice: cannot draw {count} samples from a population of "
                         f"{x.shape[-1]} without replacement")
    return tuple(x.shape[:-1]) + sample, count


@op(2, category=_C, shape=_choice_shape)
def random_choice(x, w, shape=(), replace=True, seed=-1):
    """Samples of the populations along ``x``'s last axis, each drawn with probability
    proportional to its weight in ``w`` (``x``'s shape; weights >= 0, a positive sum):
    ``x.shape[:-1] + shape`` (``shape=()``: one sample).  ``replace=False``: each member at
    most once (as many positive weights as samples are needed).  Backward (NNabla's rule):
    the output gradient is added to both ``x``'s and ``w``'s gradient at the drawn positions.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.arange(5.0))
        >>> w = sd.Variable.from_numpy_array(np.ones(5))
        >>> with sd.auto_forward():
        ...     y = F.random_choice(x, w, shape=(5,), replace=False, seed=3)
        >>> sorted(y.d.tolist())
        [0.0, 1.0, 2.0, 3.0, 4.0]
    """
    out, count = _check_choice(x, w, shape, replace)
    rows = w.detach().reshape(-1, w.shape[-1]).to(torch.float64)
    picks = torch.multinomial(rows, count, replacement=bool(replace),
                              generator=_generator(seed, x.device))
    index = picks.reshape(tuple(x.shape[:-1]) + (count,))
    chosen_w = w.gather(-1, index)
    y = x.gather(-1, index) + (chosen_w - chosen_w.detach()).to(x.dtype)
    return y.reshape(out)

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

from .. import _libstdcxx_random as _std
from ._random import _generator, _nnabla_cpu
from ._kernels import kernel_op
from ._registry import op

_C = "random"


def _choices_impl(w: torch.Tensor, count: int, replace: bool,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    rows = w.detach().reshape(-1, w.shape[-1]).to(torch.float32).numpy()
    if (rows < 0).any() or not (rows.sum(-1) > 0).all():
        raise ValueError("random_choice: the weights must be >= 0 with a positive sum in every "
                         "row")
    if not replace and ((rows > 0).sum(-1) < count).any():
        raise ValueError(f"random_choice: fewer positive weights than the {count} samples to "
                         "draw without replacement")
    with _std.WordSource(generator) as take:
        return torch.from_numpy(_std.weighted_choices(take, rows, count, replace))


def _choices_fake(w, count, replace, generator=None):
    return torch.empty((math.prod(w.shape[:-1]), count), dtype=torch.int64)


_nnabla_choices = kernel_op("stadyn_kernels::nnabla_choices",
                            "(Tensor w, int count, bool replace, Generator? generator=None)"
                            " -> Tensor", _choices_impl, _choices_fake,
                            tags=(torch.Tag.nondeterministic_seeded,))


def _choice_shape(x, w, shape=(), replace=True, seed=-1, rule="torch"):
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
def random_choice(x, w, shape=(), replace=True, seed=-1, rule="torch"):
    """Samples of the populations along ``x``'s last axis, each drawn with probability
    proportional to its weight in ``w`` (``x``'s shape; weights >= 0, a positive sum):
    ``x.shape[:-1] + shape`` (``shape=()``: one sample).  ``replace=False``: each member at
    most once (as many positive weights as samples are needed).  Backward (NNabla's rule):
    the output gradient is added to both ``x``'s and ``w``'s gradient at the drawn positions.
    With ``rule="nnabla"`` (compat.nnabla) a CPU draw is NNabla 1.39's
    (:func:`stadyn._libstdcxx_random.weighted_choices`, the operator
    ``stadyn_kernels::nnabla_choices``).

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
    if _nnabla_cpu(rule, x.device):
        picks = _nnabla_choices(w.detach(), count, bool(replace),
                                _generator(seed, torch.device("cpu")))
    else:
        rows = w.detach().reshape(-1, w.shape[-1]).to(torch.float64)
        picks = torch.multinomial(rows, count, replacement=bool(replace),
                                  generator=_generator(seed, x.device))
    index = picks.reshape(tuple(x.shape[:-1]) + (count,))
    chosen_w = w.gather(-1, index)
    y = x.gather(-1, index) + (chosen_w - chosen_w.detach()).to(x.dtype)
    return y.reshape(out)

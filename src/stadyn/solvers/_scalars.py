"""Scalars of the solver maths (:mod:`stadyn.solvers._functional`): a hyperparameter that can
change from step to step may be a float, a list of floats (one per tensor) or a 0-d tensor; these
helpers apply one to a list of tensors whichever it is, as one multi-tensor op (or, for the
per-tensor reference path, one tensor at a time with the same rounding).

Example:
    >>> import torch
    >>> ts = [torch.ones(2), torch.ones(3)]
    >>> add_scaled_(ts, ts, [1.0, 2.0])
    >>> [t.tolist() for t in ts]
    [[2.0, 2.0], [3.0, 3.0, 3.0]]
"""

from __future__ import annotations

from typing import Sequence, Union

import numpy as np
import torch

Tensors = Sequence[torch.Tensor]
Scalar = Union[float, Sequence[float], torch.Tensor]

__all__ = ["Tensors", "Scalar", "float32", "per_tensor", "scaled", "add_scaled_",
           "add_scaled_one_", "mul_", "neg", "nonzero", "one_minus", "root_denominator",
           "std_max_", "std_clip_"]


def float32(value: float) -> float:
    """``value`` rounded to float32, as a Python float (NNabla's solvers keep their
    hyperparameters as C++ floats); beyond float32's range: inf, as NNabla's."""
    with np.errstate(over="ignore"):
        return float(np.float32(value))


def per_tensor(s: Scalar, n: int) -> list:
    if isinstance(s, torch.Tensor):
        return [s] * n
    if isinstance(s, (int, float)):
        return [float(s)] * n
    return [float(v) for v in s]


def scaled(tensors: Tensors, s: Scalar) -> list[torch.Tensor]:
    """``[t * s for t in tensors]`` as one multi-tensor op."""
    if isinstance(s, (int, float)):
        return torch._foreach_mul(tensors, float(s))
    if isinstance(s, torch.Tensor):
        return torch._foreach_mul(tensors, s)
    return torch._foreach_mul(tensors, [float(v) for v in s])


def add_scaled_(dst: Tensors, src: Tensors, s: Scalar) -> None:
    """``dst += src * s`` in place."""
    if isinstance(s, (int, float)):
        torch._foreach_add_(dst, src, alpha=float(s))
    else:
        torch._foreach_add_(dst, scaled(src, s))


def add_scaled_one_(dst: torch.Tensor, src: torch.Tensor, s) -> None:
    """The per-tensor twin of :func:`add_scaled_` (same rounding on each path)."""
    if isinstance(s, float):
        dst.add_(src, alpha=s)
    else:
        dst.add_(src * s)


def mul_(dst: Tensors, s: Scalar) -> None:
    if isinstance(s, (int, float, torch.Tensor)):
        torch._foreach_mul_(dst, s)
    else:
        torch._foreach_mul_(dst, [float(v) for v in s])


def neg(s: Scalar) -> Scalar:
    if isinstance(s, (int, float, torch.Tensor)):
        return -s
    return [-float(v) for v in s]


def nonzero(s: Scalar) -> bool:
    """Whether ``s`` may be non-zero (a tensor always may)."""
    if isinstance(s, torch.Tensor):
        return True
    if isinstance(s, (int, float)):
        return s != 0
    return any(s)


def one_minus(s: Scalar) -> Scalar:
    """``1 - s`` in ``s``'s form."""
    if isinstance(s, (int, float, torch.Tensor)):
        return 1.0 - s
    return [1.0 - float(v) for v in s]


def root_denominator(v: Tensors, v_max: Tensors | None, eps: float) -> list[torch.Tensor]:
    """``sqrt(v) + eps`` per tensor; with ``v_max`` (AMSGrad's variants) ``v_max = max(v_max,
    v)`` is updated in place and used instead of ``v``."""
    second = v
    if v_max is not None:
        torch._foreach_maximum_(v_max, v)
        second = v_max
    denom = torch._foreach_sqrt(second)
    torch._foreach_add_(denom, eps)
    return denom


def std_max_(dst: Tensors, src: Tensors) -> None:
    """``dst = std::max(dst, src)`` per tensor, in place, by C++'s rule ``(dst < src) ? src :
    dst``: a NaN in ``src`` leaves ``dst`` as it is and a NaN in ``dst`` stays (``torch.maximum``
    takes either NaN).  NNabla's running maxima (AMSGRAD's ``v_hat``, AdaBelief's ``s_max``,
    Adamax's ``u``).

    Example:
        >>> d = [torch.tensor([1.0, 1.0, float("nan")])]
        >>> std_max_(d, [torch.tensor([float("nan"), 2.0, 3.0])])
        >>> d[0].tolist()
        [1.0, 2.0, nan]
    """
    for d, s in zip(dst, src):
        d.copy_(torch.where(d < s, s, d))


def std_clip_(x: torch.Tensor, lower, upper) -> torch.Tensor:
    """``x = std::min(upper, std::max(x, lower))`` in place (NNabla's AdaBound/AMSBound step
    bounds): a NaN in ``x`` becomes ``upper`` (``torch.clamp`` keeps the NaN); ``lower`` and
    ``upper`` are floats or 0-d tensors.

    Example:
        >>> std_clip_(torch.tensor([float("nan"), -1.0, 0.5, 9.0]), 0.0, 2.0).tolist()
        [2.0, 0.0, 0.5, 2.0]
    """
    low = torch.as_tensor(lower, dtype=x.dtype, device=x.device)
    high = torch.as_tensor(upper, dtype=x.dtype, device=x.device)
    x.copy_(torch.where(x < low, low, x))
    return x.copy_(torch.where(x < high, x, high))

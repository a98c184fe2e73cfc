"""NNabla's incremental network quantisation (INQ): ``inq_affine`` and ``inq_convolution``.

Each node keeps state from run to run, as NNabla's function object does (``@op(...,
state=INQState)``): how many times it has run, and the weights and indicators its last run left.
On every run, in this order (NNabla 1.39's ``INQAffine::forward_impl``):

1. weights that were fixed on the last run get back the value it left (a solver's update of a
   fixed weight is undone);
2. when the run count is in ``inq_iterations``, indicators change: at its last element every
   weight becomes fixed; at another, half of the learnable weights (``indicator == 0``) do --
   those of largest ``|w|`` (``"largest_abs"``: walking the weights by decreasing ``|w|``, ties
   in index order, until ``learnable // 2`` are fixed, at least the first if it is learnable) or
   each with probability 1/2 (``"random"``);
3. every fixed weight (``indicator == 1``) is rounded to a power of two in place:
   ``n1 = round(log2 max|W|)`` (rounding up from ``log2 1.5`` on), ``n2 = n1 + 1 -
   2^(num_bits - 2)``; ``|w| < 2^(n2 - 1)`` becomes 0, otherwise ``sign(w) 2^e`` with ``e``
   ``log2 |w|`` rounded the same way and clipped to ``[n2, n1]``;
4. the affine map or convolution runs with the weights as they now are.

``weight`` and ``indicator_fixedweights`` are written in place (they are parameters).  Backward
is the affine map's or convolution's, with the quantised weights: every weight gets its
gradient, fixed or not (step 1 of the next run undoes the update of a fixed one).  A static
graph holding one runs its plan eagerly (``traceable=False``: it writes its inputs).

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array(np.ones((1, 2), np.float32))
    >>> w = sd.Variable.from_numpy_array(np.array([[0.3125], [-0.875]], np.float32))
    >>> i = sd.Variable.from_numpy_array(np.zeros((2, 1), np.float32))
    >>> y = F.inq_affine(x, w, i, inq_iterations=(1,))
    >>> y.forward(); w.d.ravel().tolist(), i.d.ravel().tolist()
    ([0.3125, -0.875], [0.0, 0.0])
    >>> y.forward(); w.d.ravel().tolist(), i.d.ravel().tolist()
    ([0.25, -1.0], [1.0, 1.0])
"""

from __future__ import annotations

import math

import torch

from ._nn import affine, convolution
from ._random import _generator
from ._registry import op
from ._sequence_axis import from_base_axis

_C = "quantization"
_ALGORITHMS = ("largest_abs", "random")
# NNabla compares in double for n1, in the weights' type for each weight (a Python float
# compared with a tensor is converted to the tensor's type)
_LOG2_1_5 = math.log2(1.5)


class INQState:
    """What one INQ node keeps from run to run: its run count, and the weights and the mask of
    fixed weights its last run left (None before the first run).

    Example:
        >>> from stadyn.ops import INQState
        >>> s = INQState()
        >>> s.count, s.weights is None
        (0, True)
    """

    __slots__ = ("count", "weights", "fixed")

    def __init__(self) -> None:
        self.count = 0
        self.weights: torch.Tensor | None = None
        self.fixed: torch.Tensor | None = None

    def __repr__(self) -> str:
        return f"INQState(count={self.count})"


def _check(name, weight, indicator, selection_algorithm):
    if tuple(indicator.shape) != tuple(weight.shape):
        raise ValueError(f"{name}: indicator_fixedweights {tuple(indicator.shape)} must have "
                         f"the weight's shape {tuple(weight.shape)}")
    if selection_algorithm not in _ALGORITHMS:
        raise ValueError(f"{name}: selection_algorithm {selection_algorithm!r} must be "
                         f"'largest_abs' or 'random'")


def _round_exponent(log2_value: torch.Tensor, threshold: float) -> torch.Tensor:
    floor = torch.floor(log2_value)
    return floor + ((log2_value - floor) >= threshold).to(floor.dtype)


def _fix_largest(w: torch.Tensor, ind: torch.Tensor) -> None:
    flat_w, flat_i = w.reshape(-1), ind.view(-1)
    learnable = flat_i == 0
    half = int(learnable.sum()) // 2
    order = torch.sort(flat_w.abs(), descending=True, stable=True).indices
    in_order = learnable[order]
    stop = int(torch.nonzero(in_order.cumsum(0) >= half)[0])
    chosen = order[:stop + 1][in_order[:stop + 1]]
    flat_i[chosen] = 1


def _update_weights(name, weight, ind, num_bits, inq_iterations, selection_algorithm, seed,
                    state: INQState) -> None:
    """Steps 1-3 of the module docstring, in place on ``weight`` and ``ind``."""
    _check(name, weight, ind, selection_algorithm)
    if int(num_bits) < 2:
        raise ValueError(f"{name}: num_bits must be at least 2, got {num_bits}")
    with torch.no_grad():
        w = weight                      # written only where a weight is fixed
        if state.fixed is not None and bool(state.fixed.any()):
            w.copy_(torch.where(state.fixed, state.weights, w))
        schedule = [int(k) for k in inq_iterations]
        if state.count in schedule:
            if state.count == schedule[-1]:
                ind.fill_(1)
            elif selection_algorithm == "largest_abs":
                _fix_largest(w, ind)
            else:
                draws = torch.rand(ind.shape, generator=_generator(seed, ind.device),
                                   device=ind.device) < 0.5
                ind.copy_(torch.where((ind == 0) & draws, torch.ones_like(ind), ind))
        fixed = ind == 1
        state.count += 1
        if not bool(fixed.any()):
            state.weights, state.fixed = None, None
            return
        top = w.abs().max()
        log_max = float(torch.log2(torch.where(top == 0, torch.ones_like(top), top)))
        n1 = math.floor(log_max) + int(log_max - math.floor(log_max) >= _LOG2_1_5)
        n2 = n1 + 1 - 2 ** (int(num_bits) - 2)
        magnitude = w.abs()
        e = _round_exponent(torch.log2(magnitude), _LOG2_1_5).clamp(n2, n1)
        power = torch.where(w < 0, -torch.exp2(e), torch.exp2(e))
        q = torch.where(magnitude < 2.0 ** (n2 - 1), torch.zeros_like(w), power)
        w.copy_(torch.where(fixed, q, w))
        state.weights = w.clone()
        state.fixed = fixed


def _affine_shape(x, weight, indicator_fixedweights, bias=None, base_axis=1, num_bits=4,
                  inq_iterations=(), selection_algorithm="largest_abs", seed=-1):
    _check("inq_affine", weight, indicator_fixedweights, selection_algorithm)
    return affine.spec.impl(x, weight, bias, base_axis)


@op(4, category=_C, shape=_affine_shape, traceable=False, sequence=from_base_axis(),
    state=INQState)
def inq_affine(x, weight, indicator_fixedweights, bias=None, base_axis=1, num_bits=4,
               inq_iterations=(), selection_algorithm="largest_abs", seed=-1, *, state=None):
    """``affine`` whose weights are fixed and rounded to powers of two step by step over the
    node's runs (NNabla's ``inq_affine``; see the module for the schedule).
    ``indicator_fixedweights`` has the weight's shape (0: learnable, 1: fixed); ``seed`` seeds
    ``"random"``'s draws (-1: Stadyn's generator; a seed of its own draws the same pattern at
    every step, as NNabla 1.39 does).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones((1, 2), np.float32))
        >>> w = sd.Variable.from_numpy_array(np.array([[0.3], [-0.7]], np.float32))
        >>> i = sd.Variable.from_numpy_array(np.zeros((2, 1), np.float32))
        >>> with sd.auto_forward():
        ...     y = F.inq_affine(x, w, i, inq_iterations=(0,))
        >>> y.d.tolist(), w.d.ravel().tolist()
        ([[-0.25]], [0.25, -0.5])
    """
    _update_weights("inq_affine", weight, indicator_fixedweights, num_bits, inq_iterations,
                    selection_algorithm, seed, state if state is not None else INQState())
    return affine.spec.impl(x, weight, bias, base_axis)


def _convolution_shape(x, weight, indicator_fixedweights, bias=None, base_axis=1, pad=None,
                       stride=None, dilation=None, group=1, num_bits=4, inq_iterations=(),
                       selection_algorithm="largest_abs", seed=-1):
    _check("inq_convolution", weight, indicator_fixedweights, selection_algorithm)
    return convolution.spec.impl(x, weight, bias, base_axis, pad, stride, dilation, group)


@op(4, category=_C, shape=_convolution_shape, traceable=False, sequence=from_base_axis(),
    state=INQState)
def inq_convolution(x, weight, indicator_fixedweights, bias=None, base_axis=1, pad=None,
                    stride=None, dilation=None, group=1, num_bits=4, inq_iterations=(),
                    selection_algorithm="largest_abs", seed=-1, *, state=None):
    """``convolution`` whose weights are fixed and rounded to powers of two step by step over
    the node's runs (NNabla's ``inq_convolution``; see the module for the schedule, and
    ``inq_affine`` for the arguments they share).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.ones((1, 1, 3, 3), np.float32))
        >>> w = sd.Variable.from_numpy_array(np.full((2, 1, 2, 2), 0.3, np.float32))
        >>> i = sd.Variable.from_numpy_array(np.zeros((2, 1, 2, 2), np.float32))
        >>> with sd.auto_forward():
        ...     y = F.inq_convolution(x, w, i, inq_iterations=(0,))
        >>> y.shape, float(y.d[0, 0, 0, 0]), float(w.d[0, 0, 0, 0])
        ((1, 2, 2, 2), 1.0, 0.25)
    """
    _update_weights("inq_convolution", weight, indicator_fixedweights, num_bits, inq_iterations,
                    selection_algorithm, seed, state if state is not None else INQState())
    return convolution.spec.impl(x, weight, bias, base_axis, pad, stride, dilation, group)

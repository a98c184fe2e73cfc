"""NNabla's pruned layers ``pruned_affine`` and ``pruned_convolution``: they compute with the
float weights' largest-magnitude elements only (the rest set to 0), which they also write into
``W_q`` / ``b_q`` on every forward, as the quantised layers do (``_pf_quantized.py``); the
gradient passes to all of ``W`` and ``b`` (straight through).  ``prune_w=False`` /
``prune_b=False`` use the float parameter and create no pruned one.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.parametric_functions as PF
    >>> w = np.array([[0.1], [-2.0], [0.3], [1.0]])
    >>> with sd.parameter_registry(sd.ParameterRegistry()), sd.auto_forward():
    ...     y = PF.pruned_affine(sd.Variable((1, 4)), 1, w_init=w, rate_w=0.5, with_bias=False)
    ...     sd.get_parameters(grad_only=False)["pruned_affine/W_q"].d.ravel().tolist()
    [0.0, -2.0, 0.30000001192092896, 1.0]
"""

from __future__ import annotations

import math
from typing import Sequence

from .. import functions as F
from ..graph import Variable
from ._pf_quantized import _affine, _convolution, _no_channel_last

__all__ = ["pruned_affine", "pruned_convolution"]


def prune(x: Variable, rate: float) -> Variable:
    """``x`` with the elements whose magnitude is below the threshold set to 0, the threshold
    being the ``int((size - 1) * rate)``-th smallest magnitude (NNabla's ``F.prune``; all are
    pruned at ``rate >= 1``).  The gradient passes to every element.

    Example:
        >>> import stadyn as sd
        >>> with sd.auto_forward():
        ...     y = prune(sd.Variable.from_numpy_array([1.0, -1.0, 2.0, 2.0, 0.5, 0.5]), 0.4)
        >>> y.d.tolist()
        [1.0, -1.0, 2.0, 2.0, 0.0, 0.0]
    """
    if rate >= 1:
        kept = F.mul_scalar(x, 0.0)
    else:
        size = math.prod(x.shape)
        k = int((size - 1) * rate) if rate > 0 else 0
        magnitude = F.abs(x)
        threshold = F.slice(F.sort(F.reshape(magnitude, (size,))), (k,), (k + 1,))
        threshold = F.broadcast(F.reshape(threshold, (1,) * len(x.shape)), tuple(x.shape))
        kept = F.mul2(x, F.greater_equal(magnitude, threshold))
    return F.add2(x, F.stop_gradient(F.sub2(kept, x)))


def _rule(rate):
    return (lambda value, quantize: prune(value, rate)), {}


def pruned_affine(inp: Variable, n_outmaps: int | Sequence[int], base_axis: int = 1,
                  w_init=None, b_init=None, fix_parameters: bool = False, rng=None,
                  with_bias: bool = True, prune_w: bool = True, rate_w: float = 0.9,
                  prune_b: bool = True, rate_b: float = 0.9, name: str | None = None
                  ) -> Variable:
    """Affine layer with pruned weights (see the module) in scope ``pruned_affine``: ``W``,
    ``b`` and their pruned ``W_q``, ``b_q``; ``rate_w``/``rate_b`` are the fractions pruned.
    Example: ``PF.pruned_affine(x, 10, rate_w=0.5)``."""
    return _affine("pruned_affine", "pruned_affine", inp, n_outmaps, base_axis, w_init, b_init,
                   fix_parameters, rng, with_bias, prune_w, _rule(rate_w), prune_b,
                   _rule(rate_b), name)


def pruned_convolution(inp: Variable, outmaps: int, kernel: Sequence[int], pad=None,
                       stride=None, dilation=None, group: int = 1, channel_last: bool = False,
                       w_init=None, b_init=None, base_axis: int = 1,
                       fix_parameters: bool = False, rng=None, with_bias: bool = True,
                       prune_w: bool = True, rate_w: float = 0.9, prune_b: bool = True,
                       rate_b: float = 0.9, name: str | None = None) -> Variable:
    """Convolution layer with pruned weights (see the module) in scope ``pruned_conv``.
    Example: ``PF.pruned_convolution(x, 16, (3, 3), pad=(1, 1), rate_w=0.5)``."""
    _no_channel_last("pruned_convolution", channel_last)
    return _convolution("pruned_convolution", "pruned_conv", inp, outmaps, kernel, pad, stride,
                        dilation, group, w_init, b_init, base_axis, fix_parameters, rng,
                        with_bias, prune_w, _rule(rate_w), prune_b, _rule(rate_b), name)

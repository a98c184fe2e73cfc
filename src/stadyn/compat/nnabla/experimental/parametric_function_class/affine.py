"""``PFC.Affine`` (``PFC.Linear``): the fully connected layer as an object holding ``W``
(``(n_inmaps, prod(n_outmaps))``) and ``b``.

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn
    >>> from stadyn.compat.nnabla.experimental.parametric_function_class.affine import Affine
    >>> fc = Affine(3, 2)
    >>> fc.W.shape, fc.b.shape
    ((3, 2), (2,))
    >>> fc(nn.Variable((4, 3))).shape
    (4, 2)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import functions as F
from ._common import weight_and_bias
from .module import Module

__all__ = ["Affine", "Linear"]


class Affine(Module):
    """``y = x W + b`` over the axes from ``base_axis`` on, as ``PF.affine``; the Glorot
    uniform ``W`` and zero ``b`` unless ``w_init``/``b_init``; ``fix_parameters`` makes them
    ``need_grad=False``; ``with_bias=False`` leaves ``b`` None."""

    def __init__(self, n_inmaps: int, n_outmaps: Any, base_axis: int = 1, w_init: Any = None,
                 b_init: Any = None, fix_parameters: bool = False, rng: Any = None,
                 with_bias: bool = True):
        outs = list(n_outmaps) if hasattr(n_outmaps, "__iter__") else [n_outmaps]
        n_out = int(np.prod(outs))
        weight_and_bias(self, (n_inmaps, n_out), (n_inmaps, n_out), w_init, b_init, n_out,
                        fix_parameters, rng, with_bias)
        self.base_axis = base_axis

    def __call__(self, inp: Any) -> Any:
        return F.affine(inp, self.W, self.b, self.base_axis)


Linear = Affine

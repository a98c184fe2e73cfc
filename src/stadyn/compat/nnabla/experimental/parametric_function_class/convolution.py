"""``PFC.Convolution`` (``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvNd``: the same class): a
convolution holding ``W`` (``(outmaps, inmaps // group) + kernel``) and ``b``.

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> from stadyn.compat.nnabla.experimental.parametric_function_class.convolution import (
    ...     Conv2d)
    >>> conv = Conv2d(1, 4, (3, 3), pad=(1, 1), with_bias=False)
    >>> conv.W.shape, conv.b
    ((4, 1, 3, 3), None)
    >>> conv(nn.Variable((2, 1, 5, 5))).shape
    (2, 4, 5, 5)
"""

from __future__ import annotations

from typing import Any

from ... import functions as F
from ._common import weight_and_bias
from .module import Module

__all__ = ["Convolution", "Conv1d", "Conv2d", "Conv3d", "ConvNd"]


class _Filter(Module):
    """What ``Convolution`` and ``Deconvolution`` share: ``W`` (``_weight_shape``) and ``b``
    (Glorot uniform over ``(inmaps, outmaps, kernel)`` and zeros unless ``w_init``/
    ``b_init``), the options, and a call of ``_function`` with them."""

    _function: Any = None

    def __init__(self, inmaps: int, outmaps: int, kernel: Any, pad: Any = None,
                 stride: Any = None, dilation: Any = None, group: int = 1, w_init: Any = None,
                 b_init: Any = None, base_axis: int = 1, fix_parameters: bool = False,
                 rng: Any = None, with_bias: bool = True):
        kernel = tuple(kernel)
        weight_and_bias(self, self._weight_shape(inmaps, outmaps, group) + kernel,
                        (inmaps, outmaps, kernel), w_init, b_init, outmaps, fix_parameters,
                        rng, with_bias)
        self.base_axis = base_axis
        self.pad = pad
        self.stride = stride
        self.dilation = dilation
        self.group = group

    @staticmethod
    def _weight_shape(inmaps: int, outmaps: int, group: int) -> tuple:
        raise NotImplementedError

    def __call__(self, inp: Any) -> Any:
        return type(self)._function(inp, self.W, self.b, self.base_axis, self.pad, self.stride,
                                    self.dilation, self.group)


class Convolution(_Filter):
    """``F.convolution`` with this object's ``W`` and ``b``; ``pad``, ``stride``,
    ``dilation``, ``group`` and ``base_axis`` as ``PF.convolution`` takes them (positionally
    after ``kernel`` too: ``Conv2d(8, 8, (3, 3), (1, 1))`` pads by one)."""

    _function = staticmethod(F.convolution)

    @staticmethod
    def _weight_shape(inmaps: int, outmaps: int, group: int) -> tuple:
        return (outmaps, inmaps // group)


Conv1d = Conv2d = Conv3d = ConvNd = Convolution

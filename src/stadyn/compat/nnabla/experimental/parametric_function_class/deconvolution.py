"""``PFC.Deconvolution`` (``Deconv1d``, ``Deconv2d``, ``Deconv3d``, ``DeconvNd``: the same
class): a transposed convolution holding ``W`` and ``b``.

``W`` is ``(inmaps, outmaps // group) + kernel``, the layout ``F.deconvolution`` reads (and
``PF.deconvolution`` makes).  NNabla 1.39's class makes ``(outmaps, inmaps // group) + kernel``,
which its own ``F.deconvolution`` refuses unless ``inmaps == outmaps`` (and ``group == 1``);
where both work the two are the same.

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> from stadyn.compat.nnabla.experimental.parametric_function_class.deconvolution import (
    ...     Deconv2d)
    >>> up = Deconv2d(4, 2, (2, 2), stride=(2, 2))
    >>> up.W.shape, up(nn.Variable((1, 4, 3, 3))).shape
    ((4, 2, 2, 2), (1, 2, 6, 6))
"""

from __future__ import annotations

from typing import Any

from ... import functions as F
from ._common import weight_and_bias
from .module import Module

__all__ = ["Deconvolution", "Deconv1d", "Deconv2d", "Deconv3d", "DeconvNd"]


class Deconvolution(Module):
    """``F.deconvolution`` with this object's ``W`` and ``b`` (Glorot uniform over
    ``(inmaps, outmaps, kernel)`` and zeros unless ``w_init``/``b_init``)."""

    def __init__(self, inmaps: int, outmaps: int, kernel: Any, pad: Any = None,
                 stride: Any = None, dilation: Any = None, group: int = 1, w_init: Any = None,
                 b_init: Any = None, base_axis: int = 1, fix_parameters: bool = False,
                 rng: Any = None, with_bias: bool = True):
        kernel = tuple(kernel)
        weight_and_bias(self, (inmaps, outmaps // group) + kernel, (inmaps, outmaps, kernel),
                        w_init, b_init, outmaps, fix_parameters, rng, with_bias)
        self.base_axis = base_axis
        self.pad = pad
        self.stride = stride
        self.dilation = dilation
        self.group = group

    def __call__(self, inp: Any) -> Any:
        return F.deconvolution(inp, self.W, self.b, self.base_axis, self.pad, self.stride,
                               self.dilation, self.group)


Deconv1d = Deconv2d = Deconv3d = DeconvNd = Deconvolution

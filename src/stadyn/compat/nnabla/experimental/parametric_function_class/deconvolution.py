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


from ... import functions as F
from .convolution import _Filter

__all__ = ["Deconvolution", "Deconv1d", "Deconv2d", "Deconv3d", "DeconvNd"]


class Deconvolution(_Filter):
    """``F.deconvolution`` with this object's ``W`` and ``b`` (Glorot uniform over
    ``(inmaps, outmaps, kernel)`` and zeros unless ``w_init``/``b_init``)."""

    _function = staticmethod(F.deconvolution)

    @staticmethod
    def _weight_shape(inmaps: int, outmaps: int, group: int) -> tuple:
        return (inmaps, outmaps // group)


Deconv1d = Deconv2d = Deconv3d = DeconvNd = Deconvolution

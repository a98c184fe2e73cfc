"""``nnabla.experimental.parametric_function_classes`` (``PFC``): NNabla's layers as objects
holding their parameters -- ``PFC.Module`` (the mix-in: ``get_parameters``,
``save_parameters``, ``load_parameters``), ``Affine``/``Linear``, ``Convolution`` (``Conv1d``..
``ConvNd``), ``Deconvolution`` (``Deconv1d``..``DeconvNd``), ``Embed``,
``BatchNormalization`` (``BatchNorm1d``..``3d``); nnabla-examples' parametric_function_classes/
mnist-collection builds its network from them.

NNabla 1.39's module of this name is empty (its re-exports were dropped in a clean-up of
imports, so ``PFC.Conv2d`` is an ``AttributeError`` there); the classes are in its
``parametric_function_class.<kind>`` modules, which Stadyn has too.  This module offers them as
the example programs use them.

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> import stadyn.compat.nnabla.experimental.parametric_function_classes as PFC
    >>> class Net(PFC.Module):
    ...     def __init__(self):
    ...         self.conv = PFC.Conv2d(1, 4, (3, 3), pad=(1, 1), with_bias=False)
    ...         self.bn = PFC.BatchNorm2d(4)
    ...         self.fc = PFC.Affine(4 * 5 * 5, 10)
    ...     def __call__(self, x, test=False):
    ...         return self.fc(self.bn(self.conv(x), test))
    >>> Net()(nn.Variable((2, 1, 5, 5))).shape
    (2, 10)
"""

from .parametric_function_class.affine import Affine, Linear
from .parametric_function_class.batch_normalization import (BatchNorm1d, BatchNorm2d,
                                                            BatchNorm3d, BatchNormalization)
from .parametric_function_class.convolution import Conv1d, Conv2d, Conv3d, ConvNd, Convolution
from .parametric_function_class.deconvolution import (Deconv1d, Deconv2d, Deconv3d, DeconvNd,
                                                      Deconvolution)
from .parametric_function_class.embed import Embed
from .parametric_function_class.module import Module

__all__ = ["Module", "Affine", "Linear", "Convolution", "Conv1d", "Conv2d", "Conv3d", "ConvNd",
           "Deconvolution", "Deconv1d", "Deconv2d", "Deconv3d", "DeconvNd", "Embed",
           "BatchNormalization", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]

"""CNTK-style convolution layers: :class:`Convolution` (with ``Convolution1D``/``2D``/``3D``) and
:class:`ConvolutionTranspose` (with ``ConvolutionTranspose1D``/``2D``/``3D``), and CNTK 2.7's
refusal of a convolution over an input with no channel axis.

Example:
    >>> import stadyn as sd, stadyn.layers as L
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     L.Convolution2D((3, 3), 4)(sd.Variable((1, 2, 5, 5))).shape
    (1, 4, 3, 3)
"""

from __future__ import annotations

import numpy as np

from .. import cntk_semantics as S
from .. import functions as F
from .._errors import ShapeError, StadynError
from ..graph import format_location, user_location
from ._init import glorot_uniform
from ._layers import Layer, _tuple, identity
from ._options import default_override_or, resolve

__all__ = ["Convolution", "Convolution1D", "Convolution2D", "Convolution3D",
           "ConvolutionTranspose", "ConvolutionTranspose1D", "ConvolutionTranspose2D",
           "ConvolutionTranspose3D"]


class Convolution(Layer):
    """N-d convolution with ``num_filters`` filters of ``filter_shape``; ``pad=True`` keeps the
    size (``ceil(size/stride)``) by CNTK's centred auto-padding.

    Example:
        >>> import stadyn as sd, stadyn.layers as L
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     L.Convolution((3, 3), 64, pad=True)(sd.Variable((2, 3, 32, 32))).shape
        (2, 64, 32, 32)
    """

    def __init__(self, filter_shape, num_filters=None, sequential=False,
                 activation=default_override_or(identity),
                 init=default_override_or(glorot_uniform()), pad=default_override_or(False),
                 strides=1, sharing=True, bias=default_override_or(True),
                 init_bias=default_override_or(0.0), reduction_rank=1, transpose_weight=False,
                 dilation=1, groups=1, max_temp_mem_size_in_samples=0, op_name="Convolution",
                 name: str = ""):
        super().__init__(name)
        if sequential:
            raise StadynError("Convolution(sequential=True) is not supported")
        self.filter_shape = _tuple(filter_shape, 1)
        n = len(self.filter_shape)
        self.num_filters = 1 if num_filters is None else int(num_filters)
        self.squeeze_filters = num_filters is None
        self.activation = resolve("Convolution", "activation", activation) or identity
        self.init = resolve("Convolution", "init", init)
        self.pad = resolve("Convolution", "pad", pad)
        self.strides = _tuple(strides, n)
        self.bias = resolve("Convolution", "bias", bias)
        self.init_bias = resolve("Convolution", "init_bias", init_bias)
        self.dilation = _tuple(dilation, n)
        self.groups = int(groups)
        self.reduction_rank = reduction_rank
        self._take_seeds(self.init, ["W"])

    def apply(self, x):
        n = len(self.filter_shape)
        if self.reduction_rank == 0:
            x = F.reshape(x, (-1, 1) + tuple(x.shape[1:]))
        else:
            _refuse_input_without_channels(x.ndim - 1, n, "Convolution")
        channels = x.shape[1]
        kernel = int(np.prod(self.filter_shape))
        w = self.parameter("W", (self.num_filters, channels // self.groups) + self.filter_shape,
                           self.init, channels // self.groups * kernel, self.num_filters * kernel)
        b = self.parameter("b", (self.num_filters,) + (1,) * n, self.init_bias) \
            if self.bias else None
        pad = self.pad if isinstance(self.pad, bool) else _tuple(self.pad, n)
        y = S.convolution(x, w, None if b is None else F.reshape(b, (self.num_filters,)),
                          self.strides, pad, self.dilation, self.groups)
        if self.squeeze_filters:
            y = F.reshape(y, (-1,) + tuple(y.shape[2:]))
        return self.activation(y)


def _refuse_input_without_channels(sample_rank: int, filter_rank: int, op: str) -> None:
    """CNTK 2.7's refusal of a convolution layer (``reduction_rank=1``) over an input that has
    no axis left for the channels (its rank at most the filter's): a ``ShapeError`` (a
    ``ValueError``, as CNTK's) whose first line is CNTK's -- "Convolution map tensor must have
    rank 1 or the same as the input tensor." for a rank-1 input or one of lower rank than the
    filter, "Convolution padding tensor ..." for one of the filter's rank (as CNTK 2.7's
    Python layers give them; the checks are ``ConvolveGeometry::ComputeOutputShape``'s,
    Source/Math/ConvolveGeometry.h:428-437) -- and whose second names the op and the user's
    line.  ``reduction_rank=0`` is the way to convolve such an input.

    Example:
        >>> try:
        ...     _refuse_input_without_channels(1, 1, "Convolution")
        ... except ValueError as e:
        ...     print(str(e).splitlines()[0][:45])
        Convolution map tensor must have rank 1 or th
    """
    if sample_rank > filter_rank:
        return
    tensor = "map" if sample_rank == 1 or sample_rank < filter_rank else "padding"
    where = format_location(user_location())
    raise ShapeError(
        f"Convolution {tensor} tensor must have rank 1 or the same as the input tensor.\n"
        f"({op} of a {filter_rank}-d filter over an input of rank {sample_rank}, which has no "
        "channel axis: give reduction_rank=0" + (f", made at {where})" if where else ")"))


def Convolution1D(filter_shape, num_filters=None, **kwargs) -> Convolution:
    return Convolution(_tuple(filter_shape, 1), num_filters, **kwargs)


def Convolution2D(filter_shape, num_filters=None, **kwargs) -> Convolution:
    return Convolution(_tuple(filter_shape, 2), num_filters, **kwargs)


def Convolution3D(filter_shape, num_filters=None, **kwargs) -> Convolution:
    return Convolution(_tuple(filter_shape, 3), num_filters, **kwargs)


class ConvolutionTranspose(Layer):
    """Transposed convolution (deconvolution) with ``num_filters`` output channels;
    ``reduction_rank=0``: an input without a channel axis (``W`` ``(1, num_filters, ...)``).

    Example:
        >>> import stadyn as sd, stadyn.layers as L
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     L.ConvolutionTranspose((2, 2), 3, reduction_rank=0)(sd.Variable((2, 4, 4))).shape
        (2, 3, 5, 5)
    """

    def __init__(self, filter_shape, num_filters, activation=default_override_or(identity),
                 init=default_override_or(glorot_uniform()), pad=default_override_or(False),
                 strides=1, bias=default_override_or(True), init_bias=default_override_or(0.0),
                 output_shape=None, dilation=1, reduction_rank=1, name: str = ""):
        super().__init__(name)
        if reduction_rank not in (0, 1):
            raise NotImplementedError("ConvolutionTranspose: reduction_rank must be 0 or 1")
        self.reduction_rank = int(reduction_rank)
        self.filter_shape = _tuple(filter_shape, 1)
        n = len(self.filter_shape)
        self.num_filters = int(num_filters)
        self.activation = resolve("ConvolutionTranspose", "activation", activation) or identity
        self.init = resolve("ConvolutionTranspose", "init", init)
        self.pad = resolve("ConvolutionTranspose", "pad", pad)
        self.strides = _tuple(strides, n)
        self.bias = resolve("ConvolutionTranspose", "bias", bias)
        self.init_bias = resolve("ConvolutionTranspose", "init_bias", init_bias)
        self.dilation = _tuple(dilation, n)
        self.output_shape = output_shape
        self._take_seeds(self.init, ["W"])

    def apply(self, x):
        n = len(self.filter_shape)
        if getattr(self, "reduction_rank", 1) == 0:      # (a layer pickled before it had one)
            x = F.reshape(x, (-1, 1) + tuple(x.shape[1:]))
        channels = x.shape[1]
        kernel = int(np.prod(self.filter_shape))
        w = self.parameter("W", (channels, self.num_filters) + self.filter_shape, self.init,
                           channels * kernel, self.num_filters * kernel)
        b = self.parameter("b", (self.num_filters,) + (1,) * n, self.init_bias) \
            if self.bias else None
        return self.activation(S.convolution_transpose(
            x, w, None if b is None else F.reshape(b, (self.num_filters,)), self.strides,
            self.pad, self.dilation, self.output_shape))


def ConvolutionTranspose1D(filter_shape, num_filters, **kwargs) -> ConvolutionTranspose:
    """A 1-d :class:`ConvolutionTranspose`."""
    return ConvolutionTranspose(_tuple(filter_shape, 1), num_filters, **kwargs)


def ConvolutionTranspose2D(filter_shape, num_filters, **kwargs) -> ConvolutionTranspose:
    """A 2-d :class:`ConvolutionTranspose`."""
    return ConvolutionTranspose(_tuple(filter_shape, 2), num_filters, **kwargs)


def ConvolutionTranspose3D(filter_shape, num_filters, **kwargs) -> ConvolutionTranspose:
    """A 3-d :class:`ConvolutionTranspose`."""
    return ConvolutionTranspose(_tuple(filter_shape, 3), num_filters, **kwargs)

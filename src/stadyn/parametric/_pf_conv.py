"""NNabla's further convolution layers: ``depthwise_deconvolution`` (over the catalog's
``F.depthwise_deconvolution``)."""

from __future__ import annotations

from typing import Sequence

from .. import functions as F
from ..graph import Variable
from . import initializers as I
from ._pf_common import checked_base_axis, count, counts, parameter, pf_scope


def depthwise_deconvolution(inp: Variable, kernel: Sequence[int], pad=None, stride=None,
                            dilation=None, divisor: int = 1, w_init=None, b_init=None,
                            base_axis: int = 1, fix_parameters: bool = False, rng=None,
                            with_bias: bool = True, name: str | None = None) -> Variable:
    """Depthwise deconvolution with ``W`` ``(C, *kernel)`` and ``b`` ``(C // divisor,)`` in
    scope ``depthwise_deconv``; ``W`` is Glorot uniform over ``C`` inputs and outputs, ``b``
    zeros (NNabla's ``PF.depthwise_deconvolution``).

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = PF.depthwise_deconvolution(sd.Variable((2, 4, 8, 8)), (3, 3), divisor=2)
        ...     y.shape, sd.get_parameters()["depthwise_deconv/b"].shape
        ((2, 2, 10, 10), (2,))
    """
    kernel = counts(kernel, "depthwise_deconvolution", "kernel", True)
    divisor = count(divisor, "depthwise_deconvolution", "divisor")
    channels = inp.shape[checked_base_axis(base_axis, inp, "depthwise_deconvolution")]
    with pf_scope(name, "depthwise_deconv"):
        if w_init is None:
            lim = I.calc_uniform_lim_glorot(channels, channels, kernel)
            w_init = I.UniformInitializer((-lim, lim), rng=rng)
        w = parameter("W", (channels,) + kernel, w_init, fix_parameters)
        b = None
        if with_bias:
            b = parameter("b", (channels // divisor,), b_init or I.ConstantInitializer(0.0),
                          fix_parameters)
        return F.depthwise_deconvolution(inp, w, b, base_axis, pad, stride, dilation, divisor)

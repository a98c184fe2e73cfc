"""NNabla's further convolution layers: ``depthwise_deconvolution`` and
``deformable_convolution`` (over the catalog's ops of the same names)."""

from __future__ import annotations

from typing import Sequence

from .. import functions as F
from ..graph import Variable
from . import initializers as I
from ._pf_common import (applied, checked_base_axis, count, counts, given_or, parameter,
                         pf_scope)


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
            b = parameter("b", (channels // divisor,), given_or(b_init, I.ConstantInitializer(0.0)),
                          fix_parameters)
        return F.depthwise_deconvolution(inp, w, b, base_axis, pad, stride, dilation, divisor)


def deformable_convolution(inp: Variable, outmaps: int, kernel: Sequence[int],
                           offset: Variable, mask: Variable | None = None, pad=None,
                           stride=None, dilation=None, group: int = 1,
                           deformable_group: int = 1, channel_last: bool = False, w_init=None,
                           b_init=None, base_axis: int = 1, fix_parameters: bool = False,
                           rng=None, with_bias: bool = True, apply_w=None, apply_b=None,
                           name: str | None = None) -> Variable:
    """2-D deformable convolution with ``W`` ``(outmaps, C // group, *kernel)`` and ``b``
    ``(outmaps,)`` in scope ``deformable_conv`` (NNabla's ``PF.deformable_convolution``;
    ``offset`` and ``mask`` computed outside, see :func:`stadyn.functions.deformable_convolution`).
    ``W`` is Glorot uniform over ``C`` inputs and ``outmaps`` outputs, ``b`` zeros; ``apply_w``
    / ``apply_b`` transform them before use.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = PF.deformable_convolution(sd.Variable((2, 3, 6, 6)), 4, (3, 3),
        ...                                   sd.Variable((2, 18, 6, 6)), pad=(1, 1))
        ...     y.shape, sd.get_parameters()["deformable_conv/W"].shape
        ((2, 4, 6, 6), (4, 3, 3, 3))
    """
    kernel = counts(kernel, "deformable_convolution", "kernel", True)
    outmaps = count(outmaps, "deformable_convolution", "outmaps")
    group = count(group, "deformable_convolution", "group")
    channels = inp.shape[checked_base_axis(base_axis, inp, "deformable_convolution")]
    with pf_scope(name, "deformable_conv"):
        if w_init is None:
            lim = I.calc_uniform_lim_glorot(channels, outmaps, kernel)
            w_init = I.UniformInitializer((-lim, lim), rng=rng)
        w = parameter("W", (outmaps, channels // group) + kernel, w_init, fix_parameters)
        w = applied(apply_w, w)
        b = None
        if with_bias:
            b = parameter("b", (outmaps,), given_or(b_init, I.ConstantInitializer(0.0)),
                          fix_parameters)
            b = applied(apply_b, b)
        return F.deformable_convolution(inp, w, offset, mask, b, base_axis, pad, stride,
                                        dilation, group, deformable_group, channel_last)

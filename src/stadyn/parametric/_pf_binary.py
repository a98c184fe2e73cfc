"""Parametric functions of the binarised-weight layers (``F.binary_connect_*``,
``F.binary_weight_*``) with NNabla 1.39's scopes (``bicon_affine``, ``bwn_affine``,
``bicon_conv``, ``bwn_conv``), parameter names and shapes: the float weights ``W`` (trained),
their binarised copy ``Wb`` and, for Binary Weight Networks, the per-unit scales ``alpha``
(neither trained: the op writes them), and the bias ``b``.

Example:
    >>> import stadyn as sd, stadyn.parametric_functions as PF
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     _ = PF.binary_weight_affine(sd.Variable((2, 3)), 4)
    ...     sorted((k, v.shape) for k, v in sd.get_parameters(grad_only=False).items())
    [('bwn_affine/W', (3, 4)), ('bwn_affine/Wb', (3, 4)), ('bwn_affine/alpha', (4,)),
     ('bwn_affine/b', (4,))]
"""

from __future__ import annotations

import math
from typing import Sequence

from .. import functions as F
from ..graph import Variable
from . import initializers as I
from ._pf_common import checked_base_axis, count, counts, given_or, parameter, pf_scope

__all__ = ["binary_connect_affine", "binary_weight_affine", "binary_connect_convolution",
           "binary_weight_convolution"]


def _weights(shape, lim, w_init, wb_init, rng, fix_parameters):
    """``W`` (trained) and ``Wb`` (written by the op), Glorot uniform by default."""
    w = parameter("W", shape, given_or(w_init, I.UniformInitializer((-lim, lim), rng=rng)),
                  fix_parameters)
    wb = parameter("Wb", shape, given_or(wb_init, I.UniformInitializer((-lim, lim), rng=rng)),
                   need_grad=False)
    return w, wb


def _bias(units, b_init, fix_parameters, with_bias):
    if not with_bias:
        return None
    return parameter("b", units, given_or(b_init, I.ConstantInitializer(0.0)), fix_parameters)


def _affine(fn, scope, inp, n_outmaps, base_axis, quantize_zero_to, w_init, wb_init, b_init,
            fix_parameters, rng, with_bias, name, scaled):
    out = counts(n_outmaps, fn, "n_outmaps", True)
    inmaps = inp.size_from_axis(checked_base_axis(base_axis, inp, fn))
    with pf_scope(name, scope):
        lim = I.calc_uniform_lim_glorot(inmaps, math.prod(out))
        w, wb = _weights((inmaps,) + out, lim, w_init, wb_init, rng, fix_parameters)
        if scaled:
            alpha = parameter("alpha", out, I.ConstantInitializer(0.0), need_grad=False)
        b = _bias(out, b_init, fix_parameters, with_bias)
        if scaled:
            return F.binary_weight_affine(inp, w, wb, alpha, b, base_axis, quantize_zero_to)
        return F.binary_connect_affine(inp, w, wb, b, base_axis, quantize_zero_to)


def binary_connect_affine(inp: Variable, n_outmaps: int | Sequence[int], base_axis: int = 1,
                          quantize_zero_to: float = 1.0, w_init=None, wb_init=None, b_init=None,
                          fix_parameters: bool = False, rng=None, with_bias: bool = True,
                          name: str | None = None) -> Variable:
    """BinaryConnect affine layer (``F.binary_connect_affine``) in scope ``bicon_affine``.
    Example: ``PF.binary_connect_affine(x, 10)``."""
    return _affine("binary_connect_affine", "bicon_affine", inp, n_outmaps, base_axis,
                   quantize_zero_to, w_init, wb_init, b_init, fix_parameters, rng, with_bias,
                   name, False)


def binary_weight_affine(inp: Variable, n_outmaps: int | Sequence[int], base_axis: int = 1,
                         quantize_zero_to: float = 1.0, w_init=None, wb_init=None, b_init=None,
                         fix_parameters: bool = False, rng=None, with_bias: bool = True,
                         name: str | None = None) -> Variable:
    """Binary Weight Network affine layer (``F.binary_weight_affine``) in scope
    ``bwn_affine``.  Example: ``PF.binary_weight_affine(x, 10)``."""
    return _affine("binary_weight_affine", "bwn_affine", inp, n_outmaps, base_axis,
                   quantize_zero_to, w_init, wb_init, b_init, fix_parameters, rng, with_bias,
                   name, True)


def _convolution(fn, scope, inp, outmaps, kernel, pad, stride, dilation, group,
                 quantize_zero_to, w_init, wb_init, b_init, base_axis, fix_parameters, rng,
                 with_bias, name, scaled):
    outmaps = count(outmaps, fn, "outmaps")
    kernel = counts(kernel, fn, "kernel", True)
    group = count(group, fn, "group")
    inmaps = inp.shape[checked_base_axis(base_axis, inp, fn)]
    with pf_scope(name, scope):
        lim = I.calc_uniform_lim_glorot(inmaps, outmaps, kernel)
        w, wb = _weights((outmaps, inmaps // group) + kernel, lim, w_init, wb_init, rng,
                         fix_parameters)
        if scaled:
            alpha = parameter("alpha", (outmaps,), I.ConstantInitializer(0.0), need_grad=False)
        b = _bias((outmaps,), b_init, fix_parameters, with_bias)
        if scaled:
            return F.binary_weight_convolution(inp, w, wb, alpha, b, base_axis, pad, stride,
                                               dilation, group, quantize_zero_to)
        return F.binary_connect_convolution(inp, w, wb, b, base_axis, pad, stride, dilation,
                                            group, quantize_zero_to)


def binary_connect_convolution(inp: Variable, outmaps: int, kernel: Sequence[int], pad=None,
                               stride=None, dilation=None, group: int = 1,
                               quantize_zero_to: float = 1.0, w_init=None, wb_init=None,
                               b_init=None, base_axis: int = 1, fix_parameters: bool = False,
                               rng=None, with_bias: bool = True,
                               name: str | None = None) -> Variable:
    """BinaryConnect convolution layer (``F.binary_connect_convolution``) in scope
    ``bicon_conv``.  Example: ``PF.binary_connect_convolution(x, 64, (3, 3), pad=(1, 1))``."""
    return _convolution("binary_connect_convolution", "bicon_conv", inp, outmaps, kernel, pad,
                        stride, dilation, group, quantize_zero_to, w_init, wb_init, b_init,
                        base_axis, fix_parameters, rng, with_bias, name, False)


def binary_weight_convolution(inp: Variable, outmaps: int, kernel: Sequence[int], pad=None,
                              stride=None, dilation=None, group: int = 1,
                              quantize_zero_to: float = 1.0, w_init=None, wb_init=None,
                              b_init=None, base_axis: int = 1, fix_parameters: bool = False,
                              rng=None, with_bias: bool = True,
                              name: str | None = None) -> Variable:
    """Binary Weight Network convolution layer (``F.binary_weight_convolution``) in scope
    ``bwn_conv``.  Example: ``PF.binary_weight_convolution(x, 64, (3, 3), pad=(1, 1))``."""
    return _convolution("binary_weight_convolution", "bwn_conv", inp, outmaps, kernel, pad,
                        stride, dilation, group, quantize_zero_to, w_init, wb_init, b_init,
                        base_axis, fix_parameters, rng, with_bias, name, True)

"""Quantised affine and convolution layers (NNabla's names): the float weights ``W`` and ``b``
are what the solver trains; the layer computes with their quantised values
(``F.fixed_point_quantize``, ``F.pow2_quantize`` or ``F.min_max_quantize``, straight-through
gradient), which it also
writes into the parameters ``W_q`` and ``b_q`` on every forward (``F.store``), as NNabla's
layers do.  ``quantize_w=False`` / ``quantize_b=False`` use the float parameter and create no
quantised one.

Example:
    >>> import stadyn as sd, stadyn.parametric_functions as PF
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     y = PF.fixed_point_quantized_affine(sd.Variable((4, 3)), 2)
    ...     sorted(sd.get_parameters(grad_only=False))[:2]
    ['fp_quantized_affine/W', 'fp_quantized_affine/W_q']
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import functions as F
from .._errors import ArgumentError
from ..graph import Variable
from . import initializers as I
from ._pf_common import checked_base_axis, count, counts, given_or, parameter, pf_scope

__all__ = ["fixed_point_quantized_affine", "fixed_point_quantized_convolution",
           "pow2_quantized_affine", "pow2_quantized_convolution", "min_max_quantize",
           "min_max_quantized_affine", "min_max_quantized_convolution"]


def _quantized(name, shape, init, fix_parameters, quantize, quantizer, options):
    """The float parameter ``name`` and, when ``quantize``, its quantised value stored in
    ``name + "_q"`` (created with the same initialiser, no gradient)."""
    value = parameter(name, shape, init, fix_parameters)
    if not quantize:
        return value
    stored = parameter(name + "_q", shape, init, need_grad=False)
    return F.store(quantizer(value, quantize=True, **options), stored)


def _fixed_point(sign, n, delta, ste_fine_grained):
    return F.fixed_point_quantize, {"sign": sign, "n": n, "delta": delta,
                                    "ste_fine_grained": ste_fine_grained}


def _pow2(sign, with_zero, n, m, ste_fine_grained):
    return F.pow2_quantize, {"sign": sign, "with_zero": with_zero, "n": n, "m": m,
                             "ste_fine_grained": ste_fine_grained}


def _min_max(which, ql_min, ql_max, x_min_max, ste_fine_grained, eps, qr_min_init, qr_max_init,
             fix_parameters):
    """The quantiser of the min-max layers' ``W`` (``which="w"``: the range starts at +-2) or
    ``b`` (``"b"``: +-6): ``min_max_quantize`` in scope ``min_max_quantize_<which>``."""
    if which == "w":
        qr_min_init = given_or(qr_min_init, I.ConstantInitializer(-2.0))
        qr_max_init = given_or(qr_max_init, I.ConstantInitializer(2.0))

    def quantize(value, quantize):
        return min_max_quantize(value, ql_min, ql_max, 0.999, x_min_max, False,
                                ste_fine_grained, eps, qr_min_init, qr_max_init,
                                fix_parameters, name="min_max_quantize_" + which)
    return quantize, {}


def _affine(fn, scope, inp, n_outmaps, base_axis, w_init, b_init, fix_parameters, rng,
            with_bias, quantize_w, w_rule, quantize_b, b_rule, name):
    out = counts(n_outmaps, fn, "n_outmaps", True)
    inmaps = inp.size_from_axis(checked_base_axis(base_axis, inp, fn))
    with pf_scope(name, scope):
        if w_init is None:
            lim = I.calc_uniform_lim_glorot(inmaps, math.prod(out))
            w_init = I.UniformInitializer((-lim, lim), rng=rng)
        w = _quantized("W", (inmaps,) + out, w_init, fix_parameters, quantize_w, *w_rule)
        b = None
        if with_bias:
            b = _quantized("b", out, given_or(b_init, I.ConstantInitializer(0.0)), fix_parameters,
                           quantize_b, *b_rule)
        return F.affine(inp, w, b, base_axis)


def _convolution(fn, scope, inp, outmaps, kernel, pad, stride, dilation, group, w_init, b_init,
                 base_axis, fix_parameters, rng, with_bias, quantize_w, w_rule, quantize_b,
                 b_rule, name):
    outmaps = count(outmaps, fn, "outmaps")
    kernel = counts(kernel, fn, "kernel", True)
    group = count(group, fn, "group")
    inmaps = inp.shape[checked_base_axis(base_axis, inp, fn)]
    with pf_scope(name, scope):
        if w_init is None:
            lim = I.calc_uniform_lim_glorot(inmaps, outmaps, kernel)
            w_init = I.UniformInitializer((-lim, lim), rng=rng)
        w = _quantized("W", (outmaps, inmaps // group) + kernel, w_init, fix_parameters,
                       quantize_w, *w_rule)
        b = None
        if with_bias:
            b = _quantized("b", (outmaps,), given_or(b_init, I.ConstantInitializer(0.0)),
                           fix_parameters, quantize_b, *b_rule)
        return F.convolution(inp, w, b, base_axis, pad, stride, dilation, group)


def _no_channel_last(fn, channel_last, why=""):
    if channel_last:
        raise ArgumentError(f"PF.{fn}: channel_last=True is not supported{why}; transpose the "
                            "input to channels first")


def fixed_point_quantized_affine(inp: Variable, n_outmaps: int | Sequence[int],
                                 base_axis: int = 1, w_init=None, b_init=None,
                                 fix_parameters: bool = False, rng=None, with_bias: bool = True,
                                 quantize_w: bool = True, sign_w: bool = True, n_w: int = 8,
                                 delta_w: float = 2 ** -4, ste_fine_grained_w: bool = True,
                                 quantize_b: bool = True, sign_b: bool = True, n_b: int = 8,
                                 delta_b: float = 2 ** -4, ste_fine_grained_b: bool = True,
                                 name: str | None = None) -> Variable:
    """Affine layer with fixed-point weights (``F.fixed_point_quantize``; see the module) in
    scope ``fp_quantized_affine``: ``W``, ``b`` and their quantised ``W_q``, ``b_q``.
    Example: ``PF.fixed_point_quantized_affine(x, 10, n_w=4, delta_w=0.125)``."""
    return _affine("fixed_point_quantized_affine", "fp_quantized_affine", inp, n_outmaps,
                   base_axis, w_init, b_init, fix_parameters, rng, with_bias,
                   quantize_w, _fixed_point(sign_w, n_w, delta_w, ste_fine_grained_w),
                   quantize_b, _fixed_point(sign_b, n_b, delta_b, ste_fine_grained_b), name)


def fixed_point_quantized_convolution(inp: Variable, outmaps: int, kernel: Sequence[int],
                                      pad=None, stride=None, dilation=None, group: int = 1,
                                      channel_last: bool = False, w_init=None, b_init=None,
                                      base_axis: int = 1, fix_parameters: bool = False,
                                      rng=None, with_bias: bool = True, quantize_w: bool = True,
                                      sign_w: bool = True, n_w: int = 8,
                                      delta_w: float = 2 ** -4,
                                      ste_fine_grained_w: bool = True, quantize_b: bool = True,
                                      sign_b: bool = True, n_b: int = 8,
                                      delta_b: float = 2 ** -4,
                                      ste_fine_grained_b: bool = True,
                                      name: str | None = None) -> Variable:
    """Convolution layer with fixed-point weights (see the module) in scope
    ``fp_quantized_conv``.  Example:
    ``PF.fixed_point_quantized_convolution(x, 16, (3, 3), pad=(1, 1), n_w=4)``."""
    _no_channel_last("fixed_point_quantized_convolution", channel_last,
                     " (NNabla 1.39 creates W channel-first and W_q channel-last)")
    return _convolution("fixed_point_quantized_convolution", "fp_quantized_conv", inp, outmaps,
                        kernel, pad, stride, dilation, group, w_init, b_init, base_axis,
                        fix_parameters, rng, with_bias,
                        quantize_w, _fixed_point(sign_w, n_w, delta_w, ste_fine_grained_w),
                        quantize_b, _fixed_point(sign_b, n_b, delta_b, ste_fine_grained_b),
                        name)


def pow2_quantized_affine(inp: Variable, n_outmaps: int | Sequence[int], base_axis: int = 1,
                          w_init=None, b_init=None, fix_parameters: bool = False, rng=None,
                          with_bias: bool = True, quantize_w: bool = True, sign_w: bool = True,
                          with_zero_w: bool = False, n_w: int = 8, m_w: int = 2,
                          ste_fine_grained_w: bool = True, quantize_b: bool = True,
                          sign_b: bool = True, with_zero_b: bool = False, n_b: int = 8,
                          m_b: int = 2, ste_fine_grained_b: bool = True,
                          name: str | None = None) -> Variable:
    """Affine layer with power-of-two weights (``F.pow2_quantize``; see the module) in scope
    ``pow2_quantized_affine``.  Example: ``PF.pow2_quantized_affine(x, 10, n_w=4, m_w=1)``."""
    return _affine("pow2_quantized_affine", "pow2_quantized_affine", inp, n_outmaps, base_axis,
                   w_init, b_init, fix_parameters, rng, with_bias,
                   quantize_w, _pow2(sign_w, with_zero_w, n_w, m_w, ste_fine_grained_w),
                   quantize_b, _pow2(sign_b, with_zero_b, n_b, m_b, ste_fine_grained_b), name)


def pow2_quantized_convolution(inp: Variable, outmaps: int, kernel: Sequence[int], pad=None,
                               stride=None, dilation=None, group: int = 1, w_init=None,
                               b_init=None, base_axis: int = 1, fix_parameters: bool = False,
                               rng=None, with_bias: bool = True, quantize_w: bool = True,
                               with_zero_w: bool = False, sign_w: bool = True, n_w: int = 8,
                               m_w: int = 2, ste_fine_grained_w: bool = True,
                               quantize_b: bool = True, with_zero_b: bool = False,
                               sign_b: bool = True, n_b: int = 8, m_b: int = 2,
                               ste_fine_grained_b: bool = True,
                               name: str | None = None) -> Variable:
    """Convolution layer with power-of-two weights (see the module) in scope
    ``pow2_quantized_conv`` (NNabla's argument order: ``with_zero_w`` before ``sign_w``).
    Example: ``PF.pow2_quantized_convolution(x, 16, (3, 3), pad=(1, 1), n_w=4, m_w=1)``."""
    return _convolution("pow2_quantized_convolution", "pow2_quantized_conv", inp, outmaps,
                        kernel, pad, stride, dilation, group, w_init, b_init, base_axis,
                        fix_parameters, rng, with_bias,
                        quantize_w, _pow2(sign_w, with_zero_w, n_w, m_w, ste_fine_grained_w),
                        quantize_b, _pow2(sign_b, with_zero_b, n_b, m_b, ste_fine_grained_b),
                        name)


def _level(value, shape, name):
    # a number is the parameter's initial array, as NNabla 1.39's ``np.array(ql_min)``: an
    # int gives an int64 parameter, which the function reads as float32
    if isinstance(value, Variable):
        return value
    return parameter(name, shape, np.array(value).reshape(shape), need_grad=False,
                     read_by="reading")


def min_max_quantize(x: Variable, ql_min=0, ql_max=255, decay: float = 0.999,
                     x_min_max: bool = False, ema: bool = False, ste_fine_grained: bool = True,
                     eps: float = 0.01, qr_min_init=None, qr_max_init=None,
                     fix_parameters: bool = False, outputs=None,
                     name: str | None = None) -> Variable:
    """Min-max quantisation (``F.min_max_quantize``) in scope ``min_max_quantize``: numbers
    given as ``ql_min``/``ql_max`` become parameters of shape ``(1,) * x.ndim``; the range
    ``qr_min``/``qr_max`` (initialised -6 and 6) is trained unless ``x_min_max`` and ``ema``
    both hold.  NNabla's ``outputs`` (an array to write into) is not supported.
    Example: ``PF.min_max_quantize(h, ql_max=15, x_min_max=True, ema=True)``."""
    if outputs is not None:
        raise ArgumentError("PF.min_max_quantize: outputs= (an array to write into) is not "
                            "supported; the result is the returned Variable")
    with pf_scope(name, "min_max_quantize"):
        ones = (1,) * x.ndim
        ql_min = _level(ql_min, ones, "ql_min")
        ql_max = _level(ql_max, ones, "ql_max")
        trained = not (x_min_max and ema)
        qr_min = parameter("qr_min", ql_min.shape,
                           given_or(qr_min_init, I.ConstantInitializer(-6.0)),
                           fix_parameters, need_grad=trained)
        qr_max = parameter("qr_max", ql_max.shape,
                           given_or(qr_max_init, I.ConstantInitializer(6.0)),
                           fix_parameters, need_grad=trained)
        return F.min_max_quantize(x, qr_min, qr_max, ql_min, ql_max, decay, x_min_max, ema,
                                  ste_fine_grained, eps)


def min_max_quantized_affine(inp: Variable, n_outmaps: int | Sequence[int], base_axis: int = 1,
                             w_init=None, b_init=None, fix_parameters: bool = False, rng=None,
                             with_bias: bool = True, quantize_w: bool = True, ql_min_w=0,
                             ql_max_w=255, w_min_max: bool = False, qr_min_w_init=None,
                             qr_max_w_init=None, ste_fine_grained_w: bool = True,
                             quantize_b: bool = True, ql_min_b=0, ql_max_b=255,
                             b_min_max: bool = False, qr_min_b_init=None, qr_max_b_init=None,
                             ste_fine_grained_b: bool = True, eps: float = 0.01,
                             name: str | None = None) -> Variable:
    """Affine layer with min-max quantised weights (see the module) in scope
    ``min_max_quantized_affine``; each quantiser's range lives in ``min_max_quantize_w`` /
    ``min_max_quantize_b`` (initialised to +-2 for ``W``, +-6 for ``b``).
    Example: ``PF.min_max_quantized_affine(x, 10, ql_max_w=15)``."""
    return _affine("min_max_quantized_affine", "min_max_quantized_affine", inp, n_outmaps,
                   base_axis, w_init, b_init, fix_parameters, rng, with_bias, quantize_w,
                   _min_max("w", ql_min_w, ql_max_w, w_min_max, ste_fine_grained_w, eps,
                            qr_min_w_init, qr_max_w_init, fix_parameters), quantize_b,
                   _min_max("b", ql_min_b, ql_max_b, b_min_max, ste_fine_grained_b, eps,
                            qr_min_b_init, qr_max_b_init, fix_parameters), name)


def min_max_quantized_convolution(inp: Variable, outmaps: int, kernel: Sequence[int], pad=None,
                                  stride=None, dilation=None, group: int = 1,
                                  channel_last: bool = False, w_init=None, b_init=None,
                                  base_axis: int = 1, fix_parameters: bool = False, rng=None,
                                  with_bias: bool = True, quantize_w: bool = True, ql_min_w=0,
                                  ql_max_w=255, w_min_max: bool = False, qr_min_w_init=None,
                                  qr_max_w_init=None, ste_fine_grained_w: bool = True,
                                  quantize_b: bool = True, ql_min_b=0, ql_max_b=255,
                                  b_min_max: bool = False, qr_min_b_init=None,
                                  qr_max_b_init=None, ste_fine_grained_b: bool = True,
                                  eps: float = 0.01, name: str | None = None) -> Variable:
    """Convolution layer with min-max quantised weights (see the module and
    :func:`min_max_quantized_affine`) in scope ``min_max_quantized_conv``.
    Example: ``PF.min_max_quantized_convolution(x, 16, (3, 3), pad=(1, 1))``."""
    _no_channel_last("min_max_quantized_convolution", channel_last)
    return _convolution("min_max_quantized_convolution", "min_max_quantized_conv", inp, outmaps,
                        kernel, pad, stride, dilation, group, w_init, b_init, base_axis,
                        fix_parameters, rng, with_bias, quantize_w,
                        _min_max("w", ql_min_w, ql_max_w, w_min_max, ste_fine_grained_w, eps,
                                 qr_min_w_init, qr_max_w_init, fix_parameters), quantize_b,
                        _min_max("b", ql_min_b, ql_max_b, b_min_max, ste_fine_grained_b, eps,
                                 qr_min_b_init, qr_max_b_init, fix_parameters), name)

"""Binarised-weight layers (NNabla's names): ``binary_connect_affine``,
``binary_connect_convolution`` (BinaryConnect: the weights binarised to ``+-1``) and
``binary_weight_affine``, ``binary_weight_convolution`` (Binary Weight Networks: ``+-1`` times
each output unit's mean ``|w|``).

As NNabla's, each op writes the binarised weight into ``binary_weight`` (and the scales into
``alpha``) when it runs, and passes the gradient of the binarised weight straight through to
``weight`` (the float weights are what the solver updates).  A weight of exactly 0 binarises to
``quantize_zero_to``.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> x = sd.Variable.from_numpy_array([[1.0, 2.0]])
    >>> w = sd.Variable.from_numpy_array([[0.3], [-0.2]])
    >>> wb = sd.Variable((2, 1))
    >>> with sd.auto_forward():
    ...     y = F.binary_connect_affine(x, w, wb)
    >>> y.d, wb.d.ravel()
    (array([[-1.]], dtype=float32), array([ 1., -1.], dtype=float32))
"""

from __future__ import annotations

import torch

from . import _nn
from ._registry import op
from ._sequence_axis import from_base_axis

_C = "neural network"


def _binarised(weight, binary_weight, quantize_zero_to):
    """``sign(weight)`` (0 as ``quantize_zero_to``), written into ``binary_weight``."""
    with torch.no_grad():
        sign = torch.where(weight > 0, 1.0, torch.where(weight < 0, -1.0,
                                                        float(quantize_zero_to)))
        binary_weight.copy_(sign.to(binary_weight.dtype))
    return sign.to(weight.dtype)


def _scaled(weight, binary_weight, alpha, quantize_zero_to, unit_axis):
    """``sign(weight)`` times each output unit's mean ``|weight|`` (written into ``alpha``)."""
    sign = _binarised(weight, binary_weight, quantize_zero_to)
    others = [a for a in range(weight.ndim) if a != unit_axis]
    with torch.no_grad():
        scale = weight.abs().mean(dim=others)
        alpha.copy_(scale.reshape(alpha.shape).to(alpha.dtype))
    shape = [1] * weight.ndim
    shape[unit_axis] = -1
    return sign * scale.reshape(shape)


def _straight_through(weight, value):
    """``value`` with ``weight``'s gradient passed through unchanged."""
    return value.detach() + (weight - weight.detach())


@op(4, category=_C, precision="half", sequence=from_base_axis())
def binary_connect_affine(x, weight, binary_weight, bias=None, base_axis=1,
                          quantize_zero_to=1.0):
    """``affine`` with ``weight`` binarised to ``+-1`` (see the module).
    Example: ``F.binary_connect_affine(x, W, Wb, b)``."""
    effective = _straight_through(weight, _binarised(weight, binary_weight, quantize_zero_to))
    return _nn.affine.spec.impl(x, effective, bias, base_axis)


@op(5, category=_C, precision="half", sequence=from_base_axis())
def binary_weight_affine(x, weight, binary_weight, alpha, bias=None, base_axis=1,
                         quantize_zero_to=1.0):
    """``affine`` with ``weight`` binarised to ``+-alpha_j``, ``alpha_j`` the mean ``|w|`` of
    output unit ``j`` (``weight`` is ``(inputs, units)``; see the module).
    Example: ``F.binary_weight_affine(x, W, Wb, alpha, b)``."""
    flat = weight.reshape(weight.shape[0], -1)
    value = _scaled(flat, binary_weight.view(flat.shape), alpha.view(-1), quantize_zero_to, 1)
    effective = _straight_through(weight, value.reshape(weight.shape))
    return _nn.affine.spec.impl(x, effective, bias, base_axis)


@op(4, category=_C, precision="half", sequence=from_base_axis())
def binary_connect_convolution(x, weight, binary_weight, bias=None, base_axis=1, pad=None,
                               stride=None, dilation=None, group=1, quantize_zero_to=1.0):
    """``convolution`` with ``weight`` binarised to ``+-1`` (see the module).
    Example: ``F.binary_connect_convolution(x, W, Wb, b, pad=(1, 1))``."""
    effective = _straight_through(weight, _binarised(weight, binary_weight, quantize_zero_to))
    return _nn.convolution.spec.impl(x, effective, bias, base_axis, pad, stride, dilation, group)


@op(5, category=_C, precision="half", sequence=from_base_axis())
def binary_weight_convolution(x, weight, binary_weight, alpha, bias=None, base_axis=1,
                              pad=None, stride=None, dilation=None, group=1,
                              quantize_zero_to=1.0):
    """``convolution`` with ``weight`` binarised to ``+-alpha_o``, ``alpha_o`` the mean ``|w|``
    of output channel ``o`` (see the module).
    Example: ``F.binary_weight_convolution(x, W, Wb, alpha, b)``."""
    value = _scaled(weight, binary_weight, alpha.view(-1), quantize_zero_to, 0)
    effective = _straight_through(weight, value)
    return _nn.convolution.spec.impl(x, effective, bias, base_axis, pad, stride, dilation, group)

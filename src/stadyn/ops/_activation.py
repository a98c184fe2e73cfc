"""Activation functions."""

from __future__ import annotations


import torch
import torch.nn.functional as TF

from . import _kernels as kernels
from ._output_grads import nnabla_swish
from . import _half_elementwise as _HE
from ._registry import op
from ._util import norm_axis

_C = "activation"


class _NnablaRelu(torch.autograd.Function):
    """NNabla 1.39's ReLU: forward ``where(x > 0, x, 0)`` (0 for NaN and -inf, +0 for -0.0;
    the form graph/_fuse_relu.py fuses into a oneDNN convolution's ReLU post-op); backward
    the output gradient where the *output* is above 0 (torch's ``threshold_backward`` of y,
    0 where not taken even for a NaN gradient), as NNabla's ``ReLU::backward_impl`` reads y:
    a traced plan saves y itself, so what a user wrote into ``y.d`` reaches the gradient."""

    @staticmethod
    def forward(ctx, x):
        y = torch.where(x > 0, x, 0.0)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return torch.ops.aten.threshold_backward(grad, y, 0)


class _CntkRelu(torch.autograd.Function):
    """CNTK 2.7's ReLU in two passes over memory where its product form took four.  Forward
    (its CPU kernel, measured): ``x * (x > 0) + 0.0``, -inf * 0 and NaN * 0 being NaN and the
    zeros +0; here the mask is written in x's dtype by the comparison itself and the product
    and sum are one ``addcmul`` (``0 + x * m`` with ``m`` 0 or 1: exact, the same bits, NaN's
    sign included).  Backward: CNTK's ``ElementwiseProductWithLinearRectifierDerivativeFromOutput``,
    ``b > 0 ? a : 0`` on its output (Source/Math/TensorOps.h:318), a choice, not a product: 0
    where ``x`` is not above 0 even for a NaN or infinite gradient; ``threshold_backward`` on
    the mask (never NaN) chooses so in one pass.  In float64 CNTK's forward is the choice
    ``a > 0 ? a : 0`` (TensorOps.h:274 ``LinearRectifier``; measured: 0 for NaN and -inf,
    +0 for -0.0, subnormals kept), also ``threshold_backward``, of x on the mask."""

    @staticmethod
    def forward(ctx, x):
        mask = torch.empty_like(x)
        torch.gt(x, 0, out=mask)
        ctx.save_for_backward(mask)
        if x.dtype == torch.float64:
            return torch.ops.aten.threshold_backward(x, mask, 0)
        return torch.addcmul(x.new_zeros(()), x, mask)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return torch.ops.aten.threshold_backward(grad, mask, 0)


@op(1, category=_C, shape="elementwise")
def relu(x, inplace=False, rule="torch"):
    """``max(x, 0)``; NaN stays NaN (torch's rule).  ``rule="nnabla"``: NNabla 1.39's
    ``x > 0 ? x : 0`` (0 for NaN); ``rule="cntk"``: CNTK 2.7's, which differs by dtype: in
    float32 (and half types) ``x * (x > 0) + 0``, NaN for NaN and for -inf, +0 for every other
    number not above 0; in float64 ``x > 0 ? x : 0``, 0 for NaN and -inf too.  In each the
    gradient goes where ``x > 0`` (none at NaN; with ``rule="cntk"``, in every dtype, 0
    elsewhere even for a NaN or infinite output gradient, as CNTK's choice gives); with
    ``rule="nnabla"`` where the output is above 0, as NNabla's backward reads the output
    (what a user wrote into it included).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array([-1.0, 2.0, float("nan"), float("-inf")])
        >>> with sd.auto_forward():
        ...     ys = [F.relu(x, rule=r).d.tolist() for r in ("torch", "nnabla", "cntk")]
        >>> ys
        [[0.0, 2.0, nan, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 2.0, nan, nan]]
        >>> x64 = sd.Variable.from_numpy_array([-1.0, 2.0, np.nan, -np.inf], dtype=np.float64)
        >>> with sd.auto_forward():
        ...     F.relu(x64, rule="cntk").d.tolist()
        [0.0, 2.0, 0.0, 0.0]
    """
    if rule == "torch":
        return torch.relu(x)
    if rule == "nnabla":
        return _NnablaRelu.apply(x)
    if rule == "cntk":
        if x.is_floating_point():
            return _CntkRelu.apply(x)
        return x * (x > 0).to(x.dtype) + 0.0
    raise ValueError(f"relu: rule={rule!r}: 'torch', 'nnabla' or 'cntk'")


@op(1, category=_C, shape="elementwise")
def leaky_relu(x, alpha=0.1, inplace=False, rule="torch"):
    """``x`` where positive, ``alpha * x`` elsewhere.  ``rule="nnabla"``: with ``alpha >= 0``
    the backward takes its mask from the output, as NNabla 1.39's does (what a user wrote
    into the output included); the values are the same.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array([-1.0, 2.0])
        >>> with sd.auto_forward():
        ...     y = F.leaky_relu(x, 0.2, rule="nnabla")
        >>> y.d.tolist()
        [-0.20000000298023224, 2.0]
    """
    if rule == "nnabla" and alpha >= 0:
        # torch's in-place leaky ReLU saves its output for the backward (its out-of-place one
        # saves x); on a copy of x, which is the output
        return TF.leaky_relu_(x.clone(), alpha)
    if rule not in ("torch", "nnabla"):
        raise ValueError(f"leaky_relu: rule={rule!r}: 'torch' or 'nnabla'")
    return TF.leaky_relu(x, alpha)


@op(1, category=_C, shape="elementwise")
def relu6(x):
    """``min(max(x, 0), 6)``.  Example: ``F.relu6(x)``."""
    return TF.hardtanh(x, 0.0, 6.0)


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.ELU)
def elu(x, alpha=1.0):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere.  Example: ``F.elu(x)``."""
    return TF.elu(x, alpha)


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.SELU)
def selu(x, scale=1.05070098735548, alpha=1.673263242354377):
    """``scale * elu(x, alpha)`` with the self-normalising constants.  Example: ``F.selu(x)``."""
    return scale * TF.elu(x, alpha)


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.GELU)
def gelu(x):
    """GELU with NNabla's tanh approximation:
    ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))``.  Example: ``F.gelu(x)``."""
    return TF.gelu(x, approximate="tanh")


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.SIGMOID)
def sigmoid(x):
    """``1 / (1 + exp(-x))``.  Example: ``F.sigmoid(x)``."""
    return torch.sigmoid(x)


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.TANH)
def tanh(x):
    """Hyperbolic tangent.  Example: ``F.tanh(x)``."""
    return kernels.tanh(x)


def _swish_in_half(x, rule="torch"):
    """``swish`` in a node bound to NNabla's ``cpu:half``: ``rule="nnabla"`` in its ``Half``
    steps (``_output_grads.nnabla_swish``)."""
    return nnabla_swish(x, half=True) if rule == "nnabla" else _swish(x, rule)


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.OwnHalf(_swish_in_half))
def swish(x, rule="torch"):
    """``x * sigmoid(x)``.  ``rule="nnabla"``: NNabla 1.39's backward, ``dy * (y + sigmoid(x)
    * (1 - y))``, which reads the output (what a user wrote into it included); in NNabla's
    ``cpu:half`` its ``Half`` steps, elsewhere torch's kernels.
    Example: ``F.swish(x)``."""
    return _swish(x, rule)


def _swish(x, rule):
    if rule == "nnabla":
        return nnabla_swish(x)
    if rule != "torch":
        raise ValueError(f"swish: rule={rule!r}: 'torch' or 'nnabla'")
    return TF.silu(x)


@op(1, category=_C, shape="elementwise", nnabla_half=_HE.SOFTPLUS)
def softplus(x, beta=1.0):
    """``log(1 + exp(beta x)) / beta``.  Example: ``F.softplus(x)``."""
    return TF.softplus(x, beta)


@op(1, category=_C, precision="float", shape="same")
def softmax(x, axis=None):
    """Softmax along ``axis`` (default: the last axis).

    Example:
        >>> import math, numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.softmax(sd.Variable.from_numpy_array([[0.0, math.log(3.0)]]))
        >>> np.round(y.d, 4)
        array([[0.25, 0.75]], dtype=float32)
    """
    return torch.softmax(x, norm_axis(x.ndim - 1 if axis is None else axis, x.ndim))


@op(1, category=_C, precision="float", shape="same")
def log_softmax(x, axis=None):
    """Log of the softmax along ``axis`` (default: last), computed stably.
    Example: ``F.log_softmax(x, axis=1)``."""
    return torch.log_softmax(x, norm_axis(x.ndim - 1 if axis is None else axis, x.ndim))




@op(2, category=_C)
def prelu(x0, x1, base_axis=1):
    """``x0`` where positive, ``x1 * x0`` elsewhere, with learnt slopes ``x1``: one slope
    (shape ``()`` or ``(1,)``) or one per channel (``(C,)``, ``C = x0.shape[base_axis]``).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.prelu(sd.Variable.from_numpy_array([[-2.0, 1.0], [-2.0, 3.0]]),
        ...                 sd.Variable.from_numpy_array([0.5, 0.25]))
        >>> y.d
        array([[-1.,  1.],
               [-1.,  3.]], dtype=float32)
    """
    slope = x1
    if x1.dim() == 1 and x1.shape[0] > 1:
        axis = norm_axis(base_axis, x0.ndim)
        slope = x1.reshape((-1,) + (1,) * (x0.ndim - axis - 1))
    elif x1.numel() == 1:
        slope = x1.reshape(())
    return torch.where(x0 > 0, x0, slope * x0)


def _straight_through(x, hard, slope):
    """``hard``'s value with the gradient ``slope`` where ``|x| < 1`` and 0 elsewhere (NNabla's
    straight-through estimator): the added term is exactly 0 but carries the gradient."""
    ramp = torch.where(x.abs() < 1.0, x, x.detach()) * slope
    return hard + (ramp - ramp.detach())


@op(1, category=_C, shape="elementwise")
def binary_tanh(x):
    """1 where ``x > 0``, else -1; backward, the gradient passes where ``|x| < 1`` (a
    straight-through estimator, as NNabla's).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.binary_tanh(sd.Variable.from_numpy_array([-0.5, 0.0, 2.0]))
        >>> y.d
        array([-1., -1.,  1.], dtype=float32)
    """
    return _straight_through(x, torch.where(x > 0, 1.0, -1.0).to(x.dtype), 1.0)


@op(1, category=_C, shape="elementwise")
def binary_sigmoid(x):
    """1 where ``x > 0``, else 0; backward, half the gradient passes where ``|x| < 1``.
    Example: ``F.binary_sigmoid(x)``."""
    return _straight_through(x, (x > 0).to(x.dtype), 0.5)

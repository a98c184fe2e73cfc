"""NNabla 1.39's element-wise functions of float16 CPU values (a ``cpu:half`` context), as its
``Half`` kernels compute them.

NNabla's unary functions (``TransformUnary``: include/nbla/function/utils/
base_transform_unary.hpp) evaluate their forward and gradient expressions in the function's
type: for ``Half`` every operator rounds its result to float16 (``Half * Half`` is
``Half(float(a) * float(b))``, ``std::exp(Half)`` is ``Half(std::exp(float(h)))``:
src/nbla/half.cpp), so ``Tanh``'s gradient ``dy * ((T)1 - y * y)`` rounds ``y * y``, then
``1 - y * y``, then the product, where torch's ``tanh_backward`` rounds once; ``Sigmoid``'s
forward ``(T)1 / ((T)1 + std::exp(-x))`` rounds three times.  A scalar attribute enters as
``(T)a0``, rounded to float16 (a ``double`` literal in an expression makes that step
``double``: ``Erf``'s ``2.0 / sqrt(M_PI) * ...``).  The binary functions
(``TransformBinary``: base_transform_binary.hpp) do the opposite: their expressions run in
``float`` on the float16 inputs (``force_float``) and round once, so ``Div2``'s gradient
``-dy * x0 / (x1 * x1)`` is one rounding where torch's ``div`` backward rounds each step.

An op declares its expressions with :class:`HalfFormula` (``@op(..., nnabla_half=...)``);
the declaration wraps its implementation with :func:`wrap_impl`, which runs the formula on
float16 CPU inputs of a node bound to a float16 context (NNabla's ``cpu:half``: the graph
passes ``half_formula=True``, ``OpSpec.half_formula``; Stadyn's own float16 values keep
torch's kernels and their cost): the forward and backward of
:class:`_HalfElementwise`, an autograd function whose backward is torch ops (differentiable
again under ``create_graph``; a static plan's trace records them).  Torch computes a
float16 CPU operation in float and rounds the result once, which is the ``Half`` operator's
rounding; its transcendental functions may differ from glibc's ``float`` ones in the last
float bit, which changes a float16 result only at a rounding tie (none seen in the cases).

A binary function's gradient of a broadcast input is NNabla's fold: each element's float
gradient added into a float16 accumulator in turn (one operator, ``half_fold_float``; float16
gradients, ``add2``'s and ``sub2``'s, in one NumPy ``add.accumulate``), an overflow ``inf``
without a warning.

Example:
    >>> import torch
    >>> y = torch.tensor([0.469482421875], dtype=torch.float16)
    >>> dy = torch.tensor([1.6494140625], dtype=torch.float16)
    >>> TANH.grads[0](dy, None, y).item()                  # three roundings, as NNabla's
    1.28515625
    >>> torch.ops.aten.tanh_backward(dy, y).item()        # one rounding, torch's
    1.2861328125
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Callable

import numpy as np
import torch

from ._half_sum import fold_sum
from ._kernel_op import kernel_op

__all__ = ["HalfFormula", "OwnHalf", "wrap_impl", "nnabla_half", "half_sigmoid", "half_exp", "TANH",
           "SIGMOID", "ELU", "SOFTPLUS", "POW_SCALAR", "R_DIV_SCALAR", "R_POW_SCALAR", "TAN",
           "ASINH",
           "SOFTSIGN", "TANH_SHRINK", "ERF", "EXP", "LOG_SIGMOID", "HARD_SIGMOID", "SELU", "GELU",
           "MISH", "ADD2", "SUB2", "MUL2", "DIV2", "POW2", "BINARY_CROSS_ENTROPY",
           "HUBER_LOSS"]

_F16 = torch.float16


class HalfFormula:
    """NNabla 1.39's expressions of an element-wise function in ``Half``.

    ``forward(*xs, **attrs)`` (None: the op's own implementation, where it rounds as NNabla
    does) and one gradient ``grad(dy, *xs, y, **attrs)`` per input, written with torch ops:
    on float16 tensors each op rounds as a ``Half`` operator does.  ``attrs`` names the op's
    attributes the expressions read, given to them as ``(T)a0``: rounded to float16;
    ``precise``: a binary transform's, evaluated in float from the float16 values and
    rounded once (its ``T`` is ``float``: the attributes rounded to float32); ``raw_attrs``:
    the attributes as the op received them (a formula that rounds them its own way);
    ``broadcast_only``: the formula only where the inputs' shapes differ (where torch's
    kernels round as NNabla's do but its sum of a broadcast input's gradient does not).

    Example:
        >>> import torch
        >>> square = HalfFormula(lambda x: x * x, (lambda dy, x, y: dy * 2 * x,))
        >>> square.grads[0](torch.ones(1), torch.full((1,), 3.0), None).item()
        6.0
    """

    __slots__ = ("forward", "grads", "attrs", "precise", "raw_attrs", "broadcast_only")

    def __init__(self, forward: Callable | None, grads: tuple, attrs: tuple = (),
                 precise: bool = False, raw_attrs: bool = False, broadcast_only: bool = False):
        self.forward = forward
        self.grads = grads
        self.attrs = attrs
        self.precise = precise
        self.raw_attrs = raw_attrs
        self.broadcast_only = broadcast_only


class OwnHalf:
    """An op's own implementation of NNabla's ``Half`` expressions, given where a
    :class:`HalfFormula` would be (``@op(..., nnabla_half=OwnHalf(half))``): :func:`wrap_impl`
    calls ``half(*args, **kwargs)`` instead of the op's implementation where it would compute
    a formula (``half_formula=True``, every input a float16 CPU tensor): ``swish`` with
    ``rule="nnabla"``, whose backward reads the output (``ops/_output_grads.py``).

    Example:
        >>> import torch
        >>> run = wrap_impl(torch.neg, 1, OwnHalf(lambda x: x * 2))
        >>> x = torch.ones(1, dtype=torch.float16)
        >>> run(x).item(), run(x, half_formula=True).item()
        (-1.0, 2.0)
    """

    __slots__ = ("half",)
    broadcast_only = False

    def __init__(self, half: Callable):
        self.half = half


def nnabla_half(t: torch.Tensor) -> torch.Tensor:
    """The float32 ``t`` made float16 as NNabla 1.39's ``Half(float)`` does (float_bits.hpp
    ``downconvert_to``, step 4: a value whose exponent is below the smallest subnormal's,
    ``|v| < 2**-24``, is a zero of its sign; the rest rounded to nearest, ties to even, as
    torch's cast), where torch rounds ``(2**-25, 2**-24)`` up to ``2**-24``.  Its gradient
    is the cast's (passed through, a flushed value's too).

    Example:
        >>> nnabla_half(torch.tensor([4e-8, -5.3e-8, 7e-8])).tolist()
        [0.0, -0.0, 5.960464477539063e-08]
    """
    return _NNablaHalf.apply(t)


class _NNablaHalf(torch.autograd.Function):
    @staticmethod
    def forward(ctx, t):
        return torch.where(t.abs() < 2.0 ** -24, t * 0, t).to(_F16)

    @staticmethod
    def backward(ctx, g):
        return g.to(torch.float32)


def _round_as(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The float ``v`` in ``dtype``: NNabla's ``Half(float)`` for float16 (:func:`nnabla_half`)."""
    return nnabla_half(v) if dtype == _F16 and v.dtype == torch.float32 else v.to(dtype)


def _same(v):
    return v


def _float_value(v):
    """``(T)a0`` in a binary transform, whose ``T`` is ``float``: a real number rounded to
    float32 (as a Python float)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    return float(torch.tensor(float(v), dtype=torch.float32))


def _half_value(v):
    """``(T)a0``: a real number rounded to float16 (as a Python float)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    return float(torch.tensor(float(v), dtype=_F16))


class _HalfElementwise(torch.autograd.Function):
    """The formula's forward and gradients on float16 tensors (see the module docstring)."""

    @staticmethod
    def forward(ctx, formula, impl_call, attrs, *xs):
        if formula.forward is None:
            y = impl_call()
        elif formula.precise:
            y = _round_as(formula.forward(*[x.float() for x in xs], **attrs), xs[0].dtype)
        else:
            y = formula.forward(*xs, **attrs)
        ctx.formula, ctx.attrs = formula, attrs
        ctx.save_for_backward(*xs, y)
        return y

    @staticmethod
    def backward(ctx, dy):
        *xs, y = ctx.saved_tensors
        formula, attrs = ctx.formula, ctx.attrs
        need = ctx.needs_input_grad[3:]
        if formula.precise:
            args = [dy.float()] + [x.float() for x in xs] + [y.float()]
        else:
            args = [dy] + xs + [y]
        grads = []
        for x, grad, needed in zip(xs, formula.grads, need):
            if not needed:
                grads.append(None)
                continue
            g = grad(*args, **attrs)
            if g.shape != x.shape:
                g = _broadcast_grad(g, x)
            grads.append(_round_as(g, x.dtype))
        return (None, None, None, *grads)


def wrap_impl(impl: Callable, n_inputs: int, formula: HalfFormula | OwnHalf) -> Callable:
    """``impl`` (an op's implementation, its first ``n_inputs`` parameters the tensors) computing
    ``formula`` when called with ``half_formula=True`` (what the graph passes a node bound to
    a float16 context: ``OpSpec.half_formula``) and every input is a float16 CPU tensor; else
    ``impl`` as it is (torch's kernels, for Stadyn's own float16 values).

    Example:
        >>> import torch
        >>> run = wrap_impl(torch.sigmoid, 1, SIGMOID)
        >>> x = torch.tensor([-1.3174], dtype=torch.float16)
        >>> run(x).item(), run(x, half_formula=True).item()       # torch's, NNabla's
        (0.2113037109375, 0.211181640625)
    """
    try:
        sig = inspect.signature(impl)
    except (TypeError, ValueError):
        sig = None

    @functools.wraps(impl)
    def run(*args, half_formula=False, **kwargs):
        # only where the graph says so (a node bound to NNabla's cpu:half: OpSpec.half_formula)
        if (not half_formula or len(args) < n_inputs
                or not _all_half_cpu(args[:n_inputs])
                or (formula.broadcast_only and _same_shapes(args[:n_inputs]))):
            return impl(*args, **kwargs)
        if isinstance(formula, OwnHalf):
            return formula.half(*args, **kwargs)
        attrs = {}
        if formula.attrs:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            cast = (_same if formula.raw_attrs else _float_value if formula.precise
                    else _half_value)
            attrs = {name: cast(bound.arguments[name]) for name in formula.attrs}
        return _HalfElementwise.apply(formula, lambda: impl(*args, **kwargs), attrs,
                                      *args[:n_inputs])
    return run


def _same_shapes(xs) -> bool:
    shape = xs[0].shape
    return all(x.shape == shape for x in xs[1:])


def _fold_impl(cols: torch.Tensor) -> torch.Tensor:
    """``cols`` ``(n, K)`` float32: for each of the ``K`` columns, the float16 sum from 0 of
    its ``n`` values in order, each addition in float rounded to float16; an overflow gives
    ``inf`` silently, as NNabla's ``Half`` does."""
    a = cols.detach().contiguous().numpy()
    with np.errstate(over="ignore", invalid="ignore"):
        h = a.astype(np.float16)
        if np.array_equal(h.astype(np.float32), a, equal_nan=True):
            acc = _fold_half_values(h)
        else:
            acc = _fold_float_values(a)
    return torch.from_numpy(acc)


def _fold_half_values(h: np.ndarray) -> np.ndarray:
    """The fold of :func:`_fold_impl` where every value is a float16 number (the gradient of
    ``add2``/``sub2``: ``dy`` itself): NumPy's float16 addition is ``Half(float(a) +
    float(b))``, so ``add.accumulate`` along each column (made a row, after a zero) is the
    fold, in C."""
    rows = np.zeros((h.shape[1], h.shape[0] + 1), np.float16)
    rows[:, 1:] = h.T
    return np.ascontiguousarray(np.add.accumulate(rows, axis=1)[:, -1])


def _fold_float_values(a: np.ndarray) -> np.ndarray:
    """The fold of :func:`_fold_impl` of float values (a product's gradient, ``mul2``'s
    ``dy * x1``): one float addition and one rounding per row, into buffers kept."""
    acc = np.zeros(a.shape[1], np.float16)
    total = np.empty(a.shape[1], np.float32)
    for row in a:
        np.add(acc, row, out=total)
        acc[...] = total
    return acc


_half_fold_float = kernel_op("stadyn_kernels::half_fold_float", "(Tensor cols) -> Tensor",
                             _fold_impl,
                             lambda cols: cols.new_empty((cols.shape[1],), dtype=_F16))


def _broadcast_grad(g: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The gradient ``g`` (the output's shape) of the broadcast input ``x``: NNabla's
    ``g0[idx0] = Half(float(g0[idx0]) + grad)`` over the output in order
    (transform_binary_grad0), a fold from 0 of the float gradients over the broadcast axes
    in row-major order, rounded after each addition.  Under ``create_graph`` (``nn.grad``)
    NNabla builds the gradient from its functions instead (backward_function/utils.py
    ``sum_for_arithmetics``): the element-wise gradient as its function's ``Half`` output
    (``Mul2``'s ``dy * x1``, rounded once) and then ``F.sum`` over the broadcast axes, its
    ``Half`` fold (``_half_sum.fold_sum``, differentiable).  Off the CPU the float sum
    rounded once."""
    g = g.float()
    nd = g.ndim
    target = (1,) * (nd - x.ndim) + tuple(x.shape)
    red = [a for a in range(nd) if target[a] == 1 and g.shape[a] != 1]
    if g.device.type != "cpu":
        return g.sum_to_size(x.shape)
    if torch.is_grad_enabled():
        return fold_sum(g.to(x.dtype), red, True).reshape(x.shape)
    keep = [a for a in range(nd) if a not in red]
    n = 1
    for a in red:
        n *= g.shape[a]
    cols = g.permute(*red, *keep).reshape(n, -1)
    return _half_fold_float(cols).reshape(x.shape)


def _all_half_cpu(xs) -> bool:
    for x in xs:
        if not isinstance(x, torch.Tensor) or x.dtype is not _F16 or x.device.type != "cpu":
            return False
    return True


def _where(c, a, b):
    return torch.where(c, a, b)


def _rdiv(a: float, t: torch.Tensor) -> torch.Tensor:
    """``(T)a / t``: one division (torch's ``a / t`` is ``t.reciprocal() * a``, two
    roundings)."""
    return torch.div(torch.tensor(a, dtype=t.dtype), t)


def _in_float(fn):
    """``fn`` as NNabla's ``std`` function of a ``Half``: computed in float on the value and
    rounded to its type (``Half(std::exp(float(h)))``: half.cpp), where torch's own float16
    kernel may not round so (its ``erf`` of float16 -0.1038 is -0.11676, ``erf`` in float
    rounded -0.11670)."""
    def run(t, *args):
        if isinstance(t, torch.Tensor):
            return _round_as(fn(t.float(), *args), t.dtype)
        other = args[0]                      # ``pow(scalar, tensor)``
        return _round_as(fn(t, other.float()), other.dtype)
    return run


_exp, _log, _tanh, _cos = (_in_float(f) for f in (torch.exp, torch.log, torch.tanh, torch.cos))
#: ``std::exp`` of a ``Half`` tensor: in float, rounded to its type
half_exp = _exp
_sqrt, _pow, _erf = (_in_float(f) for f in (torch.sqrt, torch.pow, torch.erf))


def half_sigmoid(x: torch.Tensor) -> torch.Tensor:
    """NNabla's ``(T)1 / ((T)1 + std::exp(-x))`` of a float16 tensor, three roundings (its
    ``Sigmoid`` and the ``Swish`` gradient's term).

    Example:
        >>> import torch
        >>> x = torch.tensor([-1.3174], dtype=torch.float16)
        >>> half_sigmoid(x).item(), torch.sigmoid(x).item()          # NNabla's, torch's
        (0.211181640625, 0.2113037109375)
    """
    return 1 / (1 + _exp(-x))


def _half_log(v: float) -> float:
    """``std::log((T)v)``: the float logarithm of the float16 value, rounded to float16."""
    return float(torch.tensor(v, dtype=torch.float32).log().to(_F16))


# --- unary: every step rounded (include/nbla/function/<name>.hpp) ----------------------------
#: ``dy * ((T)1 - y * y)`` (tanh.hpp)
TANH = HalfFormula(None, (lambda dy, x, y: dy * (1 - y * y),))
#: ``(T)1 / ((T)1 + exp(-x))``; ``dy * y * ((T)1 - y)`` (sigmoid.hpp)
SIGMOID = HalfFormula(half_sigmoid,
                      (lambda dy, x, y: dy * y * (1 - y),))
#: ``x >= 0 ? x : (T)a0 * (exp(x) - (T)1)``; ``x >= 0 ? dy : dy * (T)a0 * exp(x)`` (elu.hpp)
ELU = HalfFormula(lambda x, alpha: _where(x >= 0, x, alpha * (_exp(x) - 1)),
                  (lambda dy, x, y, alpha: _where(x >= 0, dy, dy * alpha * _exp(x)),),
                  ("alpha",))
#: ``x > 0 ? x + log(exp(-x * (T)a0) + (T)1) / (T)a0 : log(exp(x * (T)a0) + (T)1) / (T)a0``;
#: ``dy / ((T)1 + exp(-(T)a0 * x))`` (softplus.hpp)
SOFTPLUS = HalfFormula(
    lambda x, beta: _where(x > 0, x + _log(_exp(-x * beta) + 1) / beta,
                           _log(_exp(x * beta) + 1) / beta),
    (lambda dy, x, y, beta: dy / (1 + _exp(-beta * x)),), ("beta",))
#: ``dy * (T)a0 * pow(x, (T)a0 - (T)1)`` (pow_scalar.hpp; the forward is torch's pow)
POW_SCALAR = HalfFormula(
    None, (lambda dy, x, y, val: dy * val * _pow(x, _half_value(val - 1)),), ("val",))
#: ``dy * (-(T)a0 / (x * x))`` (r_div_scalar.hpp)
R_DIV_SCALAR = HalfFormula(None, (lambda dy, x, y, val: dy * _rdiv(-val, x * x),), ("val",))
#: ``dy * pow((T)a0, x) * log((T)a0)`` (r_pow_scalar.hpp)
R_POW_SCALAR = HalfFormula(
    None, (lambda dy, x, y, val: dy * _pow(val, x) * _half_log(val),), ("val",))
#: ``dy / pow(cos(x), (T)2)`` (tan.hpp)
TAN = HalfFormula(None, (lambda dy, x, y: dy / _pow(_cos(x), 2),))
#: ``dy / sqrt(x * x + 1)`` (asinh.hpp)
ASINH = HalfFormula(None, (lambda dy, x, y: dy / _sqrt(x * x + 1),))
#: ``dy / pow(1 + abs(x), 2)`` (softsign.hpp)
SOFTSIGN = HalfFormula(None, (lambda dy, x, y: dy / _pow(1 + torch.abs(x), 2),))
#: ``x - tanh(x)``; ``dy * pow(tanh(x), (T)2)`` (tanh_shrink.hpp)
TANH_SHRINK = HalfFormula(None, (lambda dy, x, y: dy * _pow(_tanh(x), 2),))
#: ``erf(x)``; ``2.0 / sqrt(M_PI) * exp(-(x * x)) * dy``: a ``double`` product of the
#: rounded ``exp``, made a ``Half`` through ``float`` (erf.hpp)
ERF = HalfFormula(_erf, (lambda dy, x, y: (2.0 / math.sqrt(math.pi) * _exp(-(x * x))
                                           .double() * dy.double()).float(),))
#: ``std::exp(x)``; ``dy * y`` (exp.hpp): the product of two float16 numbers is exact in
#: float, so its one rounding is NNabla's conversion (a product below 2**-24 is 0)
EXP = HalfFormula(_exp, (lambda dy, x, y: nnabla_half(dy.float() * y.float()),))
#: ``x > 0 ? -log(exp(-x) + (T)1) : x - log(exp(x) + (T)1)``; ``dy / (exp(x) + (T)1)``
#: (log_sigmoid.hpp)
LOG_SIGMOID = HalfFormula(
    lambda x: _where(x > 0, -_log(_exp(-x) + 1), x - _log(_exp(x) + 1)),
    (lambda dy, x, y: dy / (_exp(x) + 1),))

def _mish_grad(dy, x, y):
    e = _exp(x)
    num = 4 * (x + 1) + 4 * _exp(2 * x) + _exp(3 * x) + e * (4 * x + 6)
    return (dy * e * num) / _pow(2 * e + _exp(2 * x) + 2, 2)


#: ``x * tanh(log(exp(x) + (T)1))``; ``(dy * exp(x) * ((T)4 * (x + (T)1) + (T)4 *
#: exp((T)2 * x) + exp((T)3 * x) + exp(x) * ((T)4 * x + (T)6))) / pow((T)2 * exp(x) +
#: exp((T)2 * x) + (T)2, (T)2)`` (mish.hpp): in float16 ``exp(3 x)`` overflows above
#: x = 3.7, and the gradient is NaN there, as NNabla's
MISH = HalfFormula(lambda x: x * _tanh(_log(_exp(x) + 1)), (_mish_grad,))

_H02, _H25 = 0.199951171875, 2.5             # (T)0.2, (T)2.5
#: ``x > (T)2.5 ? (T)1 : x < (T)-2.5 ? (T)0 : (T)0.2 * x + (T)0.5``; ``dy * (T)0.2`` inside
#: (hard_sigmoid.hpp)
HARD_SIGMOID = HalfFormula(
    lambda x: _where(x > _H25, 1.0, _where(x < -_H25, 0.0, _H02 * x + 0.5)),
    (lambda dy, x, y: _where((x <= _H25) & (x >= -_H25), dy * _H02, 0.0),))


def _selu_coef(scale, alpha) -> float:
    """``const T coef = alpha_ * scale_``: the float members' float product, made a float16."""
    f32 = torch.float32
    return float((torch.tensor(alpha, dtype=f32) * torch.tensor(scale, dtype=f32)).to(_F16))


def _f16_of_f32(v) -> float:
    """``(T)scale_``: a float member made a float16."""
    return _half_value(_float_value(v))


#: ``x > 0 ? (T)scale_ * x : (T)coef * (exp(x) - (T)1)``; ``x > 0 ? (T)scale_ * dy :
#: (T)coef * exp(x) * dy`` (selu.cpp; ``scale_``, ``alpha_`` floats)
SELU = HalfFormula(
    lambda x, scale, alpha: _where(x > 0, _f16_of_f32(scale) * x,
                                   _selu_coef(scale, alpha) * (_exp(x) - 1)),
    (lambda dy, x, y, scale, alpha: _where(x > 0, _f16_of_f32(scale) * dy,
                                           _selu_coef(scale, alpha) * _exp(x) * dy),),
    ("scale", "alpha"), raw_attrs=True)

#: ``std::sqrt((T)(2 / M_PI))`` and ``(T)0.044715``
_GELU_C = float(torch.tensor(_half_value(2 / math.pi), dtype=torch.float32).sqrt().to(_F16))
_GELU_A = _half_value(0.044715)


def _gelu_tanh(x):
    return _tanh(_GELU_C * (x + _GELU_A * _pow(x, 3)))


def _gelu_grad(dy, x, y):
    """``dy * (0.5 * (1 + t) + 0.5 * x * (1 - pow(t, 2)) * sqrt((T)(2 / M_PI)) * (1 + 0.134145
    * pow(x, 2)))``: the ``double`` literals make those steps ``double``."""
    t = _gelu_tanh(x)
    first = 0.5 * (1 + t).double()
    second = 0.5 * x.double() * (1 - _pow(t, 2)).double() * _GELU_C
    return (dy.double() * (first + second * (1 + 0.134145 * _pow(x, 2).double()))).float()


#: ``(x / 2) * (1 + tanh(sqrt((T)(2 / M_PI)) * (x + (T)0.044715 * pow(x, 3))))`` (gelu.hpp)
GELU = HalfFormula(lambda x: (x / 2) * (1 + _gelu_tanh(x)), (_gelu_grad,))

# --- binary: in float, rounded once (include/nbla/function/<name>.hpp) ------------------------
#: ``dy``, ``dy`` / ``-dy`` / ``dy * x1``, ``dy * x0`` (bc_add2, sub2.hpp, mul2.hpp): torch's
#: own kernels but for a broadcast input's gradient
ADD2 = HalfFormula(None, (lambda dy, x0, x1, y: dy, lambda dy, x0, x1, y: dy), precise=True,
                   broadcast_only=True)
SUB2 = HalfFormula(None, (lambda dy, x0, x1, y: dy, lambda dy, x0, x1, y: -dy), precise=True,
                   broadcast_only=True)
MUL2 = HalfFormula(None, (lambda dy, x0, x1, y: dy * x1, lambda dy, x0, x1, y: dy * x0),
                   precise=True, broadcast_only=True)
#: ``dy / x1``, ``-dy * x0 / (x1 * x1)`` (div2.hpp)
DIV2 = HalfFormula(None, (lambda dy, x0, x1, y: dy / x1,
                          lambda dy, x0, x1, y: -dy * x0 / (x1 * x1)), precise=True)
#: ``dy * x1 * pow(x0, x1 - 1)``, ``dy * log(x0) * pow(x0, x1)`` (pow2.hpp)
POW2 = HalfFormula(None, (lambda dy, x0, x1, y: dy * x1 * _pow(x0, x1 - 1),
                          lambda dy, x0, x1, y: dy * _log(x0) * _pow(x0, x1)),
                   precise=True)

# --- losses (src/nbla/function/generic/binary_cross_entropy.cpp, huber_loss.hpp) -------------
#: ``std::numeric_limits<Half>::min()``: float16's smallest normal number, 2 ** -14
_TINY = 2.0 ** -14


def _floor_tiny(t: torch.Tensor) -> torch.Tensor:
    """``std::max(t, numeric_limits<T>::min())`` (NaN stays NaN)."""
    return torch.clamp(t, min=_TINY)


#: ``-(x1 * log(max(x0, min)) + (1 - x1) * log(max(1 - x0, min)))`` in ``Half`` steps; the
#: gradients ``dy * (x0 - x1) / max(x0 - x0 * x0, min)`` and
#: ``dy * (log(max(1 - x0, min)) - log(max(x0, min)))``
BINARY_CROSS_ENTROPY = HalfFormula(
    lambda x0, x1: -(x1 * _log(_floor_tiny(x0)) + (1 - x1) * _log(_floor_tiny(1 - x0))),
    (lambda dy, x0, x1, y: dy * (x0 - x1) / _floor_tiny(x0 - x0 * x0),
     lambda dy, x0, x1, y: dy * (_log(_floor_tiny(1 - x0)) - _log(_floor_tiny(x0)))))


def _huber(d, a):
    ad = torch.abs(d)
    return torch.where(ad < a, ad * ad, a * (2 * ad - a))


def _huber_slope(d, a):
    return torch.where(torch.abs(d) < a, d, torch.where(d > 0, a, -a))


#: a binary transform (in float, rounded once; ``(T)a0`` a float): ``|d| < (T)a0 ? |d| * |d|
#: : (T)a0 * (2 |d| - (T)a0)`` with ``d = x0 - x1``; the gradients ``+-2 dy (|d| < (T)a0 ?
#: d : sign(d) (T)a0)``
HUBER_LOSS = HalfFormula(
    lambda x0, x1, delta: _huber(x0 - x1, delta),
    (lambda dy, x0, x1, y, delta: 2 * dy * _huber_slope(x0 - x1, delta),
     lambda dy, x0, x1, y, delta: -2 * dy * _huber_slope(x0 - x1, delta)),
    ("delta",), precise=True)

"""Element-wise arithmetic and maths, and Variable's Python operators."""

from __future__ import annotations

import numbers

import numpy as np
import torch

from ..graph import Variable
from ._kernels import matmul as _matmul
from ._output_grads import nnabla_mul_n
from ._picks import cntk_sqrt, pick_max, pick_min
from . import _half_elementwise as _HE
from ._registry import op
from ._sequence_axis import batch_matmul_rule

_A = "arithmetic"
_M = "math"


@op(2, category=_A, elementwise=True, nnabla_half=_HE.ADD2)
def add2(x0, x1, inplace=False):
    """Element-wise ``x0 + x1`` (NumPy broadcasting).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.add2(sd.Variable.from_numpy_array([1., 2.]), sd.Variable.from_numpy_array([3., 4.]))
        >>> y.d
        array([4., 6.], dtype=float32)
    """
    return x0 + x1


@op(2, category=_A, elementwise=True, nnabla_half=_HE.SUB2)
def sub2(x0, x1, inplace=False):
    """Element-wise ``x0 - x1``.  Example: ``F.sub2(a, b)`` or ``a - b``."""
    return x0 - x1


@op(2, category=_A, elementwise=True, nnabla_half=_HE.MUL2)
def mul2(x0, x1, inplace=False):
    """Element-wise ``x0 * x1``.  Example: ``F.mul2(a, b)`` or ``a * b``."""
    return x0 * x1


@op(2, category=_A, elementwise=True, nnabla_half=_HE.DIV2)
def div2(x0, x1, inplace=False):
    """Element-wise ``x0 / x1``.  Example: ``F.div2(a, b)`` or ``a / b``."""
    return x0 / x1


@op(2, category=_A, elementwise=True, nnabla_half=_HE.POW2)
def pow2(x0, x1, inplace=False, rule="nnabla"):
    """Element-wise ``x0 ** x1``.  Example: ``F.pow2(a, b)`` or ``a ** b``.  With
    ``rule="cntk"`` the gradient of ``x1`` is 0 where ``x0 <= 0`` (CNTK 2.7's
    ``ElementwiseProductWithPowExponentDerivative``, TensorOps.h:351: ``c <= 0 ? 0 : a * b *
    log(c)``), not ``y * log(x0)``'s NaN; the values are the same."""
    if _cntk_rule("pow2", rule) and isinstance(x1, torch.Tensor) and x1.requires_grad:
        # (the exponent held where the base is not positive: no gradient reaches it there)
        x1 = torch.where(x0 > 0, x1, x1.detach())
    return torch.pow(x0, x1)


@op(2, category=_A, elementwise=True)
def maximum2(x0, x1, rule="nnabla"):
    """Element-wise maximum, as CNTK 2.7 and NNabla 1.39 compute it: ``x0 > x1 ? x0 : x1``,
    so a NaN in ``x0`` gives ``x1``, a NaN in ``x1`` gives NaN, and a tie gives ``x1``; the
    gradient goes to the operand taken.  Where the two are unordered (a NaN) NNabla 1.39 gives
    the gradient to neither, CNTK 2.7 (``rule="cntk"``, ``element_max``'s) to ``x1``.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.maximum2(sd.Variable.from_numpy_array([np.nan, 3.0, 2.0]),
        ...                    sd.Variable.from_numpy_array([1.0, np.nan, 2.0]))
        >>> y.d
        array([ 1., nan,  2.], dtype=float32)
    """
    return pick_max(x0, x1, _cntk_rule("maximum2", rule))


@op(2, category=_A, elementwise=True)
def minimum2(x0, x1, rule="nnabla"):
    """Element-wise minimum, ``x0 < x1 ? x0 : x1`` (NaN, ties and ``rule`` as
    :func:`maximum2`).  Example: ``F.minimum2(a, b)``."""
    return pick_min(x0, x1, _cntk_rule("minimum2", rule))


def _cntk_rule(name: str, rule: str) -> bool:
    if rule not in ("nnabla", "cntk"):
        raise ValueError(f"{name}: rule={rule!r}: 'nnabla' or 'cntk'")
    return rule == "cntk"


@op(1, category=_A, shape="elementwise")
def add_scalar(x, val=1.0, inplace=False):
    """``x + val``.  Example: ``F.add_scalar(x, 2.0)`` or ``x + 2.0``."""
    return x + val


@op(1, category=_A, shape="elementwise")
def mul_scalar(x, val=1.0, inplace=False):
    """``x * val``.  Example: ``F.mul_scalar(x, 0.5)`` or ``x * 0.5``."""
    return x * val


@op(1, category=_A, shape="elementwise", nnabla_half=_HE.POW_SCALAR)
def pow_scalar(x, val=1.0, inplace=False):
    """``x ** val``.  Example: ``F.pow_scalar(x, 2)`` or ``x ** 2``."""
    return torch.pow(x, val)


@op(1, category=_A, shape="elementwise")
def r_sub_scalar(x, val=1.0):
    """``val - x``.  Example: ``F.r_sub_scalar(x, 1.0)`` or ``1.0 - x``."""
    return val - x


@op(1, category=_A, shape="elementwise", nnabla_half=_HE.R_DIV_SCALAR)
def r_div_scalar(x, val=1.0):
    """``val / x``, divided in ``x``'s precision as NNabla's kernel divides (``val / x``
    of a Python number is torch's ``x.reciprocal() * val``, one rounding more: 6 / 7 came out
    0.85714293, not float32's nearest 0.85714287).  Example: ``F.r_div_scalar(x, 1.0)`` or
    ``1.0 / x``."""
    if isinstance(val, numbers.Number) and not isinstance(val, bool):
        # the numerator in the dtype a number's division gives (an integer x: the default
        # float), then one IEEE division
        dtype = x.dtype if x.is_floating_point() else torch.get_default_dtype()
        return torch.div(torch.tensor(float(val), dtype=dtype, device=x.device), x)
    return val / x


@op(1, category=_A, shape="elementwise", nnabla_half=_HE.R_POW_SCALAR)
def r_pow_scalar(x, val=1.0):
    """``val ** x``.  Example: ``F.r_pow_scalar(x, 2.0)`` or ``2.0 ** x``."""
    return torch.pow(val, x)


@op(1, category=_A, shape="elementwise")
def maximum_scalar(x, val=1.0):
    """``max(x, val)`` element-wise.  Example: ``F.maximum_scalar(x, 0.0)``."""
    return torch.clamp(x, min=val)


@op(1, category=_A, shape="elementwise")
def minimum_scalar(x, val=1.0):
    """``min(x, val)`` element-wise.  Example: ``F.minimum_scalar(x, 6.0)``."""
    return torch.clamp(x, max=val)


@op(1, category=_A, frameworks=("stadyn", "cntk"), shape="elementwise")
def clip_by_value_scalar(x, min=-1.0, max=1.0):
    """Clamp ``x`` into ``[min, max]``.  Example: ``F.clip_by_value_scalar(x, -1, 1)``."""
    return torch.clamp(x, min=min, max=max)


@op(3, category=_A)
def clip_by_value(x, min, max):  # noqa: A002 - NNabla's names
    """Clamp ``x`` into ``[min, max]``, bounds that broadcast against ``x`` (Variables or
    numbers), as NNabla's ``clip_by_value``: the gradient passes to ``x`` strictly inside the
    bounds and to a bound where ``x`` is at or beyond it.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.clip_by_value(sd.Variable.from_numpy_array([-2.0, 0.5, 3.0]),
        ...                         sd.Variable.from_numpy_array([-1.0]),
        ...                         sd.Variable.from_numpy_array([1.0]))
        >>> y.d
        array([-1. ,  0.5,  1. ], dtype=float32)
    """
    low = torch.where(x <= min, min, max)
    return torch.where((x > min) & (x < max), x, low)


@op(None, category=_A)
def add_n(*x):
    """The element-wise sum of any number of same-shaped arrays.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     a = sd.Variable.from_numpy_array([1.0, 2.0])
        ...     y = F.add_n(a, a, a)
        >>> y.d
        array([3., 6.], dtype=float32)
    """
    _same_shapes("add_n", x)
    y = x[0]
    for v in x[1:]:
        y = y + v
    return y


@op(None, category=_A)
def mul_n(*x, rule="torch"):
    """The element-wise product of any number of same-shaped arrays.  ``rule="nnabla"``:
    NNabla 1.39's backward, ``dy * y / x_i`` (NaN where ``x_i`` is 0), which reads the output
    (what a user wrote into it included).  Example: ``F.mul_n(a, b, c)``."""
    _same_shapes("mul_n", x)
    if rule == "nnabla":
        return nnabla_mul_n(*x)
    if rule != "torch":
        raise ValueError(f"mul_n: rule={rule!r}: 'torch' or 'nnabla'")
    y = x[0]
    for v in x[1:]:
        y = y * v
    return y


def _same_shapes(name, xs) -> None:
    if not xs:
        raise ValueError(f"{name}: needs at least one input")
    if len({tuple(v.shape) for v in xs}) > 1:
        raise ValueError(f"{name}: inputs must have one shape, got "
                         f"{[tuple(v.shape) for v in xs]}")


@op(2, category=_A, precision="half", sequence=batch_matmul_rule)
def batch_matmul(a, b, transpose_a=False, transpose_b=False):
    """Matrix product over the last two axes, batched over the rest.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.batch_matmul(sd.Variable((2, 3, 4)), sd.Variable((2, 4, 5)))
        >>> y.shape
        (2, 3, 5)
    """
    if transpose_a:
        a = a.transpose(-1, -2)
    if transpose_b:
        b = b.transpose(-1, -2)
    return _matmul(a, b)      # torch.matmul; bf16 on a CPU without its kernels: in fp32


class _NnablaAbs(torch.autograd.Function):
    """NNabla 1.39's ``Abs``: forward ``|x|`` (+0.0 at -0.0), backward ``dy * (x < 0 ? -1 :
    1)`` on the input as its backward finds it (include/nbla/function/abs.hpp:42; the
    backward of base_transform_unary.hpp:128 reads ``inputs[0]``'s data when it runs): x
    itself is saved, so a value written into ``x`` between the forward and the backward gives
    the gradient its sign (``graph/_written_leaves.py``), as NNabla's does; a sign computed in
    the forward and saved kept the old one."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.where(x < 0, -1.0, 1.0).to(x.dtype) + 0.0

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.where(x < 0, -1.0, 1.0).to(grad.dtype)


@op(1, category=_M, shape="elementwise")
def abs(x, rule="torch"):  # noqa: A001 - NNabla's name
    """``|x|``; its gradient ``sign(x)`` (0 at 0 and at NaN: torch's rule).  ``rule="cntk"``:
    CNTK 2.7's gradient ``Sgn(x)``, which is ``x`` itself at 0 and NaN (so -0.0 at -0.0, NaN
    at NaN; Source/Math/TensorOps.h:177-182, 324).  ``rule="nnabla"``: NNabla 1.39's gradient
    ``x < 0 ? -1 : 1`` (include/nbla/function/abs.hpp), so +1 at 0, -0.0 and NaN.

    Example:
        >>> import torch, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array([-2.0, float("nan")], need_grad=True)
        >>> with sd.auto_forward():
        ...     y = F.abs(x, rule="cntk")
        >>> x.grad = None; y.backward(clear_buffer=True); x.g.tolist()
        [-1.0, nan]
    """
    if rule == "cntk":
        # x * Sgn(x) is |x| exactly (-0.0 * -0.0 is +0.0), and its gradient g * Sgn(x)
        sgn = torch.where(torch.abs(x) > 0, torch.sign(x), x).detach()
        return x * sgn
    if rule == "nnabla" and x.is_floating_point():
        # x * s is |x| but for -0.0 (-0.0 * 1), which adding +0.0 turns into +0.0; the
        # backward reads x's sign when it runs (_NnablaAbs)
        return _NnablaAbs.apply(x)
    if rule == "nnabla":            # integers: no gradient, and + 0.0 would make them float
        return torch.abs(x)
    if rule != "torch":
        raise ValueError(f"abs: rule={rule!r}: 'torch', 'cntk' or 'nnabla'")
    return torch.abs(x)


@op(1, category=_M, shape="elementwise", nnabla_half=_HE.EXP)
def exp(x):
    """``e ** x``.  Example: ``F.exp(x)``."""
    return torch.exp(x)


@op(1, category=_M, shape="elementwise")
def log(x):
    """Natural logarithm.  Example: ``F.log(x)``."""
    return torch.log(x)


# CNTK 2.7's Log (Math/TensorOps.h:200, CommonMatrix.h:34-35): log of its EPS_IN_LOG (1e-37f),
# -85.1f, for anything below 1e-37f (0 and negative numbers too), and the gradient from the
# output, exp(-log x): 1/x, and exp(85.1) where it was floored
_CNTK_EPS_IN_LOG, _CNTK_LOG_OF_EPS = float(np.float32(1e-37)), float(np.float32(-85.1))


@op(1, category=_M, frameworks=("cntk",), shape="elementwise")
def cntk_log(x):
    """CNTK's natural logarithm: ``log(x)``, and -85.1 (``log(1e-37)``) below 1e-37 -- for 0 and
    negative numbers too, where ``log`` gives -inf and nan.  Its gradient is CNTK's, computed
    from the output: ``exp(-y)``, so ``1/x`` and ``exp(85.1)`` where the value was floored.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.cntk_log(sd.Variable.from_numpy_array(np.array([0., 1e-38, 1.], np.float32)))
        >>> y.d
        array([-85.1, -85.1,   0. ], dtype=float32)
    """
    floored = x < _CNTK_EPS_IN_LOG
    value = torch.where(floored, torch.full_like(x, _CNTK_LOG_OF_EPS),
                        torch.log(torch.where(floored, torch.ones_like(x), x))).detach()
    slope = torch.exp(value * -1.0)
    return value + (x - x.detach()) * slope


@op(1, category=_M, frameworks=("stadyn", "cntk"), shape="elementwise")
def sqrt(x, rule="torch"):
    """Square root; NaN for negative numbers, unless ``rule="cntk"``: CNTK 2.7's
    ``sqrt(x > 0 ? x : 0)``, 0 for NaN and negative numbers, with the gradient
    ``1 / (2 * sqrt)`` (inf there).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.sqrt(sd.Variable.from_numpy_array([4.0, -1.0]), rule="cntk")
        >>> y.d
        array([2., 0.], dtype=float32)
    """
    if rule == "cntk":
        return cntk_sqrt(x)
    if rule != "torch":
        raise ValueError(f"sqrt: rule={rule!r}: 'torch' or 'cntk'")
    return torch.sqrt(x)


# ---------------------------------------------------------------------------------------------
# Python operators on Variables
# ---------------------------------------------------------------------------------------------
def _is_scalar(v) -> bool:
    return isinstance(v, numbers.Number) or (isinstance(v, np.ndarray) and v.ndim == 0)


def _as_variable(v) -> Variable:
    if isinstance(v, Variable):
        return v
    return Variable.from_numpy_array(np.asarray(v, dtype=np.float32))


def _binary(var_op, scalar_op, reflected_scalar_op=None):
    def method(self, other):
        if _is_scalar(other):
            return scalar_op(self, float(other))
        return var_op(self, _as_variable(other))

    def reflected(self, other):
        if _is_scalar(other):
            if reflected_scalar_op is None:
                return scalar_op(self, float(other))
            return reflected_scalar_op(self, float(other))
        return var_op(_as_variable(other), self)
    return method, reflected


def _install_operators() -> None:
    ops = {
        "add": _binary(add2, add_scalar),
        "sub": _binary(sub2, lambda x, v: add_scalar(x, -v), r_sub_scalar),
        "mul": _binary(mul2, mul_scalar),
        "truediv": _binary(div2, lambda x, v: mul_scalar(x, 1.0 / v), r_div_scalar),
        "pow": _binary(pow2, pow_scalar, r_pow_scalar),
    }
    for name, (method, reflected) in ops.items():
        setattr(Variable, f"__{name}__", method)
        setattr(Variable, f"__r{name}__", reflected)
    Variable.__neg__ = lambda self: mul_scalar(self, -1.0)  # type: ignore[assignment]
    Variable.__pos__ = lambda self: self  # type: ignore[assignment]
    Variable.__abs__ = lambda self: abs(self)  # type: ignore[assignment]
    Variable.__matmul__ = lambda self, other: batch_matmul(self, _as_variable(other))  # type: ignore[assignment]


_install_operators()

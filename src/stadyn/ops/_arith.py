"""Element-wise arithmetic and maths, and Variable's Python operators."""

from __future__ import annotations

import numbers

import numpy as np
import torch

from ..graph import Variable
from ._registry import op
from ._util import import_unary, onnx_unary

_A = "arithmetic"
_M = "math"


# -- ONNX mappings (see OpSpec.onnx / OpSpec.onnx_import) -------------------------------------
def _torch_of(dtype) -> torch.dtype:
    return torch.from_numpy(np.empty(0, dtype=dtype)).dtype


def _numpy_of(dtype: torch.dtype) -> np.dtype:
    return torch.empty(0, dtype=dtype).numpy().dtype


def _binary_onnx(op_type):
    def export(g, inputs, attrs):
        a, b = inputs[0], inputs[1]
        da, db = g.dtype(a), g.dtype(b)
        if da != db:  # torch promotes mixed dtypes; ONNX wants them equal (Pow: the base's)
            target = _numpy_of(torch.promote_types(_torch_of(da), _torch_of(db)))
            a = a if da == target else g.cast(a, target)
            if op_type != "Pow":
                b = b if db == target else g.cast(b, target)
        return g.op(op_type, [a, b])
    export.__doc__ = op_type
    return export


def _scalar_onnx(op_type, reflected=False):
    def export(g, inputs, attrs):
        x = inputs[0]
        dtype = g.dtype(x)
        if dtype.kind != "f":  # torch: an integer tensor with a float scalar gives float32
            x, dtype = g.cast(x, np.float32), np.dtype(np.float32)
        c = g.const(np.asarray(attrs["val"], dtype=dtype))
        return g.op(op_type, [c, x] if reflected else [x, c])
    export.__doc__ = op_type
    return export


def _clip_onnx(g, inputs, attrs):
    """Clip"""
    x = inputs[0]
    dtype = g.dtype(x)
    if dtype.kind != "f":
        x, dtype = g.cast(x, np.float32), np.dtype(np.float32)
    return g.op("Clip", [x, g.const(np.asarray(attrs["min"], dtype=dtype)),
                         g.const(np.asarray(attrs["max"], dtype=dtype))])


def _batch_matmul_onnx(g, inputs, attrs):
    """MatMul (and Transpose)"""
    a, b = inputs[0], inputs[1]

    def swap_last(x, flag):
        n = g.ndim(x)
        if not flag or n < 2:
            return x
        return g.op("Transpose", [x], perm=list(range(n - 2)) + [n - 1, n - 2])
    return g.op("MatMul", [swap_last(a, attrs["transpose_a"]), swap_last(b, attrs["transpose_b"])])


def _import_binary(op_name):
    def build(node):
        a, b = node.dtype(0), node.dtype(1)
        if op_name == "div2" and a.kind != "f":
            node.unsupported(f"integer division ({a}): div2 is true division")
        if op_name == "pow2":
            if a.kind != "f" and b.kind == "f":
                node.unsupported(f"{a} base with a {b} exponent (torch gives floats)")
            if a != b and (a.kind == b.kind or a.kind != "f"):
                node.unsupported(f"{a} base with a {b} exponent (torch promotes the result)")
        f = {"add2": add2, "sub2": sub2, "mul2": mul2, "div2": div2, "pow2": pow2}[op_name]
        return f(node.var(0), node.var(1))
    return build


def _import_fold(op_name):
    """Variadic ONNX ops (Max, Min, Sum, Mean): a chain of binary catalog ops."""
    def build(node):
        f = {"maximum2": maximum2, "minimum2": minimum2, "add2": add2}[op_name]
        args = [node.var(i) for i in range(node.n_inputs) if node.has(i)]
        if node.op_type == "Mean" and node.dtype(0).kind != "f":
            node.unsupported(f"{node.dtype(0)} inputs")
        if len(args) == 1:
            from ._misc import identity
            y = identity(args[0])
        else:
            y = args[0]
            for other in args[1:]:
                y = f(y, other)
        if node.op_type == "Mean" and len(args) > 1:
            y = mul_scalar(y, 1.0 / len(args))
        return y
    return build


def _import_clip(node):
    x = node.var(0)
    if node.dtype(0).kind != "f":
        node.unsupported(f"{node.dtype(0)} input (the catalog's clip returns floats)")
    if node.opset < 11:
        lo, hi = node.attr("min"), node.attr("max")
    else:
        lo = node.const(1) if node.has(1) else None
        hi = node.const(2) if node.has(2) else None
    lo = None if lo is None else float(np.asarray(lo))
    hi = None if hi is None else float(np.asarray(hi))
    if lo is not None and hi is not None:
        return clip_by_value_scalar(x, lo, hi)
    if lo is not None:
        return maximum_scalar(x, lo)
    if hi is not None:
        return minimum_scalar(x, hi)
    from ._misc import identity
    return identity(x)


def _import_matmul(node):
    return batch_matmul(node.var(0), node.var(1))


@op(2, category=_A, onnx=_binary_onnx("Add"),
    onnx_import={"Add": _import_binary("add2"), "Sum": _import_fold("add2"),
                 "Mean": _import_fold("add2")})
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


@op(2, category=_A, onnx=_binary_onnx("Sub"), onnx_import={"Sub": _import_binary("sub2")})
def sub2(x0, x1, inplace=False):
    """Element-wise ``x0 - x1``.  Example: ``F.sub2(a, b)`` or ``a - b``."""
    return x0 - x1


@op(2, category=_A, onnx=_binary_onnx("Mul"), onnx_import={"Mul": _import_binary("mul2")})
def mul2(x0, x1, inplace=False):
    """Element-wise ``x0 * x1``.  Example: ``F.mul2(a, b)`` or ``a * b``."""
    return x0 * x1


@op(2, category=_A, onnx=_binary_onnx("Div"), onnx_import={"Div": _import_binary("div2")})
def div2(x0, x1, inplace=False):
    """Element-wise ``x0 / x1``.  Example: ``F.div2(a, b)`` or ``a / b``."""
    return x0 / x1


@op(2, category=_A, onnx=_binary_onnx("Pow"), onnx_import={"Pow": _import_binary("pow2")})
def pow2(x0, x1, inplace=False):
    """Element-wise ``x0 ** x1``.  Example: ``F.pow2(a, b)`` or ``a ** b``."""
    return torch.pow(x0, x1)


@op(2, category=_A, onnx=_binary_onnx("Max"), onnx_import={"Max": _import_fold("maximum2")})
def maximum2(x0, x1):
    """Element-wise maximum.  Example: ``F.maximum2(a, b)``."""
    return torch.maximum(x0, x1)


@op(2, category=_A, onnx=_binary_onnx("Min"), onnx_import={"Min": _import_fold("minimum2")})
def minimum2(x0, x1):
    """Element-wise minimum.  Example: ``F.minimum2(a, b)``."""
    return torch.minimum(x0, x1)


@op(1, category=_A, onnx=_scalar_onnx("Add"))
def add_scalar(x, val=1.0, inplace=False):
    """``x + val``.  Example: ``F.add_scalar(x, 2.0)`` or ``x + 2.0``."""
    return x + val


@op(1, category=_A, onnx=_scalar_onnx("Mul"), onnx_import={"Neg": import_unary("mul_scalar", -1.0)})
def mul_scalar(x, val=1.0, inplace=False):
    """``x * val``.  Example: ``F.mul_scalar(x, 0.5)`` or ``x * 0.5``."""
    return x * val


@op(1, category=_A, onnx=_scalar_onnx("Pow"))
def pow_scalar(x, val=1.0, inplace=False):
    """``x ** val``.  Example: ``F.pow_scalar(x, 2)`` or ``x ** 2``."""
    return torch.pow(x, val)


@op(1, category=_A, onnx=_scalar_onnx("Sub", reflected=True))
def r_sub_scalar(x, val=1.0):
    """``val - x``.  Example: ``F.r_sub_scalar(x, 1.0)`` or ``1.0 - x``."""
    return val - x


@op(1, category=_A, onnx=_scalar_onnx("Div", reflected=True),
    onnx_import={"Reciprocal": import_unary("r_div_scalar", 1.0)})
def r_div_scalar(x, val=1.0):
    """``val / x``.  Example: ``F.r_div_scalar(x, 1.0)`` or ``1.0 / x``."""
    return val / x


@op(1, category=_A, onnx=_scalar_onnx("Pow", reflected=True))
def r_pow_scalar(x, val=1.0):
    """``val ** x``.  Example: ``F.r_pow_scalar(x, 2.0)`` or ``2.0 ** x``."""
    return torch.pow(val, x)


@op(1, category=_A, onnx=_scalar_onnx("Max"))
def maximum_scalar(x, val=1.0):
    """``max(x, val)`` element-wise.  Example: ``F.maximum_scalar(x, 0.0)``."""
    return torch.clamp(x, min=val)


@op(1, category=_A, onnx=_scalar_onnx("Min"))
def minimum_scalar(x, val=1.0):
    """``min(x, val)`` element-wise.  Example: ``F.minimum_scalar(x, 6.0)``."""
    return torch.clamp(x, max=val)


@op(1, category=_A, onnx=_clip_onnx, onnx_import={"Clip": _import_clip})
def clip_by_value_scalar(x, min=-1.0, max=1.0):
    """Clamp ``x`` into ``[min, max]``.  Example: ``F.clip_by_value_scalar(x, -1, 1)``."""
    return torch.clamp(x, min=min, max=max)


@op(2, category=_A, onnx=_batch_matmul_onnx, onnx_import={"MatMul": _import_matmul},
    precision="half")
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
    return torch.matmul(a, b)


@op(1, category=_M, onnx=onnx_unary("Abs"),
    onnx_import={"Abs": import_unary("abs", floats_only=False)})
def abs(x):  # noqa: A001 - NNabla's name
    """``|x|``.  Example: ``F.abs(x)``."""
    return torch.abs(x)


@op(1, category=_M, onnx=onnx_unary("Exp"), onnx_import={"Exp": import_unary("exp")})
def exp(x):
    """``e ** x``.  Example: ``F.exp(x)``."""
    return torch.exp(x)


@op(1, category=_M, onnx=onnx_unary("Log"), onnx_import={"Log": import_unary("log")})
def log(x):
    """Natural logarithm.  Example: ``F.log(x)``."""
    return torch.log(x)


@op(1, category=_M, onnx=onnx_unary("Sqrt"), onnx_import={"Sqrt": import_unary("sqrt")})
def sqrt(x):
    """Square root.  Example: ``F.sqrt(x)``."""
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

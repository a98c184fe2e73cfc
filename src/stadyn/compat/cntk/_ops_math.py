"""CNTK's element-wise ops: activations, arithmetic with CNTK's broadcasting, comparisons and
logical ops (1.0 for true, 0.0 for false), rounding, trigonometry.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.input_variable(3)
    >>> data = np.array([[-1.0, 0.5, 2.0]], np.float32)
    >>> C.relu(x).eval(data).tolist(), C.greater(x, 0.4).eval(data).tolist()
    ([[0.0, 0.5, 2.0]], [[0.0, 1.0, 1.0]])
    >>> C.element_select(C.less(x, 0), C.square(x), C.negate(x)).eval(data).tolist()
    [[1.0, -0.5, -2.0]]
"""

from __future__ import annotations

import functools

import numpy as np

from ... import cntk_semantics as S
from ... import functions as F
from ...graph import Variable
from ._deferred import pending
from ._deferrable import defer_module
from ._elementwise_shapes import broadcast_checked
from ._sparse_operands import pass_sparse_on, refuse_sparse_operands
from . import _graph as G
from ._adapt import (_FLOAT, _tensor, batched, binary, const, float_arrays, named, one_op, operand,
                     operands_dtype, refuse_name, refuse_several_outputs, root_as_output,
                     same_dtype, unwrap, wrap)
from ._inferred_parameters import infer_nary
from ._mixed_axes import refuse_mixed_axes, refuse_other_sequence_axes
from ._mixins import GraphObject
from ._variables import Constant

__all__ = ["relu", "sigmoid", "tanh",
           "softsign", "exp", "log", "sqrt", "square", "abs", "negate",
           "reciprocal", "floor", "ceil", "round", "sin", "cos", "tan", "asin", "acos", "atan",
           "sinh", "cosh", "asinh", "atanh", "plus", "minus", "element_times", "element_divide",
           "element_max", "element_min", "pow", "log_add_exp", "equal", "not_equal", "less",
           "less_equal", "greater", "greater_equal", "element_and", "element_or",
           "element_xor", "element_not", "element_select", "clip", "straight_through_impl",
           "stop_gradient", "alias", "cast", "associative_multi_arg", "sum", "mean"]


def _unary(op_name: str, fn, doc: str, swig: "str | None" = ""):
    def op(x, name: str = ""):
        refuse_several_outputs(x, op.__name__ if swig == "" else swig)
        v = operand(x)
        if isinstance(v, (int, float)):         # a number: CNTK's float32 scalar constant
            v = const(v)
        return named(wrap(one_op(fn(v), v)), name, op_name)
    op.__name__ = op.__qualname__ = op_name.lower() if op_name.isalpha() else op_name
    op.__doc__ = doc
    return op


def _u(cntk_name: str, op_name: str, fn, doc: str, swig: "str | None" = ""):
    """The one-operand op ``cntk_name`` (``swig``: the C++ op CNTK 2.7 hands its operand to,
    named as SWIG names it, ``cntk_name`` unless given; None where CNTK reads the operand's
    one output first, see ``refuse_several_outputs``)."""
    f = _unary(op_name, fn, doc, swig)
    f.__name__ = f.__qualname__ = cntk_name
    return f


relu = _u("relu", "ReLU", lambda v: F.relu(v, rule="cntk"),
         "``max(x, 0)``; NaN for NaN and -inf (CNTK 2.7's ``x * (x > 0)``).", "re_lu")
sigmoid = _u("sigmoid", "StableSigmoid", F.sigmoid, "``1 / (1 + exp(-x))``.")
tanh = _u("tanh", "Tanh", F.tanh, "The hyperbolic tangent.")
exp = _u("exp", "Exp", F.exp, "``e ** x``.")
log = _u("log", "Log", F.cntk_log,
        "The natural logarithm (-85.1 below 1e-37, as in CNTK 2.7).")
sqrt = _u("sqrt", "Sqrt", lambda v: F.sqrt(v, rule="cntk"),
          "The square root; 0 for NaN and negative numbers (CNTK 2.7's ``sqrt(max(x, 0))``).")
abs = _u("abs", "Abs", lambda v: F.abs(v, rule="cntk"),  # noqa: A001
        "The absolute value; its gradient CNTK 2.7's ``Sgn(x)`` (NaN at NaN).")
square = _u("square", "ElementTimes", lambda v: F.mul2(v, v), "``x * x``.")
negate = _u("negate", "Negate", lambda v: F.mul_scalar(v, -1.0), "``-x``.")
reciprocal = _u("reciprocal", "Reciprocal", lambda v: S.divide(None, v),
                "``1 / x`` (0 where ``x`` is 0, as in CNTK 2.7).")


def _floor(v):
    """``floor(v)`` with no gradient, as CNTK 2.7's Floor (``std::floor``): -0.0 stays -0.0
    (so ``ceil(0.0)``, ``-floor(-0.0)``, is 0.0) and numbers past int64 stay themselves."""
    x = F.stop_gradient(v if v.dtype.kind == "f" else F.cast(v, "float32"))
    down = F.floor(x)
    return F.where(F.equal_scalar(down, 0.0), F.mul_scalar(x, 0.0), down)   # (zero's sign)


# CNTK 2.7 rounds by floor alone (Source/CNTKv2LibraryDll/Function.cpp:1231-1246): ceil is
# Negate(Floor(Negate x)), round Floor(Plus(x, Constant 0.5)); their graphs show those ops
floor = float_arrays("x")(_u("floor", "Floor", _floor, "Rounded down (no gradient).", None))


@float_arrays("x")
def ceil(x, name: str = ""):
    """Rounded up (no gradient): ``-floor(-x)``, as CNTK 2.7 builds it."""
    refuse_several_outputs(x, None)
    return negate(floor(negate(x)), name=name)


@float_arrays("x")
def round(x, name: str = ""):  # noqa: A001
    """Rounded to the nearest integer, halves up: ``floor(x + 0.5)``, as CNTK 2.7 builds it
    (no gradient)."""
    refuse_several_outputs(x, None)
    return floor(plus(x, 0.5), name=name)


sin = _u("sin", "Sin", lambda v: F.sin(v), "The sine.")
cos = _u("cos", "Cos", lambda v: F.cos(v), "The cosine.")
tan = _u("tan", "Tan", lambda v: F.tan(v), "The tangent.")
asin = _u("asin", "Asin", lambda v: F.asin(v), "The arc sine.")
acos = _u("acos", "Acos", lambda v: F.acos(v), "The arc cosine.")
atan = _u("atan", "Atan", lambda v: F.atan(v), "The arc tangent.")
sinh = _u("sinh", "Sinh", lambda v: F.sinh(v), "The hyperbolic sine.")
cosh = _u("cosh", "Cosh", lambda v: F.cosh(v), "The hyperbolic cosine.")
asinh = _u("asinh", "Asinh", lambda v: F.asinh(v), "The inverse hyperbolic sine.")
atanh = _u("atanh", "Atanh", lambda v: F.atanh(v), "The inverse hyperbolic tangent.")


straight_through_impl = _u("straight_through_impl", "StraightThrough", S.straight_through,
                           "``1`` where ``x > 0``, else ``-1`` (0 and NaN too) forward; the "
                           "gradient passes where ``|x| <= 1`` (the straight-through "
                           "estimator).", "straight_through")
stop_gradient = float_arrays("x")(_u("stop_gradient", "StopGradient", F.stop_gradient,
                                     "``x``, with no gradient flowing back.", None))


def alias(x, name: str = ""):
    """The same values as a new node (under another name)."""
    refuse_several_outputs(x, "alias")
    return named(wrap(F.identity(operand(x))), name, "NoOp")


def softsign(x, steepness: float = 1, name: str = ""):
    """``x / (1 + |x|)`` (CNTK 2.7 takes ``steepness`` and does not use it)."""
    refuse_several_outputs(x, "softsign")
    v = operand(x)
    return named(wrap(one_op(F.div2(v, F.add_scalar(F.abs(v), 1.0)), v)), name, "Softsign")


@float_arrays("x", "min_value", "max_value")
def clip(x, min_value, max_value, name: str = ""):
    """``x`` limited to ``[min_value, max_value]`` (numbers, or tensors broadcasting to it)."""
    refuse_several_outputs(x, None)
    infer_nary(tuple(root_as_output(v) for v in (x, min_value, max_value)), "Clip")
    if isinstance(min_value, (int, float)) and isinstance(max_value, (int, float)):
        v = operand(x)
        out = F.clip_by_value_scalar(v, float(min_value), float(max_value))
        return named(wrap(one_op(out, v)), name, "Clip")
    # CNTK 2.7's rule with tensor bounds (Source/Math/TensorOps.h:347): ``x < min ? min :
    # (x > max ? max : x)`` -- NaN stays NaN, ``min`` wins where the bounds cross -- and the
    # gradient reaches ``x`` where it was kept (bounds included, NaN not), never the bounds
    dtype = operands_dtype(x, min_value, max_value)
    v, lo, hi = same_dtype([_tensor(operand(a, dtype), dtype) for a in (x, min_value, max_value)])
    bv, bl, bh = batched(x), batched(min_value), batched(max_value)
    v, lo = S.broadcast_pair(v, lo, bv, bl)
    v, hi = S.broadcast_pair(v, hi, bv, bh)
    lo, hi = S.broadcast_pair(lo, hi, bl, bh)
    rank = max(v.ndim, lo.ndim, hi.ndim)
    v, lo, hi = [t if t.ndim == rank else F.reshape(t, (1,) * (rank - t.ndim) + tuple(t.shape))
                 for t in (v, lo, hi)]
    lo, hi = F.stop_gradient(lo), F.stop_gradient(hi)
    clipped = F.where(F.less(v, lo), lo, F.where(F.greater(v, hi), hi, v))
    out = F.where(F.equal(clipped, v), v, F.stop_gradient(clipped))
    return named(wrap(one_op(out, x, min_value, max_value)), name, "Clip")


@float_arrays("node_input")
def cast(node_input, dtype, name: str = ""):
    """The values as ``dtype`` (``np.float32``, ``np.float64``, ``np.float16``)."""
    refuse_several_outputs(node_input, None)
    return named(wrap(F.cast(operand(node_input), np.dtype(dtype).name)), name, "Cast")


# -- binary, with CNTK's broadcasting ----------------------------------------------------------


@float_arrays("left", "right")
def plus(left, right, name: str = ""):
    """``left + right`` (sample axes align on the right; the batch axis apart)."""
    refuse_other_sequence_axes("Plus", (left, right))
    return binary(F.add2, left, right, name, "Plus")


@float_arrays("left", "right")
def minus(left, right, name: str = ""):
    """``left - right``."""
    refuse_other_sequence_axes("Minus", (left, right))
    return binary(F.sub2, left, right, name, "Minus")


@float_arrays("left", "right")
def element_times(left, right, name: str = ""):
    """``left * right``, element-wise."""
    refuse_other_sequence_axes("ElementTimes", (left, right))
    return binary(F.mul2, left, right, name, "ElementTimes")


@float_arrays("left", "right")
def element_divide(left, right, name: str = ""):
    """``left / right``, element-wise; 0 where ``right`` is 0 (CNTK 2.7's convention)."""
    refuse_mixed_axes("ElementTimes", (left, right), 1, "Reciprocal")
    refuse_typed_operands("ElementTimes", left, right)
    return binary(S.divide, left, right, name, "ElementDivide")


@float_arrays("left", "right")
def element_max(left, right, name: str = ""):
    """The larger of the two, element-wise: ``left > right ? left : right`` (a NaN in ``left``
    gives ``right``, one in ``right`` NaN; a tie gives ``right``, which takes the gradient)."""
    refuse_mixed_axes("Greater", (left, right), 1, "placeholder")
    refuse_typed_operands("Greater", left, right)
    return binary(_element_max, left, right, name, "ElementMax")


@float_arrays("left", "right")
def element_min(left, right, name: str = ""):
    """The smaller of the two, element-wise: ``left < right ? left : right``."""
    refuse_mixed_axes("Less", (left, right), 1, "placeholder")
    refuse_typed_operands("Less", left, right)
    return binary(_element_min, left, right, name, "ElementMin")


def refuse_typed_operands(op: str, left, right) -> None:
    """CNTK 2.7's ValueError for ``element_max``/``element_min``/``element_divide`` of two
    Variables of different float types, constants too (``element_max(x64, C.constant(...))``):
    CNTK builds them of other ops (ElementSelect(Greater(l, r), l, r), ElementTimes(l,
    Reciprocal(r)): Function.cpp:1606-1631) over placeholders for their operands, whose types
    the inner op ``op`` compares before a Float constant could take the other's Double, as
    it does for ``plus``.  Numbers and NumPy arrays take the op's type."""
    a, b = unwrap(left), unwrap(right)
    if not all(isinstance(v, Variable) and G.kind_of(v) != "placeholder" for v in (a, b)):
        return
    have = [np.dtype(str(v.dtype)) for v in (a, b)]
    if have[0] != have[1] and all(d in _FLOAT for d in have):
        raise ValueError(f"Primitive op '{op}' passed operands with different DataTypes "
                         f"'{_FLOAT[have[0]]}' and '{_FLOAT[have[1]]}' (CNTK 2.7 builds this op "
                         "of others over its operands, which do not convert a constant's "
                         "type): give both one type")


def _element_max(a, b):
    return F.maximum2(a, b, rule="cntk")


def _element_min(a, b):
    return F.minimum2(a, b, rule="cntk")


@float_arrays("base", "exponent")
def pow(base, exponent, name: str = ""):  # noqa: A001
    """``base ** exponent``, element-wise."""
    refuse_other_sequence_axes("Pow", (base, exponent))
    return binary(functools.partial(F.pow2, rule="cntk"), base, exponent, name, "Pow")


@float_arrays("left", "right")
def log_add_exp(left, right, name: str = ""):
    """``log(exp(left) + exp(right))``, computed without overflow."""
    refuse_other_sequence_axes("LogPlus", (left, right))
    return binary(S.log_add_exp, left, right, name, "LogPlus")


# -- comparisons and logic: 1.0 / 0.0 --------------------------------------------------------


def _ge(a, b):     # in the operands' type (float64 operands: a float64 result, as CNTK's)
    return F.cast(F.greater_equal(a, b), np.dtype(a.dtype).name)


def _le(a, b):
    return F.cast(F.less_equal(a, b), np.dtype(a.dtype).name)


def _gt(a, b):
    return F.cast(F.greater(a, b), np.dtype(a.dtype).name)


def _lt(a, b):
    return F.cast(F.less(a, b), np.dtype(a.dtype).name)


def _called(out, op, left, right, name: str):
    """``out``, made by the comparison ``op`` of ``left`` and ``right``, recorded as that call
    (:data:`~._graph.CALLS`): a clone calls it again, so that its output takes its
    substitutes' type (``equal(x, c3)`` cloned onto a float64 ``x`` is float64, as CNTK 2.7's)
    rather than the cast to the type it was made in."""
    v = unwrap(out)
    if isinstance(v, Variable) and v.parent is not None:
        G.CALLS[v] = (op, (unwrap(left), unwrap(right)), {"name": name})
    return out


def _eq(a, b):
    return F.mul2(_ge(a, b), _ge(b, a))


def _ne(a, b):
    return F.r_sub_scalar(_eq(a, b), 1.0)


def _truth(v):
    """1.0 where ``v`` is above 0, else 0.0: CNTK 2.7's logical ops read a negative number
    as false (``element_not(-1.5)`` is 1)."""
    return F.cast(F.greater_scalar(v, 0.0), "float32")


@float_arrays("left", "right")
def equal(left, right, name: str = ""):
    """1 where ``left == right``, else 0."""
    refuse_other_sequence_axes("Equal", (left, right))
    return _called(binary(_eq, left, right, name, "Equal"), equal, left, right, name)


@float_arrays("left", "right")
def not_equal(left, right, name: str = ""):
    """1 where ``left != right``, else 0."""
    refuse_other_sequence_axes("NotEqual", (left, right))
    return _called(binary(_ne, left, right, name, "NotEqual"), not_equal, left, right, name)


@float_arrays("left", "right")
def less(left, right, name: str = ""):
    """1 where ``left < right``, else 0."""
    refuse_other_sequence_axes("Less", (left, right))
    return _called(binary(_lt, left, right, name, "Less"), less, left, right, name)


@float_arrays("left", "right")
def less_equal(left, right, name: str = ""):
    """1 where ``left <= right``, else 0."""
    refuse_other_sequence_axes("LessEqual", (left, right))
    return _called(binary(_le, left, right, name, "LessEqual"), less_equal, left, right, name)


@float_arrays("left", "right")
def greater(left, right, name: str = ""):
    """1 where ``left > right``, else 0."""
    refuse_other_sequence_axes("Greater", (left, right))
    return _called(binary(_gt, left, right, name, "Greater"), greater, left, right, name)


@float_arrays("left", "right")
def greater_equal(left, right, name: str = ""):
    """1 where ``left >= right``, else 0."""
    refuse_other_sequence_axes("GreaterEqual", (left, right))
    return _called(binary(_ge, left, right, name, "GreaterEqual"), greater_equal, left, right, name)


def element_and(x, y, name: str = ""):
    """1 where both are above 0 (CNTK 2.7 reads a negative number as false)."""
    refuse_mixed_axes("ElementTimes", (x, y), 1, "Greater")
    return binary(lambda a, b: F.mul2(_truth(a), _truth(b)), x, y, name, "And")


def element_or(x, y, name: str = ""):
    """1 where either is above 0."""
    refuse_mixed_axes("Plus", (x, y), 1, "Greater")
    return binary(lambda a, b: F.maximum2(_truth(a), _truth(b)), x, y, name, "Or")


def element_xor(x, y, name: str = ""):
    """1 where exactly one is above 0."""
    refuse_mixed_axes("NotEqual", (x, y), 1, "Greater")
    return binary(lambda a, b: F.abs(F.sub2(_truth(a), _truth(b))), x, y, name, "Xor")


def element_not(x, name: str = ""):
    """1 where ``x`` is 0 or below, else 0."""
    refuse_several_outputs(x, "element_not")
    v = operand(x)
    return named(wrap(one_op(F.r_sub_scalar(_truth(v), 1.0), v)), name, "Not")


def element_select(flag, value_if_true, value_if_false, name: str = ""):
    """``value_if_true`` where ``flag`` is not 0 (NaN and infinities count as true, -0.0 as
    false), else ``value_if_false``; the three broadcast.  A select, not arithmetic, as in
    CNTK 2.7: a NaN or an infinity in the branch not taken reaches neither the value nor the
    gradients, so ``element_select(x > 0, log(x), 0 * x)`` has no NaN.  No gradient to
    ``flag``."""
    refuse_mixed_axes("Select", (flag, value_if_true, value_if_false))
    infer_nary(tuple(root_as_output(v) for v in (flag, value_if_true, value_if_false)),
               "Select")        # (a parameter's inferred axes, as CNTK 2.7's Select)
    dtype = operands_dtype(flag, value_if_true, value_if_false)
    c, t, f = same_dtype([_tensor(operand(v, dtype), dtype)
                          for v in (flag, value_if_true, value_if_false)])
    bc, bt, bf = batched(flag), batched(value_if_true), batched(value_if_false)
    # every batched operand to the highest sample rank (sample axes align on the right)
    t, f = S.broadcast_pair(t, f, bt, bf)
    t, c = S.broadcast_pair(t, c, bt, bc)
    f, c = S.broadcast_pair(f, c, bf, bc)
    if c.ndim < max(t.ndim, f.ndim):
        # NumPy's right alignment: F.where would align a lower-rank condition on the left
        c = F.reshape(c, (1,) * (max(t.ndim, f.ndim) - c.ndim) + tuple(c.shape))
    out = F.where(c, t, f)
    return named(wrap(one_op(out, flag, value_if_true, value_if_false)), name, "Select")


# -- n-ary ---------------------------------------------------------------------------------------


def associative_multi_arg(f):
    """``f(a, b)`` made to take two or more operands, as CNTK 2.7's decorator does: a tree
    of pairs (``f(a, b, c)`` is ``f(a, f(b, c))``, ``f(a, b, c, d)`` ``f(f(a, b), f(c, d))``),
    the name (``name=``, or a string after the operands) given to the outermost."""
    @functools.wraps(f)
    def multi(arg1, arg2, *more, name: str = ""):
        if not name and more and isinstance(more[-1], str):
            name, more = more[-1], more[:-1]

        def tree(args, name):
            n = len(args)
            if n > 2:
                return f(tree(args[:n // 2], ""), tree(args[n // 2:], ""), name=name)
            return f(args[0], args[1], name=name) if n == 2 else args[0]
        return tree((arg1, arg2) + tuple(more), name)
    return multi


# CNTK 2.7's n-ary element-wise ops
plus = associative_multi_arg(plus)
element_times = associative_multi_arg(element_times)
element_max = associative_multi_arg(element_max)
element_min = associative_multi_arg(element_min)
log_add_exp = associative_multi_arg(log_add_exp)


def _items(operands) -> list:
    """``f(a, b, c)`` or ``f([a, b, c])``'s operands, a Function of several outputs giving
    them all (CNTK 2.7's ``sum`` and ``mean``)."""
    items = list(operands[0]) if len(operands) == 1 and isinstance(
        operands[0], (list, tuple)) else list(operands)
    if not items:
        raise ValueError("give at least one operand")
    return [o for item in items for o in (
        item.outputs if isinstance(item, GraphObject) and len(getattr(item, "outputs", ())) > 1
        else [item])]


def _n_ary_block(out, op_name: str, root_op: str, name: str, items: list):
    """``out`` shown as CNTK 2.7 builds ``sum``/``mean``: a block ``op_name`` over the
    operands around ``root_op``."""
    refuse_name(name, op_name)
    v = out.variable
    if v.parent is None or v in G.BLOCKS:
        return named(out, name)
    G.mark_block(v, op_name, name, [i.variable for i in items if isinstance(i, GraphObject)],
                 root_op)
    return out


def sum(*operands, name: str = ""):  # noqa: A001
    """The sum of any number of operands (``sum(a, b, c)``, or a list), folded from the left:
    CNTK 2.7's block ``Sum`` around its last ``Plus`` (around ``Combine`` for one operand)."""
    items = _items(operands)
    out = items[0]
    for item in items[1:]:
        out = plus(out, item)
    out = out if len(items) > 1 else alias(out)
    return _n_ary_block(out, "Sum", "Plus" if len(items) > 1 else "Combine", name, items)


def mean(*operands, name: str = ""):
    """The element-wise mean of the operands: CNTK 2.7's block ``Mean`` (around
    ``ElementDivide``)."""
    items = _items(operands)
    total = items[0]
    for item in items[1:]:
        total = plus(total, item)
    # CNTK: a division by the constant n (the files hold n); n is above 0, so a plain
    # division (the writers' ElementDivide), not element_divide's guarded one
    out = binary(F.div2, total, float(len(items)), "", "ElementDivide")
    return _n_ary_block(out, "Mean", "ElementDivide", name, items)


# CNTK 2.7 runs none of these on a sparse input (a product with it first)
_TAKE_SPARSE = ("stop_gradient", "alias", "cast", "associative_multi_arg")

# CNTK 2.7 refuses these when run on a sparse input (a tensor operation on sparse data)
refuse_sparse_operands(globals(), [n for n in __all__ if n not in _TAKE_SPARSE])
pass_sparse_on(globals(), ["alias"])

_BINARY = (("plus", "Plus"), ("minus", "Minus"), ("element_times", "ElementTimes"),
           ("element_divide", "ElementDivide"), ("element_max", "ElementMax"),
           ("element_min", "ElementMin"), ("pow", "Pow"), ("log_add_exp", "LogPlus"),
           ("equal", "Equal"), ("not_equal", "NotEqual"), ("less", "Less"),
           ("less_equal", "LessEqual"), ("greater", "Greater"),
           ("greater_equal", "GreaterEqual"), ("element_and", "And"),
           ("element_or", "Or"), ("element_xor", "Xor"))


def _binary_as_called(op: str):
    """The ``as_called`` hook (see ``_deferrable.deferrable``) of the binary element-wise op
    ``op`` (``"Plus"``).  A number operand, in a call that waits for another operand's shape
    (``p + 2`` on a placeholder without one, ``Dense(3) + 2``), becomes the Constant CNTK 2.7
    makes of it as the op is called (of the default type, float32; a float64 graph clones it
    at its first run, as CNTK's): the waiting Function lists it among its ``inputs`` and
    ``constants`` at once, and the graph it builds holds it (a value set on it counts).  A
    call on operands with shapes makes it as it builds the op, of the other operand's type.
    Then the two operands are checked as the op is called (``broadcast_checked``), whose
    shape is the one the op shows while it waits."""
    checked = broadcast_checked(op)

    def as_called(arguments: dict) -> "tuple | None":
        numbers = [k for k, v in arguments.items()      # (most calls: none, and no walk)
                   if k != "name" and isinstance(v, (int, float, np.number, np.bool_))]
        if numbers and pending(tuple(arguments.values()), {}):
            for k in numbers:
                arguments[k] = Constant(np.asarray(arguments[k]))
        return checked(arguments)
    return as_called


# ops on placeholders without a shape (or on layers) wait for their shapes; a binary
# element-wise op makes its number operands Constants as it is called while it waits,
# refuses operands whose known axes cannot broadcast as it is called (over inferred axes
# too), and shows CNTK's inferred shape while it waits
defer_module(globals(), __all__,
             as_called={name: _binary_as_called(op) for name, op in _BINARY})

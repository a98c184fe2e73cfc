"""The activations CNTK 2.7 makes as blocks of other ops (Function.cpp ``LeakyReLU``,
``SELU``, ``PReLU`` and the Python ``elu``: ``AsBlock`` of ``Select(x < 0, ..., x)``):
``leaky_relu``, ``elu``, ``selu``, ``param_relu``.  The block's ``Select`` passes ``x`` on at
``x == 0``, so the gradient there is 1 (``scale`` for ``selu``), whatever ``alpha``.  So are
``hard_sigmoid`` (the block ``HardSigmoid`` of two ``Select`` ops: gradient 0 where
``alpha * x + beta`` is exactly 0 or 1) and ``softplus`` (Function.cpp ``Softplus``: the
block of ``LogPlus(x, 0)``; with a ``steepness``, the Python block ``softplus`` around it).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.input_variable(3, name="x", needs_gradient=True)
    >>> z = C.leaky_relu(x, 0.3, name="lr")
    >>> f = z.root_function
    >>> f.op_name, f.is_block, f.name, f.block_root.op_name
    ('LeakyReLU', True, 'lr', 'Select')
    >>> z.grad({x: np.array([[-1, 0, 2]], np.float32)}).tolist()
    [[0.30000001192092896, 1.0, 1.0]]
"""

from __future__ import annotations

import numpy as np

from ... import functions as F
from . import _graph as G
from ._adapt import named, one_op, operand, refuse_name, refuse_several_outputs, wrap
from ._deferrable import defer_module
from ._inferred_parameters import refuse_pending
from ._mixins import GraphObject
from ._ops_math import (element_divide, element_select, element_times, greater, less,
                        log_add_exp, plus)
from ._variables import constant

__all__ = ["elu", "selu", "leaky_relu", "param_relu", "hard_sigmoid", "softplus"]


def _block(out, op_name: str, name: str, arguments: tuple, attributes: "dict | None" = None):
    """``out`` (the block's root, over ``arguments``) registered as CNTK's block ``op_name``
    (of CNTK's ``attributes``, which its ``attributes`` shows and a file keeps)."""
    if not isinstance(out, GraphObject):    # (its ops wait on a parameter's inferred axes:
        for v in arguments:                 # so does the block, made when they are known)
            refuse_pending(v, op_name)
    G.BLOCKS[out.variable] = G.Block(op_name, name, tuple(operand(a) for a in arguments),
                                     attributes)
    return out


def _selected_elu(x, alpha: float):
    """``Select(x < 0, alpha * ELU(x), x)`` over the primitive ``ELU`` (alpha 1): the body of
    CNTK's ``ELU`` and ``SELU`` blocks."""
    v = operand(x)
    inside = named(wrap(one_op(F.elu(v, 1.0), v)), "", "ELU")
    return element_select(less(x, 0), element_times(float(alpha), inside), x)


def elu(x, alpha: float = 1.0, name: str = ""):
    """``x`` for ``x >= 0``, ``alpha * (exp(x) - 1)`` otherwise: CNTK 2.7's block ``ELU``
    (``Select(x < 0, alpha * ELU(x), x)``; gradient 1 at 0)."""
    refuse_several_outputs(x, "elu")
    refuse_name(name, "ELU")
    return _block(_selected_elu(x, alpha), "ELU", name, (x,))


def selu(x, scale: float = 1.0507009873554804934193349852946,
         alpha: float = 1.6732632423543772848170429916717, name: str = ""):
    """The scaled exponential linear unit: CNTK 2.7's block ``SELU``
    (``scale * Select(x < 0, alpha * ELU(x), x)``; gradient ``scale`` at 0)."""
    refuse_several_outputs(x, "selu")
    refuse_name(name, "SELU")
    return _block(element_times(float(scale), _selected_elu(x, alpha)), "SELU", name, (x,))


def leaky_relu(x, alpha: float = 0.01, name: str = ""):
    """``x`` for ``x >= 0``, ``alpha * x`` otherwise: CNTK 2.7's block ``LeakyReLU``
    (``Select(x < 0, alpha * x, x)``; gradient 1 at 0)."""
    refuse_several_outputs(x, "leaky_re_lu")
    refuse_name(name, "LeakyReLU")
    out = element_select(less(x, 0), element_times(float(alpha), x), x)
    return _block(out, "LeakyReLU", name, (x,))


def param_relu(alpha, x, name: str = ""):
    """``x`` for ``x >= 0``, ``alpha * x`` otherwise, with a learnable ``alpha`` (a parameter of
    the sample's shape, or one broadcasting to it): CNTK 2.7's block ``PReLU`` (Function.cpp
    ``PReLU``: ``AsBlock`` of ``Select(x < 0, alpha * x, x)``), whose arguments are ``x`` and
    ``alpha`` (AsBlock maps the parameter to a placeholder too), its constant 0 inside; so
    ``x == 0`` passes ``x`` on (gradient 1).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(3, name="x")
        >>> z = C.param_relu(C.parameter((3,), init=0.25, name="alpha"), x, name="pr")
        >>> f = z.root_function
        >>> f.op_name, f.is_block, f.name, f.block_root.op_name
        ('PReLU', True, 'pr', 'Select')
        >>> z.eval(np.array([[-1, 0, 2]], np.float32)).tolist()
        [[-0.25, 0.0, 2.0]]
    """
    refuse_several_outputs(x, "pre_lu")
    if not isinstance(alpha, GraphObject):      # (SWIG takes Variables only)
        raise NotImplementedError("Wrong number or type of arguments for overloaded function "
                                  "'pre_lu'.")
    refuse_name(name, "PReLU")
    out = element_select(less(x, 0), element_times(alpha, x), x)
    return _block(out, "PReLU", name, (x, alpha))


def _scalar(value: float, x):
    """CNTK's ``Constant::Scalar`` of ``x``'s data type (one constant, read by every op of the
    block that uses the value)."""
    return constant(float(value), dtype=np.dtype(operand(x).dtype))


def hard_sigmoid(x, alpha: float, beta: float, name: str = ""):
    """``alpha * x + beta`` limited to ``[0, 1]``: CNTK 2.7's block ``HardSigmoid`` (its
    attributes ``alpha`` and ``beta``): ``s = x * alpha + beta``, ``t = Select(s < 1, s, 1)``,
    ``Select(t > 0, t, 0)`` -- NaN gives 1, and the gradient is 0 where ``s`` is exactly 0 or
    1.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(3, needs_gradient=True)
        >>> z = C.hard_sigmoid(x, 0.2, 0.5)
        >>> z.root_function.op_name, z.root_function.block_root.op_name
        ('HardSigmoid', 'Select')
        >>> z.grad({x: np.array([[-2.5, 0, 2.5]], np.float32)}).tolist()
        [[0.0, 0.20000000298023224, 0.0]]
    """
    refuse_several_outputs(x, "hard_sigmoid")
    refuse_name(name, "HardSigmoid")
    a, b, one, zero = (_scalar(v, x) for v in (alpha, beta, 1.0, 0.0))
    s = plus(element_times(x, a), b)
    upper = element_select(less(s, one), s, one)
    # (its attributes as CNTK shows them: the float32 values)
    return _block(element_select(greater(upper, zero), upper, zero), "HardSigmoid", name, (x,),
                  {"alpha": float(np.float32(alpha)), "beta": float(np.float32(beta))})


def softplus(x, steepness: float = 1, name: str = ""):
    """``log(1 + exp(steepness * x)) / steepness``: CNTK 2.7's block ``Softplus``
    (``LogPlus(x, 0)``); with another ``steepness``, its Python ``as_block`` ``softplus`` of
    ``Softplus(steepness * x) / steepness``.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> z = C.softplus(C.input_variable(2))
        >>> z.root_function.op_name, z.root_function.block_root.op_name
        ('Softplus', 'LogPlus')
        >>> [round(float(v), 4) for v in z.eval(np.array([[0, 1]], np.float32))[0]]
        [0.6931, 1.3133]
    """
    refuse_several_outputs(x, "softplus")
    refuse_name(name, "Softplus" if steepness == 1 else "softplus")
    if steepness == 1:
        return _block(log_add_exp(x, _scalar(0.0, x)), "Softplus", name, (x,))
    inner = softplus(element_times(_scalar(steepness, x), x))
    return _block(element_divide(inner, _scalar(steepness, x)), "softplus", name, (x,))


# on placeholders without a shape (or on layers) the block waits for their shapes as a whole
defer_module(globals(), __all__)

"""The activations CNTK 2.7 makes as blocks of other ops (Function.cpp ``LeakyReLU``,
``SELU``, ``PReLU`` and the Python ``elu``: ``AsBlock`` of ``Select(x < 0, ..., x)``):
``leaky_relu``, ``elu``, ``selu``, ``param_relu``.  The block's ``Select`` passes ``x`` on at
``x == 0``, so the gradient there is 1 (``scale`` for ``selu``), whatever ``alpha``.

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

from ... import functions as F
from . import _graph as G
from ._adapt import named, one_op, operand, refuse_name, refuse_several_outputs, wrap
from ._deferrable import defer_module
from ._inferred_parameters import refuse_pending
from ._mixins import GraphObject
from ._ops_math import element_select, element_times, less

__all__ = ["elu", "selu", "leaky_relu", "param_relu"]


def _block(out, op_name: str, name: str, arguments: tuple):
    """``out`` (the block's root, over ``arguments``) registered as CNTK's block ``op_name``."""
    if not isinstance(out, GraphObject):    # (its ops wait on a parameter's inferred axes:
        for v in arguments:                 # so does the block, made when they are known)
            refuse_pending(v, op_name)
    G.BLOCKS[out.variable] = G.Block(op_name, name, tuple(operand(a) for a in arguments))
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


# on placeholders without a shape (or on layers) the block waits for their shapes as a whole
defer_module(globals(), __all__)

"""NNabla 1.39's scalar functions in a half context take their scalar in the half type.

NNabla's ``MulScalar``, ``AddScalar``, ``PowScalar``, ``RSubScalar``, ``RDivScalar``,
``RPowScalar``, ``MaximumScalar`` and ``MinimumScalar`` compute with ``(T)a0``, their
``double`` value converted to the function's type (include/nbla/function/mul_scalar.hpp and
the others), and their gradients with it too: in ``cpu:half`` that is ``Half(3.3)`` =
3.30078125, so ``x * 3.3`` multiplies by 3.30078125 (``Half(float(x) * 3.30078125)``) where
torch multiplies a float16 tensor by float32's 3.3.  A function made in a half context
(``nn.context_scope(get_extension_context('cpu', type_config='half'))``) takes its scalar
rounded to that type here, and so do NNabla's operators with a number, which are those
functions (``x / y`` is ``F.mul_scalar(x, 1. / y)``: nnabla/_arithmetic_ops.pyx).  Case
``nnabla_half_40.half40__scalar_functions``.
"""

from __future__ import annotations

import functools
import numbers

import torch

from ...graph import get_current_context

__all__ = ["HALF_SCALAR_FUNCTIONS", "half_scalar", "in_half_context", "rounding_half_scalars"]

#: NNabla's functions of one scalar ``val`` that compute with it in their type.
HALF_SCALAR_FUNCTIONS = frozenset({"add_scalar", "mul_scalar", "pow_scalar", "r_sub_scalar",
                                   "r_div_scalar", "r_pow_scalar", "maximum_scalar",
                                   "minimum_scalar"})


def in_half_context() -> bool:
    """Whether the current context computes in a half type (a function made now is NNabla's
    function of a ``cpu:half`` context).

    Example:
        >>> import stadyn as sd
        >>> with sd.context("cpu", dtype="float16"):
        ...     in_half_context()
        True
    """
    return get_current_context().half_dtype is not None


def half_scalar(value):
    """``value`` as NNabla's function made now reads it: rounded to the current context's
    half type where it is a half context and ``value`` a real number, else as it is.

    Example:
        >>> import stadyn as sd
        >>> half_scalar(3.3)
        3.3
        >>> with sd.context("cpu", dtype="float16"):
        ...     half_scalar(3.3)
        3.30078125
    """
    half = get_current_context().half_dtype
    if half is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
        return value
    rounded = torch.tensor(float(value), dtype=half).item()
    return int(rounded) if isinstance(value, int) else rounded    # (an int stays an int)


def rounding_half_scalars(name: str, fn):
    """``fn`` (NNabla's function ``name``) taking its ``val`` through :func:`half_scalar`
    where ``name`` is one of :data:`HALF_SCALAR_FUNCTIONS`; else ``fn`` itself.

    Example:
        >>> import stadyn.functions as F
        >>> rounding_half_scalars("relu", F.relu) is F.relu
        True
    """
    if name not in HALF_SCALAR_FUNCTIONS:
        return fn

    @functools.wraps(fn)
    def call(x, *args, **kwargs):
        if args:
            args = (half_scalar(args[0]),) + args[1:]
        elif "val" in kwargs:
            kwargs["val"] = half_scalar(kwargs["val"])
        return fn(x, *args, **kwargs)
    return call

"""What NNabla 1.39 refuses that Stadyn's catalog ops would compute: the checks NNabla's
functions make when they are set up (at the call, in both modes), made here before the
catalog op is called, with NNabla's error type (``RuntimeError``; :class:`NNablaRefusal` is
also a ``ValueError``, as Stadyn's shape errors are) and a message naming the function, the
inputs and the user's line.

* the binary functions (``add2``, ``mul2``, ``maximum2``, ``equal``, ``squared_error``, ...;
  NNabla's ``BaseTransformBinary``) broadcast only between inputs of the same rank: a
  ``(2,)`` and a ``(2, 2)`` are refused (``Dimensions of inputs must match``), where
  NumPy's rule would line them up from the right;
* ``concatenate`` needs at least two inputs, ``split`` at least two outputs (an axis of
  size 1 is refused: NNabla's ``Function::setup`` checks ``min_inputs`` / ``min_outputs``);
* ``unique`` needs the dynamic mode (``nn.set_auto_forward(True)``): its output shape is
  known only once it has run.

The Python operators of ``nn.Variable`` (``x + y``, ``x * y``, ...) go through the same
binary check (``_variable.py``).

Example:
    >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> F.add2(nn.Variable((2,)), nn.Variable((2, 2)))
    Traceback (most recent call last):
    ...
    stadyn.compat.nnabla._refusals.NNablaRefusal: add2: NNabla 1.39 ...
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from ..._errors import ShapeError
from ...graph import format_location, get_auto_forward, user_location

__all__ = ["NNablaRefusal", "BINARY", "check_binary", "refusing_what_nnabla_refuses"]

# NNabla 1.39's functions on BaseTransformBinary (include/nbla/function/*.hpp: the
# NBLA_DEFINE_TRANSFORM_BINARY* declarations, and add2.hpp)
BINARY = ("add2", "bc_add2", "sub2", "mul2", "div2", "pow2", "maximum2", "minimum2", "mod2",
          "atan2", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
          "logical_and", "logical_or", "logical_xor", "absolute_error", "squared_error",
          "huber_loss", "epsilon_insensitive_loss")


class NNablaRefusal(ShapeError, RuntimeError):
    """A call NNabla 1.39 refuses (a ``RuntimeError`` there): see the module docstring."""


def _refuse(name: str, why: str) -> NNablaRefusal:
    line = format_location(user_location())
    return NNablaRefusal(f"{name}: NNabla 1.39 refuses this call: {why}"
                         + (f" (called at {line})" if line else ""))


def _shape(v: Any) -> tuple | None:
    shape = getattr(v, "shape", None)
    return None if shape is None else tuple(int(s) for s in shape)


def check_binary(name: str, x0: Any, x1: Any) -> None:
    """Refuse inputs of NNabla's binary function ``name`` that NNabla 1.39 refuses: ranks that
    differ, or sizes that differ where neither is 1.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> check_binary("mul2", nn.Variable((4, 3)), nn.Variable((1, 3)))  # fine
        >>> check_binary("mul2", nn.Variable((4, 3)), nn.Variable((3,)))
        Traceback (most recent call last):
        ...
        stadyn.compat.nnabla._refusals.NNablaRefusal: mul2: NNabla 1.39 refuses this call: ...
    """
    s0, s1 = _shape(x0), _shape(x1)
    if s0 is None or s1 is None:
        return
    if len(s0) != len(s1):
        raise _refuse(name, f"its inputs must have the same number of dimensions, got "
                            f"inputs[0] {s0} ({len(s0)}-D) and inputs[1] {s1} ({len(s1)}-D); "
                            f"reshape one (F.reshape) so that the ranks match")
    for i, (a, b) in enumerate(zip(s0, s1)):
        if a != b and min(a, b) != 1:
            raise _refuse(name, f"inputs[0] {s0} and inputs[1] {s1} differ in axis {i} "
                                f"where neither size is 1 (no broadcast)")


def _check_concatenate(*x, axis=None, **_):
    if len(x) == 1 and isinstance(x[0], (list, tuple)):
        x = tuple(x[0])
    if len(x) < 2:
        raise _refuse("concatenate", f"it needs at least 2 inputs, given {len(x)}")


def _check_split(x, axis=0, **_):
    shape = _shape(x)
    if shape is None or not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
        return                          # the op's own checks name the problem
    if shape[axis] < 2:
        raise _refuse("split", f"it needs at least 2 outputs, and axis {axis} of the input "
                               f"{shape} has size {shape[axis]}")


def _check_unique(*_, **__):
    if not get_auto_forward():
        raise _refuse("unique", "it can be used only in the dynamic mode "
                                "(nn.set_auto_forward(True) or `with nn.auto_forward():`): "
                                "its output's shape is known only once it has run")


def _binary_checker(name: str) -> Callable:
    def check(x0=None, x1=None, *_, **__):
        check_binary(name, x0, x1)
    return check


_CHECKS: dict[str, Callable] = {
    **{n: _binary_checker(n) for n in BINARY},
    "concatenate": _check_concatenate,
    "split": _check_split,
    "unique": _check_unique,
}


def refusing_what_nnabla_refuses(name: str, fn: Callable) -> Callable:
    """``fn`` (NNabla's function ``name``) refusing, before it is called, what NNabla 1.39
    refuses (the module docstring); ``fn`` itself where NNabla has no such check.

    Example:
        >>> import stadyn.functions as sdF
        >>> concat = refusing_what_nnabla_refuses("concatenate", sdF.concatenate)
        >>> concat.__name__
        'concatenate'
    """
    check = _CHECKS.get(name)
    if check is None:
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        check(*args, **kwargs)
        return fn(*args, **kwargs)
    return call

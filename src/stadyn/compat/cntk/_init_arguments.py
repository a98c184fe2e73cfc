"""CNTK 2.7's refusals of a layer's initial values, made when the layer is made (CNTK makes
its parameters then): a number it cannot hand to its C++ ``ConstantInitializer(double)`` (a
NumPy scalar other than ``float64``, a string: its NotImplementedError); ``init=None`` for a
layer whose weights take an initializer with ranks (``Dense``, the convolutions: its
ValueError); an array, list or tuple for those weights (its TypeError; a convolution takes a
NumPy array without a reduction axis, ``reduction_rank=0``).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> C.layers.Dense(2, init=np.float32(0.5))
    Traceback (most recent call last):
      ...
    NotImplementedError: Wrong number or type of arguments for overloaded function \
'constant_initializer'.
    ...
"""

from __future__ import annotations

import numpy as np

__all__ = ["RANKED", "CONVOLUTION", "check_init_arguments"]

RANKED = "ranked"               # weights whose initializer takes ranks (Dense, a transpose)
CONVOLUTION = "convolution"     # ... a convolution's, which takes an array without reduction


def check_init_arguments(title: str, kwargs: dict, numbers: tuple, weights: str | None) -> None:
    """Refuse, as CNTK 2.7's layer ``title`` does, the arguments ``kwargs`` (those given) whose
    names are in ``numbers`` (made into parameters: a number must be a Python one), and its
    ``init`` where ``weights`` says its weights take an initializer with ranks
    (:data:`RANKED`, :data:`CONVOLUTION`; None: no such rule)."""
    for key in numbers:
        value = kwargs.get(key)
        if np.isscalar(value) and not isinstance(value, (int, float)):
            raise NotImplementedError(
                "Wrong number or type of arguments for overloaded function "
                "'constant_initializer'.\n  Possible C/C++ prototypes are:\n"
                "    CNTK::ConstantInitializer(double)\n    CNTK::ConstantInitializer()\n"
                f"({title}: {key}={value!r}; CNTK 2.7 takes a Python int or float there, "
                "not a NumPy scalar or a string: give float(...))")
    if weights is None or "init" not in kwargs:
        return
    init = kwargs["init"]
    if init is None:
        raise ValueError(f"init parameter cannot be None ({title}: give a number or an "
                         "initializer such as C.glorot_uniform())")
    if not isinstance(init, (np.ndarray, list, tuple)):
        return
    if weights == CONVOLUTION and isinstance(init, np.ndarray):
        if kwargs.get("reduction_rank", 1) != 0:
            raise ValueError("a constant initializer can currently only used without "
                             f"reduction dimension ({title}: an array as init needs "
                             "reduction_rank=0; else give a number or an initializer)")
        return
    raise TypeError("in method 'random_initializer_with_rank', argument 1 of type "
                    f"'CNTK::ParameterInitializer const &' ({title}: init is a number or an "
                    f"initializer such as C.glorot_uniform(), not a {type(init).__name__})")

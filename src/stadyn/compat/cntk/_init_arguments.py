"""CNTK 2.7's refusals of a layer's initial values, made when the layer is made (CNTK makes
its parameters then): a number it cannot hand to its C++ ``ConstantInitializer(double)`` (a
NumPy scalar other than ``float64``, a string: its NotImplementedError); ``init=None`` for a
layer whose weights take an initializer with ranks (``Dense``, the convolutions: its
ValueError); an array, list or tuple for those weights (its TypeError; a convolution takes a
NumPy array without a reduction axis, ``reduction_rank=0``); an initializer not called
(``init=C.uniform``, a Python function where CNTK takes the ``ParameterInitializer`` that
``C.uniform(1)`` makes): those weights' TypeError, any other parameter's NotImplementedError
of its ``Parameter`` constructor (``C.parameter``, ``Embedding``, a recurrent step, a bias).

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

import inspect

import numpy as np

__all__ = ["RANKED", "CONVOLUTION", "check_init_arguments", "refuse_uncalled_initializer",
           "uncalled"]

RANKED = "ranked"               # weights whose initializer takes ranks (Dense, a transpose)
CONVOLUTION = "convolution"     # ... a convolution's, which takes an array without reduction


_NEW_PARAMETER = (
    "Wrong number or type of arguments for overloaded function 'new_Parameter'.\n"
    "  Possible C/C++ prototypes are:\n" + "".join(
        f"    CNTK::Parameter::Parameter({p})\n" for p in (
            "CNTK::NDArrayViewPtr const &,std::wstring const &", "CNTK::NDArrayViewPtr const &",
            "CNTK::NDShape const &,CNTK::DataType,double,CNTK::DeviceDescriptor const &,"
            "std::wstring const &",
            "CNTK::NDShape const &,CNTK::DataType,double,CNTK::DeviceDescriptor const &",
            "CNTK::NDShape const &,CNTK::DataType,double",
            "CNTK::NDShape const &,CNTK::DataType,CNTK::ParameterInitializer const &,"
            "CNTK::DeviceDescriptor const &,std::wstring const &",
            "CNTK::NDShape const &,CNTK::DataType,CNTK::ParameterInitializer const &,"
            "CNTK::DeviceDescriptor const &",
            "CNTK::NDShape const &,CNTK::DataType,CNTK::ParameterInitializer const &",
            "CNTK::Variable const &")))
_WITH_RANK = ("in method 'random_initializer_with_rank', argument 1 of type "
              "'CNTK::ParameterInitializer const &'")


def uncalled(value) -> bool:
    """Whether CNTK 2.7 refuses ``value`` as an initial value, a callable but no initializer
    made: one of CNTK's initializer makers itself (``C.uniform``, ``C.bilinear``), a callable
    taking no argument (``lambda: 1``) or any other function (``np.ones``,
    ``np.random.randn``, ``functools.partial(C.uniform, 1)``: CNTK's SWIG takes only its
    ``ParameterInitializer``); not an initializer made (a ``CNTKInitializer``, or Stadyn's
    filler of a shape that ``bilinear(4, 4)`` makes, marked ``cntk_initializer``).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.cntk as C
        >>> uncalled(C.uniform), uncalled(np.ones), uncalled(C.uniform(1)), uncalled(2.0)
        (True, True, False, False)
    """
    from ... import layers as _L
    if not callable(value) or isinstance(value, _L.CNTKInitializer):
        return False
    return not getattr(value, "cntk_initializer", False)


def _maker(value) -> bool:
    """Whether ``value`` is one of CNTK's initializer makers, or a callable taking no
    argument (what the refusal's hint says to call)."""
    from ... import layers as _L
    makers = (_L.glorot_uniform, _L.glorot_normal, _L.xavier, _L.he_uniform, _L.he_normal,
              _L.uniform, _L.normal, _L.truncated_normal, _L.bilinear)
    if any(value is m for m in makers) or isinstance(value, type):
        return True
    try:
        inspect.signature(value).bind(())       # (a filler takes the shape)
    except TypeError:
        return True
    except ValueError:      # (no signature to read: a builtin)
        return False
    return False


def refuse_uncalled_initializer(title: str, key: str, value, ranked: bool = False) -> None:
    """CNTK 2.7's refusal of an initializer not called given as ``key`` to ``title``: the
    TypeError of ``random_initializer_with_rank`` for weights taking ranks (``ranked``), else
    the NotImplementedError of its ``Parameter`` constructor's overloads.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> refuse_uncalled_initializer("Dense", "init", C.uniform, ranked=True)
        Traceback (most recent call last):
          ...
        TypeError: in method 'random_initializer_with_rank', argument 1 of type \
'CNTK::ParameterInitializer const &' (Dense: init=uniform is an initializer not called: give \
uniform(...))
    """
    if not uncalled(value):
        return
    what = getattr(value, "__name__", type(value).__name__)
    hint = f"({title}: {key}={what} is an initializer not called: give {what}(...))" \
        if _maker(value) else (f"({title}: {key}={what} is a function, not an initializer: "
                               "give a number, an array or an initializer such as "
                               "C.uniform(1))")
    if ranked:
        raise TypeError(f"{_WITH_RANK} {hint}")
    raise NotImplementedError(_NEW_PARAMETER + hint)


def check_init_arguments(title: str, kwargs: dict, numbers: tuple, weights: str | None) -> None:
    """Refuse, as CNTK 2.7's layer ``title`` does, the arguments ``kwargs`` (those given) whose
    names are in ``numbers`` (made into parameters: a number must be a Python one), and its
    ``init`` where ``weights`` says its weights take an initializer with ranks
    (:data:`RANKED`, :data:`CONVOLUTION`; None: no such rule)."""
    for key in numbers:
        value = kwargs.get(key)
        refuse_uncalled_initializer(title, key, value,
                                    ranked=key == "init" and weights in (RANKED, CONVOLUTION))
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
    raise TypeError(f"{_WITH_RANK} ({title}: init is a number or an "
                    f"initializer such as C.glorot_uniform(), not a {type(init).__name__})")

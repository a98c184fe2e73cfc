"""The dtype NNabla 1.39 holds its low-rank layers' factors in, kept for their ``.h5`` re-save.

NNabla's ``PF.svd_affine``, ``PF.svd_convolution`` and ``PF.cpd3_convolution`` make their
factors (``U``, ``V``; ``O``, ``I``, ``K``) with ``nn.Variable(shape)`` and ``v.d = array``,
which gives the Variable the array's dtype (nnabla/_nd_array.pyx, ``data.setter``:
``_get_dtypes_from_value``): ``svd_affine``'s are ``numpy.linalg.svd``'s result, of the
full weight's dtype (float32 from NNabla's initializers, float64 from a float64 ``uv_init``
array or a function giving one); ``svd_convolution``'s are written into ``numpy.zeros``
(float64) and ``cpd3_convolution``'s come from its float64 ALS, float64 whatever the weight
(nnabla/parametric_functions.py; case ``nnabla_io_35.low_rank_factors__resaved_in_their_dtype``).
They are made whenever one of them is missing, all of them again.  Stadyn's factors are
float32 (``stadyn.parametric._pf_lowrank``); those NNabla holds as float64 are kept as
float64 (:func:`stadyn.compat.nnabla._kept_dtypes.keep`) with Stadyn's float32 values: the
dtype is NNabla's, the digits beyond float32 of a float64 decomposition are not.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.compat.nnabla as nn
    >>> import stadyn.compat.nnabla.parametric_functions as PF
    >>> from stadyn.compat.nnabla._kept_dtypes import saved_arrays
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     _ = PF.svd_affine(nn.Variable((1, 3)), 2, 1, uv_init=np.ones((3, 2)))
    ...     sorted((k, str(a.dtype)) for k, a in saved_arrays(nn.get_parameters()).items())
    [('svd_affine/U', 'float64'), ('svd_affine/V', 'float64'), ('svd_affine/b', 'float32')]
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, Callable, Iterator

import numpy as np

from ...graph import data_of
from ...parametric import get_parameter, parameter_scope
from ._kept_dtypes import _FUNCTIONS, keep, with_bound_arguments

__all__ = ["keeping_factor_dtypes"]

# function -> (its own scope, its factors, the argument whose dtype decides, or None: float64)
_FACTORS = {"svd_affine": ("svd_affine", ("U", "V"), "uv_init"),
            "svd_convolution": ("svd_conv", ("U", "V"), None),
            "cpd3_convolution": ("cpd3_conv", ("O", "I", "K"), None)}


def keeping_factor_dtypes(name: str, func: Callable) -> Callable:
    """``func`` (the parametric function ``name``) keeping its factors as float64 where
    NNabla 1.39 holds them so, when the call makes them; ``func`` itself for any other
    function."""
    if name not in _FACTORS:
        return func
    own, factors, decides = _FACTORS[name]

    def call(bound: inspect.BoundArguments, args: tuple, kwargs: dict) -> Any:
        given: list = []
        if decides is not None:
            init = bound.arguments.get(decides)
            if isinstance(init, _FUNCTIONS):        # (a program's function: its result's)
                bound.arguments[decides] = _noting_dtype(init, given)
            elif isinstance(init, np.ndarray):
                given.append(init.dtype)
        scope = bound.arguments.get("name")
        with _scope(scope, own):
            before = [get_parameter(f) for f in factors]
        out = func(*bound.args, **bound.kwargs)
        with _scope(scope, own):
            after = [get_parameter(f) for f in factors]
        made = any(a is not b for a, b in zip(after, before))
        if made and (decides is None or _decomposed_in_float64(given)):
            for v in after:
                keep(v, data_of(v).detach().cpu().numpy().astype(np.float64))
        return out
    return with_bound_arguments(func, call)


@contextlib.contextmanager
def _scope(name: Any, own: str) -> Iterator[None]:
    """The scope the function makes its factors in: ``own`` inside ``name`` when given."""
    with contextlib.ExitStack() as stack:
        if name is not None:
            stack.enter_context(parameter_scope(name))
        stack.enter_context(parameter_scope(own))
        yield


def _noting_dtype(init: Callable, given: list) -> Callable:
    def run(*args: Any, **kwargs: Any) -> Any:
        value = init(*args, **kwargs)
        given.append(np.asarray(value).dtype)
        return value
    return run


def _decomposed_in_float64(given: list) -> bool:
    """Whether ``numpy.linalg.svd`` of the full weight of a dtype in ``given`` (none: NNabla's
    initializers, float32) gives float64: any dtype but float32 it takes (integers, float64)."""
    return bool(given) and given[-1] not in (np.float32, np.float16) and given[-1].kind in "biuf"

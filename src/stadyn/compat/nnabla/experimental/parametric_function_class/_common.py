"""What the parametric function classes share: a parameter Variable made from an initialiser."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._variable import Variable
from ...initializer import ConstantInitializer, UniformInitializer, calc_uniform_lim_glorot


def parameter(init: Any, shape: tuple, need_grad: bool) -> Variable:
    """A Variable of ``shape`` holding ``init(shape)`` (an initialiser or an array)."""
    value = init(shape) if callable(init) else np.asarray(init, np.float32).reshape(shape)
    return Variable.from_numpy_array(np.asarray(value), need_grad=need_grad)


def weight_and_bias(module: Any, w_shape: tuple, glorot: tuple, w_init: Any, b_init: Any,
                    b_size: int, fix_parameters: bool, rng: Any, with_bias: bool) -> None:
    """Set ``module.W`` (Glorot uniform over ``glorot = (inmaps, outmaps, kernel)`` unless
    ``w_init``) and ``module.b`` (zeros unless ``b_init``; None without a bias)."""
    if w_init is None:
        w_init = UniformInitializer(calc_uniform_lim_glorot(*glorot), rng=rng)
    module.W = parameter(w_init, w_shape, not fix_parameters)
    module.b = None
    if with_bias:
        module.b = parameter(ConstantInitializer() if b_init is None else b_init, (b_size,),
                             not fix_parameters)

"""``PFC.BatchNormalization`` and ``BatchNorm1d``/``2d``/``3d`` (3-, 4- and 5-d inputs): batch
normalisation holding ``beta``, ``gamma`` (trainable) and the running ``mean`` and ``var``
(``need_grad=False``), each of shape ``1`` on every axis but the normalised one.

``__call__(inp, test=False)`` normalises with the batch's statistics and updates the running
ones unless ``test`` (the constructor's ``batch_stat`` is not read, as in NNabla 1.39).
``BatchNorm1d``/``2d``/``3d`` use the ``eps`` they are given; NNabla 1.39's pass ``1e-5``
whatever ``eps`` is.

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> from stadyn.compat.nnabla.experimental.parametric_function_class.batch_normalization \
import BatchNorm2d
    >>> bn = BatchNorm2d(3)
    >>> bn.gamma.shape, bn.mean.need_grad
    ((1, 3, 1, 1), False)
    >>> bn(nn.Variable((2, 3, 4, 4)), test=True).shape
    (2, 3, 4, 4)
"""

from __future__ import annotations

from typing import Any

from ... import functions as F
from ...initializer import ConstantInitializer
from ._common import parameter
from .module import Module

__all__ = ["BatchNormalization", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class BatchNormalization(Module):
    """Over ``n_dims``-d inputs, normalising ``axes[0]`` (one axis) of ``n_features``;
    ``param_init`` may give the ``beta``, ``gamma``, ``mean``, ``var`` initialisers."""

    def __init__(self, n_features: int, n_dims: int, axes: Any = (1,), decay_rate: float = 0.9,
                 eps: float = 1e-5, batch_stat: bool = True, output_stat: bool = False,
                 fix_parameters: bool = False, param_init: dict | None = None):
        axes = list(axes)
        if len(axes) != 1:
            raise AssertionError(f"BatchNormalization: one axis, got axes={axes}")
        shape = [1] * n_dims
        shape[axes[0]] = n_features
        shape = tuple(shape)
        init = dict(param_init or {})
        self.beta = parameter(init.get("beta", ConstantInitializer(0)), shape, not fix_parameters)
        self.gamma = parameter(init.get("gamma", ConstantInitializer(1)), shape,
                               not fix_parameters)
        self.mean = parameter(init.get("mean", ConstantInitializer(0)), shape, False)
        self.var = parameter(init.get("var", ConstantInitializer(1)), shape, False)
        self.axes = axes
        self.decay_rate = decay_rate
        self.eps = eps
        self.output_stat = output_stat

    def __call__(self, inp: Any, test: bool = False) -> Any:
        return F.batch_normalization(inp, self.beta, self.gamma, self.mean, self.var, self.axes,
                                     self.decay_rate, self.eps, not test, self.output_stat)


def _fixed_rank(name: str, n_dims: int) -> type:
    def __init__(self, n_features: int, axes: Any = (1,), decay_rate: float = 0.9,
                 eps: float = 1e-5, batch_stat: bool = True, output_stat: bool = False,
                 fix_parameters: bool = False, param_init: dict | None = None):
        BatchNormalization.__init__(self, n_features, n_dims, axes, decay_rate, eps, batch_stat,
                                    output_stat, fix_parameters, param_init)
    doc = f"Batch normalisation of {n_dims}-d inputs (``BatchNormalization(n, {n_dims}, ...)``)."
    return type(name, (BatchNormalization,), {"__init__": __init__, "__doc__": doc,
                                              "__module__": __name__})


BatchNorm1d = _fixed_rank("BatchNorm1d", 3)
BatchNorm2d = _fixed_rank("BatchNorm2d", 4)
BatchNorm3d = _fixed_rank("BatchNorm3d", 5)

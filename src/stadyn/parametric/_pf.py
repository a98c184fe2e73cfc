"""Parametric functions: ops that create (or reuse) their parameters in the registry.

Each PF function opens a scope named after it (``conv``, ``affine``, ``bn``, ``embed``; change it
with ``name=``) and asks the registry for its parameters there, with NNabla's names, shapes,
defaults and initialisers.  Called again in the same scope it reuses them.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import functions as F
from ..graph import Variable
from . import initializers as I
from ._registry import get_parameter_or_create, parameter_scope

__all__ = ["affine", "convolution", "deconvolution", "batch_normalization",
           "sync_batch_normalization", "embed"]


def _outmaps(n: int | Sequence[int]) -> tuple[int, ...]:
    return (int(n),) if isinstance(n, (int, np.integer)) else tuple(int(v) for v in n)


def affine(inp: Variable, n_outmaps: int | Sequence[int], base_axis: int = 1, w_init=None,
           b_init=None, fix_parameters: bool = False, rng=None, with_bias: bool = True,
           name: str = "affine") -> Variable:
    """Fully connected layer ``x W + b`` with parameters ``W`` ``(inmaps, *n_outmaps)`` and ``b``.

    ``W`` defaults to Glorot uniform, ``b`` to zeros.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = PF.affine(sd.Variable((16, 512, 4, 4)), 1024)
        ...     y.shape, sd.get_parameters()["affine/W"].shape
        ((16, 1024), (8192, 1024))
    """
    out = _outmaps(n_outmaps)
    inmaps = inp.size_from_axis(base_axis)
    with parameter_scope(name):
        if w_init is None:
            lim = I.calc_uniform_lim_glorot(inmaps, math.prod(out))
            w_init = I.UniformInitializer((-lim, lim), rng=rng)
        w = get_parameter_or_create("W", (inmaps,) + out, w_init, not fix_parameters)
        b = None
        if with_bias:
            b = get_parameter_or_create("b", out, b_init or I.ConstantInitializer(0.0),
                                        not fix_parameters)
        return F.affine(inp, w, b, base_axis)


def convolution(inp: Variable, outmaps: int, kernel: Sequence[int], pad=None, stride=None,
                dilation=None, group: int = 1, channel_last: bool = False, w_init=None,
                b_init=None, base_axis: int = 1, fix_parameters: bool = False, rng=None,
                with_bias: bool = True, name: str = "conv") -> Variable:
    """Convolution layer with ``W`` ``(outmaps, inmaps // group, *kernel)`` and ``b``
    ``(outmaps,)``; ``W`` defaults to Glorot uniform ``sqrt(6 / (prod(kernel) * (in + out)))``.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = PF.convolution(sd.Variable((16, 1, 8, 8)), 64, (3, 3), pad=(1, 1))
        ...     y.shape, sd.get_parameters()["conv/W"].shape
        ((16, 64, 8, 8), (64, 1, 3, 3))
    """
    kernel = tuple(int(k) for k in kernel)
    inmaps = inp.shape[-1] if channel_last else inp.shape[base_axis]
    with parameter_scope(name):
        if w_init is None:
            lim = I.calc_uniform_lim_glorot(inmaps, outmaps, kernel)
            w_init = I.UniformInitializer((-lim, lim), rng=rng)
        w_shape = ((outmaps,) + kernel + (inmaps // group,) if channel_last
                   else (outmaps, inmaps // group) + kernel)
        w = get_parameter_or_create("W", w_shape, w_init, not fix_parameters)
        b = None
        if with_bias:
            b = get_parameter_or_create("b", (outmaps,), b_init or I.ConstantInitializer(0.0),
                                        not fix_parameters)
        return F.convolution(inp, w, b, base_axis, pad, stride, dilation, group, channel_last)


def deconvolution(inp: Variable, outmaps: int, kernel: Sequence[int], pad=None, stride=None,
                  dilation=None, group: int = 1, channel_last: bool = False, w_init=None,
                  b_init=None, base_axis: int = 1, fix_parameters: bool = False, rng=None,
                  with_bias: bool = True, output_padding=None, name: str = "deconv") -> Variable:
    """Transposed convolution layer with ``W`` ``(inmaps, outmaps // group, *kernel)``.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     PF.deconvolution(sd.Variable((2, 8, 4, 4)), 3, (2, 2), stride=(2, 2)).shape
        (2, 3, 8, 8)
    """
    kernel = tuple(int(k) for k in kernel)
    inmaps = inp.shape[-1] if channel_last else inp.shape[base_axis]
    with parameter_scope(name):
        if w_init is None:
            lim = I.calc_uniform_lim_glorot(inmaps, outmaps, kernel)
            w_init = I.UniformInitializer((-lim, lim), rng=rng)
        w_shape = ((inmaps,) + kernel + (outmaps // group,) if channel_last
                   else (inmaps, outmaps // group) + kernel)
        w = get_parameter_or_create("W", w_shape, w_init, not fix_parameters)
        b = None
        if with_bias:
            b = get_parameter_or_create("b", (outmaps,), b_init or I.ConstantInitializer(0.0),
                                        not fix_parameters)
        return F.deconvolution(inp, w, b, base_axis, pad, stride, dilation, group, channel_last,
                               output_padding)


def batch_normalization(inp: Variable, axes: Sequence[int] = (1,), decay_rate: float = 0.9,
                        eps: float = 1e-5, batch_stat: bool = True, output_stat: bool = False,
                        fix_parameters: bool = False, param_init: dict | None = None,
                        no_scale: bool = False, no_bias: bool = False, name: str = "bn"):
    """Batch normalisation with ``beta`` (0), ``gamma`` (1) and running ``mean`` (0) and ``var``
    (1), each of shape ``(1, C, 1, 1)`` for images (size 1 except on ``axes``).

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     _ = PF.batch_normalization(sd.Variable((4, 64, 8, 8)))
        ...     {k: v.shape for k, v in sd.get_parameters(grad_only=False).items()}
        {'bn/beta': (1, 64, 1, 1), 'bn/gamma': (1, 64, 1, 1), 'bn/mean': (1, 64, 1, 1), 'bn/var': (1, 64, 1, 1)}
    """
    axes = [int(a) % inp.ndim for a in axes]
    with parameter_scope(name):
        beta, gamma, mean, var = _bn_parameters(inp, axes, fix_parameters, param_init, no_scale,
                                                no_bias)
        return F.batch_normalization(inp, beta, gamma, mean, var, axes, decay_rate, eps,
                                     batch_stat, output_stat)


def _bn_parameters(inp: Variable, axes: list[int], fix_parameters: bool,
                   param_init: dict | None, no_scale: bool, no_bias: bool) -> tuple:
    """``beta``, ``gamma``, ``mean`` and ``var`` of a batch normalisation, in the current scope."""
    shape = tuple(inp.shape[i] if i in axes else 1 for i in range(inp.ndim))
    init = dict(param_init or {})
    beta = None if no_bias else get_parameter_or_create(
        "beta", shape, init.get("beta", I.ConstantInitializer(0.0)), not fix_parameters)
    gamma = None if no_scale else get_parameter_or_create(
        "gamma", shape, init.get("gamma", I.ConstantInitializer(1.0)), not fix_parameters)
    mean = get_parameter_or_create("mean", shape, init.get("mean", I.ConstantInitializer(0.0)),
                                   False)
    var = get_parameter_or_create("var", shape, init.get("var", I.ConstantInitializer(1.0)),
                                  False)
    return beta, gamma, mean, var


def sync_batch_normalization(inp: Variable, comm=None, group: str = "world",
                             axes: Sequence[int] = (1,), decay_rate: float = 0.9,
                             eps: float = 1e-5, batch_stat: bool = True,
                             output_stat: bool = False, fix_parameters: bool = False,
                             param_init: dict | None = None, no_scale: bool = False,
                             no_bias: bool = False, name: str = "bn"):
    """:func:`batch_normalization` with the statistics of the global minibatch of all
    data-parallel workers (``F.sync_batch_normalization``); the same parameters, so a model
    trained with either loads into the other.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     PF.sync_batch_normalization(sd.Variable((4, 64, 8, 8))).shape
        (4, 64, 8, 8)
    """
    axes = [int(a) % inp.ndim for a in axes]
    with parameter_scope(name):
        beta, gamma, mean, var = _bn_parameters(inp, axes, fix_parameters, param_init, no_scale,
                                                no_bias)
        return F.sync_batch_normalization(inp, beta, gamma, mean, var, comm, group, axes,
                                          decay_rate, eps, batch_stat, output_stat)


def embed(inp: Variable, n_inputs: int, n_features: int, initializer=None,
          fix_parameters: bool = False, name: str = "embed") -> Variable:
    """Embedding lookup with ``W`` ``(n_inputs, n_features)``, uniform on ``±sqrt(3)``.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     PF.embed(sd.Variable((4, 7)), 100, 16).shape
        (4, 7, 16)
    """
    with parameter_scope(name):
        w = get_parameter_or_create(
            "W", (n_inputs, n_features),
            initializer or I.UniformInitializer((-math.sqrt(3.0), math.sqrt(3.0))),
            not fix_parameters)
        return F.embed(inp, w)

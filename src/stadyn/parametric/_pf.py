"""Parametric functions: ops that create (or reuse) their parameters in the registry.

Each PF function opens a scope named after it (``conv``, ``affine``, ``bn``, ``embed``; change it
with ``name=``) and asks the registry for its parameters there, with NNabla's names, shapes,
defaults and initialisers.  Called again in the same scope it reuses them.  Sizes (unit counts,
kernels, groups) and axes are checked first: a bad one is a :class:`~stadyn.ShapeError` naming
the function and the argument.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import functions as F
from .._errors import ShapeError
from ..graph import Variable
from . import initializers as I
from ._registry import get_parameter_or_create, parameter_scope

__all__ = ["affine", "convolution", "deconvolution", "batch_normalization",
           "sync_batch_normalization", "embed"]


def _counts(value: int | Sequence[int], fn: str, arg: str, sequence: bool) -> tuple[int, ...]:
    """``value`` (an int, or a sequence of ints where ``sequence``) as a tuple of ints >= 1."""
    def bad() -> ShapeError:
        kind = "a positive int" + (" or a sequence of them" if sequence else "")
        return ShapeError(f"PF.{fn}: {arg} must be {kind}, got {value!r}")

    def one(v) -> int:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
            raise bad()
        return int(v)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return (one(value),)
    if not sequence or isinstance(value, (str, bytes)):
        raise bad()
    try:
        items = list(value)
    except TypeError:
        raise bad() from None
    if not items:
        raise bad()
    return tuple(one(v) for v in items)


def _count(value: int, fn: str, arg: str) -> int:
    return _counts(value, fn, arg, False)[0]


def _axes(axes: Sequence[int], inp: Variable, fn: str) -> list[int]:
    """``axes`` as axes of ``inp`` in ``0 .. ndim - 1`` (negative ones count from the end)."""
    out = []
    for a in axes:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)) or \
                not -inp.ndim <= a < inp.ndim:
            raise ShapeError(f"PF.{fn}: axes {tuple(axes)!r} do not fit an input of shape "
                             f"{inp.shape}")
        out.append(int(a) % inp.ndim)
    return out


def _base_axis(base_axis: int, inp: Variable, fn: str) -> int:
    if isinstance(base_axis, (bool, np.bool_)) or not isinstance(base_axis, (int, np.integer)) \
            or not -inp.ndim <= base_axis <= inp.ndim:
        raise ShapeError(f"PF.{fn}: base_axis {base_axis!r} does not fit an input of shape "
                         f"{inp.shape}")
    return int(base_axis)


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
    out = _counts(n_outmaps, "affine", "n_outmaps", True)
    inmaps = inp.size_from_axis(_base_axis(base_axis, inp, "affine"))
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
    outmaps = _count(outmaps, "convolution", "outmaps")
    kernel = _counts(kernel, "convolution", "kernel", True)
    group = _count(group, "convolution", "group")
    inmaps = inp.shape[-1] if channel_last else inp.shape[_base_axis(base_axis, inp,
                                                                      "convolution")]
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
    outmaps = _count(outmaps, "deconvolution", "outmaps")
    kernel = _counts(kernel, "deconvolution", "kernel", True)
    group = _count(group, "deconvolution", "group")
    inmaps = inp.shape[-1] if channel_last else inp.shape[_base_axis(base_axis, inp,
                                                                      "deconvolution")]
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
    axes = _axes(axes, inp, "batch_normalization")
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
    axes = _axes(axes, inp, "sync_batch_normalization")
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
    n_inputs = _count(n_inputs, "embed", "n_inputs")
    n_features = _count(n_features, "embed", "n_features")
    with parameter_scope(name):
        w = get_parameter_or_create(
            "W", (n_inputs, n_features),
            initializer or I.UniformInitializer((-math.sqrt(3.0), math.sqrt(3.0))),
            not fix_parameters)
        return F.embed(inp, w)

"""Parametric functions: ops that create (or reuse) their parameters in the registry.

Each PF function opens its own scope, NNabla's (``affine``, ``conv``, ``deconv``, ``bn``,
``embed``), and asks the registry for its parameters there, with NNabla's names, shapes,
defaults and initialisers; ``name=`` opens a scope *above* it, as in NNabla
(``PF.affine(x, 5, name="l1")`` creates ``l1/affine/W``).  Called again in the same scope it
reuses them.  Sizes (unit counts, kernels, groups) and axes are checked first: a bad one is a
:class:`~stadyn.ShapeError` naming the function and the argument.  The normalisations,
depthwise and binary layers are in the neighbouring modules.
"""

from __future__ import annotations

import math
from typing import Sequence

from .. import functions as F
from ..graph import Variable
from . import initializers as I
from ._pf_common import (checked_axes, checked_base_axis, count, counts, given_or, parameter,
                         pf_scope)

__all__ = ["affine", "convolution", "deconvolution", "batch_normalization",
           "fused_batch_normalization", "sync_batch_normalization", "embed",
           "batch_normalization_parameters"]


def affine(inp: Variable, n_outmaps: int | Sequence[int], base_axis: int = 1, w_init=None,
           b_init=None, fix_parameters: bool = False, rng=None, with_bias: bool = True,
           apply_w=None, apply_b=None, name: str | None = None, rule: str = "torch"
           ) -> Variable:
    """Fully connected layer ``x W + b`` with parameters ``W`` ``(inmaps, *n_outmaps)`` and
    ``b`` in scope ``affine``; ``rule`` is ``F.affine``'s (``"nnabla"``: NNabla 1.39's float16
    CPU kernel in ``cpu:half``).

    ``W`` defaults to Glorot uniform, ``b`` to zeros; ``apply_w``/``apply_b`` map them before
    use (``apply_w=PF.spectral_norm``).

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = PF.affine(sd.Variable((16, 512, 4, 4)), 1024, name="fc")
        ...     y.shape, sd.get_parameters()["fc/affine/W"].shape
        ((16, 1024), (8192, 1024))
    """
    out = counts(n_outmaps, "affine", "n_outmaps", True)
    inmaps = inp.size_from_axis(checked_base_axis(base_axis, inp, "affine"))
    with pf_scope(name, "affine"):
        if w_init is None:
            lim = I.calc_uniform_lim_glorot(inmaps, math.prod(out))
            w_init = I.UniformInitializer((-lim, lim), rng=rng)
        w = parameter("W", (inmaps,) + out, w_init, fix_parameters, apply=apply_w)
        b = None
        if with_bias:
            b = parameter("b", out, given_or(b_init, I.ConstantInitializer(0.0)), fix_parameters,
                          apply=apply_b)
        return F.affine(inp, w, b, base_axis, rule=rule)


def convolution(inp: Variable, outmaps: int, kernel: Sequence[int], pad=None, stride=None,
                dilation=None, group: int = 1, channel_last: bool = False, w_init=None,
                b_init=None, base_axis: int = 1, fix_parameters: bool = False, rng=None,
                with_bias: bool = True, apply_w=None, apply_b=None,
                name: str | None = None, rule: str = "torch") -> Variable:
    """Convolution layer with ``W`` ``(outmaps, inmaps // group, *kernel)`` and ``b``
    ``(outmaps,)`` in scope ``conv``; ``W`` defaults to Glorot uniform
    ``sqrt(6 / (prod(kernel) * (in + out)))``; ``rule`` is ``F.convolution``'s
    (``"nnabla"``: NNabla 1.39's float16 CPU kernel in ``cpu:half``).

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = PF.convolution(sd.Variable((16, 1, 8, 8)), 64, (3, 3), pad=(1, 1))
        ...     y.shape, sd.get_parameters()["conv/W"].shape
        ((16, 64, 8, 8), (64, 1, 3, 3))
    """
    outmaps = count(outmaps, "convolution", "outmaps")
    kernel = counts(kernel, "convolution", "kernel", True)
    group = count(group, "convolution", "group")
    inmaps = inp.shape[-1] if channel_last else inp.shape[checked_base_axis(base_axis, inp,
                                                                             "convolution")]
    with pf_scope(name, "conv"):
        if w_init is None:
            lim = I.calc_uniform_lim_glorot(inmaps, outmaps, kernel)
            w_init = I.UniformInitializer((-lim, lim), rng=rng)
        w_shape = ((outmaps,) + kernel + (inmaps // group,) if channel_last
                   else (outmaps, inmaps // group) + kernel)
        w = parameter("W", w_shape, w_init, fix_parameters, apply=apply_w)
        b = None
        if with_bias:
            b = parameter("b", (outmaps,), given_or(b_init, I.ConstantInitializer(0.0)),
                          fix_parameters, apply=apply_b)
        return F.convolution(inp, w, b, base_axis, pad, stride, dilation, group, channel_last,
                             rule=rule)


def deconvolution(inp: Variable, outmaps: int, kernel: Sequence[int], pad=None, stride=None,
                  dilation=None, group: int = 1, channel_last: bool = False,
                  output_padding=None, w_init=None, b_init=None, base_axis: int = 1,
                  fix_parameters: bool = False, rng=None, with_bias: bool = True, apply_w=None,
                  apply_b=None, name: str | None = None) -> Variable:
    """Transposed convolution layer with ``W`` ``(inmaps, outmaps // group, *kernel)`` in
    scope ``deconv`` (NNabla's argument order: ``output_padding`` after ``channel_last``).

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     PF.deconvolution(sd.Variable((2, 8, 4, 4)), 3, (2, 2), stride=(2, 2)).shape
        (2, 3, 8, 8)
    """
    outmaps = count(outmaps, "deconvolution", "outmaps")
    kernel = counts(kernel, "deconvolution", "kernel", True)
    group = count(group, "deconvolution", "group")
    inmaps = inp.shape[-1] if channel_last else inp.shape[checked_base_axis(base_axis, inp,
                                                                             "deconvolution")]
    with pf_scope(name, "deconv"):
        if w_init is None:
            lim = I.calc_uniform_lim_glorot(inmaps, outmaps, kernel)
            w_init = I.UniformInitializer((-lim, lim), rng=rng)
        w_shape = ((inmaps,) + kernel + (outmaps // group,) if channel_last
                   else (inmaps, outmaps // group) + kernel)
        w = parameter("W", w_shape, w_init, fix_parameters, apply=apply_w)
        b = None
        if with_bias:
            b = parameter("b", (outmaps,), given_or(b_init, I.ConstantInitializer(0.0)),
                          fix_parameters, apply=apply_b)
        return F.deconvolution(inp, w, b, base_axis, pad, stride, dilation, group, channel_last,
                               output_padding)


def batch_normalization(inp: Variable, axes: Sequence[int] = (1,), decay_rate: float = 0.9,
                        eps: float = 1e-5, batch_stat: bool = True, output_stat: bool = False,
                        fix_parameters: bool = False, param_init: dict | None = None,
                        no_scale: bool = False, no_bias: bool = False,
                        name: str | None = None, rule: str = "torch"):
    """Batch normalisation with ``beta`` (0), ``gamma`` (1) and running ``mean`` (0) and ``var``
    (1) in scope ``bn``, each of shape ``(1, C, 1, 1)`` for images (size 1 except on ``axes``).
    ``rule`` is ``F.batch_normalization``'s (``"nnabla"``: NNabla 1.39's one-pass variance).

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     _ = PF.batch_normalization(sd.Variable((4, 64, 8, 8)))
        ...     {k: v.shape for k, v in sd.get_parameters(grad_only=False).items()}
        ... # doctest: +NORMALIZE_WHITESPACE
        {'bn/beta': (1, 64, 1, 1), 'bn/gamma': (1, 64, 1, 1),
         'bn/mean': (1, 64, 1, 1), 'bn/var': (1, 64, 1, 1)}
    """
    axes = checked_axes(axes, inp, "batch_normalization")
    with pf_scope(name, "bn"):
        beta, gamma, mean, var = bn_parameters(inp, axes, fix_parameters, param_init, no_scale,
                                               no_bias, batch_stat)
        return F.batch_normalization(inp, beta, gamma, mean, var, axes, decay_rate, eps,
                                     batch_stat, output_stat, rule=rule)


def fused_batch_normalization(inp: Variable, z: Variable | None = None,
                              axes: Sequence[int] = (1,), decay_rate: float = 0.9,
                              eps: float = 1e-5, batch_stat: bool = True,
                              nonlinearity: str = "relu", output_stat: bool = False,
                              fix_parameters: bool = False, param_init: dict | None = None,
                              no_scale: bool = False, no_bias: bool = False,
                              name: str | None = None, rule: str = "torch"):
    """:func:`batch_normalization`'s parameters (scope ``bn``) with the normalised value added
    to ``z`` and passed through a ReLU (``F.fused_batch_normalization``; ``rule`` its).

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     PF.fused_batch_normalization(sd.Variable((4, 8, 2, 2))).shape
        (4, 8, 2, 2)
    """
    axes = checked_axes(axes, inp, "fused_batch_normalization")
    with pf_scope(name, "bn"):
        beta, gamma, mean, var = bn_parameters(inp, axes, fix_parameters, param_init, no_scale,
                                               no_bias, batch_stat)
        return F.fused_batch_normalization(inp, beta, gamma, mean, var, z, axes, decay_rate, eps,
                                           batch_stat, nonlinearity, output_stat, rule=rule)


def batch_normalization_parameters(inp: Variable, axes: Sequence[int] = (1,),
                                   fix_parameters: bool = False, param_init: dict | None = None,
                                   no_scale: bool = False, no_bias: bool = False,
                                   batch_stat: bool = True, name: str | None = None,
                                   fn: str = "batch_normalization") -> tuple:
    """The parameters :func:`batch_normalization` (or ``fn``, :func:`fused_batch_normalization`)
    makes for ``inp``, in its scope, and nothing else: :func:`bn_parameters` (a front end whose
    function refuses after its parameters are made, as NNabla 1.39's
    ``PF.fused_batch_normalization`` does, makes them so).

    Example:
        >>> import stadyn as sd
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     _ = batch_normalization_parameters(sd.Variable((4, 3, 2)), axes=[1, 2], name="l")
        ...     {k: v.shape for k, v in sd.get_parameters(grad_only=False).items()}
        ... # doctest: +NORMALIZE_WHITESPACE
        {'l/bn/beta': (1, 3, 2), 'l/bn/gamma': (1, 3, 2), 'l/bn/mean': (1, 3, 2),
         'l/bn/var': (1, 3, 2)}
    """
    axes = checked_axes(axes, inp, fn)
    with pf_scope(name, "bn"):
        return bn_parameters(inp, axes, fix_parameters, param_init, no_scale, no_bias,
                             batch_stat)


def bn_parameters(inp: Variable, axes: list[int], fix_parameters: bool,
                  param_init: dict | None, no_scale: bool, no_bias: bool,
                  batch_stat: bool = True) -> tuple:
    """``beta``, ``gamma``, ``mean`` and ``var`` of a batch normalisation, in the current
    scope (``beta``/``gamma`` None with ``no_bias``/``no_scale``); integer running statistics
    (given as ``param_init``) are read as float32, and made float32 where ``batch_stat``
    writes them, as NNabla 1.39's (``parameter``'s ``read_by``)."""
    shape = tuple(inp.shape[i] if i in axes else 1 for i in range(inp.ndim))
    init = dict(param_init or {})
    beta, gamma = scale_and_bias(shape, fix_parameters, init, no_scale, no_bias)
    read_by = "writing" if batch_stat else "reading"
    mean = parameter("mean", shape, init.get("mean", I.ConstantInitializer(0.0)),
                     need_grad=False, read_by=read_by)
    var = parameter("var", shape, init.get("var", I.ConstantInitializer(1.0)), need_grad=False,
                    read_by=read_by)
    return beta, gamma, mean, var


def scale_and_bias(shape: tuple, fix_parameters: bool, init: dict, no_scale: bool,
                   no_bias: bool) -> tuple:
    """A normalisation's ``beta`` (zeros) and ``gamma`` (ones) of ``shape``, None where
    ``no_bias``/``no_scale``; ``init`` may give either initialiser."""
    beta = None if no_bias else parameter(
        "beta", shape, init.get("beta", I.ConstantInitializer(0.0)), fix_parameters)
    gamma = None if no_scale else parameter(
        "gamma", shape, init.get("gamma", I.ConstantInitializer(1.0)), fix_parameters)
    return beta, gamma


def sync_batch_normalization(inp: Variable, comm=None, group: str = "world",
                             axes: Sequence[int] = (1,), decay_rate: float = 0.9,
                             eps: float = 1e-5, batch_stat: bool = True,
                             output_stat: bool = False, fix_parameters: bool = False,
                             param_init: dict | None = None, no_scale: bool = False,
                             no_bias: bool = False, name: str | None = None):
    """:func:`batch_normalization` with the statistics of the global minibatch of all
    data-parallel workers (``F.sync_batch_normalization``); the same parameters, so a model
    trained with either loads into the other.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     PF.sync_batch_normalization(sd.Variable((4, 64, 8, 8))).shape
        (4, 64, 8, 8)
    """
    axes = checked_axes(axes, inp, "sync_batch_normalization")
    with pf_scope(name, "bn"):
        beta, gamma, mean, var = bn_parameters(inp, axes, fix_parameters, param_init, no_scale,
                                               no_bias, batch_stat)
        return F.sync_batch_normalization(inp, beta, gamma, mean, var, comm, group, axes,
                                          decay_rate, eps, batch_stat, output_stat)


def embed(inp: Variable, n_inputs: int, n_features: int, initializer=None,
          fix_parameters: bool = False, apply_w=None, name: str | None = None) -> Variable:
    """Embedding lookup with ``W`` ``(n_inputs, n_features)`` in scope ``embed``, uniform on
    ``±sqrt(3)``.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     PF.embed(sd.Variable((4, 7)), 100, 16).shape
        (4, 7, 16)
    """
    n_inputs = count(n_inputs, "embed", "n_inputs")
    n_features = count(n_features, "embed", "n_features")
    with pf_scope(name, "embed"):
        w = parameter("W", (n_inputs, n_features),
                      initializer or I.UniformInitializer((-math.sqrt(3.0), math.sqrt(3.0))),
                      fix_parameters, apply=apply_w)
        return F.embed(inp, w)

"""Parametric functions for NNabla's per-sample normalisations, learnt slopes and depthwise
convolution: ``layer_normalization``, ``instance_normalization``, ``group_normalization``,
``prelu`` and ``depthwise_convolution``, with NNabla 1.39's scopes, parameter names, shapes and
initialisers (``name=`` opens a scope above the function's own, as in :mod:`._pf`).

Example:
    >>> import stadyn as sd, stadyn.parametric_functions as PF
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     _ = PF.group_normalization(sd.Variable((2, 6, 4, 4)), 3, name="g1")
    ...     {k: v.shape for k, v in sd.get_parameters().items()}
    {'g1/group_normalization/beta': (1, 6, 1, 1), 'g1/group_normalization/gamma': (1, 6, 1, 1)}
"""

from __future__ import annotations

from typing import Sequence

from .. import functions as F
from ..graph import Variable
from . import initializers as I
from ._pf import scale_and_bias
from ._pf_common import (checked_axes, checked_base_axis, count, counts, given_or, parameter,
                         pf_scope)

__all__ = ["layer_normalization", "instance_normalization", "group_normalization", "prelu",
           "depthwise_convolution", "spectral_norm"]


def _axis_list(value, inp: Variable, fn: str) -> list[int]:
    return checked_axes(value if isinstance(value, (list, tuple)) else [value], inp, fn)


def layer_normalization(inp: Variable, batch_axis=0, eps: float = 1e-5,
                        output_stat: bool = False, fix_parameters: bool = False,
                        param_init: dict | None = None, no_scale: bool = False,
                        no_bias: bool = False, name: str | None = None, rule: str = "torch"):
    """Layer normalisation with ``beta`` (0) and ``gamma`` (1) of the sample's shape (size 1 on
    the batch axes) in scope ``layer_normalization``; ``rule`` is ``F.layer_normalization``'s.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     _ = PF.layer_normalization(sd.Variable((2, 3, 4)))
        ...     sd.get_parameters()["layer_normalization/gamma"].shape
        (1, 3, 4)
    """
    keep = _axis_list(batch_axis, inp, "layer_normalization")
    shape = tuple(1 if i in keep else s for i, s in enumerate(inp.shape))
    with pf_scope(name, "layer_normalization"):
        beta, gamma = scale_and_bias(shape, fix_parameters, dict(param_init or {}), no_scale,
                                     no_bias)
        return F.layer_normalization(inp, beta, gamma, keep, eps, output_stat, rule=rule)


def _per_channel(inp: Variable, channel_axis: int, fn: str) -> tuple[int, ...]:
    c = checked_axes([channel_axis], inp, fn)[0]
    return tuple(inp.shape[c] if i == c else 1 for i in range(inp.ndim))


def instance_normalization(inp: Variable, channel_axis: int = 1, batch_axis=0,
                           eps: float = 1e-5, output_stat: bool = False,
                           fix_parameters: bool = False, param_init: dict | None = None,
                           no_scale: bool = False, no_bias: bool = False,
                           name: str | None = None, rule: str = "torch"):
    """Instance normalisation with per-channel ``beta`` (0) and ``gamma`` (1), shape
    ``(1, C, 1, 1)``, in scope ``instance_normalization``; ``rule`` is
    ``F.instance_normalization``'s.
    Example: ``PF.instance_normalization(x)``."""
    shape = _per_channel(inp, channel_axis, "instance_normalization")
    _axis_list(batch_axis, inp, "instance_normalization")
    with pf_scope(name, "instance_normalization"):
        beta, gamma = scale_and_bias(shape, fix_parameters, dict(param_init or {}), no_scale,
                                     no_bias)
        return F.instance_normalization(inp, beta, gamma, channel_axis, batch_axis, eps,
                                        output_stat, rule=rule)


def group_normalization(inp: Variable, num_groups: int, channel_axis: int = 1, batch_axis=0,
                        eps: float = 1e-5, output_stat: bool = False,
                        fix_parameters: bool = False, param_init: dict | None = None,
                        no_scale: bool = False, no_bias: bool = False,
                        name: str | None = None, rule: str = "torch"):
    """Group normalisation over ``num_groups`` groups of channels with per-channel ``beta`` (0)
    and ``gamma`` (1), shape ``(1, C, 1, 1)``, in scope ``group_normalization``; ``rule`` is
    ``F.group_normalization``'s.
    Example: ``PF.group_normalization(x, 32)``."""
    shape = _per_channel(inp, channel_axis, "group_normalization")
    groups = count(num_groups, "group_normalization", "num_groups")
    _axis_list(batch_axis, inp, "group_normalization")
    with pf_scope(name, "group_normalization"):
        beta, gamma = scale_and_bias(shape, fix_parameters, dict(param_init or {}), no_scale,
                                     no_bias)
        return F.group_normalization(inp, beta, gamma, groups, channel_axis, batch_axis, eps,
                                     output_stat, rule=rule)


def prelu(inp: Variable, base_axis: int = 1, shared: bool = True, fix_parameters: bool = False,
          slope_init=None, name: str | None = None) -> Variable:
    """PReLU with a learnt ``slope`` in scope ``prelu``: one (shape ``()``) when ``shared``,
    else one per channel ``(C,)``; initialised to 0.25.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     _ = PF.prelu(sd.Variable((2, 3, 4)), shared=False)
        ...     sd.get_parameters()["prelu/slope"].d
        array([0.25, 0.25, 0.25], dtype=float32)
    """
    axis = checked_base_axis(base_axis, inp, "prelu")
    shape = () if shared else (inp.shape[axis],)
    with pf_scope(name, "prelu"):
        slope = parameter("slope", shape, given_or(slope_init, I.ConstantInitializer(0.25)),
                          fix_parameters)
        return F.prelu(inp, slope, base_axis)


def depthwise_convolution(inp: Variable, kernel: Sequence[int], pad=None, stride=None,
                          dilation=None, multiplier: int = 1, w_init=None, b_init=None,
                          base_axis: int = 1, fix_parameters: bool = False, rng=None,
                          with_bias: bool = True, name: str | None = None) -> Variable:
    """Depthwise convolution with ``W`` ``(C * multiplier, *kernel)`` and ``b``
    ``(C * multiplier,)`` in scope ``depthwise_conv``; ``W`` is Glorot uniform over
    ``C * multiplier`` outputs and ``C`` inputs, ``b`` zeros.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     y = PF.depthwise_convolution(sd.Variable((2, 3, 8, 8)), (3, 3), pad=(1, 1))
        ...     y.shape, sd.get_parameters()["depthwise_conv/W"].shape
        ((2, 3, 8, 8), (3, 3, 3))
    """
    kernel = counts(kernel, "depthwise_convolution", "kernel", True)
    multiplier = count(multiplier, "depthwise_convolution", "multiplier")
    channels = inp.shape[checked_base_axis(base_axis, inp, "depthwise_convolution")]
    with pf_scope(name, "depthwise_conv"):
        if w_init is None:
            lim = I.calc_uniform_lim_glorot(channels * multiplier, channels, kernel)
            w_init = I.UniformInitializer((-lim, lim), rng=rng)
        w = parameter("W", (channels * multiplier,) + kernel, w_init, fix_parameters)
        b = None
        if with_bias:
            b = parameter("b", (channels * multiplier,),
                          given_or(b_init, I.ConstantInitializer(0.0)),
                          fix_parameters)
        return F.depthwise_convolution(inp, w, b, base_axis, pad, stride, dilation, multiplier)


def spectral_norm(w: Variable, dim: int = 0, itr: int = 1, eps: float = 1e-12,
                  test: bool = False, u_init=None, fix_parameters: bool = True,
                  name: str | None = None) -> Variable:
    """``w`` divided by its spectral norm (:func:`stadyn.functions.spectral_norm`), the power
    iteration's vector ``u`` ``(w.shape[dim],)`` (standard normal at first, need_grad False)
    kept in scope ``spectral-norm``.  Used as ``apply_w``: ``PF.affine(x, 10,
    apply_w=PF.spectral_norm)`` keeps ``u`` beside the layer's ``W``.

    Example:
        >>> import stadyn as sd, stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     _ = PF.affine(sd.Variable((2, 5)), 3, apply_w=lambda w: PF.spectral_norm(w, dim=1))
        ...     {k: v.shape for k, v in sd.get_parameters(grad_only=False).items()}
        {'affine/W': (5, 3), 'affine/spectral-norm/u': (3,), 'affine/b': (3,)}
    """
    dim = checked_axes([dim], w, "spectral_norm")[0]
    with pf_scope(name, "spectral-norm"):
        u = parameter("u", (w.shape[dim],), given_or(u_init, I.NormalInitializer()),
                      need_grad=False)
        return F.spectral_norm(w, u, dim, itr, eps, test)

"""Normalisations over the sample's own values (NNabla's): ``layer_normalization``,
``instance_normalization``, ``group_normalization``, and the ``norm`` reduction.

Each normalises with the biased variance, ``(x - mean) / sqrt(var + eps)``, then scales by
``gamma`` and shifts by ``beta`` (either may be None), which broadcast against ``x``;
``output_stat`` also returns the mean and variance (size 1 on the normalised axes).
``rule="nnabla"`` takes the variance in one pass, ``mean(x * x) - mean(x) ** 2``, with
NNabla's gradient formula on it, as NNabla 1.39 does (each of its three is its batch
normalisation over the kept axes; ``stadyn.compat.nnabla`` passes it): ``[3.0, 3.001]``
normalises to +-0.15810, not +-0.15616.  Under that rule float16 CPU data (NNabla's
``cpu:half``: the ops' ``computes_in_half`` rule keeps it float16) is normalised by NNabla's
``BatchNormalization<Half>`` kernel (``ops/_half_batch_norm.py``), every step rounded, and
scaled and shifted in float16.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> with sd.auto_forward():
    ...     y = F.layer_normalization(sd.Variable.from_numpy_array([[1.0, 3.0]]), None, None)
    >>> np.round(y.d, 3)
    array([[-1.,  1.]], dtype=float32)
"""

from __future__ import annotations

import math

import torch

from . import _kernels as kernels
from ._arith import add2, mul2
from ._half_batch_norm import half_batch_norm
from ._half_sum import fold_sum
from ._registry import op
from ._sequence_axis import unless_axes
from ._util import norm_axes

_C = "normalization"


def _axes_of(value, ndim: int) -> list[int]:
    return norm_axes(value if isinstance(value, (list, tuple)) else [value], ndim)


def _nnabla_rule(attrs: dict) -> bool:
    """``OpSpec.computes_in_half`` of the three normalisations: NNabla's (``rule="nnabla"``),
    which NNabla 1.39 computes in ``Half`` on its CPU (its batch normalisation's kernel, then
    ``Mul2`` and ``Add2``)."""
    return attrs.get("rule") == "nnabla"


def _check_rule(name: str, rule: str) -> bool:
    if rule not in ("torch", "nnabla"):
        raise ValueError(f"{name}: rule={rule!r}: 'torch' or 'nnabla'")
    return rule == "nnabla"


class _HalfBroadcast(torch.autograd.Function):
    """``p`` broadcast to ``shape`` with NNabla 1.39's ``Broadcast`` backward in ``Half``:
    ``g[idx_x] += dy[i]`` over the output in order (broadcast.cpp), a float16 fold over the
    broadcast axes (``ops/_half_sum.py``), where torch's sums in float and rounds once."""

    @staticmethod
    def forward(ctx, p, shape):
        ctx.axes = [a for a in range(len(shape)) if p.shape[a] == 1 and shape[a] != 1]
        return p.broadcast_to(shape)

    @staticmethod
    def backward(ctx, g):
        if not ctx.axes:
            return g, None
        return fold_sum(g, ctx.axes, True), None


def _one_pass(x, beta, gamma, reduce: list[int], eps: float, output_stat: bool):
    """NNabla 1.39's: batch normalisation over the kept axes (``TensorNormalization``), the
    variance ``sum(x * x) / n - m * m``, ``gamma`` and ``beta`` (per kept position) inside it,
    ``(x - m) * gamma / sqrt(v + eps) + beta``; the gradient NNabla's formula on that variance
    (``kernels.batch_norm_nnabla``), differentiable twice (MAML)."""
    keep = [a for a in range(x.ndim) if a not in reduce]
    perm = reduce + keep
    moved = x.permute(*perm)
    rows = math.prod(moved.shape[:len(reduce)])
    kept = [1 if a in reduce else x.shape[a] for a in range(x.ndim)]

    half = x.dtype == torch.float16 and x.device.type == "cpu"

    def per_kept(p):
        if p is None:
            return None
        wide = _HalfBroadcast.apply(p, kept) if half and p.dtype == x.dtype else \
            p.broadcast_to(kept)
        return wide.permute(*perm).reshape(-1)

    flat = moved.reshape(rows, -1)
    back = sorted(range(x.ndim), key=perm.__getitem__)
    if flat.dtype == torch.float16 and flat.device.type == "cpu":
        # NNabla's in cpu:half: its BatchNormalization<Half> kernel, every step rounded
        y, m, v = half_batch_norm(flat.contiguous(), per_kept(gamma), per_kept(beta), None,
                                  None, True, eps, 0.0)
        y = y.reshape(moved.shape).permute(*back)
        if not output_stat:
            return y
        return y, m.reshape(kept), v.reshape(kept)
    y, _, _ = kernels.batch_norm_nnabla(flat, per_kept(gamma), per_kept(beta), None, None,
                                        True, eps, True)
    y = y.reshape(moved.shape).permute(*back)
    if not output_stat:
        return y
    mean = torch.mean(x, dim=reduce, keepdim=True)
    return y, mean, torch.mean(x * x, dim=reduce, keepdim=True) - mean * mean


def _normalize(x, beta, gamma, reduce: list[int], eps: float, output_stat: bool,
               one_pass: bool = False):
    if one_pass and reduce and math.prod(x.shape[a] for a in reduce) > 1:
        return _one_pass(x, beta, gamma, reduce, eps, output_stat)
    if reduce:
        var, mean = torch.var_mean(x, dim=reduce, unbiased=False, keepdim=True)
    else:  # nothing to normalise over (torch would reduce every axis for dim=[])
        mean, var = x, torch.zeros_like(x)
    y = (x - mean) / torch.sqrt(var + eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return (y, mean, var) if output_stat else y


@op(3, category=_C, precision="float", computes_in_half=_nnabla_rule)
def layer_normalization(x, beta, gamma, batch_axis=0, eps=1e-05, output_stat=False,
                        rule="torch"):
    """Normalise each sample over every axis but ``batch_axis`` (an axis or a list of them);
    NNabla's parameters have the sample's shape (``(1, C, H, W)``).  ``rule="nnabla"``: the
    one-pass variance (module docstring).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([[3.0, 3.001]]))
        >>> with sd.auto_forward():
        ...     y = F.layer_normalization(x, None, None, rule="nnabla")
        >>> np.round(y.d, 4)
        array([[-0.1581,  0.1581]], dtype=float32)
    """
    one_pass = _check_rule("layer_normalization", rule)
    keep = _axes_of(batch_axis, x.ndim)
    reduce = [a for a in range(x.ndim) if a not in keep]
    if one_pass:  # NNabla: TensorNormalization without parameters, then * gamma + beta
        out = _normalize(x, None, None, reduce, eps, output_stat, True)
        return _affine(out, beta, gamma, output_stat)
    return _normalize(x, beta, gamma, reduce, eps, output_stat)


def _affine(out, beta, gamma, output_stat: bool):
    """``y * gamma + beta`` as NNabla's ``Mul2`` and ``Add2`` (their declared implementations
    with NNabla's ``Half`` formulas, as the rule asks: in float16 on the CPU a broadcast
    parameter's gradient is NNabla's fold)."""
    y = out[0] if output_stat else out
    if gamma is not None:
        y = mul2.spec.impl(y, gamma, half_formula=True)
    if beta is not None:
        y = add2.spec.impl(y, beta, half_formula=True)
    return (y, out[1], out[2]) if output_stat else y


@op(3, category=_C, precision="float", computes_in_half=_nnabla_rule)
def instance_normalization(x, beta, gamma, channel_axis=1, batch_axis=0, eps=1e-05,
                           output_stat=False, rule="torch"):
    """Normalise each sample's each channel over the remaining (spatial) axes; ``beta`` and
    ``gamma`` are per channel (``(1, C, 1, 1)``).  ``rule="nnabla"``: the one-pass variance
    (module docstring).
    Example: ``F.instance_normalization(x, beta, gamma)``."""
    one_pass = _check_rule("instance_normalization", rule)
    keep = _axes_of(batch_axis, x.ndim) + _axes_of(channel_axis, x.ndim)
    reduce = [a for a in range(x.ndim) if a not in keep]
    return _normalize(x, beta, gamma, reduce, eps, output_stat, one_pass)


@op(3, category=_C, precision="float", computes_in_half=_nnabla_rule)
def group_normalization(x, beta, gamma, num_groups, channel_axis=1, batch_axis=0, eps=1e-05,
                        output_stat=False, rule="torch"):
    """Split the channels into ``num_groups`` groups and normalise each sample's each group
    over its channels and the spatial axes; ``beta`` and ``gamma`` are per channel
    (``(1, C, 1, 1)``).  The statistics ``output_stat`` returns have shape ``(N, G, 1, ...)``
    over the grouped array ``(N, G, C // G, ...)``.  ``rule="nnabla"``: the one-pass variance
    (module docstring).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.group_normalization(sd.Variable((2, 6, 4, 4)), None, None, 3).shape
        (2, 6, 4, 4)
    """
    one_pass = _check_rule("group_normalization", rule)
    c = norm_axes([channel_axis], x.ndim)[0]
    channels = x.shape[c]
    if channels % int(num_groups):
        raise ValueError(f"group_normalization: {channels} channels do not split into "
                         f"{num_groups} groups")
    grouped = x.reshape(x.shape[:c] + (int(num_groups), channels // int(num_groups))
                        + x.shape[c + 1:])
    keep = [a if a < c else a + 1 for a in _axes_of(batch_axis, x.ndim)] + [c]
    reduce = [a for a in range(grouped.ndim) if a not in keep]
    out = _normalize(grouped, None, None, reduce, eps, output_stat, one_pass)
    if output_stat:
        out = (out[0].reshape(x.shape), out[1], out[2])
    else:
        out = out.reshape(x.shape)
    return _affine(out, beta, gamma, output_stat)


def nnabla_norm(x: torch.Tensor, order: float, dims: list[int] | None,
                keepdim: bool) -> torch.Tensor:
    """``(sum |x|^p)^(1/p)`` as NNabla 1.39's ``Norm`` composes it (``Abs``, ``PowScalar``,
    ``Sum``, ``PowScalar``), with its gradients: ``Abs``'s is +1 at 0 (so a 1-norm passes 1
    to a zero), ``PowScalar(1/p)``'s is infinite at a zero sum (a 2-norm of zeros gives NaN
    gradients).  ``p`` infinite keeps the largest magnitude (NNabla computes ``|x|^inf``
    literally; docs/nnabla-names.md)."""
    if math.isinf(order):
        return torch.linalg.vector_norm(x, ord=order, dim=dims, keepdim=keepdim)
    magnitude = x * torch.where(x >= 0, 1.0, -1.0).to(x.dtype)
    total = magnitude.pow(order).sum(dim=list(range(x.ndim)) if dims is None else dims,
                                     keepdim=keepdim)
    return total.pow(1.0 / order)


@op(1, category="reduction", precision="float", sequence=unless_axes())
def norm(x, p=None, axis=None, keepdims=False, rule="torch"):
    """The ``p``-norm ``(sum |x|^p)^(1/p)`` over ``axis`` (default: all axes; ``p`` None is 2).
    ``rule="nnabla"`` computes it as NNabla 1.39 composes it, whose gradient differs where
    ``x`` has zeros: a 1-norm passes 1 to a zero (``Abs``'s gradient there), a norm of all
    zeros passes NaN for ``p > 1`` (:func:`nnabla_norm`); torch's passes 0.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     n = F.norm(sd.Variable.from_numpy_array([[3.0, 4.0], [6.0, 8.0]]), axis=1)
        >>> n.d
        array([ 5., 10.], dtype=float32)
    """
    order = 2.0 if p is None else float(p)
    if order <= 0:
        raise ValueError(f"norm: p must be positive, got {p}")
    if rule not in ("torch", "nnabla"):
        raise ValueError(f"norm: rule={rule!r}: 'torch' or 'nnabla'")
    dims = norm_axes(axis, x.ndim)
    if rule == "nnabla":
        return nnabla_norm(x, order, dims, bool(keepdims))
    return torch.linalg.vector_norm(x, ord=order, dim=dims, keepdim=bool(keepdims))


def _unit(v, eps):
    return v / torch.sqrt((v * v).sum() + eps)


@op(2, category=_C, precision="float")
def spectral_norm(w, u, dim=0, itr=1, eps=1e-12, test=False, output_u=False):
    """``w / sigma(w)``, ``sigma`` the largest singular value of ``w`` with axis ``dim`` as the
    rows, estimated by ``itr`` power iterations from ``u`` (shape ``(w.shape[dim],)``); ``u``
    and ``v`` are held constant for the gradient.  Unless ``test``, ``u`` is replaced in place
    by the iteration's result (NNabla's ``spectral_norm``); ``output_u`` also returns the ``u``
    the iteration started from.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> w = sd.Variable.from_numpy_array(np.diag([3.0, 1.0]))
        >>> u = sd.Variable.from_numpy_array(np.array([1.0, 0.5]))
        >>> with sd.auto_forward():
        ...     y = F.spectral_norm(w, u, itr=20)
        >>> np.round(y.d, 4)
        array([[1.    , 0.    ],
               [0.    , 0.3333]], dtype=float32)
    """
    dim = int(dim) % w.ndim
    matrix = w.movedim(dim, 0).reshape(w.shape[dim], -1)
    start = u.detach().clone() if output_u else None
    with torch.no_grad():
        left, fixed = u.reshape(-1), matrix.detach()
        right = None
        for _ in range(int(itr)):
            right = _unit(fixed.t() @ left, eps)
            left = _unit(fixed @ right, eps)
        if right is None:
            right = _unit(fixed.t() @ left, eps)
        if not test:
            u.copy_(left.reshape(u.shape))
    sigma = left.detach() @ matrix @ right.detach()
    y = w / sigma
    return (y, start) if output_u else y
